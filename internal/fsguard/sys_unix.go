//go:build unix

package fsguard

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

func currentUID() (int, bool) { return os.Geteuid(), true }

// hasModes: Unix permission bits are meaningful here.
func hasModes() bool { return true }

// writable asks access(2) whether this user may write and search dir
// (W_OK|X_OK, with the effective ids: faccessat AT_EACCESS).
func writable(dir string) error {
	return unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS)
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
	case syscall.ENOSPC:
		return "ENOSPC"
	case syscall.EDQUOT:
		return "EDQUOT"
	case syscall.EROFS:
		return "EROFS"
	case syscall.EEXIST:
		return "EEXIST"
	case syscall.ENOTDIR:
		return "ENOTDIR"
	case syscall.EISDIR:
		return "EISDIR"
	case syscall.ENAMETOOLONG:
		return "ENAMETOOLONG"
	case syscall.EIO:
		return "EIO"
	case syscall.ELOOP:
		return "ELOOP"
	case syscall.EAGAIN:
		return "EAGAIN"
	case syscall.EBUSY:
		return "EBUSY"
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.EMFILE:
		return "EMFILE"
	case syscall.ENFILE:
		return "ENFILE"
	case syscall.EXDEV:
		return "EXDEV"
	case syscall.ENOTEMPTY:
		return "ENOTEMPTY"
	}
	return ""
}
