//go:build !unix

package perf

import "os"

// keyOf disables the digest cache where no change time is available: every
// call rehashes.
func keyOf(path string, fi os.FileInfo) (digestKey, bool) { return digestKey{}, false }
