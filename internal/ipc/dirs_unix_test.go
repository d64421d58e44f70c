//go:build unix

package ipc

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// TestDirsRule: XDG_RUNTIME_DIR, when set, is the only place; without it
// /run/user/<uid> is used when it is this user's private directory, and
// /tmp/inquest-<uid> is the fallback (and the second place searched).
func TestDirsRule(t *testing.T) {
	uid := strconv.Itoa(os.Getuid())
	tmp := filepath.Join("/tmp", "inquest-"+uid)
	t.Run("xdg set", func(t *testing.T) {
		d := t.TempDir()
		t.Setenv("XDG_RUNTIME_DIR", d)
		if got, want := Dirs(), []string{filepath.Join(d, "inquest")}; !reflect.DeepEqual(got, want) {
			t.Fatalf("Dirs() = %q, want %q", got, want)
		}
	})
	t.Run("xdg unset", func(t *testing.T) {
		t.Setenv("XDG_RUNTIME_DIR", "")
		want := []string{tmp}
		if d := userRuntimeDir(); d != "" {
			want = []string{filepath.Join(d, "inquest"), tmp}
		}
		got := Dirs()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Dirs() = %q, want %q", got, want)
		}
		if Dir() != got[0] || Path() != filepath.Join(got[0], SocketName) {
			t.Fatalf("Dir() %q / Path() %q disagree with Dirs()[0] %q", Dir(), Path(), got[0])
		}
		if !reflect.DeepEqual(altPaths(), func() []string {
			var out []string
			for _, d := range got[1:] {
				out = append(out, filepath.Join(d, SocketName))
			}
			return out
		}()) {
			t.Fatalf("altPaths() = %q for Dirs() %q", altPaths(), got)
		}
	})
	t.Run("run user dir must be private", func(t *testing.T) {
		d := filepath.Join("/run/user", uid)
		fi, err := os.Lstat(d)
		if err != nil {
			t.Skipf("%s: %v", d, err)
		}
		usable := fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 && fi.Mode().Perm()&0o077 == 0
		if got := userRuntimeDir() != ""; got != usable {
			t.Fatalf("userRuntimeDir() usable=%v for %s mode %v", got, d, fi.Mode())
		}
	})
}
