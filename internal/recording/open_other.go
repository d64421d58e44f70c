//go:build !unix

package recording

// openFlags are added to O_RDONLY when Load opens a file; none are needed
// on this platform (Load still refuses non-regular files after fstat).
const openFlags = 0
