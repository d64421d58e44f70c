package bin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// largestBinary returns $INQUEST_BENCH_BINARY, else the largest ELF among
// the go tool and /usr/bin.
func largestBinary() string {
	if p := os.Getenv("INQUEST_BENCH_BINARY"); p != "" {
		return p
	}
	best, size := filepath.Join(runtime.GOROOT(), "bin", "go"), int64(0)
	if st, err := os.Stat(best); err == nil {
		size = st.Size()
	}
	ents, _ := os.ReadDir("/usr/bin")
	for _, e := range ents {
		p := filepath.Join("/usr/bin", e.Name())
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() <= size {
			continue
		}
		if b, err := os.ReadFile(p); err == nil && len(b) > 4 && string(b[:4]) == "\x7fELF" {
			best, size = p, st.Size()
		}
	}
	return best
}

// BenchmarkInspectBinary times inspect_binary's work (map, admit, symbols
// for hardening, DWARF summary, JSON encoding; with digests also the file
// and section sha256 and entropy) on the
// largest binary available beside `readelf -a` on the same file in the same
// run (output to /dev/null). Compare the two ns/op figures.
func BenchmarkInspectBinary(b *testing.B) {
	p := largestBinary()
	st, err := os.Stat(p)
	if err != nil {
		b.Skip("no binary to inspect")
	}
	b.Logf("file %s, %d bytes", p, st.Size())
	for _, mode := range []struct {
		name    string
		digests bool
	}{{"inquest", false}, {"inquest-digests", true}} {
		b.Run(mode.name, func(b *testing.B) {
			b.SetBytes(st.Size())
			for i := 0; i < b.N; i++ {
				f, err := ReadFileMapped(context.Background(), p, "/path", MaxInputBytes)
				if err != nil {
					b.Fatal(err)
				}
				in, err := inspectMode(context.Background(), f.Data, mode.digests, true)
				if err != nil {
					b.Fatal(err)
				}
				if mode.digests {
					f.SHA256()
				}
				if _, err := json.Marshal(in); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
	b.Run("readelf-a", func(b *testing.B) {
		readelf, err := exec.LookPath("readelf")
		if err != nil {
			b.Skip("readelf not installed")
		}
		null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		defer null.Close()
		b.SetBytes(st.Size())
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(readelf, "-a", "-W", p)
			cmd.Stdout, cmd.Stderr = null, null
			_ = cmd.Run() // readelf exits 1 after warnings on some files
		}
	})
}

// BenchmarkDisassembleLibcText disassembles the C library's .text (AT&T,
// the default decoder, objdump's spelling) and runs objdump -d -w on the
// same section, interleaved in every iteration, reporting each one's
// time per iteration (inquest-ns/op, objdump-ns/op) and the part of
// inquest's time gnuATT's rewriting takes (spelling-ns/op, measured by
// rewriting every row's text again).
func BenchmarkDisassembleLibcText(b *testing.B) {
	p := os.Getenv("INQUEST_BENCH_LIBC")
	if p == "" {
		p = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	}
	if _, err := os.Stat(p); err != nil {
		b.Skip("no C library at " + p)
	}
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		b.Skip("objdump not installed")
	}
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	in, err := inspectMode(context.Background(), data, false, false)
	if err != nil {
		b.Fatal(err)
	}
	cr, err := resolveSection(in, ".text", 0, 0, false)
	if err != nil {
		b.Fatal(err)
	}
	dec := newX86Decoder()
	idx := newSymIndex(&symbolSet{})
	null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer null.Close()
	var ours, theirs, spelling time.Duration
	rows := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		var all []Instruction
		for off := 0; off < len(cr.code); {
			r, next := disassemble(dec, archOf(in), "gnu", cr.code, cr.base, off, 5000, idx, nil)
			all = append(all, r...)
			if next <= off {
				break
			}
			off = next
		}
		t1 := time.Now()
		cmd := exec.Command(objdump, "-d", "-w", "-j", ".text", p)
		cmd.Stdout = null
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		pos := 0
		for _, r := range all {
			n := len(r.Bytes) / 2
			if r.Error == "" {
				gnuATT(r.Text, cr.code[pos:pos+n], 64)
			}
			pos += n
		}
		t3 := time.Now()
		ours, theirs, spelling = ours+t1.Sub(t0), theirs+t2.Sub(t1), spelling+t3.Sub(t2)
		rows = len(all)
	}
	b.StopTimer()
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "inquest-ns/op")
	b.ReportMetric(float64(theirs.Nanoseconds())/float64(b.N), "objdump-ns/op")
	b.ReportMetric(float64(spelling.Nanoseconds())/float64(b.N), "spelling-ns/op")
	b.ReportMetric(float64(rows), "instructions")
}

// BenchmarkDisassembleLibcPages pages through the C library's .text with
// the disassemble tool as an MCP client does (tool.Registry.Call, the
// schema validation, the envelope encoded, next_cursor followed until the
// listing ends, max_instructions 5000 and the default 200) and runs
// `objdump -d -w -j .text` on the same file, interleaved in every
// iteration. It reports each side's time per iteration, their ratio and
// the pages and instructions read.
func BenchmarkDisassembleLibcPages(b *testing.B) {
	p := os.Getenv("INQUEST_BENCH_LIBC")
	if p == "" {
		p = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	}
	if _, err := os.Stat(p); err != nil {
		b.Skip("no C library at " + p)
	}
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		b.Skip("objdump not installed")
	}
	null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer null.Close()
	r := registry(b, "")
	ctx := context.Background()
	for _, max := range []int{5000, 0} {
		name := "max=" + strconv.Itoa(max)
		if max == 0 {
			name = "default"
		}
		b.Run(name, func(b *testing.B) {
			var ours, theirs time.Duration
			pages, insns := 0, 0
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				args := map[string]any{"path": p, "section": ".text"}
				if max > 0 {
					args["max_instructions"] = max
				}
				pages, insns = 0, 0
				for {
					raw, _ := json.Marshal(args)
					res, err := r.Call(ctx, "disassemble", raw)
					if err != nil {
						b.Fatal(err)
					}
					body, _ := contract.Marshal(res, nil)
					var env struct {
						Data struct {
							Rows       []json.RawMessage `json:"rows"`
							NextCursor *string           `json:"next_cursor"`
						} `json:"data"`
					}
					if err := json.Unmarshal(body, &env); err != nil {
						b.Fatal(err)
					}
					pages++
					insns += len(env.Data.Rows)
					if env.Data.NextCursor == nil {
						break
					}
					args["cursor"] = *env.Data.NextCursor
				}
				t1 := time.Now()
				cmd := exec.Command(objdump, "-d", "-w", "-j", ".text", p)
				cmd.Stdout = null
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				ours, theirs = ours+t1.Sub(t0), theirs+time.Since(t1)
			}
			b.ReportMetric(ours.Seconds()*1e3/float64(b.N), "inquest-ms/op")
			b.ReportMetric(theirs.Seconds()*1e3/float64(b.N), "objdump-ms/op")
			b.ReportMetric(ours.Seconds()/theirs.Seconds(), "inquest/objdump")
			b.ReportMetric(float64(pages), "pages")
			b.ReportMetric(float64(insns), "instructions")
		})
	}
}
