//go:build unix

package recording

import "syscall"

// openFlags are added to O_RDONLY when Load opens a file: O_NONBLOCK makes
// opening a FIFO (or a device) return at once instead of waiting for a
// writer, so the file type check after fstat always runs. It has no effect
// on reads of a regular file.
const openFlags = syscall.O_NONBLOCK
