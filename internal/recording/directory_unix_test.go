//go:build unix

package recording

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestPrepareDirectory: the recording directory is guarded like the
// evidence store: a symbolic link (even to a good directory) and a 0777
// directory are refused with PERMISSION_DENIED naming the setting; a
// missing one is created 0700; a private one is accepted as it is.
func TestPrepareDirectory(t *testing.T) {
	base := t.TempDir()
	good := filepath.Join(base, "good")
	os.Mkdir(good, 0o700)
	link := filepath.Join(base, "link")
	os.Symlink(good, link)
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	for _, tt := range []struct {
		name, dir string
		refused   bool
	}{
		{"private", good, false},
		{"missing", filepath.Join(base, "new", "recordings"), false},
		{"symlink", link, true},
		{"0777", open, true},
	} {
		err := PrepareDirectory(tt.dir)
		if !tt.refused {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
				continue
			}
			if fi, err := os.Lstat(tt.dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: mode %v %v", tt.name, fi.Mode(), err)
			}
			continue
		}
		ce := contract.AsError(err)
		if err == nil || ce.Code != contract.CodePermissionDenied || ce.Details["setting"] != "recording_directory" || ce.Details["directory"] != tt.dir {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}
