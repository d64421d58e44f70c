package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestEvidenceUnreadableStoreSameCode: a store directory its user cannot
// search (mode 000) gives every evidence command the store's own
// PERMISSION_DENIED with details.cause EACCES, not retryable: query and
// show (through the store) and location and sweep (which first look
// whether a store exists) alike.
func TestEvidenceUnreadableStoreSameCode(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the commands as nobody")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	bin := heBinary(t)
	base, err := os.MkdirTemp("", "inquest-evperm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "store"), 0o700); os.RemoveAll(base) })
	store := filepath.Join(base, "store")
	if err := os.MkdirAll(filepath.Join(store, "manifests"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{base, store, filepath.Join(store, "manifests")} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(base, 0o755)
	if err := os.Chmod(store, 0); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"evidence", "query"}, {"evidence", "show", "ev-0000000000000000"}, {"evidence", "location"}, {"evidence", "sweep"}} {
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--", bin}, append(args, "--json")...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + base, "INQUEST_DATA_DIR=" + store, "XDG_RUNTIME_DIR=" + base, "XDG_STATE_HOME=" + base, "XDG_CONFIG_HOME=" + base}
		out, _ := cmd.Output()
		var env struct {
			Error struct {
				Code      string
				Retryable bool
				Details   map[string]any
			}
		}
		if err := json.Unmarshal(out, &env); err != nil {
			t.Errorf("%v: not an error envelope: %v\n%s", args, err, out)
			continue
		}
		if env.Error.Code != "PERMISSION_DENIED" || env.Error.Retryable || env.Error.Details["cause"] != "EACCES" {
			t.Errorf("%v: %+v, want PERMISSION_DENIED, not retryable, cause EACCES", args, env.Error)
		}
	}
}
