package bin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
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
				in, err := inspectMode(context.Background(), f.Data, mode.digests, dwarfUnits)
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
	in, err := inspectMode(context.Background(), data, false, dwarfOff)
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
