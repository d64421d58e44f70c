//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package config

import (
	"io/fs"
	"syscall"
)

// statKey returns fi's change key; ok is false when the stat has no
// device and inode.
func statKey(fi fs.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mtime: fi.ModTime().UnixNano(), ctime: ctimeNs(st)}, true
}
