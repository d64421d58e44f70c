//go:build unix

package perf

import (
	"os"
	"syscall"
)

// keyOf returns the stat identity of path for the digest cache.
func keyOf(path string, fi os.FileInfo) (digestKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return digestKey{}, false
	}
	return digestKey{path: path, dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctimeNS: ctimeOf(st)}, true
}
