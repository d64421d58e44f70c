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
