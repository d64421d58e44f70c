package recording

import (
	"errors"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/fsguard"
)

// PrepareDirectory makes dir ready to hold recordings before a recording
// starts: created 0700 when missing, then checked as every directory
// inquest writes into is (fsguard.CheckDir): a symbolic link, a directory
// owned by another user or one writable by group or others (where another
// user could rename or delete recordings) is refused with
// PERMISSION_DENIED, details directory, setting ("recording_directory")
// and reason. Any other failure is returned as the *fsguard.Error it is,
// whose system error (ENOSPC, EACCES ...) errors.Is sees.
func PrepareDirectory(dir string) error {
	err := fsguard.MkdirChecked(dir, fsguard.GroupOther)
	var e *fsguard.Error
	if errors.As(err, &e) && e.Kind == fsguard.Unsafe {
		return contract.Errorf(contract.CodePermissionDenied,
			"the recording directory %s is refused: %s, so another user could rename or delete recordings there. Use a directory you own that only you can write (chmod go-w), or set recording_directory to one (`inquest settings set recording_directory DIR`)", dir, e.Reason).
			WithDetail("directory", dir).WithDetail("setting", "recording_directory").WithDetail("reason", e.Reason)
	}
	return err
}
