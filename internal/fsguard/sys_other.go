//go:build !unix

package fsguard

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Windows: no uid owner in FileInfo and no Unix permission bits; the
// symlink and directory checks still apply.
func ownerOf(fs.FileInfo) (int, bool) { return 0, false }

func currentUID() (int, bool) { return 0, false }

func hasModes() bool { return false }

// writable creates and removes a probe directory in dir.
func writable(dir string) error {
	p, err := os.MkdirTemp(dir, ".inquest-probe-*")
	if err != nil {
		return err
	}
	return os.Remove(filepath.Clean(p))
}

// errnoName is the symbolic name of the errnos inquest reports.
func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EEXIST:
		return "EEXIST"
	case syscall.ENOTDIR:
		return "ENOTDIR"
	case syscall.EIO:
		return "EIO"
	}
	return ""
}
