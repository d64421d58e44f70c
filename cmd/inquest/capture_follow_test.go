//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// executionEvent is the _meta["inquest/execution"] object of a capture's
// progress notification.
type executionEvent struct {
	Event            string  `json:"event"`
	Execution        int     `json:"execution"`
	Executions       int     `json:"executions"`
	Case             string  `json:"case"`
	Block            int     `json:"block"`
	PID              int     `json:"pid"`
	ProcessRef       *string `json:"process_ref"`
	ProcessRefReason string  `json:"process_ref_reason"`
	Termination      string  `json:"termination"`
	ExitCode         *int    `json:"exit_code"`
}

// progressEvent is one progress notification as the client received it.
type progressEvent struct {
	progress, total float64
	message         string
	exec            executionEvent
}

// connectWithProgress is connect with a client that forwards every
// progress notification to the returned channel.
func connectWithProgress(t *testing.T, env []string, args ...string) (*mcp.ClientSession, <-chan progressEvent) {
	t.Helper()
	ch := make(chan progressEvent, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "inquest-e2e", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p := req.Params
			ev := progressEvent{progress: p.Progress, total: p.Total, message: p.Message}
			if raw, err := json.Marshal(p.Meta["inquest/execution"]); err == nil {
				json.Unmarshal(raw, &ev.exec)
			}
			ch <- ev
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, ch
}

// nextEvent returns the next progress notification; the bound only ends
// a broken run (nothing here is timed).
func nextEvent(t *testing.T, ch <-chan progressEvent) progressEvent {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(2 * time.Minute):
		t.Fatal("no progress notification")
	}
	return progressEvent{}
}

// TestCaptureNamesItsWorkload: a capture whose client sent a progress
// token reports its workload's pid and process_ref as it starts; while the
// capture call still runs (the workload blocks reading a FIFO that only
// the test writes), proc get_process_info and wait_condition accept that
// process_ref and see that process; once released, the wait sees it exit,
// the ended notification follows, and the result's execution row names
// the same pid and process_ref.
func TestCaptureNamesItsWorkload(t *testing.T) {
	env := isolatedEnv(t)
	cs, events := connectWithProgress(t, env)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		// Opening the write end unblocks the workload's read.
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Errorf("open fifo: %v", err)
			return
		}
		f.WriteString("go\n")
		f.Close()
	}
	defer func() {
		// A failed test may leave the workload unreleased: release it
		// if it reads (never block on a FIFO nobody reads; closing the
		// session ends the server, and with it the workload).
		if !released {
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.WriteString("go\n")
				f.Close()
			}
		}
	}()

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "capture_and_summarize_executions", Arguments: map[string]any{
			"target":   map[string]any{"argv": []string{"sh", "-c", `read line < "$0" && test "$line" = go`, fifo}, "cwd": dir},
			"provider": map[string]any{"kind": "direct"},
		}}
		params.SetProgressToken("follow-1")
		res, err := cs.CallTool(context.Background(), params)
		done <- outcome{res, err}
	}()

	started := nextEvent(t, events)
	ex := started.exec
	if ex.Event != "started" || ex.Execution != 1 || ex.Executions != 1 || ex.Case != "target" || ex.Block != 0 || ex.PID <= 0 {
		t.Fatalf("first notification %+v (%q)", ex, started.message)
	}
	if ex.ProcessRef == nil {
		t.Fatalf("started without a process_ref: %s", ex.ProcessRefReason)
	}
	ref := *ex.ProcessRef
	if started.progress != 0.5 || started.total != 1 {
		t.Fatalf("progress %v/%v, want 0.5/1", started.progress, started.total)
	}
	for _, want := range []string{"execution 1/1 started", "pid " + strconv.Itoa(ex.PID), "process_ref " + ref} {
		if !strings.Contains(started.message, want) {
			t.Fatalf("message %q lacks %q", started.message, want)
		}
	}
	// The pid is the workload: our sh, reading the FIFO.
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(ex.PID) + "/cmdline")
	if err != nil || !strings.Contains(string(cmdline), fifo) {
		t.Fatalf("pid %d is not the workload: %q %v", ex.PID, cmdline, err)
	}

	// The capture is still running; proc tools follow its workload.
	info, isErr := call(t, cs, "get_process_info", map[string]any{"process_ref": ref})
	if isErr {
		t.Fatalf("get_process_info on the named ref: %v", info)
	}
	rows, _ := info["data"].(map[string]any)["rows"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["pid"] != float64(ex.PID) || rows[0].(map[string]any)["comm"] != "sh" {
		raw, _ := json.Marshal(info["data"])
		t.Fatalf("get_process_info answered another process: %s", raw)
	}
	// ps(1), in the same run, sees the same process: command sh, and the
	// parent get_process_info names (the inquest server that runs it).
	psOut, err := exec.Command("ps", "-o", "ppid=,comm=", "-p", strconv.Itoa(ex.PID)).Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	parent, _ := rows[0].(map[string]any)["parent"].(map[string]any)["value"].(map[string]any)
	if f := strings.Fields(string(psOut)); len(f) != 2 || f[1] != "sh" || parent == nil || f[0] != strconv.Itoa(int(parent["pid"].(float64))) {
		t.Fatalf("ps -p %d says %q; get_process_info parent %v", ex.PID, psOut, parent)
	}
	select {
	case o := <-done:
		t.Fatalf("the capture ended before it was released: %v %v", o.res, o.err)
	default:
	}
	// A wait that covers its whole timeout returns the outcome: the
	// workload cannot exit before the test writes the FIFO.
	w, isErr := call(t, cs, "wait_condition", map[string]any{"condition": "process_exit", "process_ref": ref, "timeout_ms": 300, "wait_ms": 300})
	if !isErr || jobState(w) != "TIMEOUT" {
		t.Fatalf("wait on the blocked workload: %v", w)
	}
	if cond, _ := w["error"].(map[string]any)["details"].(map[string]any)["condition"].(map[string]any); cond["pid"] != float64(ex.PID) || cond["process_ref"] != ref {
		t.Fatalf("the wait watched another process: %v", w)
	}
	w, isErr = call(t, cs, "wait_condition", map[string]any{"condition": "process_exit", "process_ref": ref, "timeout_ms": 60000, "wait_ms": 0})
	d, _ := w["data"].(map[string]any)
	jobID, _ := d["job_id"].(string)
	if isErr || jobID == "" {
		t.Fatalf("wait_condition did not start a job: %v", w)
	}

	release()
	// Continue the wait until it ends (each call waits at most 10 s).
	for {
		w, isErr = call(t, cs, "wait_condition", map[string]any{"job_id": jobID, "wait_ms": 10000})
		if isErr || jobState(w) != "running" {
			break
		}
	}
	if isErr || jobState(w) != "succeeded" {
		t.Fatalf("wait for the released workload's exit: %v", w)
	}
	o := <-done
	if o.err != nil || o.res.IsError {
		t.Fatalf("capture: %v %v", o.err, o.res)
	}
	var env2 map[string]any
	if err := json.Unmarshal([]byte(o.res.Content[0].(*mcp.TextContent).Text), &env2); err != nil {
		t.Fatal(err)
	}
	execs := env2["data"].(map[string]any)["capture"].(map[string]any)["executions"].([]any)
	row := execs[0].(map[string]any)
	// Its record (termination, exit code) is the analysis row it matches.
	rec := env2["data"].(map[string]any)["rows"].([]any)[0].(map[string]any)
	if row["pid"] != float64(ex.PID) || row["process_ref"] != ref || rec["position"] != row["position"] || rec["termination"] != "exited" || rec["exit_code"] != float64(0) {
		t.Fatalf("execution %v, row %v, want pid %d process_ref %s exited 0", row, rec, ex.PID, ref)
	}
	ended := nextEvent(t, events)
	if e := ended.exec; e.Event != "ended" || e.PID != ex.PID || e.ProcessRef == nil || *e.ProcessRef != ref || e.Termination != "exited" || e.ExitCode == nil || *e.ExitCode != 0 || ended.progress != 1 {
		t.Fatalf("ended notification %+v %v (%q)", e, ended.progress, ended.message)
	}
	// The lifetime that ran stays named: its history is readable.
	h, isErr := call(t, cs, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "mode": "summary"})
	if isErr {
		t.Fatalf("get_history of the exited workload: %v", h)
	}
	if !hostLockExists(env) {
		t.Fatal("no host.lock although a proc host named the workload")
	}
}

// hostLockExists reports whether env's runtime directory holds the host
// lock file (a proc host was started there).
func hostLockExists(env []string) bool {
	for _, kv := range env {
		if dir, ok := strings.CutPrefix(kv, "XDG_RUNTIME_DIR="); ok {
			_, err := os.Stat(filepath.Join(dir, "inquest", "host.lock"))
			return err == nil
		}
	}
	return false
}

// jobState is a job result's data.state, or its error code.
func jobState(env map[string]any) string {
	if d, ok := env["data"].(map[string]any); ok {
		if s, ok := d["state"].(string); ok {
			return s
		}
	}
	if e, ok := env["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

// TestCaptureWithoutProcToolset: a server that does not serve the proc
// toolset names no process_ref (null, with the reason) and starts no host;
// the pid is still named.
func TestCaptureWithoutProcToolset(t *testing.T) {
	env := isolatedEnv(t)
	cs, events := connectWithProgress(t, env, "--toolsets", "perf")
	dir := t.TempDir()
	params := &mcp.CallToolParams{Name: "capture_and_summarize_executions", Arguments: map[string]any{
		"target": map[string]any{"argv": []string{"true"}, "cwd": dir}, "provider": map[string]any{"kind": "direct"},
	}}
	params.SetProgressToken(7)
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("capture: %v %v", err, res)
	}
	var m map[string]any
	json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &m)
	row := m["data"].(map[string]any)["capture"].(map[string]any)["executions"].([]any)[0].(map[string]any)
	reason, _ := row["process_ref_reason"].(string)
	if row["process_ref"] != nil || !strings.Contains(reason, "does not serve the proc toolset") || row["pid"].(float64) <= 0 {
		t.Fatalf("execution row %v", row)
	}
	for _, want := range []string{"started", "ended"} {
		ev := nextEvent(t, events)
		if ev.exec.Event != want || float64(ev.exec.PID) != row["pid"] || ev.exec.ProcessRef != nil || ev.exec.ProcessRefReason != reason {
			t.Fatalf("%s notification %+v", want, ev.exec)
		}
	}
	if hostLockExists(env) {
		t.Fatal("a perf-only server started a proc host")
	}
}
