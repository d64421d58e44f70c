//go:build linux || darwin

package evidence

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// canSweep says temp files are swept on open: flock(2) tells a live
// writer's temp file from a dead one's.
const canSweep = true

// ownerOf returns the uid owning fi (Stat_t.Uid) and whether it is known.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// currentUID is the effective uid that must own the store's directories.
func currentUID() (int, bool) { return os.Geteuid(), true }

// isNoSpace reports ENOSPC (no space left on device) or EDQUOT (disk quota
// exceeded) anywhere in err's chain.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// freeBytes returns the bytes available to unprivileged users on the file
// system holding dir (statfs(2) f_bavail × f_bsize).
func freeBytes(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}

// lockFile takes flock(2) on f: exclusive or shared, blocking.
func lockFile(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// tryLockFile takes an exclusive flock(2) on f without waiting and reports
// whether it got it (a temp file whose writer died has no lock).
func tryLockFile(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// fileIno returns fi's inode number (Stat_t.Ino), 0 when unknown.
func fileIno(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
