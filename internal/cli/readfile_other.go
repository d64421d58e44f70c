//go:build !unix

package cli

// optionFileOpenFlags are added to O_RDONLY when readOptionFile opens a
// file; none exist on this platform (the fstat check still runs).
const optionFileOpenFlags = 0
