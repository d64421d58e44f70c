//go:build !unix

package bin

// openFlags are added to O_RDONLY when a bin tool opens its input; none
// are needed where opening a named pipe path does not block.
const openFlags = 0
