//go:build !linux

package bin

import "os"

// pseudoFS reports no pseudo-file system outside Linux.
func pseudoFS(*os.File) string { return "" }
