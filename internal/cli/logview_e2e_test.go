//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/recording"
	"github.com/inquest-dev/inquest/internal/sample"
)

// writeRecording writes a finished recording of two frames of one
// process to path.
func writeRecording(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	w, err := recording.NewWriter(f, recording.Header{CreatedAt: t0, IntervalMs: 1000, Tracked: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 2; k++ {
		s := &sample.Snapshot{Seq: uint64(k + 1), Time: t0.Add(time.Duration(k) * time.Second)}
		p := sample.Process{PID: 10, PPID: 1, StartTicks: 1000, StartTime: t0.Add(-time.Minute), Name: "app", Exe: "/opt/app"}
		p.Set(sample.PRSS, uint64(4096*(k+1)))
		s.Procs = append(s.Procs, p)
		if err := w.WriteSnapshot(s, []*sample.Process{&s.Procs[0]}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close("stopped"); err != nil {
		t.Fatal(err)
	}
}

// TestLogViewCancelsAgentWait: an agent's `inquest mcp` bridge has a
// condition wait running in a real `inquest serve` host; a TUI view
// attached over the local socket enters Log view; the agent's get_job
// shows the wait failed with CANCELLED (cause ACTIVITY_CONFLICT), new live
// inspection is ACTIVITY_CONFLICT, and the agent's saved-log reads
// (list_logs, open_log, list_processes with log_ref) keep working.
func TestLogViewCancelsAgentWait(t *testing.T) {
	e := newHeEnv(t)
	// this process connects as the view: the same per-user directories
	for _, kv := range e.env {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "XDG_") {
			t.Setenv(k, v)
		}
	}
	t.Setenv("INQUEST_CONFIG", "")
	dir := filepath.Join(e.base, "data", "inquest", "recordings")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeRecording(t, filepath.Join(dir, "saved.log"))

	b := e.bridge()
	wait := b.mustCall("wait_condition", map[string]any{"condition": "process_present", "process_name": "inquest-no-such-process", "timeout_ms": 60000, "wait_ms": 0})
	jobID, _ := dig(wait, "data", "job_id").(string)
	if dig(wait, "data", "state") != "running" || jobID == "" {
		t.Fatalf("wait_condition: %v", wait)
	}

	ctx := context.Background()
	view, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: Version})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	res, err := view.Call(ctx, host.ActivityMethod, json.RawMessage(`{"activity":"log"}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.Data)
	var act map[string]any
	if json.Unmarshal(raw, &act); act["activity"] != "log" {
		t.Fatalf("set_activity: %s", raw)
	}

	job := b.mustCall("get_job", map[string]any{"job_id": jobID, "wait_ms": 0})
	if dig(job, "data", "state") != "failed" || dig(job, "data", "result", "error", "code") != "CANCELLED" ||
		dig(job, "data", "result", "error", "details", "cause") != "ACTIVITY_CONFLICT" || dig(job, "data", "cancellation_requested") != true {
		t.Fatalf("get_job of the wait after Log view began: %v", job)
	}
	if m, isErr := b.call("start_capture", map[string]any{"kind": "network"}); !isErr || errCode(m) != "ACTIVITY_CONFLICT" {
		t.Fatalf("start_capture in Log view: %v", m)
	}
	if st := b.mustCall("get_status", nil); dig(st, "data", "activity") != "log" {
		t.Fatalf("get_status activity: %v", dig(st, "data", "activity"))
	}

	logs := b.mustCall("list_logs", nil)
	rows, _ := dig(logs, "data", "rows").([]any)
	if len(rows) != 1 {
		t.Fatalf("list_logs in Log view: %v", logs)
	}
	opened := b.mustCall("open_log", map[string]any{"log_id": rows[0].(map[string]any)["log_id"]})
	ref, _ := dig(opened, "data", "log_ref").(string)
	if ref == "" {
		t.Fatalf("open_log in Log view: %v", opened)
	}
	procs := b.mustCall("list_processes", map[string]any{"source": "log", "log_ref": ref})
	if prow, _ := dig(procs, "data", "rows").([]any); len(prow) != 1 {
		t.Fatalf("list_processes of the saved log in Log view: %v", procs)
	}
}
