package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoadFromCache: an unchanged file is parsed once; an in-place
// rewrite of the same size with the mtime restored (only ctime changes),
// a rename over it and a removal are each seen by the next LoadFrom.
func TestLoadFromCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inquest.toml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	load := func() File {
		t.Helper()
		f, err := LoadFrom(path)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	write(`recording_directory = "/aaaa"` + "\n")
	before := parses.Load()
	if f := load(); f.RecordingDirectory != "/aaaa" {
		t.Fatalf("first load: %q", f.RecordingDirectory)
	}
	f := load()
	if f.RecordingDirectory != "/aaaa" {
		t.Fatalf("second load: %q", f.RecordingDirectory)
	}
	if n := parses.Load() - before; n != 1 {
		t.Fatalf("two loads of an unchanged file parsed it %d times, want 1", n)
	}
	// a caller's change to the returned File does not reach the cache
	f.Tracking = append(f.Tracking, "x")
	if g := load(); len(g.Tracking) != 0 {
		t.Fatalf("cache changed by a caller: %v", g.Tracking)
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte(`recording_directory = "/bbbb"`+"\n"), 0); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(path); fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("rewrite changed size or mtime: %v %v", fi2.Size(), fi2.ModTime())
	}
	if g := load(); g.RecordingDirectory != "/bbbb" {
		t.Fatalf("in-place rewrite with mtime restored not seen: %q", g.RecordingDirectory)
	}

	if err := SaveTo(path, File{RecordingDirectory: "/cccc"}); err != nil {
		t.Fatal(err)
	}
	if g := load(); g.RecordingDirectory != "/cccc" {
		t.Fatalf("atomic replace not seen: %q", g.RecordingDirectory)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if g := load(); g.RecordingDirectory != "" {
		t.Fatalf("removed file still read: %q", g.RecordingDirectory)
	}
}
