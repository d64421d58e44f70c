package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/recording"
	"github.com/inquest-dev/inquest/internal/sample"
)

var logT0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// writeLog writes a recording of frames snapshots, 5 s apart, of pids 10,
// 11 and 12 (12 is a child of 10; 11 is absent from the last frame) with
// the given catalogs (nil: this build's).
func writeLog(t *testing.T, path string, frames int, pdefs []recording.MetricDef, end bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr := recording.Header{CreatedAt: logT0, IntervalMs: 5000, Tracked: []string{"app"}}
	if pdefs != nil {
		_, sys := recording.Catalog()
		hdr.ProcessMetrics, hdr.SystemMetrics = pdefs, sys
	}
	w, err := recording.NewWriter(f, hdr)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < frames; k++ {
		s := &sample.Snapshot{Seq: uint64(k + 1), Time: logT0.Add(time.Duration(k) * 5 * time.Second)}
		for _, pid := range []int32{10, 11, 12} {
			if pid == 11 && k == frames-1 {
				continue
			}
			p := sample.Process{PID: pid, PPID: 1, StartTicks: uint64(pid) * 100, StartTime: logT0.Add(-time.Minute), Name: "app", Exe: "/opt/app"}
			if pid == 12 {
				p.PPID = 10
			}
			p.Set(sample.PRSS, uint64(1000*(k+1))*uint64(pid))
			p.Set(sample.PThreads, 4)
			if k%2 == 0 {
				p.Set(sample.PFDs, uint64(k)) // measured zero at k == 0
			}
			s.Procs = append(s.Procs, p)
		}
		s.System.Set(sample.SMemUsed, uint64(k))
		procs := make([]*sample.Process, len(s.Procs))
		for i := range s.Procs {
			procs[i] = &s.Procs[i]
		}
		if err := w.WriteSnapshot(s, procs); err != nil {
			t.Fatal(err)
		}
	}
	if end {
		w.Close("stopped")
	}
}

func logIDs(t *testing.T, h *Host, s *Session) map[string]string {
	t.Helper()
	d, _ := mustCall(t, h, s, "list_logs", map[string]any{})
	id := d["job_id"].(string)
	for d["state"] == "running" {
		time.Sleep(10 * time.Millisecond)
		d, _ = mustCall(t, h, s, "get_job", map[string]any{"job_id": id})
	}
	c, _ := mustCall(t, h, s, "read_capture", map[string]any{"capture_id": d["capture_id"]})
	out := map[string]string{}
	for _, r := range c["rows"].([]any) {
		m := r.(map[string]any)
		out[m["name"].(string)] = m["log_id"].(string)
	}
	return out
}

func openLogRef(t *testing.T, h *Host, s *Session, id string) (string, map[string]any, *contract.Result) {
	t.Helper()
	d, res := mustCall(t, h, s, "open_log", map[string]any{"log_id": id})
	for d["state"] == "running" {
		d, res = mustCall(t, h, s, "open_log", map[string]any{"job_id": d["job_id"]})
	}
	return d["log_ref"].(string), d, res
}

func TestLogSource(t *testing.T) {
	h := testHost(t, 200*time.Millisecond, nil)
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	dir, src, err := RecordingDirectory()
	if err != nil || src != "default" {
		t.Fatal(dir, src, err)
	}
	os.MkdirAll(dir, 0o700)
	writeLog(t, filepath.Join(dir, "a.log"), 7, nil, true)
	// b: an older catalog without threads and with a metric this build
	// does not know; interrupted (no end record).
	pdefs, _ := recording.Catalog()
	pdefs = slices.DeleteFunc(pdefs, func(d recording.MetricDef) bool { return d.ID == "threads" })
	// The unknown metric takes the slot threads left (the catalog may use
	// all 32 slots a recording holds).
	pdefs = append(pdefs, recording.MetricDef{Slot: sample.PThreads, ID: "future_metric", Unit: "count", Repr: sample.ReprInteger})
	writeLog(t, filepath.Join(dir, "b.LOG"), 3, pdefs, false)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "junk.log"), []byte("not a recording"), 0o600)

	s := h.NewSession()
	defer s.Close()
	ids := logIDs(t, h, s)
	if len(ids) != 3 || ids["notes.txt"] != "" {
		t.Fatalf("listing %v", ids)
	}
	ref, opened, res := openLogRef(t, h, s, ids["a.log"])
	if res.Status != contract.StatusComplete || opened["recording"].(map[string]any)["interval_seconds"] != 5.0 {
		t.Fatalf("open a: %v %v", res.Status, opened)
	}

	// scope live = final frame (11 is absent), retained/all = every identity.
	list := func(args map[string]any) ([]any, *contract.Result) {
		args["source"], args["log_ref"] = "log", ref
		d, res := mustCall(t, h, s, "list_processes", args)
		return d["rows"].([]any), res
	}
	live, lres := list(map[string]any{})
	all, _ := list(map[string]any{"scope": "all"})
	if len(live) != 2 || len(all) != 3 || lres.Source != "log" {
		t.Fatalf("live %d all %d source %s", len(live), len(all), lres.Source)
	}
	byPID := map[float64]map[string]any{}
	for _, r := range all {
		m := r.(map[string]any)
		byPID[m["pid"].(float64)] = m
		if m["lifecycle"] != "unknown" {
			t.Fatalf("lifecycle %v", m["lifecycle"])
		}
	}
	if par := byPID[12]["parent"].(map[string]any); par["relationship"] != "verified" || par["process_ref"] != byPID[10]["process_ref"] {
		t.Fatalf("parent of 12: %v", par)
	}
	// Paging through a log listing keeps the log metadata.
	page1, pres := list(map[string]any{"scope": "all", "limit": 1})
	if len(page1) != 1 || pres.NextAction == nil {
		t.Fatal("no next page")
	}
	b, _ := json.Marshal(pres.NextAction.Arguments)
	d2, res2, err := call(t, h, s, "list_processes", json.RawMessage(b))
	if err != nil || res2.Source != "log" || len(d2["rows"].([]any)) != 1 {
		t.Fatalf("page 2: %v %v", err, d2)
	}

	// History counts are per stored frame; fd_count was measured on even
	// frames only (0 included).
	ref10 := byPID[10]["process_ref"].(string)
	d, hres := mustCall(t, h, s, "get_history", map[string]any{"source": "log", "log_ref": ref, "target": map[string]any{"process_ref": ref10}, "metric_ids": []string{"fd_count", "rss_bytes"}})
	fd := d["metrics"].(map[string]any)["fd_count"].(map[string]any)
	if fd["sample_count"] != 7.0 || fd["available_value_count"] != 4.0 || fd["missing_value_count"] != 3.0 || fd["min"] != "0" {
		t.Fatalf("fd_count summary %v", fd)
	}
	if cov := covOf(hres); cov["max_sample_interval_ms"] != 5000.0 {
		t.Fatalf("coverage %v", cov)
	}
	// get_metrics is the final frame; 11 is not in it.
	ref11 := byPID[11]["process_ref"].(string)
	_, _, err = call(t, h, s, "get_metrics", map[string]any{"log_ref": ref, "metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref11}}})
	wantCode(t, err, contract.CodeProcessExited)
	d, _ = mustCall(t, h, s, "get_metrics", map[string]any{"log_ref": ref, "metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref10}}})
	if v := d["samples"].([]any)[0].(map[string]any)["values"].(map[string]any)["rss_bytes"]; v != "70000" {
		t.Fatalf("final rss %v", v)
	}
	// log_ref with source live is refused; a log ref never reaches live.
	_, _, err = call(t, h, s, "get_metrics", map[string]any{"source": "live", "log_ref": ref, "metric_ids": []string{"rss_bytes"}})
	wantCode(t, err, contract.CodeInvalidArgument)
	_, _, err = call(t, h, s, "get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref10}}})
	wantCode(t, err, contract.CodeReferenceInvalid)

	// b: schema compatibility and an interrupted file.
	refB, openedB, resB := openLogRef(t, h, s, ids["b.LOG"])
	rb := openedB["recording"].(map[string]any)
	if resB.Status != contract.StatusPartial || len(resB.Warnings) != 1 || !slices.Contains(anyStrings(rb["absent_metric_ids"]), "threads") || !slices.Contains(anyStrings(rb["unmapped_metric_ids"]), "future_metric") {
		t.Fatalf("open b: %v %v %v", resB.Status, resB.Warnings, rb)
	}
	rowsB, _ := mustCall(t, h, s, "list_processes", map[string]any{"log_ref": refB, "scope": "all"})
	refB10 := rowsB["rows"].([]any)[0].(map[string]any)["process_ref"].(string)
	d, res = mustCall(t, h, s, "get_metrics", map[string]any{"log_ref": refB, "metric_ids": []string{"threads", "rss_bytes"}, "targets": []any{map[string]any{"process_ref": refB10}}})
	smp := d["samples"].([]any)[0].(map[string]any)
	if smp["unavailable"].(map[string]any)["threads"] != "unknown" || res.Status != contract.StatusPartial {
		t.Fatalf("b metrics %v %v", smp, res.Status)
	}
	// A process_ref of log a does not resolve in log b.
	_, _, err = call(t, h, s, "get_history", map[string]any{"log_ref": refB, "target": map[string]any{"process_ref": ref10}, "metric_ids": []string{"rss_bytes"}})
	wantCode(t, err, contract.CodeReferenceInvalid)

	// A file that is not a recording fails with its byte offset.
	_, err = h.Dispatch(context.Background(), s, "open_log", json.RawMessage(`{"log_id":"`+ids["junk.log"]+`"}`))
	if contract.CodeOf(err) != contract.CodeDecodeFailed || contract.AsError(err).Details["offset"] == nil {
		t.Fatalf("junk: %v", err)
	}

	// Another connection cannot use the log_ref.
	s2 := h.NewSession()
	defer s2.Close()
	_, _, err = call(t, h, s2, "get_metrics", map[string]any{"log_ref": ref, "metric_ids": []string{"rss_bytes"}})
	wantCode(t, err, contract.CodeReferenceInvalid)

	// Budget: a load that would exceed it fails before reading anything.
	old := LogBudget
	LogBudget = 1 << 10
	_, err = h.Dispatch(context.Background(), s2, "open_log", json.RawMessage(`{"log_id":"`+ids["a.log"]+`"}`))
	LogBudget = old
	wantCode(t, err, contract.CodeLimitExceeded)

	// Expiry: a log loaded with a zero lifetime is gone at the next query.
	oldLife := LogLifetime
	LogLifetime = 0
	refX, _, _ := openLogRef(t, h, s2, ids["a.log"])
	LogLifetime = oldLife
	time.Sleep(time.Millisecond)
	_, _, err = call(t, h, s2, "get_metrics", map[string]any{"log_ref": refX, "metric_ids": []string{"memory_used_bytes"}})
	wantCode(t, err, contract.CodeReferenceInvalid)

	// close_log is idempotent and invalidates the listing cursors.
	cl, _ := mustCall(t, h, s, "close_log", map[string]any{"log_ref": ref})
	if cl["released"] != true {
		t.Fatal(cl)
	}
	if _, _, err = call(t, h, s, "list_processes", json.RawMessage(b)); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("cursor after close: %v", err)
	}
	cl, _ = mustCall(t, h, s, "close_log", map[string]any{"log_ref": ref})
	if cl["released"] != false {
		t.Fatal(cl)
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
