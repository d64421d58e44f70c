//go:build unix

package bin

import (
	"os"
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFlags are added to O_RDONLY when a bin tool opens its input:
// O_NONBLOCK makes opening a FIFO (or a device) return at once instead of
// waiting for a writer, so the file type check after fstat always runs.
// It has no effect on reads of a regular file.
const openFlags = syscall.O_NONBLOCK

// mapFile maps size bytes of fh read-only and shared, and sets the calling
// goroutine to panic (not crash) on a fault in the mapping until unmap;
// ok is false when the mapping fails (the caller reads the file instead).
func mapFile(fh *os.File, size int64) (data []byte, unmap func(), ok bool) {
	if int64(int(size)) != size {
		return nil, nil, false
	}
	b, err := unix.Mmap(int(fh.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	prev := debug.SetPanicOnFault(true)
	return b, func() {
		debug.SetPanicOnFault(prev)
		_ = unix.Munmap(b)
	}, true
}
