//go:build linux

package perf

import (
	"encoding/csv"
	"net"
	"net/http"
	"net/http/httptest"
	_ "net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/perf/capture"
	"github.com/inquest-dev/inquest/internal/tool"
)

// scaledModule writes a Go package whose BenchmarkWork does 4x the work
// when BENCH_SCALE=4: two variants of one benchmark with a known
// difference, selected by an experiment case's env.
func scaledModule(t *testing.T) string {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/scaled\n\ngo 1.21\n",
		"work.go": `package scaled

func Work(n int) int {
	t := 0
	for i := 0; i < n; i++ {
		t += i * i % 7
	}
	return t
}
`,
		"work_test.go": `package scaled

import (
	"os"
	"testing"
)

var sink int

func BenchmarkWork(b *testing.B) {
	n := 200000
	if os.Getenv("BENCH_SCALE") == "4" {
		n *= 4
	}
	for i := 0; i < b.N; i++ {
		sink += Work(n)
	}
	b.ReportMetric(float64(n), "iters/op")
}
`,
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func scaledCases() []any {
	return []any{
		map[string]any{"name": "base", "env": map[string]any{"BENCH_SCALE": "1"}},
		map[string]any{"name": "slow", "env": map[string]any{"BENCH_SCALE": "4"}},
	}
}

func sourcePaths(t *testing.T, res map[string]any) []string {
	var out []string
	for _, s := range data(res)["sources"].([]any) {
		out = append(out, s.(map[string]any)["path"].(string))
	}
	return out
}

// TestCaptureCompareBenchmarksMatchesBenchstat captures two variants of a
// real benchmark (4x work apart) over 2 blocks × count 3 and checks every
// sec/op row against benchstat run on the same captured files.
func TestCaptureCompareBenchmarksMatchesBenchstat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test -bench four times")
	}
	e := newCaptureEnv(t)
	dir := scaledModule(t)
	res := e.mustCall("capture_and_compare_benchmarks", map[string]any{
		"target":     target(dir, "."),
		"provider":   map[string]any{"kind": "go-test", "bench": "Work", "count": 3, "benchtime": "20x"},
		"experiment": map[string]any{"cases": scaledCases(), "blocks": 2, "seed": 7},
		"preserve":   true,
	})
	if af := data(res)["analysis_failure"]; af != nil {
		t.Fatalf("analysis failed: %v\n%s", af, toJSON(capt(res)["executions"]))
	}
	exp := capt(res)["experiment"].(map[string]any)
	for _, c := range exp["cases"].([]any) {
		c := c.(map[string]any)
		if c["captures"].(float64) != 2 || c["included"].(float64) != 2 {
			t.Fatalf("case %v", c)
		}
	}
	paths := sourcePaths(t, res)
	if len(paths) != 2 {
		t.Fatalf("sources %v", paths)
	}
	// Each case's source holds count × blocks = 6 results.
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		if n := strings.Count(string(b), "\nBenchmarkWork"); n != 6 {
			t.Fatalf("%s has %d results:\n%s", p, n, b)
		}
	}
	want := benchstatUnitCSV(t, paths[0], paths[1])
	seen := map[string]bool{}
	for _, r := range data(res)["rows"].([]any) {
		row := r.(map[string]any)
		unit, name := row["unit"].(string), row["benchmark"].(string)
		w, ok := want[unit+" "+name]
		if !ok {
			t.Fatalf("benchstat has no %s row %s (%v)", unit, name, want)
		}
		seen[unit] = true
		bc, _ := strconv.ParseFloat(w[0], 64)
		nc, _ := strconv.ParseFloat(w[1], 64)
		if got := row["base"].(map[string]any)["center"].(float64); !closeTo(got, bc) {
			t.Errorf("%s %s base center %v, benchstat %v", unit, name, got, bc)
		}
		if got := row["candidate_summary"].(map[string]any)["center"].(float64); !closeTo(got, nc) {
			t.Errorf("%s %s candidate center %v, benchstat %v", unit, name, got, nc)
		}
		if row["delta"] != w[2] || row["comparison"] != w[3] {
			t.Errorf("%s %s: delta %v %v, benchstat %v %v", unit, name, row["delta"], row["comparison"], w[2], w[3])
		}
		// The known difference, free of timing: the benchmark reports
		// the loop length it ran, 4x in the slow case.
		if unit == "iters/op" && (w[2] != "+300.00%" || !closeTo(row["delta_percent"].(float64), 300)) {
			t.Errorf("iters/op %s: delta %v, benchstat %s", name, row["delta_percent"], w[2])
		}
		// sec/op of 4x the work is usually far slower, but on a loaded
		// machine benchstat may call it ~; only agreement is asserted.
		if unit == "sec/op" {
			t.Logf("sec/op %s: %v (benchstat %s %s)", name, row["delta"], w[2], w[3])
		}
	}
	if !seen["sec/op"] || !seen["iters/op"] {
		t.Fatalf("units %v", seen)
	}
	// Preserved: the comparison replays from the evidence store.
	replay := e.mustCall("compare_benchmarks", map[string]any{"sources": data(res)["analysis_sources"]})
	if toJSON(data(replay)["rows"]) != toJSON(data(res)["rows"]) {
		t.Fatal("replay differs")
	}
}

// TestCaptureCompareProfiles captures CPU profiles of both variants over
// two blocks: each case's source is the pprof merge of its two block
// profiles (sample totals add up), and the 4x variant spends more in Work.
func TestCaptureCompareProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test -bench four times")
	}
	e := newCaptureEnv(t)
	dir := scaledModule(t)
	res := e.mustCall("capture_and_compare_profiles", map[string]any{
		"target":      target(dir, "."),
		"provider":    map[string]any{"kind": "go-test", "bench": "Work", "benchtime": "400x", "profile": "cpu"},
		"experiment":  map[string]any{"cases": scaledCases(), "blocks": 2, "seed": 3},
		"sample_type": "cpu",
	})
	if af := data(res)["analysis_failure"]; af != nil {
		t.Fatalf("analysis failed: %v", af)
	}
	// The merged source of each case holds both blocks' samples.
	paths := sourcePaths(t, res)
	scratch := filepath.Dir(paths[0])
	for ci, p := range paths {
		var parts int64
		for b := 0; b < 2; b++ {
			parts += cpuTotal(t, filepath.Join(scratch, "b00"+strconv.Itoa(b)+"-c0"+strconv.Itoa(ci), "cpu.pprof"))
		}
		if got := cpuTotal(t, p); got != parts || got == 0 {
			t.Fatalf("case %d: merged cpu total %d, blocks sum %d", ci, got, parts)
		}
	}
	found := false
	for _, r := range data(res)["rows"].([]any) {
		row := r.(map[string]any)
		if !strings.HasSuffix(toJSON(row["function"]), `scaled.Work"`) {
			continue
		}
		found = true
		// 4x the work under a fixed iteration count (-benchtime 400x):
		// the candidate's flat CPU time in Work exceeds the base's.
		base, _ := strconv.ParseInt(row["base_flat"].(string), 10, 64)
		cand, _ := strconv.ParseInt(row["candidate_flat"].(string), 10, 64)
		if base <= 0 || cand <= base || row["delta_flat"] != strconv.FormatInt(cand-base, 10) {
			t.Fatalf("Work row %v", toJSON(row))
		}
	}
	if !found {
		t.Fatalf("no Work row in %v", toJSON(data(res)["rows"]))
	}
}

// cpuTotal is the sum of the cpu sample values of a pprof file.
func cpuTotal(t *testing.T, path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			idx = i
		}
	}
	var n int64
	for _, s := range p.Sample {
		n += s.Value[idx]
	}
	return n
}

// TestCapturePprofHTTP profiles a real net/http/pprof server on
// 127.0.0.1 while a workload runs, and the profile summarizes.
func TestCapturePprofHTTP(t *testing.T) {
	e := newCaptureEnv(t)
	retainHeap()
	srv := httptest.NewServer(http.DefaultServeMux)
	defer srv.Close()
	// The base URL, and the same service given by its /debug/pprof/ index
	// (the handler prefix itself).
	for _, tc := range []struct{ kind, url string }{{"heap", srv.URL}, {"cpu", srv.URL}, {"heap", srv.URL + "/debug/pprof/"}} {
		kind := tc.kind
		res := e.mustCall("capture_and_summarize_profile", map[string]any{
			"target":   target(e.dir, "true"),
			"provider": map[string]any{"kind": "pprof-http", "url": tc.url, "profile": kind, "seconds": 1},
			"preserve": true,
		})
		if af := data(res)["analysis_failure"]; af != nil {
			t.Fatalf("%s: analysis failed: %v", kind, af)
		}
		ex := capt(res)["executions"].([]any)[0].(map[string]any)
		f := ex["pprof_fetch"].(map[string]any)
		if f["http_status"].(float64) != 200 || ex["exit_owner"] != "workload" || f["url"] != srv.URL+"/debug/pprof/"+capture.PprofProfiles[kind]+map[string]string{"cpu": "?seconds=1"}[kind] {
			t.Fatalf("%s: execution %v", kind, ex)
		}
		st := toJSON(data(res)["summary"])
		want := map[string]string{"heap": "inuse_space", "cpu": "cpu"}[kind]
		if !strings.Contains(st, want) {
			t.Fatalf("%s: summary %s", kind, st)
		}
		replay := e.mustCall("summarize_profile", map[string]any{"sources": data(res)["analysis_sources"]})
		if toJSON(data(replay)["summary"]) != st {
			t.Fatalf("%s: replay differs", kind)
		}
	}
	// A service that is not listening: the workload still ran, the fetch
	// failed, and the result is a typed analysis_failure with the reason.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	res0 := e.mustCall("capture_and_summarize_profile", map[string]any{
		"target": target(e.dir, "true"), "provider": map[string]any{"kind": "pprof-http", "url": down, "profile": "heap"},
	})
	if af, ok := data(res0)["analysis_failure"].(map[string]any); !ok || af["analysis_source_count"].(float64) != 0 || !strings.Contains(toJSON(res0["warnings"]), "pprof fetch failed") {
		t.Fatalf("down service: %s", toJSON(res0))
	}
	// Two cases x two blocks of heap snapshots: each case's source is the
	// merge of its two fetched profiles.
	res := e.mustCall("capture_and_compare_profiles", map[string]any{
		"target":   target(e.dir, "true"),
		"provider": map[string]any{"kind": "pprof-http", "url": srv.URL, "profile": "heap"},
		"experiment": map[string]any{"cases": []any{
			map[string]any{"name": "a"}, map[string]any{"name": "b", "argv": []string{"sh", "-c", "exit 0"}},
		}, "blocks": 2},
	})
	if af := data(res)["analysis_failure"]; af != nil {
		t.Fatalf("analysis failed: %v", af)
	}
	for _, c := range capt(res)["experiment"].(map[string]any)["cases"].([]any) {
		if c.(map[string]any)["included"].(float64) != 2 {
			t.Fatalf("case %v", c)
		}
	}
	if p := sourcePaths(t, res); len(p) != 2 || !strings.HasSuffix(p[0], "case-00.pb.gz") {
		t.Fatalf("sources %v", p)
	}
}

// TestCapturePprofHTTPRejectsNonLoopback: a non-loopback address (here a
// listener on this host's own non-loopback address) is INVALID_ARGUMENT
// before any connection and before the workload starts.
func TestCapturePprofHTTPRejectsNonLoopback(t *testing.T) {
	e := newCaptureEnv(t)
	marker := filepath.Join(e.dir, "ran")
	// Besides other hosts: a loopback URL with an empty query, or naming a
	// handler under /debug/pprof/, is refused before the workload runs too.
	urls := []string{"http://10.1.2.3:6060", "http://example.com:6060", "http://0.0.0.0:6060", "http://127.0.0.1:6061/redir?", "http://127.0.0.1:6061/debug/pprof/heap"}
	var ln net.Listener
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				if l, err := net.Listen("tcp", net.JoinHostPort(n.IP.String(), "0")); err == nil {
					ln = l
					urls = append(urls, "http://"+l.Addr().String())
				}
				break
			}
		}
	}
	for _, u := range urls {
		m, code := e.call("capture_and_summarize_profile", map[string]any{
			"target":   target(e.dir, "touch", marker),
			"provider": map[string]any{"kind": "pprof-http", "url": u},
		})
		if code != contract.CodeInvalidArgument || m["error"].(map[string]any)["field"] != "/provider/url" {
			t.Fatalf("%s: %v %v", u, code, m)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the workload ran")
	}
	if ln != nil {
		// No connection was accepted: closing the listener ends an Accept
		// that never received one.
		ln.(*net.TCPListener).SetDeadline(timeNowForTest())
		if c, err := ln.Accept(); err == nil {
			c.Close()
			t.Fatal("a connection reached the non-loopback listener")
		}
		ln.Close()
	}
}

// TestCapturePerf records a real C program with perf and summarizes the
// folded stacks; where perf cannot record, the capture is
// PROVIDER_UNAVAILABLE with guidance before anything runs.
func TestCapturePerf(t *testing.T) {
	e := newCaptureEnv(t)
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	src := filepath.Join(e.dir, "spin.c")
	os.WriteFile(src, []byte("#include <stdlib.h>\nvolatile unsigned long s;\n__attribute__((noinline)) void spin(long n) { for (long i = 0; i < n; i++) s += i; }\nint main(int argc, char **argv) { spin(40000000L * (argc > 1 ? atol(argv[1]) : 1)); return 0; }\n"), 0o644)
	bin := filepath.Join(e.dir, "spin")
	if out, err := exec.Command("cc", "-O0", "-fno-omit-frame-pointer", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	args := map[string]any{"target": target(e.dir, bin), "provider": map[string]any{"kind": "perf"}, "preserve": true}
	_, perfErr := exec.LookPath("perf")
	if perfErr != nil || !probeAllowed() {
		m, code := e.call("capture_and_summarize_profile", args)
		if code != contract.CodeProviderUnavailable || m["error"].(map[string]any)["details"].(map[string]any)["guidance"] == nil {
			t.Fatalf("%v %v", code, m)
		}
		return
	}
	res := e.mustCall("capture_and_summarize_profile", args)
	if af := data(res)["analysis_failure"]; af != nil {
		t.Fatalf("analysis failed: %v", af)
	}
	if !strings.Contains(toJSON(data(res)["rows"]), `"spin"`) {
		t.Fatalf("rows %v", toJSON(data(res)["rows"]))
	}
	ex := capt(res)["executions"].([]any)[0].(map[string]any)
	if ex["exit_owner"] != "collector" || ex["collector_returncode"].(float64) != 0 {
		t.Fatalf("execution %v", ex)
	}
	names := toJSON(capt(res)["artifacts"])
	if !strings.Contains(names, `"perf.data"`) || !strings.Contains(names, FormatPerfData) {
		t.Fatalf("artifacts %s", names)
	}
	ins := e.mustCall("inspect_evidence", map[string]any{"evidence_id": data(res)["evidence_id"]})
	if !strings.Contains(toJSON(data(ins)["manifest"]), `"perf.data"`) {
		t.Fatal("perf.data not preserved")
	}
	// Compare: the same program at 1x and 3x the work (argv), folded
	// stacks of one block each.
	cmp := e.mustCall("capture_and_compare_profiles", map[string]any{
		"target": target(e.dir, bin), "provider": map[string]any{"kind": "perf"},
		"experiment": map[string]any{"cases": []any{
			map[string]any{"name": "x1", "argv": []string{bin}}, map[string]any{"name": "x3", "argv": []string{bin, "3"}},
		}},
	})
	if af := data(cmp)["analysis_failure"]; af != nil {
		t.Fatalf("analysis failed: %v", af)
	}
	spinRows := 0
	for _, r := range data(cmp)["rows"].([]any) {
		row := r.(map[string]any)
		if row["function"] == "spin" {
			spinRows++
			b, _ := strconv.ParseInt(row["base_flat"].(string), 10, 64)
			c, _ := strconv.ParseInt(row["candidate_flat"].(string), 10, 64)
			if b <= 0 || c <= b {
				t.Fatalf("spin row %v", row)
			}
		}
	}
	if spinRows == 0 {
		t.Fatalf("no spin row in %s", toJSON(data(cmp)["rows"]))
	}
	// Without perf on PATH: PROVIDER_UNAVAILABLE before launch.
	args["target"] = map[string]any{"argv": []string{bin}, "cwd": e.dir, "env": map[string]any{"PATH": "/nonexistent"}}
	m, code := e.call("capture_and_summarize_profile", args)
	if code != contract.CodeProviderUnavailable || !strings.Contains(toJSON(m), "linux-perf") {
		t.Fatalf("%v %v", code, m)
	}
}

// TestCapturePySpyUnavailable: without py-spy on PATH the capture is
// PROVIDER_UNAVAILABLE with install guidance, before the workload runs.
func TestCapturePySpyUnavailable(t *testing.T) {
	e := newCaptureEnv(t)
	marker := filepath.Join(e.dir, "ran")
	m, code := e.call("capture_and_summarize_profile", map[string]any{
		"target":   map[string]any{"argv": []string{"/usr/bin/touch", marker}, "cwd": e.dir, "env": map[string]any{"PATH": "/nonexistent"}},
		"provider": map[string]any{"kind": "py-spy"},
	})
	if code != contract.CodeProviderUnavailable || !strings.Contains(toJSON(m), "pip install py-spy") {
		t.Fatalf("%v %v", code, m)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the workload ran")
	}
}

func TestCompareCaptureToolsDeclared(t *testing.T) {
	e := newEnv(t)
	found := 0
	for _, tl := range CaptureTools(e.rt) {
		if tl.Name != "capture_and_compare_benchmarks" && tl.Name != "capture_and_compare_profiles" {
			continue
		}
		found++
		if err := tool.CheckArgs(tl); err != nil {
			t.Error(err)
		}
		if tl.Annotations.ReadOnly || !tl.Annotations.OpenWorld {
			t.Errorf("%s annotations %+v", tl.Name, tl.Annotations)
		}
	}
	if found != 2 {
		t.Fatalf("%d capture comparison tools declared, want 2", found)
	}
}

func probeAllowed() bool { return capture.ProbePerfEvents().Allowed }

func timeNowForTest() time.Time { return time.Now() }

// TestCaptureCompareOracle: the oracle sees each capture's console files
// and case environment; a failing oracle excludes that case's captures,
// and a case left with none makes the comparison a typed
// analysis_failure that says why.
func TestCaptureCompareOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test -bench")
	}
	e := newCaptureEnv(t)
	dir := scaledModule(t)
	// Passes when the capture's stdout holds the benchmark line and the
	// case is not the 4x one.
	oracle := `grep -q '^BenchmarkWork' "$INQUEST_CAPTURE_STDOUT" && test -f "$INQUEST_CAPTURE_STDERR" && test "$BENCH_SCALE" != 4`
	res := e.mustCall("capture_and_compare_benchmarks", map[string]any{
		"target":     target(dir, "."),
		"provider":   map[string]any{"kind": "go-test", "bench": "Work", "benchtime": "1x"},
		"experiment": map[string]any{"cases": scaledCases(), "blocks": 1, "oracle": map[string]any{"argv": []string{"sh", "-c", oracle}}},
		"preserve":   true,
	})
	af, ok := data(res)["analysis_failure"].(map[string]any)
	if !ok || af["code"] != "EXECUTION_FAILED" || !strings.Contains(af["message"].(string), `"slow"`) || res["status"] != "partial" {
		t.Fatalf("result %s", toJSON(data(res)))
	}
	cases := capt(res)["experiment"].(map[string]any)["cases"].([]any)
	base, slow := cases[0].(map[string]any), cases[1].(map[string]any)
	if base["included"].(float64) != 1 || slow["included"].(float64) != 0 || slow["excluded"].(map[string]any)["oracle_failed"].(float64) != 1 {
		t.Fatalf("cases %s", toJSON(cases))
	}
	for _, x := range capt(res)["executions"].([]any) {
		x := x.(map[string]any)
		want := 0.0
		if x["case"] == "slow" {
			want = 1
		}
		if x["oracle_exit_code"].(float64) != want {
			t.Fatalf("execution %s", toJSON(x))
		}
	}
	if data(res)["evidence_id"] == nil {
		t.Fatal("preserve published nothing")
	}
	// Every capture's execution record is preserved as the executions
	// artifact, readable by summarize_executions.
	recs := e.mustCall("summarize_executions", map[string]any{"sources": []any{map[string]any{
		"kind": "evidence", "evidence_id": data(res)["evidence_id"], "artifact_selector": "executions"}}})
	rows := data(recs)["rows"].([]any)
	if len(rows) != 2 {
		t.Fatalf("executions artifact has %d records, want 2: %s", len(rows), toJSON(rows))
	}
	for _, r := range rows {
		r := r.(map[string]any)
		if want := r["case"] == "base"; r["included"] != want || (!want && r["excluded_reason"] != "oracle_failed") {
			t.Fatalf("record %s", toJSON(r))
		}
	}
}

// benchstatUnitCSV runs benchstat -format csv on base and cand and returns
// its rows keyed by "UNIT NAME": [base center, candidate center, vs base,
// P]. A unit's table starts with a header row ",UNIT,CI,UNIT,CI,vs base,P".
func benchstatUnitCSV(t *testing.T, base, cand string) map[string][]string {
	out, err := exec.Command(benchstatPath(t), "-format", "csv", base, cand).Output()
	if err != nil {
		t.Fatalf("benchstat: %v", err)
	}
	r := csv.NewReader(strings.NewReader(string(out)))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("benchstat csv: %v\n%s", err, out)
	}
	rows := map[string][]string{}
	unit := ""
	for _, rec := range recs {
		switch {
		case len(rec) >= 3 && rec[0] == "" && rec[2] == "CI":
			unit = rec[1]
		case len(rec) >= 7 && rec[0] != "" && rec[0] != "geomean" && unit != "":
			rows[unit+" "+rec[0]] = []string{rec[1], rec[3], rec[5], rec[6]}
		}
	}
	return rows
}
