//go:build linux

package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

func newCaptureEnv(t *testing.T) *env {
	e := newEnv(t)
	if err := e.reg.Add(CaptureTools(e.rt)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.rt.ReleaseCaptures)
	return e
}

func target(cwd string, argv ...string) map[string]any {
	return map[string]any{"argv": argv, "cwd": cwd}
}

func capt(m map[string]any) map[string]any { return data(m)["capture"].(map[string]any) }

func TestCaptureDirectExecution(t *testing.T) {
	e := newCaptureEnv(t)
	res := e.mustCall("capture_and_summarize_executions", map[string]any{
		"target": target(e.dir, "sh", "-c", "echo hello; echo warn >&2"), "provider": map[string]any{"kind": "direct"}, "preserve": true,
	})
	d := data(res)
	rows := d["rows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	r := rows[0].(map[string]any)
	if r["exit_code"].(float64) != 0 || r["termination"] != "exited" || r["exit_owner"] != "workload" || r["wall_time_ns"] == "0" || r["max_rss_at_most_bytes"] == "0" {
		t.Fatalf("row %v", r)
	}
	if r["stdout_bytes"] != "6" || r["stderr_bytes"] != "5" {
		t.Fatalf("row %v", r)
	}
	// The execution's record is its row: capture.executions states only
	// what the row lacks, and the keys that match it to the row.
	ex := capt(res)["executions"].([]any)[0].(map[string]any)
	if len(ex["executable_sha256"].(string)) != 64 || ex["workload_returncode"].(float64) != 0 || ex["position"] != r["position"] || ex["case"] != r["case"] {
		t.Fatalf("execution %v", ex)
	}
	for k := range r {
		switch k {
		case "case", "case_index", "block", "position":
		default:
			if _, dup := ex[k]; dup {
				t.Errorf("capture.executions repeats the row's %s", k)
			}
		}
	}
	if cg, _ := ex["cgroup"].(string); capt(res)["cgroup_layout"] != nil && strings.Contains(cg, ": ") {
		t.Errorf("capture.executions cgroup %q repeats the layout stated once in capture.cgroup_layout (%v)", cg, capt(res)["cgroup_layout"])
	}
	if o := capt(res)["outcome"].(map[string]any); o["workload_status"] != "succeeded" || o["succeeded"].(float64) != 1 {
		t.Fatalf("outcome %v", o)
	}
	// Preserved: replay through the analysis tool reads the same record.
	id := d["evidence_id"].(string)
	srcs := d["analysis_sources"].([]any)
	replay := e.mustCall("summarize_executions", map[string]any{"sources": srcs})
	if !reflect.DeepEqual(data(replay)["rows"], rows) {
		t.Fatalf("replay rows differ:\n%v\n%v", data(replay)["rows"], rows)
	}
	ins := e.mustCall("inspect_evidence", map[string]any{"evidence_id": id})
	names := []string{}
	for _, a := range data(ins)["manifest"].(map[string]any)["artifacts"].([]any) {
		names = append(names, a.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "source-0,stdout,stderr" {
		t.Fatalf("artifacts %v", names)
	}
}

func TestCaptureWorkloadFailureIsEvidence(t *testing.T) {
	e := newCaptureEnv(t)
	res := e.mustCall("capture_and_summarize_executions", map[string]any{
		"target": target(e.dir, "sh", "-c", "exit 7"), "provider": map[string]any{"kind": "direct"},
	})
	if res["status"] != "partial" {
		t.Fatalf("status %v", res["status"])
	}
	r := data(res)["rows"].([]any)[0].(map[string]any)
	if r["exit_code"].(float64) != 7 || r["included"] != false || r["excluded_reason"] != "workload_failed" {
		t.Fatalf("row %v", r)
	}
	if capt(res)["outcome"].(map[string]any)["workload_status"] != "failed" {
		t.Fatal(capt(res)["outcome"])
	}
}

func TestCaptureBudget(t *testing.T) {
	e := newCaptureEnv(t)
	res := e.mustCall("capture_and_summarize_executions", map[string]any{
		"target":   map[string]any{"argv": []string{"sleep", "1000"}, "cwd": e.dir, "budget": map[string]any{"timeout_seconds": 1}},
		"provider": map[string]any{"kind": "direct"},
	})
	r := data(res)["rows"].([]any)[0].(map[string]any)
	if r["termination"] != "timeout" || r["signal"] != "SIGKILL" || r["exit_code"] != nil {
		t.Fatalf("row %v", r)
	}
	res = e.mustCall("capture_and_summarize_executions", map[string]any{
		"target":   map[string]any{"argv": []string{"bash", "-c", "x=aaaaaaaa; while :; do x=$x$x; done"}, "cwd": e.dir, "budget": map[string]any{"max_memory_bytes": 64 << 20}},
		"provider": map[string]any{"kind": "direct"},
	})
	r = data(res)["rows"].([]any)[0].(map[string]any)
	if r["memory_limit_hit"] != true || !strings.HasPrefix(r["memory_enforcement"].(string), "rlimit_as") || r["included"] != false {
		t.Fatalf("row %v", r)
	}
}

func TestCaptureRejections(t *testing.T) {
	e := newCaptureEnv(t)
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		code contract.Code
	}{
		{"relative cwd", "capture_and_summarize_executions", map[string]any{"target": target("rel", "true"), "provider": map[string]any{"kind": "direct"}}, contract.CodeInvalidArgument},
		{"missing cwd", "capture_and_summarize_executions", map[string]any{"target": target("/nonexistent/dir", "true"), "provider": map[string]any{"kind": "direct"}}, contract.CodeInvalidArgument},
		{"missing program", "capture_and_summarize_executions", map[string]any{"target": target(e.dir, "no-such-program-xyz"), "provider": map[string]any{"kind": "direct"}}, contract.CodeExecutionFailed},
		{"wrong provider", "capture_and_summarize_benchmarks", map[string]any{"target": target(e.dir, "."), "provider": map[string]any{"kind": "direct"}}, contract.CodeInvalidArgument},
		{"no go", "capture_and_summarize_benchmarks", map[string]any{"target": map[string]any{"argv": []string{"."}, "cwd": e.dir, "env": map[string]any{"PATH": "/nonexistent"}}, "provider": map[string]any{"kind": "go-test"}}, contract.CodeProviderUnavailable},
		{"go-test argv starting with go", "capture_and_summarize_benchmarks", map[string]any{"target": target(e.dir, "go", "test", "."), "provider": map[string]any{"kind": "go-test"}}, contract.CodeInvalidArgument},
		{"go-test argv starting with a go path", "capture_and_preview_artifact", map[string]any{"target": target(e.dir, "/usr/bin/go", "test", "."), "provider": map[string]any{"kind": "go-test"}}, contract.CodeInvalidArgument},
		{"one case", "capture_and_summarize_executions", map[string]any{"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"}, "experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}}}}, contract.CodeInvalidArgument},
		{"shell string field", "capture_and_summarize_executions", map[string]any{"target": map[string]any{"argv": []string{"true"}, "cwd": e.dir, "shell": "true"}, "provider": map[string]any{"kind": "direct"}}, contract.CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, code := e.call(tc.tool, tc.args)
			if code != tc.code {
				t.Fatalf("code %q want %q: %v", code, tc.code, m)
			}
			// messages never echo rejected input (the field names it)
			b, _ := json.Marshal(m["error"])
			for _, in := range []string{"no-such-program-xyz", "/nonexistent"} {
				if strings.Contains(string(b), in) {
					t.Fatalf("the error echoes %q: %s", in, b)
				}
			}
		})
	}
}

func TestCapturePreviewConsole(t *testing.T) {
	e := newCaptureEnv(t)
	res := e.mustCall("capture_and_preview_artifact", map[string]any{
		"target": target(e.dir, "sh", "-c", "printf 'one\\ntwo\\nthree\\n'"), "provider": map[string]any{"kind": "direct"}, "page_size": 2,
	})
	rows := data(res)["rows"].([]any)
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	// next_page names the analysis tool over the captured file.
	na := res["next_action"].(map[string]any)
	if na["tool"] != "preview_artifact" {
		t.Fatalf("next %v", na)
	}
	all, _ := e.follow(res)
	if len(all) != 3 {
		t.Fatalf("rows %v", all)
	}
}

func sleepCase(name, secs string) map[string]any {
	return map[string]any{"name": name, "argv": []string{"sleep", secs}}
}

func comparison(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	c := data(res)["summary"].(map[string]any)["comparisons"].([]any)
	return c[0].(map[string]any)
}

// TestExperimentClassification: sleep 0.3 against sleep 0.15 is a 150 ms
// (2x) difference; the threshold (25% of the baseline, 37.5 ms) and 12
// blocks (a bootstrap bound moves only when several pairs are outliers)
// leave room for scheduling noise of tens of milliseconds on a loaded
// machine.
func TestExperimentClassification(t *testing.T) {
	e := newCaptureEnv(t)
	for _, tc := range []struct {
		name       string
		base, cand string
		want       string
		sign       float64
	}{
		// Effects far above what a loaded machine adds to a sleep (a
		// 550 ms difference against the 12.5 ms threshold), and an equal
		// pair whose threshold (75 ms) only a systematic bias could cross.
		{"slower", "0.05", "0.6", "slower", 1},
		{"faster", "0.6", "0.05", "faster", -1},
		{"equal", "0.3", "0.3", "inconclusive", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.mustCall("capture_and_summarize_executions", map[string]any{
				"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"},
				"experiment": map[string]any{"cases": []any{sleepCase("base", tc.base), sleepCase("cand", tc.cand)}, "blocks": 12, "seed": 7, "threshold": 0.25},
			})
			c := comparison(t, res)
			if c["classification"] != tc.want {
				t.Fatalf("classification %v want %s: %v", c["classification"], tc.want, c)
			}
			if tc.sign != 0 && c["estimate"].(float64)*tc.sign <= 0 {
				t.Fatalf("estimate sign: %v", c)
			}
			if c["pairs"].(float64) != 12 {
				t.Fatalf("pairs %v", c)
			}
		})
	}
}

func TestExperimentScheduleAndOracle(t *testing.T) {
	if !reflect.DeepEqual(Schedule(4, 5, 42), Schedule(4, 5, 42)) {
		t.Fatal("schedule not deterministic")
	}
	if reflect.DeepEqual(Schedule(4, 20, 1), Schedule(4, 20, 2)) {
		t.Fatal("different seeds gave the same 20-block schedule")
	}
	e := newCaptureEnv(t)
	args := map[string]any{
		"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"},
		"experiment": map[string]any{
			"cases": []any{
				map[string]any{"name": "good", "argv": []string{"echo", "ok"}},
				map[string]any{"name": "bad", "argv": []string{"echo", "wrong"}},
			},
			"blocks": 4, "seed": 11,
			// The oracle reads the execution's stdout through the environment.
			"oracle": map[string]any{"argv": []string{"sh", "-c", `grep -qx ok "$INQUEST_CAPTURE_STDOUT"`}},
		},
	}
	res := e.mustCall("capture_and_summarize_executions", args)
	rows := data(res)["rows"].([]any)
	sched := Schedule(2, 4, 11)
	for i, r := range rows {
		r := r.(map[string]any)
		b, p := i/2, i%2
		if int(r["block"].(float64)) != b || int(r["case_index"].(float64)) != sched[b][p] {
			t.Fatalf("row %d does not follow the seeded schedule %v: %v", i, sched, r)
		}
		if r["case"] == "bad" && (r["included"] != false || r["excluded_reason"] != "oracle_failed" || r["oracle_exit_code"].(float64) != 1) {
			t.Fatalf("bad row %v", r)
		}
		if r["case"] == "good" && r["included"] != true {
			t.Fatalf("good row %v", r)
		}
	}
	cases := data(res)["summary"].(map[string]any)["cases"].([]any)
	bad := cases[1].(map[string]any)
	if bad["excluded"].(float64) != 4 || bad["excluded_by_reason"].(map[string]any)["oracle_failed"].(float64) != 4 {
		t.Fatalf("bad case %v", bad)
	}
	c := comparison(t, res)
	if c["classification"] != "inconclusive" || c["pairs"].(float64) != 0 {
		t.Fatalf("comparison %v", c)
	}
	if capt(res)["outcome"].(map[string]any)["excluded"].(float64) != 4 {
		t.Fatal(capt(res)["outcome"])
	}
}

func TestSummarizeExecutionsKnownValues(t *testing.T) {
	zero := 0
	var recs []ExecutionRecord
	for b := 0; b < 5; b++ {
		recs = append(recs,
			ExecutionRecord{Case: "a", CaseIndex: 0, Block: b, Termination: "exited", ExitCode: &zero, ExitOwner: "workload", WallTimeNS: int64(100 + b), Included: true},
			ExecutionRecord{Case: "b", CaseIndex: 1, Block: b, Termination: "exited", ExitCode: &zero, ExitOwner: "workload", WallTimeNS: int64(200 + 3*b), Included: true})
	}
	s := SummarizeExecutions(recs, "wall_time_ns", "median_difference", 0.05, 1)
	c := s["comparisons"].([]any)[0].(map[string]any)
	// differences are 100,102,104,106,108: median 104, CI within [100,108]
	if c["estimate"] != 104.0 || c["ci_low"].(float64) < 100 || c["ci_high"].(float64) > 108 || c["classification"] != "slower" || c["baseline_median"] != 102.0 {
		t.Fatalf("%v", c)
	}
	s = SummarizeExecutions(recs, "wall_time_ns", "mean_difference", 0.05, 1)
	if c := s["comparisons"].([]any)[0].(map[string]any); c["estimate"] != 104.0 {
		t.Fatalf("%v", c)
	}
	a := s["cases"].([]any)[0].(map[string]any)
	if a["median"] != 102.0 || a["min"] != 100.0 || a["max"] != 104.0 || a["mean"] != 102.0 {
		t.Fatalf("%v", a)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// goModule writes a small Go package with one benchmark doing real work.
func goModule(t *testing.T) string {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":      "module example.com/benchme\n\ngo 1.21\n",
		"sum.go":      "package benchme\n\nfunc Sum(n int) int {\n\tt := 0\n\tfor i := 0; i < n; i++ {\n\t\tt += i * i % 7\n\t}\n\treturn t\n}\n",
		"sum_test.go": "package benchme\n\nimport \"testing\"\n\nvar sink int\n\nfunc BenchmarkSum(b *testing.B) {\n\tfor i := 0; i < b.N; i++ {\n\t\tsink += Sum(100000)\n\t}\n}\n",
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCaptureGoTest(t *testing.T) {
	e := newCaptureEnv(t)
	dir := goModule(t)
	prov := map[string]any{"kind": "go-test", "bench": "Sum", "count": 2, "benchtime": "20x"}
	res := e.mustCall("capture_and_summarize_benchmarks", map[string]any{"target": target(dir, "."), "provider": prov, "preserve": true})
	rows := data(res)["rows"].([]any)
	if len(rows) == 0 || !strings.Contains(toJSON(rows[0]), "Sum") {
		t.Fatalf("rows %v", rows)
	}
	ex := capt(res)["executions"].([]any)[0].(map[string]any)
	if ex["exit_owner"] != "collector" || ex["workload_returncode"] != nil || ex["collector_returncode"].(float64) != 0 {
		t.Fatalf("execution %v", ex)
	}
	replay := e.mustCall("summarize_benchmarks", map[string]any{"sources": data(res)["analysis_sources"]})
	if !reflect.DeepEqual(data(replay)["rows"], rows) {
		t.Fatal("replay differs")
	}

	prov = map[string]any{"kind": "go-test", "bench": "Sum", "benchtime": "200x", "profile": "cpu"}
	res = e.mustCall("capture_and_summarize_profile", map[string]any{"target": target(dir, "."), "provider": prov, "preserve": true})
	if data(res)["analysis_failure"] != nil {
		t.Fatalf("analysis failed: %v", data(res)["analysis_failure"])
	}
	if st := data(res)["summary"].(map[string]any); !strings.Contains(toJSON(st), "cpu") {
		t.Fatalf("summary %v", st)
	}
	replay = e.mustCall("summarize_profile", map[string]any{"sources": data(res)["analysis_sources"]})
	if !reflect.DeepEqual(data(replay)["summary"], data(res)["summary"]) {
		t.Fatal("profile replay differs")
	}
}

// TestCaptureAnalysisFailurePreserved: a package that does not compile
// writes no profile; preserve still publishes the console, and the result
// carries a typed analysis_failure instead of empty success.
func TestCaptureAnalysisFailurePreserved(t *testing.T) {
	e := newCaptureEnv(t)
	dir := goModule(t)
	if err := os.WriteFile(filepath.Join(dir, "broken.go"), []byte("package benchme\n\nfunc broken() { undefined() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := e.mustCall("capture_and_summarize_profile", map[string]any{"target": target(dir, "."), "provider": map[string]any{"kind": "go-test"}, "preserve": true})
	af, ok := data(res)["analysis_failure"].(map[string]any)
	if !ok || af["analysis_source_count"].(float64) != 0 || res["status"] != "partial" {
		t.Fatalf("result %v", data(res))
	}
	ins := e.mustCall("inspect_evidence", map[string]any{"evidence_id": data(res)["evidence_id"]})
	m := data(ins)["manifest"].(map[string]any)
	if m["status"] != "failed" || !strings.Contains(toJSON(m["artifacts"]), "stderr") {
		t.Fatalf("manifest %v", m)
	}
}

func TestPrepareProviders(t *testing.T) {
	e := newCaptureEnv(t)
	res := e.mustCall("prepare_providers", map[string]any{})
	rows := data(res)["providers"].([]any)
	if len(rows) != len(ProviderKinds) {
		t.Fatalf("rows %v", rows)
	}
	by := map[string]map[string]any{}
	for _, r := range rows {
		r := r.(map[string]any)
		by[r["provider"].(string)] = r
	}
	if by["direct"]["available"] != true || by["direct"]["offered"] != true || by["go-test"]["offered"] != true || by["perf"]["offered"] != true || by["pprof-http"]["offered"] != true || by["py-spy"]["offered"] != true {
		t.Fatalf("rows %v", rows)
	}
	// Versions are what the tools themselves print, in the same run.
	for p, argv := range map[string][]string{"go-test": {"go", "version"}, "perf": {"perf", "--version"}} {
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			if by[p]["available"] != false || by[p]["guidance"] == nil {
				t.Errorf("%s: no %s here but reported %v", p, argv[0], by[p])
			}
			continue
		}
		want := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
		if by[p]["version"] != want {
			t.Errorf("%s version %v, want %q", p, by[p]["version"], want)
		}
	}
	// Missing binaries give guidance, not installation.
	t.Setenv("PATH", "/nonexistent")
	res = e.mustCall("prepare_providers", map[string]any{"providers": []string{"go-test", "py-spy"}})
	for _, r := range data(res)["providers"].([]any) {
		r := r.(map[string]any)
		if r["available"] != false || r["guidance"] == nil {
			t.Errorf("row %v", r)
		}
	}
}

// TestCaptureNextAction: a capture result always names its next call and
// never presents a scratch path as a lasting source. Preserved: the
// sources are the evidence artifacts (kind evidence, their stored file)
// and next_action is inspect_evidence of the evidence_id, which answers.
// Not preserved: the sources are marked scratch with when they are
// removed, and next_action is preserve_evidence of the analysis_id, which
// preserves it.
func TestCaptureNextAction(t *testing.T) {
	e := newCaptureEnv(t)
	for _, preserve := range []bool{true, false} {
		res := e.mustCall("capture_and_summarize_executions", map[string]any{"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"}, "preserve": preserve})
		na, _ := res["next_action"].(map[string]any)
		if na == nil {
			t.Fatalf("preserve %v: no next_action", preserve)
		}
		src := data(res)["sources"].([]any)[0].(map[string]any)
		if preserve {
			id := data(res)["evidence_id"]
			if na["tool"] != "inspect_evidence" || na["arguments"].(map[string]any)["evidence_id"] != id {
				t.Fatalf("preserved: next_action %v", na)
			}
			p, _ := src["path"].(string)
			if src["kind"] != "evidence" || src["evidence_id"] != id || src["artifact_selector"] != "source-0" || strings.Contains(p, "inquest-capture-") {
				t.Fatalf("preserved source %v", src)
			}
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("preserved source path: %v", err)
			}
		} else {
			if na["tool"] != "preserve_evidence" || na["arguments"].(map[string]any)["analysis_id"] != data(res)["analysis_id"] {
				t.Fatalf("unpreserved: next_action %v", na)
			}
			if src["scratch"] != true || src["removed_when"] == nil {
				t.Fatalf("unpreserved source %v", src)
			}
		}
		next := e.mustCall(na["tool"].(string), na["arguments"])
		if !preserve && data(next)["evidence_id"] == nil {
			t.Fatalf("preserve_evidence: %v", next)
		}
	}
}

// TestCapturePageWithinBudget: at a 16 KiB result budget the page of a
// capture_and_preview_artifact result is sized within what the capture
// block leaves, so the whole result is delivered (tool.DeliveredBytes)
// within the budget and the page ended by it names its next page.
func TestCapturePageWithinBudget(t *testing.T) {
	const budget = 16384
	e := newCaptureEnv(t)
	e.ctx = tool.WithResultBudget(context.Background(), budget)
	defer func() { e.ctx = nil }()
	for _, preserve := range []bool{false, true} {
		args, _ := json.Marshal(map[string]any{"preserve": preserve, "provider": map[string]any{"kind": "direct"},
			"target": target(e.dir, "sh", "-c", "i=0; while [ $i -lt 400 ]; do echo line $i of a console long enough to pass the budget; i=$((i+1)); done")})
		res, err := e.reg.Call(e.ctx, "capture_and_preview_artifact", args)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := contract.Marshal(res, nil)
		if n := tool.DeliveredBytes(body); n > budget {
			t.Fatalf("preserve %v: %d bytes as delivered, over the %d-byte budget", preserve, n, budget)
		}
		var m map[string]any
		json.Unmarshal(body, &m)
		if m["coverage"].(map[string]any)["page_ended_by"] != "byte_budget" || m["next_action"] == nil {
			t.Fatalf("preserve %v: the page was not ended by the budget or names no next page: %v %v", preserve, m["coverage"], m["next_action"])
		}
	}
}

// TestCaptureExecutionsWithinBudget: an experiment of 20 executions at a
// 16 KiB and at the default 64 KiB result budget is delivered within the
// budget; capture.executions lists only the leading executions that fit
// (with a warning naming how many of how many), and following
// next_action through the analysis pages yields every execution's record
// exactly once, in schedule order.
func TestCaptureExecutionsWithinBudget(t *testing.T) {
	e := newCaptureEnv(t)
	defer func() { e.ctx = nil }()
	for _, budget := range []int{16384, tool.DefaultResultBytes} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			e.ctx = tool.WithResultBudget(context.Background(), budget)
			args, _ := json.Marshal(map[string]any{
				"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"},
				"experiment": map[string]any{"cases": []any{
					map[string]any{"name": "a", "argv": []string{"true"}},
					map[string]any{"name": "b", "argv": []string{"echo", strings.Repeat("long-argument ", 30)}},
				}, "blocks": 10, "seed": 3},
			})
			var rows []any
			var first map[string]any
			for page := 1; ; page++ {
				res, err := e.reg.Call(e.ctx, map[bool]string{true: "capture_and_summarize_executions", false: "summarize_executions"}[page == 1], args)
				if err != nil {
					t.Fatalf("page %d: %v", page, err)
				}
				body, _ := contract.Marshal(res, nil)
				if n := tool.DeliveredBytes(body); n > budget {
					t.Fatalf("page %d: %d bytes as delivered, over the %d-byte budget", page, n, budget)
				}
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatal(err)
				}
				if page == 1 {
					first = m
				}
				rows = append(rows, data(m)["rows"].([]any)...)
				na, _ := m["next_action"].(map[string]any)
				if na == nil || na["tool"] != "summarize_executions" {
					break
				}
				args, _ = json.Marshal(na["arguments"])
			}
			listed := capt(first)["executions"].([]any)
			if len(listed) == 0 || len(listed) >= 20 {
				t.Fatalf("capture.executions lists %d of 20 executions", len(listed))
			}
			want := fmt.Sprintf("capture.executions lists the first %d of 20 executions", len(listed))
			if !strings.Contains(fmt.Sprint(first["warnings"]), want) {
				t.Fatalf("no warning %q: %v", want, first["warnings"])
			}
			if len(rows) != 20 {
				t.Fatalf("%d execution rows across the pages, want 20", len(rows))
			}
			sched := Schedule(2, 10, 3)
			for i, r := range rows {
				r := r.(map[string]any)
				if int(r["block"].(float64)) != i/2 || int(r["case_index"].(float64)) != sched[i/2][i%2] {
					t.Fatalf("row %d is not the schedule's execution %v: %v", i, sched[i/2], r)
				}
			}
			for i, v := range listed {
				v := v.(map[string]any)
				if v["block"] != rows[i].(map[string]any)["block"] || v["case"] != rows[i].(map[string]any)["case"] {
					t.Fatalf("capture.executions[%d] %v is not the record of row %d %v", i, v, i, rows[i])
				}
			}
		})
	}
}

// TestExperimentMetricUnknown: with metric max_rss_bytes, executions of
// true (whose peak RSS cannot be told apart from the launcher's) have no
// value: their rows stay included (the workload succeeded) but say
// excluded_from_summary metric_unknown, in the analysis rows and in
// capture.executions; the summary counts them under metric_unknown, the
// comparison is inconclusive, and a warning says how many and why. A
// case whose workload peaks far above the launcher keeps its values.
func TestExperimentMetricUnknown(t *testing.T) {
	e := newCaptureEnv(t)
	// dd fills one 256 MiB buffer: a peak far above the test process's.
	big := []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"}
	res := e.mustCall("capture_and_summarize_executions", map[string]any{
		"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"},
		"experiment": map[string]any{"cases": []any{map[string]any{"name": "small"}, map[string]any{"name": "big", "argv": big}}, "blocks": 3, "seed": 1, "metric": "max_rss_bytes"},
	})
	if res["status"] != "partial" || !strings.Contains(fmt.Sprint(res["warnings"]), "3 of 6 included executions have no max_rss_bytes value") {
		t.Fatalf("status %v, warnings %v", res["status"], res["warnings"])
	}
	rows := data(res)["rows"].([]any)
	views := capt(res)["executions"].([]any)
	if len(rows) != 6 || len(views) != 6 {
		t.Fatalf("%d rows, %d capture.executions", len(rows), len(views))
	}
	for i, r := range rows {
		r := r.(map[string]any)
		want := any(nil)
		if r["case"] == "small" {
			want = "metric_unknown"
		}
		if r["included"] != true || r["excluded_from_summary"] != want || (want == nil) != (r["max_rss_bytes"] != nil) {
			t.Fatalf("row %v", r)
		}
		if i < len(views) && views[i].(map[string]any)["excluded_from_summary"] != want {
			t.Fatalf("capture.executions[%d] %v", i, views[i])
		}
	}
	s := data(res)["summary"].(map[string]any)
	small := s["cases"].([]any)[0].(map[string]any)
	if small["included"].(float64) != 0 || small["excluded_by_reason"].(map[string]any)["metric_unknown"].(float64) != 3 || small["median"] != nil {
		t.Fatalf("case %v", small)
	}
	if c := comparison(t, res); c["classification"] != "inconclusive" || c["pairs"].(float64) != 0 {
		t.Fatalf("comparison %v", c)
	}
}

// TestCaptureGoTestNoBenchmarkMatched: a provider.bench pattern that
// matches no benchmark (go test prints PASS and ok, no Benchmark line) is
// a partial result whose coverage is incomplete and whose warning says no
// benchmark matched, for a single capture and, once per distinct
// limitation, for a comparison.
func TestCaptureGoTestNoBenchmarkMatched(t *testing.T) {
	e := newCaptureEnv(t)
	dir := goModule(t)
	prov := map[string]any{"kind": "go-test", "bench": "NoSuchBench"}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"capture_and_summarize_benchmarks", map[string]any{"target": target(dir, "."), "provider": prov}, "no benchmark matched: go test -bench=NoSuchBench"},
		{"capture_and_compare_benchmarks", map[string]any{"target": target(dir, "."), "provider": prov,
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}}}, "2 of 2 captures (first case "},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res := e.mustCall(tc.tool, tc.args)
			cov := res["coverage"].(map[string]any)
			ws := fmt.Sprint(res["warnings"])
			if res["status"] != "partial" || cov["complete"] != false || !strings.Contains(ws, tc.want) || !strings.Contains(ws, "no benchmark matched") {
				t.Fatalf("status %v, coverage %v, warnings %v", res["status"], cov, res["warnings"])
			}
			if strings.Count(ws, "no benchmark matched") != 1 {
				t.Fatalf("the limitation is not reported once: %v", res["warnings"])
			}
			// One name for the collector, single or compared.
			if c := capt(res); c["collector"] != "go-test" || c["provider"] != "go-test" {
				t.Fatalf("provider %v, collector %v", c["provider"], c["collector"])
			}
		})
	}
	// A pattern that matches is complete.
	res := e.mustCall("capture_and_summarize_benchmarks", map[string]any{"target": target(dir, "."), "provider": map[string]any{"kind": "go-test", "bench": "Sum", "benchtime": "10x"}})
	if strings.Contains(fmt.Sprint(res["warnings"]), "no benchmark matched") {
		t.Fatalf("warnings %v", res["warnings"])
	}
}
