package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
)

// gonePID is above the kernel's largest PID (pid_max is at most 2^22), so
// no process ever has it: a pid that resolves to PROCESS_EXITED on any
// machine.
const gonePID = "2147483647"

// TestErrorsNameWhatWasSent sweeps the proc tools with bad calls: each
// error has the expected code, retryable only when an unchanged retry can
// succeed, and a field that is a JSON pointer to an argument the caller
// sent (never a member of a schema branch the caller did not choose,
// never a default the caller did not give).
func TestErrorsNameWhatWasSent(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	d, _, err := regCall(t, reg, "get_tracking", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	rev := d["revision"].(string)
	op := `"operation_id":"sweep","expected_revision":"` + rev + `","action":"add",`
	for _, tc := range []struct {
		tool, args string
		code       contract.Code
		field      string
		retryable  bool
	}{
		// target alternatives: both given is one error at the object
		{"get_history", `{"target":{"pid":1,"system":true},"metric_ids":["rss_bytes"]}`, contract.CodeInvalidArgument, "/target", false},
		{"get_history", `{"target":{"process_ref":"pr_x","pid":1},"metric_ids":["rss_bytes"]}`, contract.CodeInvalidArgument, "/target", false},
		{"get_history", `{"target":{"pid":1,"name":"x"},"metric_ids":["rss_bytes"]}`, contract.CodeInvalidArgument, "/target/name", false},
		{"get_history", `{"target":{"pid":` + gonePID + `},"metric_ids":["rss_bytes"]}`, contract.CodeProcessExited, "/target/pid", false},
		{"get_history", `{"source":"log","log_ref":"nope","metric_ids":["rss_bytes"]}`, contract.CodeReferenceInvalid, "/log_ref", false},
		// a pid names a live process: a log's process is named by its lp_ ref
		{"get_history", `{"source":"log","log_ref":"nope","target":{"pid":1},"metric_ids":["rss_bytes"]}`, contract.CodeReferenceInvalid, "/target/pid", false},
		{"get_metrics", `{"source":"log","targets":[{"pid":1}],"metric_ids":["rss_bytes"]}`, contract.CodeReferenceInvalid, "/targets/0/pid", false},
		// a default target is not an argument: the metric that does not fit it is
		{"get_metrics", `{"metric_ids":["rss_bytes"]}`, contract.CodeInvalidArgument, "/metric_ids/0", false},
		// (one exited pid among readable targets is partial: TestGetMetricsExitedPIDTarget)
		{"get_metrics", `{"targets":[{"pid":` + gonePID + `}],"metric_ids":["rss_bytes"]}`, contract.CodeProcessExited, "/targets/0/pid", false},
		{"get_metrics", `{"targets":[{"process_ref":"bad"},{"pid":` + gonePID + `}],"metric_ids":["rss_bytes"]}`, contract.CodeReferenceInvalid, "/targets/0/process_ref", false},
		{"get_history", `{"metric_ids":["load1","rss_bytes"]}`, contract.CodeInvalidArgument, "/metric_ids/1", false},
		{"wait_condition", `{"condition":"metric_threshold","metric_id":"rss_bytes","comparison":">","threshold":1,"timeout_ms":10}`, contract.CodeInvalidArgument, "/metric_id", false},
		// unknown references
		{"read_capture", `{"capture_id":"nope"}`, contract.CodeReferenceInvalid, "/capture_id", false},
		{"get_job", `{"job_id":"nope"}`, contract.CodeReferenceInvalid, "/job_id", false},
		{"cancel_job", `{"job_id":"nope"}`, contract.CodeReferenceInvalid, "/job_id", false},
		{"wait_condition", `{"job_id":"nope"}`, contract.CodeReferenceInvalid, "/job_id", false},
		{"list_processes", `{"cursor":"garbage"}`, contract.CodeCursorInvalid, "/cursor", false},
		{"start_capture", `{"kind":"open_files","process_ref":"bad"}`, contract.CodeReferenceInvalid, "/process_ref", false},
		// a pid with no process, wherever a pid replaces a process_ref
		{"start_capture", `{"kind":"open_files","pid":` + gonePID + `}`, contract.CodeProcessExited, "/pid", false},
		{"get_process_info", `{"pid":` + gonePID + `}`, contract.CodeProcessExited, "/pid", false},
		{"wait_condition", `{"condition":"process_exit","pid":` + gonePID + `,"timeout_ms":10}`, contract.CodeProcessExited, "/pid", false},
		{"update_tracking", `{` + op + `"pid":` + gonePID + `}`, contract.CodeProcessExited, "/pid", false},
		// graph sources: process_ref or pid, each pointed at in metrics[i]
		{"add_graphs", `{"metrics":[{"metric_id":"load1"},{"process_ref":"bad","metric_id":"rss_bytes"}]}`, contract.CodeReferenceInvalid, "/metrics/1/process_ref", false},
		{"add_graphs", `{"metrics":[{"pid":` + gonePID + `,"metric_id":"rss_bytes"}]}`, contract.CodeProcessExited, "/metrics/0/pid", false},
		{"add_graphs", `{"metrics":[{"pid":1,"process_ref":"x","metric_id":"rss_bytes"}]}`, contract.CodeInvalidArgument, "/metrics/0/pid", false},
		{"add_graphs", `{"metrics":[{"metric_id":"nope"}]}`, contract.CodeInvalidArgument, "/metrics/0/metric_id", false},
		{"export_graphs", `{"output_directory":"/nonexistent-inquest","metrics":[{"pid":` + gonePID + `,"metric_id":"rss_bytes"}]}`, contract.CodeProcessExited, "/metrics/0/pid", false},
		// logs, operations, revisions: the argument that was stale or unknown
		{"get_history", `{"source":"log","metric_ids":["rss_bytes"]}`, contract.CodeInvalidArgument, "/source", false},
		{"open_log", `{"log_id":"nope"}`, contract.CodeReferenceInvalid, "/log_id", false},
		{"open_log", `{"job_id":"nope"}`, contract.CodeReferenceInvalid, "/job_id", false},
		{"get_operation", `{"operation_id":"nope"}`, contract.CodeOperationUnknown, "/operation_id", false},
		{"get_tracking", `{"cursor":"garbage"}`, contract.CodeCursorInvalid, "/cursor", false},
		{"update_tracking", `{"operation_id":"stale","expected_revision":"x","action":"add","process_name":"x"}`, contract.CodeStateConflict, "/expected_revision", false},
		{"start_recording", `{"operation_id":"stale-rec","expected_revision":"x","interval_seconds":1}`, contract.CodeStateConflict, "/expected_revision", false},
		{"stop_recording", `{"operation_id":"stop","recording_session_id":"nope"}`, contract.CodeStateConflict, "/recording_session_id", false},
		{"add_graphs", `{"metrics":[{"metric_id":"load1"}],"expected_revision":"x"}`, contract.CodeStateConflict, "/expected_revision", false},
		{"update_profile", `{"operation_id":"load-nope","expected_revision":"` + rev + `","action":"load","profile_id":"nope","profile_revision":"1"}`, contract.CodeReferenceInvalid, "/profile_id", false},
		{"rank_processes", `{"metric_id":"rss_bytes","to":"2026-11-30T10:00:00Z"}`, contract.CodeInvalidArgument, "/to", false},
		{"get_graphs", `{"target_limit":0}`, contract.CodeInvalidArgument, "/target_limit", false},
		{"read_capture", `{"capture_id":"nope","projection":["path"]}`, contract.CodeReferenceInvalid, "/capture_id", false},
		// a missing process choice lists both (process_ref, pid) at the object lacking them
		{"start_capture", `{"kind":"open_files"}`, contract.CodeInvalidArgument, "", false},
		{"start_capture", `{"kind":"modules","wait_ms":0}`, contract.CodeInvalidArgument, "", false},
		{"wait_condition", `{"condition":"process_exit","timeout_ms":1000}`, contract.CodeInvalidArgument, "", false},
		{"get_process_info", `{}`, contract.CodeInvalidArgument, "", false},
		// a pid where no process may go is named as the pid that was sent
		{"add_graphs", `{"metrics":[{"metric_id":"load1","pid":1}]}`, contract.CodeInvalidArgument, "/metrics/0/pid", false},
		{"add_graphs", `{"metrics":[{"metric_id":"load1","process_ref":"x"}]}`, contract.CodeInvalidArgument, "/metrics/0/process_ref", false},
		// a malformed cursor says so at /cursor, before the capture is looked up
		{"read_capture", `{"capture_id":"cap-x","cursor":"zzz"}`, contract.CodeCursorInvalid, "/cursor", false},
		// a wait that ends by its timeout can succeed when sent again
		{"wait_condition", `{"condition":"process_present","process_name":"no-such-proc-inquest","timeout_ms":1,"wait_ms":1000}`, contract.CodeTimeout, "", true},
	} {
		_, err := reg.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
		e := contract.AsError(err)
		if e == nil || e.Code != tc.code || e.Field != tc.field || e.Retryable != tc.retryable {
			t.Errorf("%s %s: got %+v, want %s at %q retryable %v", tc.tool, tc.args, e, tc.code, tc.field, tc.retryable)
			continue
		}
		if strings.Contains(e.Message, "requires process_ref") {
			if !strings.Contains(e.Message, " or pid") || e.Expected == nil {
				t.Errorf("%s %s: the missing choice does not list both: %+v", tc.tool, tc.args, e)
			} else if b, _ := json.Marshal(e.Expected); string(b) != `{"one_of_required":[["process_ref"],["pid"]]}` {
				t.Errorf("%s %s: one_of_required %s", tc.tool, tc.args, b)
			}
		}
		if strings.Contains(tc.args, `"pid"`) && !strings.Contains(tc.args, "process_ref") && strings.Contains(e.Message, "process_ref") && strings.Contains(e.Message, "omit") {
			t.Errorf("%s %s: names process_ref the caller did not send: %s", tc.tool, tc.args, e.Message)
		}
		if strings.Contains(tc.args, `"source":"log"`) && strings.HasSuffix(tc.field, "/pid") {
			if !strings.Contains(e.Message, "log process_ref") || e.NextAction == nil || e.NextAction.Tool != "list_processes" {
				t.Errorf("%s %s: a pid against a log does not lead to the log's processes: %+v", tc.tool, tc.args, e)
			} else if b, _ := json.Marshal(e.NextAction.Arguments); !strings.Contains(string(b), `"filter":{"pid":1}`) || !strings.Contains(string(b), `"source":"log"`) {
				t.Errorf("%s %s: next_action %s", tc.tool, tc.args, b)
			}
		}
		if strings.Contains(tc.args, "zzz") && !strings.Contains(e.Message, "malformed") {
			t.Errorf("%s %s: a malformed cursor not called malformed: %s", tc.tool, tc.args, e.Message)
		}
		if tc.field != "" && !sent(tc.args, tc.field) {
			t.Errorf("%s: field %s names nothing the caller sent", tc.tool, tc.field)
		}
		if !strings.Contains(tc.args, `"target`) && !strings.Contains(tc.args, "process_ref") && !strings.Contains(tc.args, "pid") && !strings.Contains(tc.args, "system") &&
			strings.Contains(e.Message, "target") && !strings.Contains(e.Message, "default system target") {
			t.Errorf("%s: a default target not described as the default: %s", tc.tool, e.Message)
		}
		if strings.Contains(e.Message, "targets/0") && !strings.Contains(tc.args, "targets") {
			t.Errorf("%s: a default described as an argument: %s", tc.tool, e.Message)
		}
	}
}

// sent reports whether the JSON pointer ptr names a member of args.
func sent(args, ptr string) bool {
	var v any
	if json.Unmarshal([]byte(args), &v) != nil {
		return false
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	return true
}

// TestGraphSourcesAndTrackingTakePID: a graph source's pid is resolved to
// the lifetime running under it now (the result names that process_ref,
// which the graph then draws), and update_tracking says the caller sent a
// pid.
func TestGraphSourcesAndTrackingTakePID(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	child := exec.Command("sleep", "300")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	pid := strconv.Itoa(child.Process.Pid)
	var d map[string]any
	var err error
	// The host samples the child before it can resolve its pid; a
	// COLLECTION_FAILED (not in a sample yet) is retryable.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d, _, err = regCall(t, reg, "add_graphs", `{"metrics":[{"metric_id":"load1"},{"pid":`+pid+`,"metric_id":"rss_bytes"}]}`); contract.CodeOf(err) != contract.CodeCollectionFailed {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	rp, _ := d["resolved_pids"].([]any)
	if len(rp) != 1 {
		t.Fatalf("resolved_pids %v", d["resolved_pids"])
	}
	r := rp[0].(map[string]any)
	ref, _ := r["process_ref"].(string)
	if r["field"] != "/metrics/1/pid" || r["pid"] != float64(child.Process.Pid) || ref == "" {
		t.Fatalf("resolution %v", r)
	}
	ws := d["outcome"].(map[string]any)["workspace"].(map[string]any)
	found := false
	for _, g := range ws["graphs"].([]any) {
		tg, _ := g.(map[string]any)["target"].(map[string]any)
		found = found || tg["process_ref"] == ref
	}
	if !found {
		t.Fatalf("no graph of %s: %v", ref, ws["graphs"])
	}
	g, _, err := regCall(t, reg, "get_tracking", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	byPID := `{"operation_id":"by-pid","expected_revision":"` + g["revision"].(string) + `","action":"add","pid":` + pid + `}`
	u, _, err := regCall(t, reg, "update_tracking", byPID)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := u["outcome"].(map[string]any)
	if u["state"] != "succeeded" || out["resolved_from"] != "pid" || out["root_name"] != "sleep" {
		t.Fatalf("update_tracking by pid: %v", u)
	}
	// After the process exited, a repeat of the operation with identical
	// arguments returns the retained outcome (not PROCESS_EXITED); other
	// arguments under the same id are STATE_CONFLICT; a new id is
	// PROCESS_EXITED naming the pid.
	exportArgs := `{"operation_id":"exp-pid","output_directory":"` + t.TempDir() + `","metrics":[{"pid":` + pid + `,"metric_id":"rss_bytes"}]}`
	exp, _, err := regCall(t, reg, "export_graphs", exportArgs)
	if err != nil || exp["state"] != "succeeded" {
		t.Fatalf("export_graphs by pid: %v %v", exp, err)
	}
	child.Process.Kill()
	child.Wait()
	expAgain, _, err := regCall(t, reg, "export_graphs", exportArgs)
	if err != nil || expAgain["submitted_at"] != exp["submitted_at"] || fmt.Sprint(expAgain["outcome"]) != fmt.Sprint(exp["outcome"]) {
		t.Fatalf("export_graphs repeat after exit is not the retained operation: %v %v", expAgain, err)
	}
	_, _, err = regCall(t, reg, "export_graphs", strings.Replace(exportArgs, "exp-pid", "exp-pid-2", 1))
	if e := contract.AsError(err); e == nil || e.Code != contract.CodeProcessExited || e.Field != "/metrics/0/pid" {
		t.Fatalf("export_graphs new id after exit: %v", err)
	}
	again, _, err := regCall(t, reg, "update_tracking", byPID)
	if err != nil {
		t.Fatalf("repeat after exit: %v", err)
	}
	if again["state"] != "succeeded" || again["submitted_at"] != u["submitted_at"] || fmt.Sprint(again["outcome"]) != fmt.Sprint(out) {
		t.Fatalf("repeat after exit is not the retained outcome:\n%v\n%v", again, u)
	}
	if _, _, err := regCall(t, reg, "update_tracking", strings.Replace(byPID, `"add"`, `"remove"`, 1)); contract.CodeOf(err) != contract.CodeStateConflict {
		t.Fatalf("same id, other arguments, after exit: %v", err)
	}
	_, _, err = regCall(t, reg, "update_tracking", strings.Replace(byPID, "by-pid", "by-pid-2", 1))
	if e := contract.AsError(err); e == nil || e.Code != contract.CodeProcessExited || e.Field != "/pid" {
		t.Fatalf("new id after exit: %v", err)
	}
}

// TestGraphPIDInLogView: in Log view a graph source's pid cannot be
// resolved (that is live inspection); the error points at the pid, is
// retryable (the unchanged call succeeds back in Live view) and names
// get_graphs with include_processes, which lists the recording's refs.
func TestGraphPIDInLogView(t *testing.T) {
	reg, h := investigationRegistry(t, Mode{})
	view := h.NewSession()
	if _, err := h.Dispatch(context.Background(), view, host.ActivityMethod, json.RawMessage(`{"activity":"log"}`)); err != nil {
		t.Fatalf("set_activity log: %v", err)
	}
	for _, tc := range []struct{ tool, args string }{
		{"add_graphs", `{"metrics":[{"metric_id":"load1"},{"metric_id":"rss_bytes","pid":1}]}`},
		{"export_graphs", `{"output_directory":"/nonexistent-inquest","metrics":[{"metric_id":"load1"},{"metric_id":"rss_bytes","pid":1}]}`},
	} {
		_, err := reg.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
		e := contract.AsError(err)
		if e == nil || e.Code != contract.CodeActivityConflict || e.Field != "/metrics/1/pid" || !e.Retryable ||
			!strings.Contains(e.Message, "Log view") || !strings.Contains(e.Message, "process_ref") ||
			e.NextAction == nil || e.NextAction.Tool != "get_graphs" || e.NextAction.Arguments["include_processes"] != true {
			t.Fatalf("%s in Log view: %+v", tc.tool, e)
		}
	}
}
