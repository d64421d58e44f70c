package sample

import (
	"bytes"
	"slices"
	"testing"
)

func TestPageArgv(t *testing.T) {
	tests := []struct {
		name          string
		raw           string
		off, limit    int
		want          []string
		next, total   int
		cut, truncate bool
	}{
		{"empty (kernel thread)", "", 0, 10, []string{}, 0, 0, false, false},
		{"whole", "a\x00bb\x00", 0, 100, []string{"a", "bb"}, 2, 2, false, false},
		{"no limit", "a\x00bb\x00", 0, 0, []string{"a", "bb"}, 2, 2, false, false},
		{"fits exactly", "a\x00bb\x00", 0, 5, []string{"a", "bb"}, 2, 2, false, false},
		{"first page", "a\x00bb\x00ccc\x00", 0, 5, []string{"a", "bb"}, 2, 3, false, true},
		{"second page", "a\x00bb\x00ccc\x00", 2, 5, []string{"ccc"}, 3, 3, false, true},
		{"cut argument", "abcdef\x00g\x00", 0, 3, []string{"abc"}, 1, 2, true, true},
		{"past the end", "a\x00", 5, 10, []string{}, 1, 1, false, true},
		{"no trailing NUL (setproctitle)", "a b c", 0, 100, []string{"a b c"}, 1, 1, false, false},
		{"empty arguments", "\x00\x00", 0, 100, []string{"", ""}, 2, 2, false, false},
	}
	for _, tt := range tests {
		p := PageArgv([]byte(tt.raw), tt.off, tt.limit, true)
		if !slices.Equal(p.Args, tt.want) || p.Next != tt.next || p.Total != tt.total || p.Cut != tt.cut || p.Truncated() != tt.truncate || p.Bytes != len(tt.raw) {
			t.Errorf("%s: %q next %d total %d cut %v truncated %v bytes %d", tt.name, p.Args, p.Next, p.Total, p.Cut, p.Truncated(), p.Bytes)
		}
	}
}

// FuzzPageArgv: paging from offset 0 by Next always ends and, joined,
// gives back every argument (cut ones as their prefixes).
func FuzzPageArgv(f *testing.F) {
	f.Add([]byte("a\x00bb\x00ccc\x00"), 3)
	f.Add([]byte(""), 1)
	f.Add([]byte("x\x00\x00y"), 1)
	f.Fuzz(func(t *testing.T, raw []byte, limit int) {
		if limit <= 0 || limit > 1<<16 {
			limit = 1 + (limit&0xff+0xff)%256
		}
		all := PageArgv(raw, 0, 0, true)
		var got []string
		off := 0
		for pages := 0; off < all.Total; pages++ {
			if pages > all.Total {
				t.Fatal("paging does not end")
			}
			p := PageArgv(raw, off, limit, true)
			if p.Next <= off || p.Total != all.Total {
				t.Fatalf("offset %d: next %d total %d", off, p.Next, p.Total)
			}
			got = append(got, p.Args...)
			off = p.Next
		}
		if len(got) != len(all.Args) {
			t.Fatalf("%d arguments paged, %d in all", len(got), len(all.Args))
		}
		for i := range got {
			if !bytes.HasPrefix([]byte(all.Args[i]), []byte(got[i])) {
				t.Fatalf("argument %d", i)
			}
		}
	})
}
