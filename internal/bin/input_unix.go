//go:build unix

package bin

import (
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openFlags are added to O_RDONLY when a bin tool opens its input:
// O_NONBLOCK makes opening a FIFO (or a device) return at once instead of
// waiting for a writer, so the file type check after fstat always runs.
// It has no effect on reads of a regular file.
const openFlags = syscall.O_NONBLOCK

// mapFile maps size bytes of fh read-only and shared; unmap releases the
// mapping (from any goroutine). ok is false when the mapping fails (the
// caller reads the file instead). The goroutines that read the mapping set
// themselves to panic on a fault (readFile, keptInspection).
func mapFile(fh *os.File, size int64) (data []byte, unmap func(), ok bool) {
	if int64(int(size)) != size {
		return nil, nil, false
	}
	b, err := unix.Mmap(int(fh.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	mappings.Lock()
	mappings.m[start] = b
	mappings.Unlock()
	return b, func() {
		mappings.Lock()
		delete(mappings.m, start)
		mappings.Unlock()
		_ = unix.Munmap(b)
	}, true
}

// mappings holds the live file mappings made by mapFile, by start address.
var mappings = struct {
	sync.Mutex
	m map[uintptr][]byte
}{m: map[uintptr][]byte{}}

// releasePages drops b's whole pages from the process's resident set when
// b lies inside a live read-only file mapping (madvise MADV_DONTNEED: the
// page cache keeps them and a later read faults them back in). It does
// nothing for any other memory.
func releasePages(b []byte) {
	if len(b) == 0 {
		return
	}
	lo := uintptr(unsafe.Pointer(&b[0]))
	hi := lo + uintptr(len(b))
	mappings.Lock()
	defer mappings.Unlock()
	for start, m := range mappings.m {
		if lo < start || hi > start+uintptr(len(m)) {
			continue
		}
		// The mapping starts on a page boundary, so page-aligned
		// offsets into it are page-aligned addresses.
		page := uintptr(os.Getpagesize())
		a, z := (lo-start+page-1)&^(page-1), (hi-start)&^(page-1)
		if z > a {
			_ = unix.Madvise(m[a:z], unix.MADV_DONTNEED)
		}
		return
	}
}
