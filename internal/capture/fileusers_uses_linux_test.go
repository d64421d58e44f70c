//go:build linux

package capture

import (
	"bytes"
	"testing"
)

// TestMapsFile: the lines of /proc/PID/maps that name a mapped file (a
// path and a non-zero inode) give their address range and path; anonymous
// and special mappings, and malformed lines, give none.
func TestMapsFile(t *testing.T) {
	for _, tt := range []struct {
		line, rng, path string
		ok              bool
	}{
		{"7f0000000000-7f0000001000 r-xp 00000000 08:01 123456                     /usr/lib/libodd (x).so", "7f0000000000-7f0000001000", "/usr/lib/libodd (x).so", true},
		{"00400000-00402000 r--p 00000000 fd:00 42 /usr/bin/a  b", "00400000-00402000", "/usr/bin/a  b", true},
		{"7f0000003000-7f0000004000 r-xp 00000000 08:01 654321 /usr/lib/gone.so (deleted)", "7f0000003000-7f0000004000", "/usr/lib/gone.so (deleted)", true},
		{"7f0000005000-7f0000006000 rw-p 00000000 00:00 0 ", "", "", false},
		{"7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0                          [vdso]", "", "", false},
		{"7ffff7fc1000-7ffff7fc3000 rw-s 00000000 00:01 1029                       /SYSV00000000 (deleted)", "7ffff7fc1000-7ffff7fc3000", "/SYSV00000000 (deleted)", true},
		{"7ffff7fc1000-7ffff7fc3000 rw-p 00000000 00:05 12 [heap]", "", "", false},
		{"", "", "", false},
		{"7f00-7f01 r-xp 0 08:01", "", "", false},
	} {
		rng, path, ok := mapsFile([]byte(tt.line))
		if ok != tt.ok || string(rng) != tt.rng || string(path) != tt.path {
			t.Errorf("mapsFile(%q) = %q, %q, %v; want %q, %q, %v", tt.line, rng, path, ok, tt.rng, tt.path, tt.ok)
		}
	}
}

// TestAccessText: psmisc fuser's letters in its order, F over f.
func TestAccessText(t *testing.T) {
	for _, tt := range []struct {
		a    uint8
		want string
	}{
		{0, ""},
		{accFile, "f"},
		{accFile | accFileWrite, "F"},
		{accCwd, "c"},
		{accMmap | accExe | accRoot, "rem"},
		{accFile | accRoot | accCwd | accExe | accMmap, "frcem"},
	} {
		if got := accessText(tt.a); got != tt.want {
			t.Errorf("accessText(%b) = %q, want %q", tt.a, got, tt.want)
		}
	}
}

// FuzzMapsFile: any line parses without a panic; a file mapping's range is
// the line's first field and its path is absolute and the line's tail.
func FuzzMapsFile(f *testing.F) {
	f.Add([]byte("7f0000000000-7f0000001000 r-xp 00000000 08:01 123456  /usr/lib/x.so"))
	f.Add([]byte("7f0000005000-7f0000006000 rw-p 00000000 00:00 0 "))
	f.Add([]byte("a b c d e /"))
	f.Fuzz(func(t *testing.T, line []byte) {
		rng, path, ok := mapsFile(line)
		if !ok {
			return
		}
		if len(path) == 0 || path[0] != '/' || !bytes.HasSuffix(line, path) {
			t.Fatalf("path %q of %q", path, line)
		}
		if first, _, _ := bytes.Cut(bytes.TrimLeft(line, " "), []byte(" ")); !bytes.Equal(first, rng) {
			t.Fatalf("range %q of %q", rng, line)
		}
	})
}
