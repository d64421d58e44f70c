//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestServeLogNeverThroughSymlink (issue case 6): serve.log planted as a
// symbolic link (to an existing file or a dangling path) is refused and
// its target untouched; a state directory writable by others or a
// symbolic link is refused; a regular log is appended to.
func TestServeLogNeverThroughSymlink(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	os.Mkdir(dir, 0o700)
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o600)

	os.Symlink(victim, filepath.Join(dir, "serve.log"))
	if f, _, err := openServeLog(dir); err == nil {
		f.Close()
		t.Fatal("serve.log symlink to a file was followed")
	}
	os.Remove(filepath.Join(dir, "serve.log"))
	dangling := filepath.Join(base, "created-through-link")
	os.Symlink(dangling, filepath.Join(dir, "serve.log"))
	if f, _, err := openServeLog(dir); err == nil {
		f.Close()
		t.Fatal("dangling serve.log symlink was followed")
	}
	if _, err := os.Lstat(dangling); err == nil {
		t.Fatal("a file was created through the dangling link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Fatalf("the link target changed: %q", b)
	}
	os.Remove(filepath.Join(dir, "serve.log"))

	linkDir := filepath.Join(base, "linked-state")
	os.Symlink(dir, linkDir)
	if f, _, err := openServeLog(linkDir); err == nil {
		f.Close()
		t.Fatal("a symlinked state directory was used")
	}
	os.Chmod(dir, 0o777)
	if f, _, err := openServeLog(dir); err == nil {
		f.Close()
		t.Fatal("a world-writable state directory was used")
	}
	os.Chmod(dir, 0o700)

	f, p, err := openServeLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("line\n")
	f.Close()
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("serve.log: %v %v", fi, err)
	}
}
