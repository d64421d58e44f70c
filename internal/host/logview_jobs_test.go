package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/ipc"
)

// ipcCall calls method over a real host connection and decodes data.
func ipcCall(t *testing.T, c *ipc.Client, method string, args any) (map[string]any, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := c.Call(context.Background(), method, b)
	if err != nil {
		return nil, err
	}
	var d map[string]any
	out, _ := json.Marshal(res.Data)
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	return d, nil
}

func mustIPC(t *testing.T, c *ipc.Client, method string, args any) map[string]any {
	t.Helper()
	d, err := ipcCall(t, c, method, args)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return d
}

// jobError is get_job's data.result.error, or nil.
func jobError(d map[string]any) map[string]any {
	r, _ := d["result"].(map[string]any)
	e, _ := r["error"].(map[string]any)
	return e
}

// wantLogViewCancelled checks get_job's report of a live job that
// entering Log view ended.
func wantLogViewCancelled(t *testing.T, what string, d map[string]any) {
	t.Helper()
	e := jobError(d)
	det, _ := e["details"].(map[string]any)
	if d["state"] != "failed" || e["code"] != string(contract.CodeCancelled) || det["cause"] != string(contract.CodeActivityConflict) ||
		det["activity"] != "log" || d["cancellation_requested"] != true || e["retryable"] != false {
		t.Fatalf("%s after Log view began: %v", what, d)
	}
}

// TestLogViewCancelsBridgeLiveJobs: over real host connections, an MCP
// bridge has a live capture job, a condition wait and a saved-log listing
// job running, and holds an opened recording; a TUI view has a live
// capture of its own. When the view enters Log view, get_job shows the
// bridge's capture and wait failed with CANCELLED (cause
// ACTIVITY_CONFLICT), while its list_logs job, its log reads and the
// view's own job go on. A capture started by a call that passed the
// activity gate just before Log view began is cancelled too.
func TestLogViewCancelsBridgeLiveJobs(t *testing.T) {
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		t.Setenv(k, t.TempDir())
	}
	// Jobs stay in the worker until cancelled or released, whatever the
	// machine's speed; the real collector runs after.
	release := make(chan struct{})
	var released bool
	unblock := func() {
		if !released {
			released = true
			close(release)
		}
	}
	defer unblock()
	testHookJobRun = func(ctx context.Context, kind string) {
		select {
		case <-ctx.Done():
		case <-release:
		}
	}
	defer func() { testHookJobRun = nil }()

	h := testHost(t, time.Hour, nil)
	dir, _, err := RecordingDirectory()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o700)
	writeLog(t, filepath.Join(dir, "a.log"), 3, nil, true)

	ep := ipc.NewHostEndpoint(h.IPCService(), "", nil)
	if err := ep.Enable(); err != nil {
		t.Fatal(err)
	}
	defer ep.Disable()
	ctx := context.Background()
	bridge, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: "test", Client: ipc.ClientMCPBridge})
	if err != nil {
		t.Fatal(err)
	}
	defer bridge.Close()
	view, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()

	// The bridge opens a saved recording (list_logs runs free here).
	unblock()
	logJob := mustIPC(t, bridge, "list_logs", map[string]any{})
	for logJob["state"] == "running" {
		time.Sleep(10 * time.Millisecond)
		logJob = mustIPC(t, bridge, "get_job", map[string]any{"job_id": logJob["job_id"]})
	}
	rows := mustIPC(t, bridge, "read_capture", map[string]any{"capture_id": logJob["capture_id"]})["rows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("list_logs rows %v", rows)
	}
	opened := mustIPC(t, bridge, "open_log", map[string]any{"log_id": rows[0].(map[string]any)["log_id"]})
	for opened["state"] == "running" {
		opened = mustIPC(t, bridge, "open_log", map[string]any{"job_id": opened["job_id"]})
	}
	ref, _ := opened["log_ref"].(string)
	if ref == "" {
		t.Fatalf("open_log: %v", opened)
	}

	// Hold the next jobs in their workers.
	release = make(chan struct{})
	released = false
	capJob := mustIPC(t, bridge, "start_capture", map[string]any{"kind": capture.KindNetwork})
	listJob := mustIPC(t, bridge, "list_logs", map[string]any{})
	wait := mustIPC(t, bridge, "wait_condition", map[string]any{"condition": "process_present", "process_name": "inquest-no-such-process", "timeout_ms": 60000, "wait_ms": 0})
	viewJob := mustIPC(t, view, "start_capture", map[string]any{"kind": capture.KindNetwork})
	for what, d := range map[string]map[string]any{"capture": capJob, "list_logs": listJob, "wait": wait, "view capture": viewJob} {
		if d["state"] != "running" {
			t.Fatalf("%s before Log view: %v", what, d)
		}
	}

	if d := mustIPC(t, view, ActivityMethod, map[string]any{"activity": "log"}); d["activity"] != "log" {
		t.Fatalf("set_activity: %v", d)
	}

	wantLogViewCancelled(t, "bridge capture", mustIPC(t, bridge, "get_job", map[string]any{"job_id": capJob["job_id"]}))
	wantLogViewCancelled(t, "bridge wait", mustIPC(t, bridge, "get_job", map[string]any{"job_id": wait["job_id"]}))
	// a continuation of the wait returns the same outcome as the tool's error
	_, werr := ipcCall(t, bridge, "wait_condition", map[string]any{"job_id": wait["job_id"], "wait_ms": 0})
	if e := contract.AsError(werr); e == nil || e.Code != contract.CodeCancelled || e.Details["cause"] != string(contract.CodeActivityConflict) {
		t.Fatalf("wait continuation in Log view: %v", werr)
	}
	if d := mustIPC(t, bridge, "get_job", map[string]any{"job_id": listJob["job_id"]}); d["state"] != "running" || d["cancellation_requested"] != false {
		t.Fatalf("the bridge's list_logs job in Log view: %v", d)
	}
	if d := mustIPC(t, view, "get_job", map[string]any{"job_id": viewJob["job_id"]}); d["state"] != "running" || d["cancellation_requested"] != false {
		t.Fatalf("the view's own capture in Log view: %v", d)
	}
	// New live work is refused; saved-log reads keep working.
	if _, err := ipcCall(t, bridge, "start_capture", map[string]any{"kind": capture.KindNetwork}); contract.CodeOf(err) != contract.CodeActivityConflict {
		t.Fatalf("start_capture in Log view: %v", err)
	}
	procs := mustIPC(t, bridge, "list_processes", map[string]any{"source": "log", "log_ref": ref, "scope": "all"})
	if n := len(procs["rows"].([]any)); n != 3 {
		t.Fatalf("log read in Log view: %d rows", n)
	}

	// A start_capture that passed the activity gate just before Log view
	// began (the handler runs after the sweep) is cancelled as it starts.
	bs := h.NewSession()
	defer bs.Close()
	MarkMCPBridge(bs)
	late, err := h.startCapture(jobSessionOf(bs), startArgs{Kind: capture.KindNetwork})
	if err != nil {
		t.Fatal(err)
	}
	ld, _ := json.Marshal(late.Data)
	var lateData map[string]any
	json.Unmarshal(ld, &lateData)
	wantLogViewCancelled(t, "capture started after the sweep", lateData)

	// Released, the saved-log job and the view's job complete.
	unblock()
	for what, c := range map[string]*ipc.Client{listJob["job_id"].(string): bridge, viewJob["job_id"].(string): view} {
		d := mustIPC(t, c, "get_job", map[string]any{"job_id": what})
		for end := time.Now().Add(time.Minute); d["state"] == "running" && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
			d = mustIPC(t, c, "get_job", map[string]any{"job_id": what})
		}
		if d["state"] != "succeeded" {
			t.Fatalf("job %s after release: %v", what, d)
		}
	}
	// the cancelled capture's late native result was dropped
	if d := mustIPC(t, bridge, "get_job", map[string]any{"job_id": capJob["job_id"]}); d["capture_id"] != nil {
		t.Fatalf("cancelled capture produced a capture: %v", d)
	}
}
