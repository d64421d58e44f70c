package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/recording"
)

func readRecording(t *testing.T, path string) *recording.Info {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	in, err := recording.Read(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestRecordingRules: start needs a non-empty tracking list and the
// current revision; a running recording fixes tracking and profile
// load/save (rename is still allowed) and refuses a second start; the
// 24-hour limit stops it with an end record; the host's stop closes an
// active one with an end record.
func TestRecordingRules(t *testing.T) {
	h := testHost(t, 100*time.Millisecond, nil)
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	s := h.NewSession()
	defer s.Close()
	start := func(id string) (map[string]any, error) {
		d, _, err := call(t, h, s, "start_recording", map[string]any{"operation_id": id, "expected_revision": revision(t, h, s), "interval_seconds": 1})
		return d, err
	}
	_, err := start("r-empty")
	wantCode(t, err, contract.CodeStateConflict)
	_, _, err = call(t, h, s, "start_recording", map[string]any{"operation_id": "r-stale", "expected_revision": "nope-1", "interval_seconds": 1})
	wantCode(t, err, contract.CodeStateConflict)

	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "t1", "expected_revision": revision(t, h, s), "action": "add", "process_name": "nonexistent-proc"})
	mustCall(t, h, s, "update_profile", map[string]any{"operation_id": "p1", "expected_revision": revision(t, h, s), "action": "save_as", "name": "first"})

	old := MaxRecordingDuration
	MaxRecordingDuration = 2 * time.Second
	d, err := start("r1")
	MaxRecordingDuration = old
	if err != nil {
		t.Fatal(err)
	}
	out := d["outcome"].(map[string]any)
	path := filepath.Join(data, "inquest", "recordings", out["name"].(string))

	_, err = start("r2")
	wantCode(t, err, contract.CodeActivityConflict)
	_, _, err = call(t, h, s, "update_tracking", map[string]any{"operation_id": "t2", "expected_revision": revision(t, h, s), "action": "add", "process_name": "x"})
	wantCode(t, err, contract.CodeActivityConflict)
	_, _, err = call(t, h, s, "update_profile", map[string]any{"operation_id": "p2", "expected_revision": revision(t, h, s), "action": "save_as", "name": "second"})
	wantCode(t, err, contract.CodeActivityConflict)
	profs, _ := mustCall(t, h, s, "list_profiles", map[string]any{})
	p := profs["profiles"].([]any)[0].(map[string]any)
	mustCall(t, h, s, "update_profile", map[string]any{"operation_id": "p3", "expected_revision": revision(t, h, s), "action": "rename",
		"profile_id": p["profile_id"], "profile_revision": p["revision"], "name": "renamed"})

	// The duration limit stops the session with an end record.
	waitFor(t, 3*time.Minute, "duration limit", func() bool {
		g, _ := mustCall(t, h, s, "get_recording", map[string]any{})
		return g["active"] == false
	})
	in := readRecording(t, path)
	if in.End == nil || in.End.Reason != "duration_limit" || !in.Complete() {
		t.Fatalf("after the limit: %+v", in)
	}
	// The stopped session's id is stale.
	_, _, err = call(t, h, s, "stop_recording", map[string]any{"operation_id": "s1", "recording_session_id": out["recording_session_id"]})
	wantCode(t, err, contract.CodeStateConflict)

	// Host stop closes an active recording cleanly.
	d, err = start("r3")
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(data, "inquest", "recordings", d["outcome"].(map[string]any)["name"].(string))
	waitFor(t, 3*time.Minute, "a frame", func() bool { return readRecording(t, path).Frames > 0 })
	h.Stop()
	in = readRecording(t, path)
	if in.End == nil || in.End.Reason != "host_stopped" || in.Frames == 0 {
		t.Fatalf("after host stop: %+v", in)
	}
}
