//go:build !unix

package bin

import "os"

// openFlags are added to O_RDONLY when a bin tool opens its input; none
// are needed where opening a named pipe path does not block.
const openFlags = 0

// mapFile never maps here: the file is read into memory instead.
func mapFile(fh *os.File, size int64) (data []byte, unmap func(), ok bool) {
	return nil, nil, false
}

// releasePages does nothing where files are not mapped.
func releasePages(b []byte) {}
