package bridge

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/tool"
)

func investigationRegistry(t *testing.T, mode Mode) (*tool.Registry, *host.Host) {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	h, err := host.New(host.Options{Version: "test", Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	b := &Local{Host: h, Session: h.NewSession()}
	reg := tool.NewRegistry()
	if err := reg.Add(Tools(func(context.Context) (Backend, error) { return b, nil }, mode)...); err != nil {
		t.Fatal(err)
	}
	return reg, h
}

func regCall(t *testing.T, reg *tool.Registry, name, args string) (map[string]any, *contract.Result, error) {
	t.Helper()
	res, err := reg.Call(context.Background(), name, json.RawMessage(args))
	if err != nil {
		return nil, nil, err
	}
	var d map[string]any
	b, _ := json.Marshal(res.Data)
	json.Unmarshal(b, &d)
	return d, res, nil
}

// Schema bounds reject bad calls before any backend work; wait_ms is a
// delivery option that does not change an operation's signature.
func TestInvestigationSchemas(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	for _, tl := range reg.Tools() {
		if tl.Name == host.ConfirmMethod || tl.Name == host.PendingConfirmationsMethod || strings.Contains(tl.Name, "confirm") {
			t.Fatalf("confirmation reachable as an MCP tool: %s", tl.Name)
		}
	}
	bad := []struct{ tool, args, field string }{
		{"wait_condition", `{"condition":"process_present","process_name":"x","timeout_ms":0}`, "/timeout_ms"},
		{"wait_condition", `{"condition":"process_present","process_name":"x","timeout_ms":60001}`, "/timeout_ms"},
		{"wait_condition", `{"condition":"metric_threshold","system":true,"metric_id":"load1","comparison":"==","threshold":1,"timeout_ms":10}`, "/comparison"},
		{"wait_condition", `{"condition":"process_present","process_name":"x","timeout_ms":10,"confirmed":true}`, ""},
		{"update_tracking", `{"operation_id":"a","expected_revision":"r","action":"add","process_name":"x","confirmed":true}`, ""},
		{"update_profile", `{"operation_id":"a","expected_revision":"r","action":"purge"}`, "/action"},
		{"get_history", `{"metric_ids":["rss_bytes"],"mode":"raw","limit":5001}`, "/limit"},
		{"get_history", `{"metric_ids":[]}`, "/metric_ids"},
	}
	for _, c := range bad {
		_, _, err := regCall(t, reg, c.tool, c.args)
		e := contract.AsError(err)
		if e == nil || e.Code != contract.CodeInvalidArgument || (c.field != "" && e.Field != c.field) {
			t.Errorf("%s %s: %v (field %q)", c.tool, c.args, err, func() string {
				if e != nil {
					return e.Field
				}
				return ""
			}())
		}
	}
	d, _, err := regCall(t, reg, "get_tracking", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	rev := d["revision"].(string)
	args := `{"operation_id":"op-1","expected_revision":"` + rev + `","action":"add","process_name":"Foo"}`
	first, _, err := regCall(t, reg, "update_tracking", args)
	if err != nil || first["state"] != "succeeded" {
		t.Fatalf("%v %v", first, err)
	}
	withWait := `{"operation_id":"op-1","expected_revision":"` + rev + `","action":"add","process_name":"Foo","wait_ms":0}`
	again, _, err := regCall(t, reg, "update_tracking", withWait)
	if err != nil || again["outcome"].(map[string]any)["revision"] != first["outcome"].(map[string]any)["revision"] {
		t.Fatalf("wait_ms changed the signature: %v %v", again, err)
	}
}

// A wait longer than one backend slice is followed by the bridge; a
// continuation resumes by job_id.
func TestWaitThroughBridge(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	start := time.Now()
	_, _, err := regCall(t, reg, "wait_condition", `{"condition":"process_present","process_name":"no-such-proc-inquest","timeout_ms":6000,"wait_ms":10000}`)
	e := contract.AsError(err)
	if e == nil || e.Code != contract.CodeTimeout || e.Details["last_observation"] == nil {
		t.Fatalf("want TIMEOUT with last observation: %v", err)
	}
	if d := time.Since(start); d < 6*time.Second {
		t.Fatalf("returned after %v, before timeout_ms", d)
	}
	// Raw mode: an immediate handle, then a continuation by job_id.
	rawReg, _ := investigationRegistry(t, Mode{Raw: true})
	d, res, err := regCall(t, rawReg, "wait_condition", `{"condition":"process_present","process_name":"no-such-proc-inquest","timeout_ms":300}`)
	if err != nil || d["state"] != "running" || res.NextAction == nil {
		t.Fatalf("raw start %v %v", d, err)
	}
	// Continue by job_id until the job ends (no sleep: a raw
	// continuation may answer running while the 300 ms have not passed).
	b, _ := json.Marshal(res.NextAction.Arguments)
	for d, res, err = regCall(t, rawReg, "wait_condition", string(b)); err == nil && d["state"] == "running"; d, res, err = regCall(t, rawReg, "wait_condition", string(b)) {
		if res.NextAction == nil {
			t.Fatalf("running without a next_action: %v", d)
		}
		b, _ = json.Marshal(res.NextAction.Arguments)
	}
	if contract.CodeOf(err) != contract.CodeTimeout {
		t.Fatalf("continuation: %v", err)
	}
}

// wait_condition rejects arguments its condition does not use (and extra
// arguments on a continuation) with INVALID_ARGUMENT naming the argument,
// before any wait starts (the host handler checks them).
func TestWaitRejectsIrrelevantArguments(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	for _, tc := range []struct{ args, field string }{
		{`{"condition":"process_present","process_name":"x","process_ref":"pr_x","timeout_ms":10}`, "/process_ref"},
		{`{"condition":"process_exit","process_ref":"pr_x","process_name":"x","timeout_ms":10}`, "/process_name"},
		{`{"condition":"process_exit","process_ref":"pr_x","metric_id":"rss_bytes","timeout_ms":10}`, "/metric_id"},
		{`{"condition":"process_present","process_name":"x","system":true,"timeout_ms":10}`, "/system"},
		{`{"condition":"process_present","process_name":"x","pid":1,"timeout_ms":10}`, "/pid"},
		{`{"job_id":"wait-1","condition":"process_exit"}`, "/condition"},
		{`{"job_id":"wait-1","timeout_ms":10,"wait_ms":5}`, "/timeout_ms"},
		{`{"condition":"process_present","process_name":"x"}`, "/timeout_ms"},
		{`{"process_name":"x","timeout_ms":10}`, "/condition"},
	} {
		_, err := reg.Call(context.Background(), "wait_condition", json.RawMessage(tc.args))
		e := contract.AsError(err)
		if e == nil || e.Code != contract.CodeInvalidArgument || e.Field != tc.field || !strings.Contains(e.Message, strings.TrimPrefix(tc.field, "/")) {
			t.Errorf("%s: %+v, want INVALID_ARGUMENT at %s", tc.args, e, tc.field)
		}
	}
	// Arguments that apply pass the check (and fail, if at all, for
	// another reason: an unknown process_ref or job_id).
	for _, ok := range []string{
		`{"condition":"process_present","process_name":"x","timeout_ms":10}`,
		`{"condition":"metric_threshold","metric_id":"rss_bytes","comparison":">","threshold":1,"process_ref":"pr_x","timeout_ms":10,"wait_ms":0}`,
		`{"job_id":"wait-1","wait_ms":0}`,
	} {
		if _, err := reg.Call(context.Background(), "wait_condition", json.RawMessage(ok)); contract.CodeOf(err) == contract.CodeInvalidArgument {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestWaitCoveringTimeoutIsTerminal: when wait_ms (given, or the default)
// covers the whole timeout_ms, the one call returns the terminal outcome,
// TIMEOUT included, never "running" with a continuation; also when
// wait_ms equals timeout_ms exactly and when the wait spans more than one
// backend slice.
func TestWaitCoveringTimeoutIsTerminal(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	child := exec.Command("sleep", "300")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	pid := strconv.Itoa(child.Process.Pid)
	for _, args := range []string{
		`{"condition":"process_present","process_name":"no-such-proc-inquest","timeout_ms":200}`,
		`{"condition":"process_present","process_name":"no-such-proc-inquest","timeout_ms":300,"wait_ms":300}`,
		`{"condition":"process_exit","pid":` + pid + `,"timeout_ms":300,"wait_ms":300}`,
		`{"condition":"metric_threshold","system":true,"metric_id":"load1","comparison":">","threshold":1e9,"timeout_ms":250,"wait_ms":250}`,
		`{"condition":"process_exit","pid":` + pid + `,"timeout_ms":4500,"wait_ms":4500}`,
	} {
		d, res, err := regCall(t, reg, "wait_condition", args)
		if err == nil {
			t.Errorf("%s: state %v next %v, want TIMEOUT", args, d["state"], res.NextAction)
			continue
		}
		if e := contract.AsError(err); e.Code != contract.CodeTimeout || e.Details["last_observation"] == nil || e.NextAction != nil {
			t.Errorf("%s: %+v, want TIMEOUT with the last observation and no next call", args, e)
		}
	}
}

// export_graphs through the bridge: an omitted operation_id is generated;
// the default delivery waits for the final operation (the written file in
// outcome); wait_ms 0 returns at once, and a still running export names
// the exact get_operation continuation, whose final state names the same
// file; a repeat with the generated id and identical arguments is the
// retained operation, whatever wait_ms says.
func TestExportGraphsDelivery(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	dir := t.TempDir()
	args := `{"output_directory":"` + dir + `","filename":"a.csv","metrics":[{"metric_id":"load1"}]}`
	d, res, err := regCall(t, reg, "export_graphs", args)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := d["operation_id"].(string)
	out, _ := d["outcome"].(map[string]any)
	if !strings.HasPrefix(id, "op-") || d["state"] != "succeeded" || res.NextAction != nil || out["output_path"] != filepath.Join(dir, "a.csv") {
		t.Fatalf("default delivery: %v next %+v", d, res.NextAction)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.csv")); err != nil {
		t.Fatal(err)
	}
	again, _, err := regCall(t, reg, "export_graphs", strings.Replace(args, "{", `{"wait_ms":0,"operation_id":"`+id+`",`, 1))
	if err != nil || again["submitted_at"] != d["submitted_at"] || again["state"] != "succeeded" {
		t.Fatalf("repeat of the generated id: %v %v", again, err)
	}
	d, res, err = regCall(t, reg, "export_graphs", `{"wait_ms":0,"output_directory":"`+dir+`","filename":"b.csv"}`)
	if err != nil {
		t.Fatal(err)
	}
	for d["state"] == "running" || d["state"] == "pending" {
		if res.NextAction == nil || res.NextAction.Tool != "get_operation" || res.NextAction.Arguments["operation_id"] != d["operation_id"] {
			t.Fatalf("running without its continuation: %+v", res.NextAction)
		}
		b, _ := json.Marshal(res.NextAction.Arguments)
		if d, res, err = regCall(t, reg, "get_operation", string(b)); err != nil {
			t.Fatal(err)
		}
	}
	if out, _ := d["outcome"].(map[string]any); d["state"] != "succeeded" || out["output_path"] != filepath.Join(dir, "b.csv") {
		t.Fatalf("wait_ms 0 export: %v", d)
	}
}
