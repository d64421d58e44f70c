//go:build unix

package cli

import "syscall"

// optionFileOpenFlags are added to O_RDONLY when readOptionFile opens a
// file: O_NONBLOCK makes opening a FIFO return at once instead of waiting
// for a writer, so the file type check after fstat always runs.
const optionFileOpenFlags = syscall.O_NONBLOCK
