//go:build linux

package capture

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/sample"
)

// holdFiles starts the helper holding each of paths open (any bytes).
func holdFiles(t *testing.T, paths ...string) *child {
	t.Helper()
	enc := make([]string, len(paths))
	for i, p := range paths {
		enc[i] = base64.StdEncoding.EncodeToString([]byte(p))
	}
	return startChild(t, "CAPTURE_FILES_B64="+strings.Join(enc, ","))
}

// exactPath returns the exact bytes of a row's path (path_bytes when the
// display string is lossy).
func exactPath(t *testing.T, r *Row) string {
	t.Helper()
	v, _ := r.Get("path")
	s, _ := v.(string)
	if b, ok := r.Get("path_bytes"); ok {
		d, err := sample.DecodeBytes(b.(string))
		if err != nil {
			t.Fatalf("path_bytes %v: %v", b, err)
		}
		if sample.Display(d) != s {
			t.Fatalf("path %q is not the display form of path_bytes %q", s, d)
		}
		return d
	}
	if sample.Lossy(s) {
		t.Fatalf("lossy path %q without path_bytes", s)
	}
	return s
}

func rowsUnder(t *testing.T, c *Capture, dir string) map[string]*Row {
	t.Helper()
	out := map[string]*Row{}
	for i := range c.Rows {
		r := &c.Rows[i]
		p := exactPath(t, r)
		if !strings.HasPrefix(p, dir+"/") {
			continue
		}
		key := filepath.Base(p)
		if d, _ := r.Get("deleted"); d == true {
			key += "|deleted"
		}
		if _, dup := out[key]; dup {
			t.Fatalf("two rows for %q", key)
		}
		out[key] = r
	}
	return out
}

// TestDeletedIsAFact: an unlinked file, a live file literally named
// "real (deleted)", a file unlinked under one name while a hard link
// keeps it, and a file named "gone (deleted)" that is then unlinked. The
// rows carry deleted from st_nlink and device/inode, and the path without
// the kernel's suffix only when deleted. lsof +L1 (files with link count
// below 1), run in the same test, agrees on the unlinked ones.
func TestDeletedIsAFact(t *testing.T) {
	dir := t.TempDir()
	held := filepath.Join(dir, "held.txt")
	real := filepath.Join(dir, "real (deleted)")
	linked := filepath.Join(dir, "linked.txt")
	gone := filepath.Join(dir, "gone (deleted)")
	for _, p := range []string{held, real, linked, gone} {
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(linked, filepath.Join(dir, "other-link")); err != nil {
		t.Fatal(err)
	}
	c := holdFiles(t, held, real, linked, gone)
	for _, p := range []string{held, linked, gone} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{ // base name (|deleted) -> present
		"held.txt|deleted": true, "real (deleted)": true, "linked.txt|deleted": true, "gone (deleted)|deleted": true,
	}
	of, err := OpenFiles(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	got := rowsUnder(t, of, dir)
	if len(got) != len(want) {
		t.Fatalf("open_files rows under %s: %v", dir, keys(got))
	}
	for k := range want {
		if got[k] == nil {
			t.Fatalf("open_files: no row %q in %v", k, keys(got))
		}
		if kind, _ := got[k].Get("kind"); kind != "file" {
			t.Fatalf("%s: kind %v", k, kind)
		}
	}
	fu, err := FileUsersFiltered(context.Background(), Filter{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	var mine Capture
	for _, r := range fu.Rows {
		if r.Proc == c.id {
			mine.Rows = append(mine.Rows, r)
		}
	}
	if got := rowsUnder(t, &mine, dir); len(got) != len(want) {
		t.Fatalf("file_users rows: %v", keys(got))
	}
	// reference: lsof lists the files with link count < 1
	if _, err := exec.LookPath("lsof"); err != nil {
		t.Skip("lsof not installed (.ci/run installs it)")
	}
	out, err := exec.Command("lsof", "-n", "-P", "-a", "-p", strconv.Itoa(int(c.id.PID)), "+L1", "-Fn").Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("lsof: %v", err)
	}
	var unlinked []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "n"+dir+"/") {
			unlinked = append(unlinked, strings.TrimSuffix(filepath.Base(l[1:]), " (deleted)"))
		}
	}
	// held.txt and "gone (deleted)" have no links left; linked.txt keeps one
	if strings.Join(unlinked, "|") != "held.txt|gone (deleted)" {
		t.Fatalf("lsof +L1 lists %q", unlinked)
	}
	for _, n := range unlinked {
		r := got[n+"|deleted"]
		if r == nil {
			t.Fatalf("lsof's unlinked %q is not deleted here", n)
		}
	}
}

func keys(m map[string]*Row) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestNonUTF8PathsRoundTrip: real files whose names hold bytes that are
// not UTF-8, control characters, a backslash and U+FFFD itself. Each row's
// path is the display string (U+FFFD per bad byte) with path_bytes only
// when lossy; path_bytes decodes to the exact name; a path_bytes filter of
// the exact name selects exactly that row.
func TestNonUTF8PathsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	names := []string{"bad\xffbyte.txt", "latin1-caf\xe9", "tab\there", "nl\nline", `back\xffslash`, "real-\uFFFD-rune", "high-\x80\x81\xfe", "plain.txt"}
	var paths []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c := holdFiles(t, paths...)
	of, err := OpenFiles(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	got := rowsUnder(t, of, dir)
	for _, n := range names {
		r := got[n]
		if r == nil {
			t.Fatalf("no row for %q (rows %q)", n, keys(got))
		}
		_, hasBytes := r.Get("path_bytes")
		if hasBytes != sample.Lossy(n) {
			t.Fatalf("%q: path_bytes present %v, lossy %v", n, hasBytes, sample.Lossy(n))
		}
		f := Filter{PathBytes: base64.StdEncoding.EncodeToString([]byte(filepath.Join(dir, n)))}
		if err := f.Validate(KindOpenFiles, ""); err != nil {
			t.Fatal(err)
		}
		matched := 0
		for i := range of.Rows {
			if f.Match(&of.Rows[i]) {
				matched++
				if exactPath(t, &of.Rows[i]) != filepath.Join(dir, n) {
					t.Fatalf("filter for %q matched %q", n, exactPath(t, &of.Rows[i]))
				}
			}
		}
		if matched != 1 {
			t.Fatalf("filter for %q matched %d rows", n, matched)
		}
	}
	// U+FFFD in a query matches the real rune only, never a bad byte
	f := Filter{Path: "\uFFFD"}
	for i := range of.Rows {
		if f.Match(&of.Rows[i]) && !strings.Contains(exactPath(t, &of.Rows[i]), "real-\uFFFD-rune") {
			t.Fatalf("U+FFFD matched %q", exactPath(t, &of.Rows[i]))
		}
	}
}
