//go:build linux

package capture

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// benchChildren starts two children holding 5,000 distinct open files
// each (10,000 extra fds) for the file_users benchmarks and returns the
// first child's first file.
func benchChildren(b *testing.B) string {
	b.Helper()
	var first string
	for i := 0; i < 2; i++ {
		d := b.TempDir()
		if i == 0 {
			first = filepath.Join(d, "held-0.dat")
		}
		startChild(b, "CAPTURE_DIR="+d, "CAPTURE_DISTINCT=5000")
	}
	return first
}

// BenchmarkFileUsers is inquest's host-wide scan (pinning, identity checks
// before and after, per-process path aggregation). Compare with
// BenchmarkBareWalk (target: within 2x) and BenchmarkLsof (target: at
// least 5x faster) from the same `go test -bench .` run; bench/fileusers
// prints all three side by side.
func BenchmarkFileUsers(b *testing.B) {
	benchChildren(b)
	b.ReportAllocs()
	b.ResetTimer()
	fds := 0
	for i := 0; i < b.N; i++ {
		c, err := FileUsers(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		fds = c.Coverage["fds_examined"].(int)
	}
	b.ReportMetric(float64(fds), "fds/op")
}

// BenchmarkFileUsersPath is the scan `inquest fuser PATH` asks for: a
// path filter that one of the 10,000 held files matches, so every fd link,
// the root, cwd and exe links and the maps of every process are read (the
// uses lsof -n -P PATH reads: compare BenchmarkLsofPath).
func BenchmarkFileUsersPath(b *testing.B) {
	path := benchChildren(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := FileUsersFiltered(context.Background(), Filter{Path: path})
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Rows) == 0 {
			b.Fatal("the held file was not found")
		}
	}
}

// BenchmarkBareWalk is the reference: readdir /proc, readdir each fd
// directory, readlink each fd; nothing else.
func BenchmarkBareWalk(b *testing.B) {
	benchChildren(b)
	b.ResetTimer()
	fds := 0
	for i := 0; i < b.N; i++ {
		fds = bareWalk(b)
	}
	b.ReportMetric(float64(fds), "fds/op")
}

// BenchmarkLsof runs `lsof -n -P` (no DNS, no port names) with output
// discarded; skipped when lsof is not installed.
func BenchmarkLsof(b *testing.B) {
	path, err := exec.LookPath("lsof")
	if err != nil {
		b.Skip("lsof not installed (Debian package lsof)")
	}
	benchChildren(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := exec.Command(path, "-n", "-P")
		if err := c.Run(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLsofPath runs `lsof -n -P PATH` on the file
// BenchmarkFileUsersPath looks for; skipped when lsof is not installed.
func BenchmarkLsofPath(b *testing.B) {
	lsof, err := exec.LookPath("lsof")
	if err != nil {
		b.Skip("lsof not installed (Debian package lsof)")
	}
	path := benchChildren(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := exec.Command(lsof, "-n", "-P", path)
		if err := c.Run(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				b.Fatal(err)
			}
		}
	}
}

func bareWalk(b *testing.B) int {
	names := readNames(b, "/proc")
	n := 0
	for _, name := range names {
		if c := name[0]; c < '0' || c > '9' {
			continue
		}
		dir := "/proc/" + name + "/fd/"
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		fds, _ := f.Readdirnames(-1)
		f.Close()
		for _, fd := range fds {
			if _, err := os.Readlink(dir + fd); err == nil {
				n++
			}
		}
	}
	return n
}

func readNames(b *testing.B, dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		b.Fatal(err)
	}
	_ = strconv.Itoa
	return names
}
