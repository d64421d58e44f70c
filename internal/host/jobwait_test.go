package host

import (
	"context"
	"encoding/json"
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
	if r.err != nil || r.d["state"] != "failed" || e["code"] != string(contract.CodeCancelled) {
		t.Fatalf("the waiting get_job of a cancelled wait: %v %v", r.d, r.err)
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
