//go:build linux

package perf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDestinationsCheckedBeforeWork: rescue_evidence to a destination
// that cannot be created (a NUL byte, a 300-byte name, a missing parent,
// an existing path) is refused with the specific error and field
// /destination before anything is staged (no .inquest-rescue-* directory
// appears beside it); capture_and_summarize_executions {preserve: true}
// with an evidence store that cannot be opened (a symbolic link, a
// directory writable by others) is refused with field /preserve before
// the workload runs.
func TestDestinationsCheckedBeforeWork(t *testing.T) {
	e := newCaptureEnv(t)
	marker := filepath.Join(e.dir, "ran")
	res := e.mustCall("capture_and_summarize_executions", map[string]any{"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"}})
	id, _ := data(res)["analysis_id"].(string)
	if id == "" {
		t.Fatalf("no analysis_id: %v", data(res))
	}
	parent := t.TempDir()
	existing := filepath.Join(parent, "exists")
	os.Mkdir(existing, 0o700)
	for _, tt := range []struct {
		name, dest, code, reason string
	}{
		{"NUL byte", filepath.Join(parent, "a\x00b"), "INVALID_ARGUMENT", "NUL"},
		{"300-byte name", filepath.Join(parent, strings.Repeat("n", 300)), "INVALID_ARGUMENT", "300 bytes"},
		{"missing parent", filepath.Join(parent, "no", "store"), "INVALID_ARGUMENT", "parent directory does not exist"},
		{"exists", existing, "STATE_CONFLICT", "already exists"},
		{"relative", "rel/store", "INVALID_ARGUMENT", "absolute"},
	} {
		m, code := e.call("rescue_evidence", map[string]any{"analysis_id": id, "destination": tt.dest})
		er, _ := m["error"].(map[string]any)
		d, _ := er["details"].(map[string]any)
		if string(code) != tt.code || er["field"] != "/destination" || !strings.Contains(toString(d["reason"]), tt.reason) {
			t.Errorf("%s: %s %v", tt.name, code, er)
		}
		if staged, _ := filepath.Glob(filepath.Join(parent, ".inquest-rescue-*")); len(staged) > 0 {
			t.Fatalf("%s: staged %v before refusing", tt.name, staged)
		}
	}

	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "store-link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	for _, store := range []string{link, open} {
		se := newEnvAt(t, store)
		if err := se.reg.Add(CaptureTools(se.rt)...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(se.rt.ReleaseCaptures)
		m, code := se.call("capture_and_summarize_executions", map[string]any{
			"target": target(se.dir, "sh", "-c", "echo ran >> "+marker), "provider": map[string]any{"kind": "direct"}, "preserve": true,
		})
		er, _ := m["error"].(map[string]any)
		if code != "PERMISSION_DENIED" || er["field"] != "/preserve" {
			t.Errorf("store %s: %s %v", store, code, er)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("store %s: the workload ran before the store was refused", store)
		}
	}
}

func toString(v any) string { s, _ := v.(string); return s }
