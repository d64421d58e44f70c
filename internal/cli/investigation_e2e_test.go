//go:build linux

package cli

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// End to end over the real binary: two MCP clients (two `inquest mcp`
// bridges) share one headless host over IPC. A child is sampled, tracked
// by ref and waited on until it exits (held pidfd); afterwards scope
// retained lists its ended lifetime, get_history reads it and live
// inspection is PROCESS_EXITED. A stale revision from the second client
// is rejected, a repeated operation_id does not repeat the effect, and a
// profile delete awaits `inquest confirm` on the running host.
func TestInvestigationEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	a, b := e.bridge(), e.bridge()

	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	pid := child.Process.Pid
	var ref string
	for deadline := time.Now().Add(2 * time.Minute); ref == ""; {
		m := a.mustCall("list_processes", map[string]any{"filter": map[string]any{"pid": pid}})
		if rows, _ := dig(m, "data", "rows").([]any); len(rows) == 1 {
			ref = rows[0].(map[string]any)["process_ref"].(string)
		} else if time.Now().After(deadline) {
			t.Fatal("child never sampled")
		} else {
			time.Sleep(200 * time.Millisecond)
		}
	}
	rev := dig(a.mustCall("get_tracking", nil), "data", "revision").(string)
	add := map[string]any{"operation_id": "e2e-add", "expected_revision": rev, "action": "add", "process_ref": ref}
	m := a.mustCall("update_tracking", add)
	if dig(m, "data", "state") != "succeeded" {
		t.Fatalf("add: %v", m)
	}
	rev2 := dig(m, "data", "outcome", "revision")
	// The second client: stale revision rejected; the same operation is
	// not repeated.
	m, isErr := b.call("update_tracking", map[string]any{"operation_id": "e2e-b", "expected_revision": rev, "action": "add", "process_name": "other"})
	if !isErr || errCode(m) != "STATE_CONFLICT" {
		t.Fatalf("stale revision: %v", m)
	}
	m = b.mustCall("update_tracking", add)
	if dig(m, "data", "outcome", "revision") != rev2 || dig(b.mustCall("get_tracking", nil), "data", "revision") != rev2 {
		t.Fatalf("repeat changed state: %v", m)
	}

	// At least two samples of the tracked child before it ends (the
	// deadline only guards against a hang).
	histRows := func() int {
		m := b.mustCall("get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "mode": "raw"})
		hr, _ := dig(m, "data", "rows").([]any)
		return len(hr)
	}
	for deadline := time.Now().Add(3 * time.Minute); histRows() < 2; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the tracked child never had two samples")
		}
	}
	m = a.mustCall("wait_condition", map[string]any{"condition": "process_exit", "process_ref": ref, "timeout_ms": 60000, "wait_ms": 0})
	child.Process.Kill()
	for dig(m, "data", "state") == "running" {
		m = a.mustCall("wait_condition", map[string]any{"job_id": dig(m, "data", "job_id"), "wait_ms": 10000})
	}
	// pidfd_poll when the kill came after the wait opened its pidfd,
	// pidfd_open when it came first (the unreaped child is a zombie).
	if meth := dig(m, "data", "evidence", "method"); dig(m, "data", "state") != "succeeded" || (meth != "pidfd_poll" && meth != "pidfd_open") {
		t.Fatalf("exit wait: %v", m)
	}
	child.Wait()
	// The next samples no longer hold it: wait until the retained row is
	// no longer live (the deadline only guards against a hang).
	var rows []any
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		m = b.mustCall("list_processes", map[string]any{"scope": "retained", "filter": map[string]any{"pid": pid}})
		rows, _ = dig(m, "data", "rows").([]any)
		if len(rows) != 1 || rows[0].(map[string]any)["lifecycle"] != "live" || time.Now().After(deadline) {
			break
		}
	}
	if len(rows) != 1 || rows[0].(map[string]any)["lifecycle"] != "unknown" || rows[0].(map[string]any)["process_ref"] != ref {
		t.Fatalf("retained: %v", m)
	}
	if n := histRows(); n < 2 {
		t.Fatalf("history of the ended lifetime has %d rows", n)
	}
	m, isErr = b.call("get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
	if !isErr || errCode(m) != "PROCESS_EXITED" {
		t.Fatalf("live inspection of an ended lifetime: %v", m)
	}

	// Profile delete awaits the local human; `inquest confirm` decides it.
	rev3 := dig(a.mustCall("get_tracking", nil), "data", "revision").(string)
	m = a.mustCall("update_profile", map[string]any{"operation_id": "e2e-save", "expected_revision": rev3, "action": "save_as", "name": "e2e"})
	prof := dig(m, "data", "outcome", "profile").(map[string]any)
	rev4 := dig(a.mustCall("get_tracking", nil), "data", "revision").(string)
	m = a.mustCall("update_profile", map[string]any{"operation_id": "e2e-del", "expected_revision": rev4, "action": "delete", "profile_id": prof["profile_id"], "profile_revision": prof["revision"]})
	if dig(m, "data", "state") != "pending_confirmation" || m["next_action"] != nil {
		t.Fatalf("delete: %v", m)
	}
	out, code := e.run("confirm")
	if code != 0 || !strings.Contains(out, "e2e-del") {
		t.Fatalf("confirm list: %d %s", code, out)
	}
	out, code = e.run("confirm", "e2e-del")
	if code != 0 || !strings.Contains(out, "succeeded") {
		t.Fatalf("confirm: %d %s", code, out)
	}
	m = b.mustCall("get_operation", map[string]any{"operation_id": "e2e-del"})
	if dig(m, "data", "state") != "succeeded" {
		t.Fatalf("get_operation: %v", m)
	}
}
