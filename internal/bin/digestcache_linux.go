package bin

import (
	"os"
	"syscall"
)

// fileStateOf reads fi's device, inode and times (Linux stat).
func fileStateOf(fi os.FileInfo) fileState {
	s, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileState{}
	}
	return fileState{dev: uint64(s.Dev), ino: uint64(s.Ino), mtime: s.Mtim.Nano(), ctime: s.Ctim.Nano(), ok: true}
}
