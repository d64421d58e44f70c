package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/recording"
)

// A recording stopped (or killed, like an active log opened before its
// first sample) before its first frame has no sample time: every log
// result over it leaves captured_at out with NoFramesWarning, and no
// result carries a date derived from a zero or -1 time.
func TestLogSourceNoFrames(t *testing.T) {
	h := testHost(t, 200*time.Millisecond, nil)
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	dir, _, err := RecordingDirectory()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o700)
	writeLog(t, filepath.Join(dir, "stopped.log"), 0, nil, true)
	writeLog(t, filepath.Join(dir, "active.log"), 0, nil, false)
	s := h.NewSession()
	defer s.Close()
	ids := logIDs(t, h, s)
	for _, name := range []string{"stopped.log", "active.log"} {
		ref, opened, res := openLogRef(t, h, s, ids[name])
		if rec := opened["recording"].(map[string]any); rec["frames"] != 0.0 || rec["recorded_from"] != nil || rec["recorded_to"] != nil {
			t.Fatalf("%s: recording %v", name, rec)
		}
		check := func(tool string, args map[string]any) {
			t.Helper()
			b, _ := json.Marshal(args)
			_, r, err := call(t, h, s, tool, json.RawMessage(b))
			if tool == "open_log" {
				r, err = res, nil
			}
			if err != nil {
				t.Fatalf("%s %s: %v", name, tool, err)
			}
			env, _ := json.Marshal(r)
			if r.CapturedAt != nil || !slices.Contains(r.Warnings, NoFramesWarning) || strings.Contains(string(env), "1969-") || strings.Contains(string(env), "1970-") {
				t.Fatalf("%s %s: %s", name, tool, env)
			}
		}
		check("open_log", nil)
		check("list_processes", map[string]any{"source": "log", "log_ref": ref, "scope": "all"})
		check("get_history", map[string]any{"source": "log", "log_ref": ref, "metric_ids": []string{"memory_used_bytes"}})
		check("get_history", map[string]any{"source": "log", "log_ref": ref, "metric_ids": []string{"memory_used_bytes"}, "mode": "raw"})
		// get_metrics reads the final frame, which does not exist.
		_, _, err := call(t, h, s, "get_metrics", map[string]any{"source": "log", "log_ref": ref, "metric_ids": []string{"memory_used_bytes"}})
		wantCode(t, err, contract.CodeStateConflict)
	}
}

// A recording whose sample frames were all lost to damage (here 3 bytes
// overwritten in its first frame, a keyframe the later frames depend on)
// is not one that stopped before its first sample: open_log and the log
// results warn NoReadableFramesWarning, never NoFramesWarning, beside the
// damage warning naming the skipped frames.
func TestLogSourceDamagedNoReadableFrames(t *testing.T) {
	h := testHost(t, 200*time.Millisecond, nil)
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	dir, _, err := RecordingDirectory()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o700)
	clean := filepath.Join(t.TempDir(), "clean.log")
	writeLog(t, clean, 6, nil, true)
	data, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	// The first offset whose damage leaves the file readable with no
	// sample frame and at least one skipped frame: inside the keyframe.
	var damaged []byte
	for off := 0; off+3 <= len(data) && damaged == nil; off++ {
		d := append([]byte(nil), data...)
		copy(d[off:], []byte{0xff, 0x00, 0xa5})
		info, err := recording.Read(d, func(*recording.Frame) error { return nil })
		if err == nil && info.Frames == 0 && len(info.Damaged) > 0 && info.Damaged[0].Skipped > 0 {
			damaged = d
		}
	}
	if damaged == nil {
		t.Fatal("no 3-byte damage leaves the recording without a readable frame")
	}
	if err := os.WriteFile(filepath.Join(dir, "damaged.log"), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	s := h.NewSession()
	defer s.Close()
	ref, _, res := openLogRef(t, h, s, logIDs(t, h, s)["damaged.log"])
	skipped := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "sample frames depending on it were skipped") })
	if slices.Contains(res.Warnings, NoFramesWarning) || !slices.Contains(res.Warnings, NoReadableFramesWarning) || !skipped || res.CapturedAt != nil {
		t.Fatalf("open_log of a damaged log: warnings %q", res.Warnings)
	}
	_, r := mustCall(t, h, s, "list_processes", map[string]any{"source": "log", "log_ref": ref, "scope": "all"})
	if slices.Contains(r.Warnings, NoFramesWarning) || !slices.Contains(r.Warnings, NoReadableFramesWarning) {
		t.Fatalf("list_processes of a damaged log: warnings %q", r.Warnings)
	}
}
