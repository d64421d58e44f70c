package host

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

func captureHost(t *testing.T) (*Host, *Session) {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	h, err := New(Options{Version: "test", Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	s := h.NewSession()
	return h, s
}

func dispatch(t *testing.T, h *Host, s *Session, method string, args any) (map[string]any, *contract.Result, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := h.Dispatch(context.Background(), s, method, b)
	if err != nil {
		return nil, nil, err
	}
	var d map[string]any
	rb, _ := json.Marshal(res.Data)
	json.Unmarshal(rb, &d)
	return d, res, nil
}

// TestCaptureMethods drives the host methods without the bridge: a job
// handle comes back immediately; get_job reports the outcome; read_capture
// pages it; release makes polling report the result consumed; session
// close releases everything.
func TestCaptureMethods(t *testing.T) {
	h, s := captureHost(t)
	st, _, err := dispatch(t, h, s, "get_status", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := st["captures"].(map[string]any); !ok || c["worker_slots"].(float64) != 8 || c["retained_per_session"].(float64) != 8 {
		t.Fatalf("status captures section: %v", st["captures"])
	}
	d, _, err := dispatch(t, h, s, "start_capture", map[string]any{"kind": "network"})
	if err != nil {
		t.Fatal(err)
	}
	id := d["job_id"].(string)
	if d["state"] != "running" && d["state"] != "succeeded" {
		t.Fatalf("start: %v", d)
	}
	for d["state"] == "running" {
		time.Sleep(10 * time.Millisecond)
		d, _, _ = dispatch(t, h, s, "get_job", map[string]any{"job_id": id})
	}
	if d["state"] != "succeeded" || d["capture_id"] == nil {
		t.Fatalf("job %v", d)
	}
	capID := d["capture_id"].(string)
	p, res, err := dispatch(t, h, s, "read_capture", map[string]any{"capture_id": capID, "limit": 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.CaptureStartedAt == nil || res.CaptureFinishedAt == nil || p["kind"] != "network" {
		t.Fatalf("read: %v", p)
	}
	// another session cannot see this session's capture
	other := h.NewSession()
	if _, _, err := dispatch(t, h, other, "read_capture", map[string]any{"capture_id": capID}); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("cross-session read: %v", err)
	}
	r, _, _ := dispatch(t, h, s, "release_capture", map[string]any{"capture_id": capID})
	if r["released"] != true {
		t.Fatalf("release %v", r)
	}
	d, _, _ = dispatch(t, h, s, "get_job", map[string]any{"job_id": id})
	if d["result_consumed"] != true {
		t.Fatalf("consumed %v", d)
	}
	// a terminal job is unchanged by cancel_job
	c, _, _ := dispatch(t, h, s, "cancel_job", map[string]any{"job_id": id})
	if c["state"] != "succeeded" || c["cancellation_requested"] != false {
		t.Fatalf("cancel of a finished job: %v", c)
	}
	s.Close()
	if _, _, err := dispatch(t, h, s, "get_job", map[string]any{"job_id": id}); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("job after session close: %v", err)
	}
}
