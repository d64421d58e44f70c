package cli

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkBinInspectJSON runs `inquest bin inspect --json FILE` in
// process: everything the command does after process start-up (the
// command tree and flags, the bin toolset, argument validation, mapping
// and inspecting the file, encoding and printing the envelope), on
// /usr/bin/ls, the Go compile tool and $INQUEST_BENCH_BINARY when set,
// each beside `readelf -a -W` on the same file (a whole process, output
// discarded). bench/compare.sh times whole processes of both.
func BenchmarkBinInspectJSON(b *testing.B) {
	files := []struct{ name, path string }{
		{"ls", "/usr/bin/ls"},
		{"compile", filepath.Join(runtime.GOROOT(), "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH, "compile")},
	}
	if p := os.Getenv("INQUEST_BENCH_BINARY"); p != "" {
		files = append(files, struct{ name, path string }{"env", p})
	}
	readelf, _ := exec.LookPath("readelf")
	for _, f := range files {
		if _, err := os.Stat(f.path); err != nil {
			continue
		}
		b.Run(f.name+"/inquest", func(b *testing.B) {
			for b.Loop() {
				if code := Run(context.Background(), []string{"bin", "inspect", "--json", f.path}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
					b.Fatalf("exit status %d", code)
				}
			}
		})
		b.Run(f.name+"/readelf", func(b *testing.B) {
			if readelf == "" {
				b.Skip("readelf not installed")
			}
			for b.Loop() {
				cmd := exec.Command(readelf, "-a", "-W", f.path)
				cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
				_ = cmd.Run() // readelf exits 1 after warnings on some files
			}
		})
	}
}
