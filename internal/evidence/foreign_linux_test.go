//go:build linux

package evidence

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

const foreignHelperEnv = "INQUEST_EVIDENCE_FOREIGN_HELPER"

// TestForeignStoreHelper runs as uid 65534 inside TestForeignStoreNamesOwner:
// it opens each store directory it is given and prints the error per
// line. It does nothing in a normal run.
func TestForeignStoreHelper(t *testing.T) {
	dirs := os.Getenv(foreignHelperEnv)
	if dirs == "" {
		t.Skip("helper process of TestForeignStoreNamesOwner")
	}
	for _, d := range strings.Split(dirs, ":") {
		s, err := Open(d)
		if err == nil {
			s.Close()
		}
		b, _ := json.Marshal(map[string]any{"dir": d, "error": contract.AsError(err)})
		fmt.Println("RESULT " + string(b))
	}
}

// TestForeignStoreNamesOwner: a user whose INQUEST_DATA_DIR points at
// another user's store (root's, created here by Open) is told whose
// directory is in the way, its path and mode, and whether it could not
// search or not create: PERMISSION_DENIED, not "cannot be created" for a
// directory that exists. It runs this test binary as uid 65534 with
// setpriv, since root passes every permission check.
func TestForeignStoreNamesOwner(t *testing.T) {
	if os.Getenv(foreignHelperEnv) != "" {
		t.Skip("inside the helper")
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run the check as another user (setpriv --reuid=65534)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is required for this test; .ci/run installs it")
	}
	stage, err := os.MkdirTemp("", "inquest-foreign")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stage) })
	os.Chmod(stage, 0o755)
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(stage, "helper")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// root's stores: one under a home only root may search, one in a
	// directory everyone may search.
	home := filepath.Join(stage, "root-home")
	hidden := filepath.Join(home, ".local", "share", "inquest", "evidence")
	visDir := filepath.Join(stage, "shared")
	visible := filepath.Join(visDir, "evidence")
	for _, d := range []string{hidden, visible} {
		s, err := Open(d)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(visDir, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(visDir, "new", "evidence")

	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "-test.run=^TestForeignStoreHelper$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), foreignHelperEnv+"="+strings.Join([]string{hidden, visible, missing}, ":"), "HOME="+stage, "GOCOVERDIR="+os.TempDir())
	cmd.Dir = stage
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	got := map[string]*contract.Error{}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			var r struct {
				Dir   string          `json:"dir"`
				Error *contract.Error `json:"error"`
			}
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			got[r.Dir] = r.Error
		}
	}
	tests := []struct {
		name, dir, blockedBy, mode string
		says                       []string
	}{
		{"store behind a home only its owner may search", hidden, home, "0700", []string{"cannot be reached", "may not search " + home, "owned by uid 0", "uid 65534"}},
		{"visible store of another user", visible, "", "", []string{visible, "owned by uid 0, not by this user (uid 65534)"}},
		{"store to create where this user may not write", missing, visDir, "0755", []string{"cannot be created", "may not create entries in " + visDir, "owned by uid 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := got[tt.dir]
			if e == nil {
				t.Fatalf("no error for %s:\n%s", tt.dir, out)
			}
			if e.Code != contract.CodePermissionDenied || e.Retryable {
				t.Errorf("%s retryable %v: %s", e.Code, e.Retryable, e.Message)
			}
			for _, s := range tt.says {
				if !strings.Contains(e.Message, s) {
					t.Errorf("message lacks %q: %s", s, e.Message)
				}
			}
			if e.Details["directory"] != tt.dir {
				t.Errorf("details.directory %v", e.Details["directory"])
			}
			if tt.blockedBy == "" {
				return
			}
			if e.Details["blocked_by"] != tt.blockedBy || e.Details["owner_uid"] != float64(0) || e.Details["mode"] != tt.mode || e.Details["uid"] != float64(65534) {
				t.Errorf("details %v", e.Details)
			}
		})
	}
}
