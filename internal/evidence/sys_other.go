//go:build !(linux || darwin)

package evidence

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// canSweep is false where flock(2) is missing: a live writer's temp file
// cannot be told from a dead one's, so none is removed.
const canSweep = false

func ownerOf(fs.FileInfo) (int, bool) { return 0, false }

func currentUID() (int, bool) { return 0, false }

func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

func freeBytes(string) (uint64, bool) { return 0, false }

func lockFile(*os.File, bool) error { return nil }

func tryLockFile(*os.File) bool { return false }

func fileIno(fs.FileInfo) uint64 { return 0 }
