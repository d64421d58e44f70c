package bin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
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
