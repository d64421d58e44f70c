//go:build linux

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogViewRefusesStateChangesInTmux drives the real TUI in tmux into
// Log view (L, Enter on a saved recording) and calls, from an agent's
// `inquest mcp` bridge, every state-changing tool and every live
// investigation: each is ACTIVITY_CONFLICT, while read-only tools
// (status, catalogs, tracking and profile reads, saved-log reads) keep
// working; back in Live the same state change succeeds.
func TestLogViewRefusesStateChangesInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
	e := newHeEnv(t)
	dir := filepath.Join(e.base, "data", "inquest", "recordings")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeRecording(t, filepath.Join(dir, "saved.log"))
	work := filepath.Join(e.base, "work")
	os.MkdirAll(work, 0o755)
	m := startTUIInTmux(t, e, work, 120, 40)
	m.waitText("PID USER")
	m.keys("L")
	m.waitText("Saved recordings")
	m.waitText("> saved")
	m.keys("Enter")
	m.waitFor("Log view", func(s string) bool { return strings.Contains(headerLine(s), "LOG saved") })

	b := e.bridge()
	rev, _ := dig(b.mustCall("get_tracking", nil), "data", "revision").(string)
	if rev == "" {
		t.Fatal("get_tracking gave no revision")
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"update_tracking", map[string]any{"operation_id": "lv-t", "expected_revision": rev, "action": "add", "process_name": "inqlogview"}},
		{"update_profile", map[string]any{"operation_id": "lv-p", "expected_revision": rev, "action": "save_as", "name": "lvprof"}},
		{"start_recording", map[string]any{"operation_id": "lv-r", "expected_revision": rev, "interval_seconds": 1}},
		{"set_runtime_collection", map[string]any{"operation_id": "lv-c", "expected_revision": rev, "pid": os.Getpid(), "enabled": true}},
		{"list_processes", nil},
		{"get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"pid": os.Getpid()}}}},
		{"get_history", map[string]any{"metric_ids": []string{"memory_used_bytes"}}},
		{"rank_processes", map[string]any{"metric_id": "cpu_time_ns"}},
		{"start_capture", map[string]any{"kind": "network"}},
		{"get_process_info", map[string]any{"pid": os.Getpid()}},
		{"wait_condition", map[string]any{"condition": "process_present", "process_name": "inqlogview", "timeout_ms": 1000}},
	} {
		if res, isErr := b.call(c.tool, c.args); !isErr || errCode(res) != "ACTIVITY_CONFLICT" {
			t.Errorf("%s in Log view: %v %v", c.tool, errCode(res), res["error"])
		}
	}
	for _, tool := range []string{"get_status", "get_tracking", "list_profiles", "get_recording", "list_metrics", "list_logs"} {
		if res, isErr := b.call(tool, nil); isErr {
			t.Errorf("%s in Log view: %v", tool, res["error"])
		}
	}
	if st := b.mustCall("get_status", nil); dig(st, "data", "activity") != "log" {
		t.Errorf("get_status activity %v, want log", dig(st, "data", "activity"))
	}
	if tr := b.mustCall("get_tracking", nil); dig(tr, "data", "revision") != rev {
		t.Errorf("tracking changed in Log view: revision %v, was %s", dig(tr, "data", "revision"), rev)
	}

	// Back in Live the refused change goes through.
	m.keys("Escape")
	m.keys("L")
	m.waitFor("Live again", func(s string) bool {
		return strings.Contains(headerLine(s), "LIVE") && !strings.Contains(headerLine(s), "LOG")
	})
	waitFact(t, "the host back in Live", func() bool {
		return dig(b.mustCall("get_status", nil), "data", "activity") != "log"
	})
	b.mustCall("update_tracking", map[string]any{"operation_id": "lv-t2", "expected_revision": rev, "action": "add", "process_name": "inqlogview"})
}
