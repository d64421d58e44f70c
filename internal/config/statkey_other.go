//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package config

import "io/fs"

// statKey is not kept where the stat has no ctime: every LoadFrom reads
// the file.
func statKey(fs.FileInfo) (fileKey, bool) { return fileKey{}, false }
