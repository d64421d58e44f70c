//go:build linux

package perf

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const permHelperEnv = "INQUEST_PERF_PERMISSION_HELPER"

// TestPermissionHelper runs as uid 65534 inside TestUnreadableSourceIsPermissionDenied:
// it calls each tool on the paths it is given and prints tool, path, code
// and retryable per line. It does nothing in a normal run.
func TestPermissionHelper(t *testing.T) {
	paths := os.Getenv(permHelperEnv)
	if paths == "" {
		t.Skip("helper process of TestUnreadableSourceIsPermissionDenied")
	}
	e := newEnv(t)
	for _, p := range strings.Split(paths, ":") {
		for _, tc := range []struct {
			tool   string
			format []string
		}{
			{"summarize_profile", nil},
			{"summarize_profile", []string{"pprof"}},
			{"preview_artifact", []string{"text"}},
			{"summarize_benchmarks", nil},
		} {
			m, code := e.call(tc.tool, map[string]any{"sources": []any{pathSrc(p, tc.format...)}})
			er, _ := m["error"].(map[string]any)
			b, _ := json.Marshal(map[string]any{"tool": tc.tool, "path": p, "code": code, "retryable": er["retryable"], "field": er["field"]})
			fmt.Println("RESULT " + string(b))
		}
	}
}

// TestUnreadableSourceIsPermissionDenied (issue case 8): a source the
// user may not read (mode 0000, or inside a directory without search
// permission) is PERMISSION_DENIED, not retryable, naming the path field,
// for every perf tool, not INPUT_CHANGED. It runs this test binary as
// uid 65534 with setpriv, since root reads every file.
func TestUnreadableSourceIsPermissionDenied(t *testing.T) {
	if os.Getenv(permHelperEnv) != "" {
		t.Skip("inside the helper")
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run the check as another user (setpriv --reuid=65534)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is required for this test; .ci/run installs it")
	}
	stage, err := os.MkdirTemp("", "inquest-perm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stage) })
	os.Chmod(stage, 0o1777)
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(stage, "helper")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(stage, "cpu.pprof")
	os.WriteFile(unreadable, []byte("not readable by nobody\n"), 0o000)
	closed := filepath.Join(stage, "closed")
	os.Mkdir(closed, 0o700)
	hidden := filepath.Join(closed, "cpu.pprof")
	os.WriteFile(hidden, []byte("x\n"), 0o644)
	tmp := filepath.Join(stage, "tmp")
	os.Mkdir(tmp, 0o777)
	os.Chmod(tmp, 0o777)

	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "-test.run=^TestPermissionHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), permHelperEnv+"="+unreadable+":"+hidden, "TMPDIR="+tmp, "HOME="+tmp,
		"XDG_DATA_HOME="+tmp, "XDG_CONFIG_HOME="+tmp, "XDG_STATE_HOME="+tmp, "XDG_RUNTIME_DIR="+tmp, "INQUEST_DATA_DIR=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		rest, ok := strings.CutPrefix(line, "RESULT ")
		if !ok {
			continue
		}
		var r map[string]any
		json.Unmarshal([]byte(rest), &r)
		n++
		if r["code"] != "PERMISSION_DENIED" || r["retryable"] != false || r["field"] != "/sources/0/path" {
			t.Errorf("%v on %v: code %v retryable %v field %v, want PERMISSION_DENIED, false, /sources/0/path", r["tool"], r["path"], r["code"], r["retryable"], r["field"])
		}
	}
	if n != 8 {
		t.Fatalf("helper reported %d results, want 8:\n%s", n, out)
	}
}
