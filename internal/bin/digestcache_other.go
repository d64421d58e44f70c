//go:build !linux

package bin

import "os"

// fileStateOf is not reported on this platform: no digest is kept.
func fileStateOf(os.FileInfo) fileState { return fileState{} }
