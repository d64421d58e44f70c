package bridge

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// One target that cannot be read fails that target only: get_metrics over
// a live pid and an exited one is partial, the exited target's
// sample carries PROCESS_EXITED with field /targets/1/pid (or
// /targets/1/process_ref for an exited process_ref), and the others carry
// values (a system target beside them likewise). Only when every target fails is the call an error.
func TestGetMetricsExitedPIDTarget(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	// A child that has exited and been reaped: its pid has no process
	// (until reused, which gonePID stands in for below).
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	exited := strconv.Itoa(child.Process.Pid)
	self := strconv.Itoa(os.Getpid())
	ref := exitedRef(t, reg)

	for _, tc := range []struct {
		name, gone, field string
		want              map[string]any
	}{
		{"pid", `{"pid":` + exited + `}`, "/targets/1/pid", map[string]any{"pid": float64(child.Process.Pid)}},
		{"unused pid", `{"pid":` + gonePID + `}`, "/targets/1/pid", map[string]any{"pid": float64(2147483647)}},
		{"process_ref", `{"process_ref":"` + ref + `"}`, "/targets/1/process_ref", map[string]any{"process_ref": ref}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "pid" && pidAlive(exited) {
				t.Skip("the exited child's pid was reused")
			}
			d, res, err := regCall(t, reg, "get_metrics", `{"targets":[{"pid":`+self+`},`+tc.gone+`],"metric_ids":["rss_bytes"]}`)
			if err != nil {
				t.Fatalf("one exited target failed the call: %v", err)
			}
			if res.Status != contract.StatusPartial || len(res.Warnings) == 0 {
				t.Fatalf("status %s warnings %v", res.Status, res.Warnings)
			}
			samples := d["samples"].([]any)
			if len(samples) != 2 {
				t.Fatalf("samples %v", samples)
			}
			live := samples[0].(map[string]any)
			if v, _ := live["values"].(map[string]any)["rss_bytes"].(string); v == "" || v == "0" {
				t.Fatalf("live target %v", live)
			}
			failed := samples[1].(map[string]any)
			e, _ := failed["error"].(map[string]any)
			if e["code"] != string(contract.CodeProcessExited) || e["field"] != tc.field {
				t.Fatalf("exited target %v", failed)
			}
			for k, v := range tc.want {
				if failed["target"].(map[string]any)[k] != v {
					t.Fatalf("exited target names %v, want %v", failed["target"], tc.want)
				}
			}
			if _, ok := failed["values"]; ok {
				t.Fatalf("exited target carries values: %v", failed)
			}
			if resolved, _ := d["resolved_pids"].([]any); len(resolved) != 1 || resolved[0].(map[string]any)["field"] != "/targets/0/pid" {
				t.Fatalf("resolved_pids %v", d["resolved_pids"])
			}
		})
	}
}

func pidAlive(pid string) bool {
	_, err := os.Stat("/proc/" + pid)
	return err == nil
}

// exitedRef is the process_ref of a lifetime that has exited and been
// reaped: a child's pid resolved while it ran.
func exitedRef(t *testing.T, reg *tool.Registry) string {
	t.Helper()
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	var ref string
	for ref == "" {
		d, _, err := regCall(t, reg, "get_metrics", `{"targets":[{"pid":`+strconv.Itoa(sleeper.Process.Pid)+`}],"metric_ids":["rss_bytes"]}`)
		if err != nil {
			if contract.CodeOf(err) == contract.CodeCollectionFailed {
				continue // not in a sample yet
			}
			t.Fatal(err)
		}
		ref = d["resolved_pids"].([]any)[0].(map[string]any)["process_ref"].(string)
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	return ref
}

// A process_ref of an exited lifetime is PROCESS_EXITED at /process_ref
// wherever it is sent at the top level, as wait_condition always said.
func TestExitedRefNamesField(t *testing.T) {
	reg, _ := investigationRegistry(t, Mode{})
	ref := exitedRef(t, reg)
	for _, tc := range []struct{ tool, args string }{
		{"get_process_info", `{"process_ref":"` + ref + `"}`},
		{"start_capture", `{"kind":"open_files","process_ref":"` + ref + `"}`},
		{"start_capture", `{"kind":"network","process_ref":"` + ref + `"}`},
		{"wait_condition", `{"condition":"metric_threshold","metric_id":"rss_bytes","comparison":">","threshold":1,"process_ref":"` + ref + `","timeout_ms":100}`},
	} {
		_, _, err := regCall(t, reg, tc.tool, tc.args)
		if e := contract.AsError(err); e == nil || e.Code != contract.CodeProcessExited || e.Field != "/process_ref" {
			t.Errorf("%s %s: %+v, want PROCESS_EXITED at /process_ref", tc.tool, tc.args, e)
		}
	}
}
