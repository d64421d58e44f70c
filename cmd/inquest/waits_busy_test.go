package main

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// A fifth wait on one MCP connection is BUSY with the way out: the four
// running waits (job ids, conditions, deadlines, earliest first), the
// time until the earliest deadline (retry_after_ms, retryable), and
// next_action continuing the wait that ends first. cancel_job on a listed
// wait frees a slot at once, and the unchanged fifth call then starts.
func TestFifthWaitBusyNamesTheWayOut(t *testing.T) {
	env := isolatedEnv(t)
	cs := connect(t, env, "2025-11-25")
	// A name no process has: the waits run until their timeout. Timeouts
	// differ so the earliest deadline is the first wait's.
	name := fmt.Sprintf("inquest-no-such-process-%d", time.Now().UnixNano())
	var ids []string
	for i := 0; i < 4; i++ {
		w, isErr := call(t, cs, "wait_condition", map[string]any{"condition": "process_present", "process_name": name, "timeout_ms": 50000 + 1000*i, "wait_ms": 0})
		d, _ := w["data"].(map[string]any)
		id, _ := d["job_id"].(string)
		if isErr || id == "" || d["state"] != "running" {
			t.Fatalf("wait %d did not start: %v", i, w)
		}
		ids = append(ids, id)
	}
	fifth := map[string]any{"condition": "process_present", "process_name": name, "timeout_ms": 1000, "wait_ms": 0}
	w, isErr := call(t, cs, "wait_condition", fifth)
	e, _ := w["error"].(map[string]any)
	if !isErr || e["code"] != "BUSY" || e["retryable"] != true {
		t.Fatalf("fifth wait: %v", w)
	}
	t.Logf("BUSY: %v", e["message"])
	det, _ := e["details"].(map[string]any)
	running, _ := det["running_waits"].([]any)
	var listed []string
	for _, r := range running {
		m := r.(map[string]any)
		listed = append(listed, m["job_id"].(string))
		cond, _ := m["condition"].(map[string]any)
		if cond["condition"] != "process_present" || cond["process_name"] != name || m["deadline"] == nil || m["started_at"] == nil {
			t.Errorf("running wait %v", m)
		}
	}
	if !slices.Equal(listed, ids) {
		t.Fatalf("running_waits %v, want %v (earliest deadline first)", listed, ids)
	}
	if after, _ := det["retry_after_ms"].(float64); after < 1 || after > 50000 {
		t.Fatalf("retry_after_ms %v, want 1..50000 (the first wait's deadline)", det["retry_after_ms"])
	}
	if det["earliest_deadline"] != running[0].(map[string]any)["deadline"] {
		t.Fatalf("earliest_deadline %v", det["earliest_deadline"])
	}
	next, _ := e["next_action"].(map[string]any)
	args, _ := next["arguments"].(map[string]any)
	if next["tool"] != "wait_condition" || args["job_id"] != ids[0] || len(args) != 1 {
		t.Fatalf("next_action %v, want wait_condition {job_id: %s}", next, ids[0])
	}
	// next_action continues the earliest wait: it is still running.
	w, isErr = call(t, cs, "wait_condition", map[string]any{"job_id": ids[0], "wait_ms": 0})
	if d, _ := w["data"].(map[string]any); isErr || d["state"] != "running" {
		t.Fatalf("next_action: %v", w)
	}
	// cancel_job on a listed wait frees its slot: the fifth call starts.
	if c, isErr := call(t, cs, "cancel_job", map[string]any{"job_id": ids[2]}); isErr {
		t.Fatalf("cancel_job: %v", c)
	}
	w, isErr = call(t, cs, "wait_condition", fifth)
	if d, _ := w["data"].(map[string]any); isErr || d["state"] != "running" {
		t.Fatalf("fifth wait after cancel_job: %v", w)
	}
	for _, id := range append([]string{ids[0], ids[1], ids[3]}, w["data"].(map[string]any)["job_id"].(string)) {
		call(t, cs, "cancel_job", map[string]any{"job_id": id})
	}
}
