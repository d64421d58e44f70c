//go:build unix

package bin

import "syscall"

// openFlags are added to O_RDONLY when a bin tool opens its input:
// O_NONBLOCK makes opening a FIFO (or a device) return at once instead of
// waiting for a writer, so the file type check after fstat always runs.
// It has no effect on reads of a regular file.
const openFlags = syscall.O_NONBLOCK
