package testbuild

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallTmpfs mounts a tmpfs of size (mount(8)'s size= option, e.g. "4k",
// "256k", "1m"), mode 0700, on a new directory under t.TempDir() and
// returns its path; it is unmounted (lazily, umount -l) at cleanup. A
// disk-full test needs a real small file system: the test is skipped when
// mount(8) fails (not root, no CAP_SYS_ADMIN, not Linux).
func SmallTmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a full disk needs a small tmpfs, and it could not be mounted here (%v: %s); run as root on Linux", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// FillDisk appends 4 KiB blocks to dir/filler until the file system
// reports ENOSPC and returns the filler's path (remove it to free the
// space). Any other write error fails the test.
func FillDisk(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return p
		}
	}
}
