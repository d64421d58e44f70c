package host

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
)

// TestGetJobWaitsForTheEnd: get_job with wait_ms answers when the job
// ends, not before: a capture job held in its worker is released only
// once get_job is waiting for it, and that one get_job returns the
// outcome (succeeded, with its capture). A condition wait is awaited the
// same way (cancel_job from another call ends it and the waiting get_job
// reports the failure). Without wait_ms, get_job answers at once.
func TestGetJobWaitsForTheEnd(t *testing.T) {
	release := make(chan struct{})
	testHookJobRun = func(ctx context.Context, kind string) {
		select {
		case <-ctx.Done():
		case <-release:
		}
	}
	defer func() { testHookJobRun = nil }()
	waiting := make(chan string, 4)
	testHookJobWait = func(id string) { waiting <- id }
	defer func() { testHookJobWait = nil }()
	h, s := captureHost(t)

	d, _, err := dispatch(t, h, s, "start_capture", map[string]any{"kind": capture.KindNetwork})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := d["job_id"].(string)
	if d["state"] != "running" {
		t.Fatalf("a held job: %v", d)
	}
	// Without wait_ms: at once, still running.
	if g, _, err := dispatch(t, h, s, "get_job", map[string]any{"job_id": id}); err != nil || g["state"] != "running" {
		t.Fatalf("get_job without wait_ms: %v %v", g, err)
	}
	type reply struct {
		d   map[string]any
		err error
	}
	got := make(chan reply, 1)
	go func() {
		g, _, err := dispatch(t, h, s, "get_job", map[string]any{"job_id": id, "wait_ms": 5000})
		got <- reply{g, err}
	}()
	select {
	case w := <-waiting:
		if w != id {
			t.Fatalf("waiting for %s, want %s", w, id)
		}
	case r := <-got:
		t.Fatalf("get_job with wait_ms answered a running job without waiting: %v %v", r.d, r.err)
	}
	close(release)
	r := <-got
	if r.err != nil || r.d["state"] != "succeeded" || r.d["capture_id"] == nil {
		t.Fatalf("the waiting get_job: %v %v", r.d, r.err)
	}

	// A condition wait that only cancel_job ends.
	wd, _, err := dispatch(t, h, s, "wait_condition", map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest-jobwait", "timeout_ms": 60000, "wait_ms": 0})
	if err != nil {
		t.Fatal(err)
	}
	wid, _ := wd["job_id"].(string)
	go func() {
		g, _, err := dispatch(t, h, s, "get_job", map[string]any{"job_id": wid, "wait_ms": 5000})
		got <- reply{g, err}
	}()
	select {
	case <-waiting:
	case r := <-got:
		t.Fatalf("get_job answered a running wait without waiting: %v %v", r.d, r.err)
	}
	if _, _, err := dispatch(t, h, s, "cancel_job", map[string]any{"job_id": wid}); err != nil {
		t.Fatal(err)
	}
	r = <-got
	e, _ := r.d["result"].(map[string]any)["error"].(map[string]any)
	if det, _ := e["details"].(map[string]any); r.err != nil || r.d["state"] != "failed" || e["code"] != string(contract.CodeCancelled) || det["job_id"] != wid {
		t.Fatalf("the waiting get_job of a cancelled wait: %v %v", r.d, r.err)
	}
}

// TestJobOfExitedProcessNamesTheJob: an open_files job whose process
// exits before any fd was read fails PROCESS_EXITED (with rows read it
// would be a partial capture, the rule capture.OpenFiles applies in and
// out of jobs), and get_job's data.result.error carries details.job_id as
// the starter's error does.
func TestJobOfExitedProcessNamesTheJob(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	testHookJobRun = func(ctx context.Context, kind string) {
		// The process ends (and is reaped) after the job started, before
		// its collector reads anything.
		cmd.Process.Kill()
		cmd.Wait()
	}
	defer func() { testHookJobRun = nil }()
	h, s := captureHost(t)
	ref := refOfPID(t, h, s, cmd.Process.Pid)
	d, _, err := dispatch(t, h, s, "start_capture", map[string]any{"kind": capture.KindOpenFiles, "process_ref": ref})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := d["job_id"].(string)
	g, _, err := dispatch(t, h, s, "get_job", map[string]any{"job_id": id, "wait_ms": 30000})
	e, _ := g["result"].(map[string]any)["error"].(map[string]any)
	det, _ := e["details"].(map[string]any)
	if err != nil || g["state"] != "failed" || e["code"] != string(contract.CodeProcessExited) || det["job_id"] != id {
		t.Fatalf("get_job of a job whose process exited: %v %v", g, err)
	}
}

// TestGetJobWaitEndsWithTheRequest: a get_job waiting for a job that does
// not end returns (the job still running) when its request is cancelled,
// which is how the bridge stops a wait whose MCP call was cancelled.
func TestGetJobWaitEndsWithTheRequest(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	testHookJobRun = func(ctx context.Context, kind string) {
		select {
		case <-ctx.Done():
		case <-release:
		}
	}
	defer func() { testHookJobRun = nil }()
	waiting := make(chan string, 1)
	testHookJobWait = func(id string) { waiting <- id }
	defer func() { testHookJobWait = nil }()
	h, s := captureHost(t)
	d, _, err := dispatch(t, h, s, "start_capture", map[string]any{"kind": capture.KindNetwork})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan map[string]any, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"job_id": d["job_id"], "wait_ms": 5000})
		res, err := h.Dispatch(ctx, s, "get_job", b)
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		var m map[string]any
		rb, _ := json.Marshal(res.Data)
		json.Unmarshal(rb, &m)
		done <- m
	}()
	<-waiting
	cancel()
	if m := <-done; m == nil || m["state"] != "running" {
		t.Fatalf("a cancelled wait's reply: %v", m)
	}
}
