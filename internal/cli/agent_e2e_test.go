//go:build linux

package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Agent-sized answers over the real `inquest mcp` bridge and host: each
// subtest is one question an agent asks, answered in one call.
func TestAgentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	a := e.bridge()

	// wait_ms covering timeout_ms: one call, the terminal outcome.
	t.Run("wait_to_terminal", func(t *testing.T) {
		for _, tc := range []struct{ timeout, wait int }{{1500, 1500}, {1200, 10000}} {
			m, isErr := a.call("wait_condition", map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest-agent", "timeout_ms": tc.timeout, "wait_ms": tc.wait})
			if !isErr || errCode(m) != "TIMEOUT" {
				t.Fatalf("timeout_ms %d wait_ms %d: want TIMEOUT in one call, got %v", tc.timeout, tc.wait, m)
			}
		}
		// A budget short of timeout_ms still hands back the running job.
		m := a.mustCall("wait_condition", map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest-agent", "timeout_ms": 60000, "wait_ms": 0})
		if dig(m, "data", "state") != "running" || dig(m, "next_action", "tool") != "wait_condition" {
			t.Fatalf("short budget: %v", m)
		}
		a.mustCall("cancel_job", map[string]any{"job_id": dig(m, "data", "job_id")})
	})

	// How did P's RSS change over the last 60 s: one call, first/last and
	// their difference although neither endpoint is a sample time.
	t.Run("history_last_seconds", func(t *testing.T) {
		child := startChild(t)
		ref := waitRef(a, child.Process.Pid)
		var m map[string]any
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(300 * time.Millisecond) {
			// until at least two samples of the child are retained
			m = a.mustCall("get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "last_seconds": 60})
			if n, _ := dig(m, "data", "metrics", "rss_bytes", "available_value_count").(float64); n >= 2 || time.Now().After(deadline) {
				break
			}
		}
		if dig(m, "data", "window", "last_seconds") != float64(60) || dig(m, "data", "window", "from") == nil {
			t.Fatalf("window: %v", m["data"])
		}
		sm, _ := dig(m, "data", "metrics", "rss_bytes").(map[string]any)
		if sm == nil || sm["available_value_count"].(float64) < 2 {
			t.Fatalf("summary: %v", m["data"])
		}
		if _, ok := sm["delta"]; ok {
			t.Fatalf("delta reported without exact endpoints: %v", sm)
		}
		first, last := sm["first"].(map[string]any), sm["last"].(map[string]any)
		fv, _ := new(big.Int).SetString(first["value"].(string), 10)
		lv, _ := new(big.Int).SetString(last["value"].(string), 10)
		if fv == nil || lv == nil || sm["first_to_last_change"] != new(big.Int).Sub(lv, fv).String() {
			t.Fatalf("first_to_last_change: %v", sm)
		}
		fa, _ := time.Parse(time.RFC3339Nano, first["at"].(string))
		la, _ := time.Parse(time.RFC3339Nano, last["at"].(string))
		if sm["first_to_last_ms"] != float64(la.Sub(fa).Milliseconds()) || !la.After(fa) {
			t.Fatalf("first_to_last_ms: %v", sm)
		}
		// Raw rows of the same window are the summary's samples.
		r := a.mustCall("get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "last_seconds": 60, "mode": "raw"})
		rows, _ := dig(r, "data", "rows").([]any)
		if len(rows) < 2 || rows[0].(map[string]any)["at"] != first["at"] {
			t.Fatalf("raw window: %v", r["data"])
		}
		for _, bad := range []map[string]any{
			{"last_seconds": 60, "from": "2026-01-01T00:00:00Z"},
			{"last_seconds": 60, "to": "2026-01-01T00:00:00Z"},
		} {
			bad["metric_ids"] = []string{"rss_bytes"}
			bad["target"] = map[string]any{"process_ref": ref}
			m, isErr := a.call("get_history", bad)
			if !isErr || errCode(m) != "INVALID_ARGUMENT" || dig(m, "error", "field") != "/last_seconds" {
				t.Fatalf("%v: %v", bad, m)
			}
		}
	})

	// A live PID is enough; the result names the process_ref it resolved.
	t.Run("pid_for_process_ref", func(t *testing.T) {
		child := startChild(t)
		pid := child.Process.Pid
		ref := waitRef(a, pid)
		resolvedRef := func(m map[string]any, field string) {
			t.Helper()
			rs, _ := dig(m, "data", "resolved_pids").([]any)
			if len(rs) != 1 {
				t.Fatalf("resolved_pids: %v", m["data"])
			}
			r := rs[0].(map[string]any)
			if r["process_ref"] != ref || r["pid"] != float64(pid) || r["field"] != field || r["name"] != "sleep" {
				t.Fatalf("resolved %v, want %s at %s", r, ref, field)
			}
		}
		m := a.mustCall("get_process_info", map[string]any{"pid": pid})
		resolvedRef(m, "/pid")
		m = a.mustCall("get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}, map[string]any{"pid": pid}}})
		resolvedRef(m, "/targets/1/pid")
		m = a.mustCall("get_history", map[string]any{"metric_ids": []string{"rss_bytes"}, "target": map[string]any{"pid": pid}})
		resolvedRef(m, "/target/pid")
		if dig(m, "data", "target", "process_ref") != ref {
			t.Fatalf("history target: %v", m["data"])
		}
		m = a.mustCall("start_capture", map[string]any{"kind": "open_files", "pid": pid})
		resolvedRef(m, "/pid")
		for _, bad := range []struct {
			tool  string
			args  map[string]any
			field string
		}{
			{"get_process_info", map[string]any{"pid": pid, "process_ref": ref}, "/pid"},
			// no process named: both choices listed, at the top level
			{"get_process_info", map[string]any{}, ""},
			{"get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"pid": pid, "process_ref": ref}}}, "/targets/0"},
			{"wait_condition", map[string]any{"condition": "process_present", "process_name": "x", "pid": pid, "timeout_ms": 100}, "/pid"},
		} {
			m, isErr := a.call(bad.tool, bad.args)
			field, _ := dig(m, "error", "field").(string)
			if !isErr || errCode(m) != "INVALID_ARGUMENT" || !strings.HasPrefix(field, bad.field) || (bad.field == "" && field != "") {
				t.Fatalf("%s %v: %v", bad.tool, bad.args, m)
			}
			if len(bad.args) == 0 && fmt.Sprint(dig(m, "error", "expected", "one_of_required")) != "[[process_ref] [pid]]" {
				t.Fatalf("%s %v: the choices are not listed: %v", bad.tool, bad.args, m)
			}
		}
		// wait until P exits, by pid, in one call.
		go func() {
			time.Sleep(500 * time.Millisecond)
			child.Process.Kill()
		}()
		m = a.mustCall("wait_condition", map[string]any{"condition": "process_exit", "pid": pid, "timeout_ms": 60000, "wait_ms": 10000})
		resolvedRef(m, "/pid")
		for dig(m, "data", "state") == "running" { // a loaded machine: continue by job_id
			m = a.mustCall("wait_condition", map[string]any{"job_id": dig(m, "data", "job_id"), "wait_ms": 10000})
		}
		if dig(m, "data", "state") != "succeeded" {
			t.Fatalf("exit by pid: %v", m)
		}
		child.Wait()
		m, isErr := a.call("get_process_info", map[string]any{"pid": pid})
		if !isErr || errCode(m) != "PROCESS_EXITED" || dig(m, "error", "field") != "/pid" || dig(m, "error", "retryable") != false {
			t.Fatalf("gone pid: %v", m)
		}
	})

	// Errors name what the caller sent: a default target is a default.
	t.Run("default_target_errors", func(t *testing.T) {
		for _, tc := range []struct {
			tool string
			args map[string]any
			msg  string
		}{
			{"get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}}, "no targets given; the default system target does not have rss_bytes"},
			{"get_history", map[string]any{"metric_ids": []string{"rss_bytes"}}, "no target given; the default system target does not have rss_bytes"},
		} {
			m, isErr := a.call(tc.tool, tc.args)
			msg, _ := dig(m, "error", "message").(string)
			if !isErr || errCode(m) != "INVALID_ARGUMENT" || !strings.Contains(msg, tc.msg) || strings.Contains(msg, "targets/0") || dig(m, "error", "field") != "/metric_ids/0" || dig(m, "error", "retryable") != false {
				t.Fatalf("%s: %v", tc.tool, m)
			}
		}
	})

	// get_tracking pages its matching identities: following next_action
	// yields every one exactly once.
	t.Run("tracking_pages", func(t *testing.T) {
		probe := filepath.Join(t.TempDir(), "inqtrkprobe")
		sleepBin, err := exec.LookPath("sleep")
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(sleepBin)
		if err != nil || os.WriteFile(probe, b, 0o755) != nil {
			t.Fatal("copy sleep", err)
		}
		const n = 20
		mine := map[float64]bool{}
		for range n {
			c := exec.Command(probe, "300")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Process.Kill(); c.Wait() })
			mine[float64(c.Process.Pid)] = true
		}
		rev := dig(a.mustCall("get_tracking", nil), "data", "revision").(string)
		a.mustCall("update_tracking", map[string]any{"operation_id": "agent-track", "expected_revision": rev, "action": "add", "process_name": "inqtrkprobe"})
		// Wait until every probe of this test matches (other processes of
		// that name may run here too: the count alone does not say so).
		var m map[string]any
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(300 * time.Millisecond) {
			all := a.mustCall("get_tracking", map[string]any{"limit": 5000})
			matched := 0
			for _, r := range asRows(dig(all, "data", "matching")) {
				if mine[r["pid"].(float64)] {
					matched++
				}
			}
			if matched == n || time.Now().After(deadline) {
				break
			}
		}
		m = a.mustCall("get_tracking", map[string]any{"limit": 7})
		total := dig(m, "coverage", "total").(float64)
		seen := map[string]bool{}
		pids := map[float64]bool{}
		pages := 0
		for {
			pages++
			rows, _ := dig(m, "data", "matching").([]any)
			if len(rows) > 7 || dig(m, "data", "revision") == nil {
				t.Fatalf("page %d: %v", pages, m["data"])
			}
			for _, r := range rows {
				ref := r.(map[string]any)["process_ref"].(string)
				if seen[ref] {
					t.Fatalf("%s twice", ref)
				}
				seen[ref] = true
				pids[r.(map[string]any)["pid"].(float64)] = true
			}
			na, _ := m["next_action"].(map[string]any)
			if na == nil {
				break
			}
			if na["tool"] != "get_tracking" {
				t.Fatalf("next_action: %v", na)
			}
			m = a.mustCall("get_tracking", na["arguments"])
		}
		if float64(len(seen)) != total || pages < 3 {
			t.Fatalf("%d identities over %d pages, total %v", len(seen), pages, total)
		}
		for pid := range mine {
			if !pids[pid] {
				t.Fatalf("pid %v missing from the pages", pid)
			}
		}
		// The CLI table follows the pages too.
		out, code := e.run("track", "list")
		if code != 0 || strings.Count(out, "inqtrkprobe") < n {
			t.Fatalf("track list: %d\n%s", code, out)
		}
	})
}

// waitRef returns the process_ref of pid once the host has sampled it
// past its exec (the 2-minute bound only ends a hang).
func waitRef(b *heBridge, pid int) string {
	b.t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		m := b.mustCall("list_processes", map[string]any{"filter": map[string]any{"pid": pid}})
		// Listed past its exec: a sample between fork and exec names it
		// after this test binary, and the callers check its name.
		if rows, _ := dig(m, "data", "rows").([]any); len(rows) == 1 && rows[0].(map[string]any)["name"] != filepath.Base(os.Args[0]) {
			return rows[0].(map[string]any)["process_ref"].(string)
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("pid %d never sampled", pid)
		}
	}
}

// Malformed tools/call over the real `inquest mcp` stdio: a call without a
// name and non-object arguments are JSON-RPC -32602 saying so; initialize
// advertises tools only, without listChanged or logging.
func TestMCPMalformedCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	cmd := exec.Command(e.bin, "mcp", "--toolsets", "bin")
	cmd.Env = e.env
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	// A server that stops answering fails the test instead of hanging it.
	guard := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer guard.Stop()
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"inspect_binary","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"inspect_binary","arguments":"x"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"inspect_binary","arguments":{}}}`,
	}
	go func() {
		for _, l := range lines {
			io.WriteString(in, l+"\n")
		}
	}()
	got := map[float64]map[string]any{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for len(got) < 5 && sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			if id, ok := m["id"].(float64); ok {
				got[id] = m
			}
		}
	}
	caps, _ := dig(got[1], "result", "capabilities").(map[string]any)
	if len(caps) != 1 || caps["tools"] == nil || dig(got[1], "result", "capabilities", "tools", "listChanged") != nil {
		t.Fatalf("capabilities: %v", caps)
	}
	for id, want := range map[float64]string{2: "params.name", 3: "must be a JSON object", 4: "must be a JSON object"} {
		if dig(got[id], "error", "code") != float64(-32602) || !strings.Contains(dig(got[id], "error", "message").(string), want) {
			t.Fatalf("id %v: %v", id, got[id])
		}
	}
	// Object arguments reach the tool: a missing required argument is a
	// tool result error, not a protocol error.
	if dig(got[5], "result", "isError") != true {
		t.Fatalf("id 5: %v", got[5])
	}
}

// asRows is v (a JSON array of objects) as rows; nil when it is not one.
func asRows(v any) []map[string]any {
	a, _ := v.([]any)
	out := make([]map[string]any, 0, len(a))
	for _, r := range a {
		if m, ok := r.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
