//go:build linux

package perf

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestCapturePerfTimeoutKeepsSamples: a budget timeout stops the workload
// but not perf, which writes the samples recorded until then; they are
// analysed, and the result is partial with the timeout as its limitation.
// The timeout is 10 s, not 1 s: on a loaded machine a second of wall time
// may give the spinning workload no CPU sample at all.
func TestCapturePerfTimeoutKeepsSamples(t *testing.T) {
	e := newCaptureEnv(t)
	if _, err := exec.LookPath("perf"); err != nil || !probeAllowed() {
		t.Skip("perf cannot record here")
	}
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	src := filepath.Join(e.dir, "forever.c")
	os.WriteFile(src, []byte("volatile unsigned long s;\n__attribute__((noinline)) void spin(void) { for (;;) s++; }\nint main(void) { spin(); return 0; }\n"), 0o644)
	bin := filepath.Join(e.dir, "forever")
	if out, err := exec.Command("cc", "-O0", "-fno-omit-frame-pointer", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	res := e.mustCall("capture_and_summarize_profile", map[string]any{
		"target":   map[string]any{"argv": []string{bin}, "cwd": e.dir, "budget": map[string]any{"timeout_seconds": 10}},
		"provider": map[string]any{"kind": "perf"},
		"preserve": true,
	})
	if af := data(res)["analysis_failure"]; af != nil {
		t.Fatalf("analysis failed: %v\n%s", af, toJSON(res["warnings"]))
	}
	if len(data(res)["rows"].([]any)) == 0 {
		t.Fatalf("no rows: %s", toJSON(res))
	}
	ex := capt(res)["executions"].([]any)[0].(map[string]any)
	if ex["termination"] != "timeout" || ex["exit_owner"] != "collector" {
		t.Fatalf("execution %s", toJSON(ex))
	}
	if res["status"] != "partial" || !strings.Contains(toJSON(res["warnings"]), "budget.timeout_seconds (10 s) stopped the workload") {
		t.Fatalf("status %v warnings %s", res["status"], toJSON(res["warnings"]))
	}
	cov := res["coverage"].(map[string]any)
	if cov["complete"] != false || !strings.Contains(toJSON(cov["incomplete"]), "budget.timeout_seconds") {
		t.Fatalf("coverage %s", toJSON(cov))
	}
	if !strings.Contains(toJSON(capt(res)["artifacts"]), `"perf.data"`) {
		t.Fatalf("artifacts %s", toJSON(capt(res)["artifacts"]))
	}
}

// TestCaptureMissingExecutable: a target program that does not resolve is
// EXECUTION_FAILED on its argv field before any collector starts, for
// every provider that runs target.argv (and each comparison case).
func TestCaptureMissingExecutable(t *testing.T) {
	e := newCaptureEnv(t)
	// Captures make their scratch directories under TMPDIR: a private one
	// shows whether any was made.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	url := "http://127.0.0.1:1"
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		field      string
	}{
		{"perf absolute", "capture_and_summarize_profile", map[string]any{"target": target(e.dir, "/nonexistent"), "provider": map[string]any{"kind": "perf"}}, "/target/argv/0"},
		{"perf on PATH", "capture_and_summarize_profile", map[string]any{"target": target(e.dir, "no-such-program-xyz"), "provider": map[string]any{"kind": "perf"}}, "/target/argv/0"},
		{"pprof-http", "capture_and_summarize_profile", map[string]any{"target": target(e.dir, "/nonexistent"), "provider": map[string]any{"kind": "pprof-http", "url": url, "profile": "cpu"}}, "/target/argv/0"},
		{"perf compare case", "capture_and_compare_profiles", map[string]any{"target": target(e.dir, "true"), "provider": map[string]any{"kind": "perf"},
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "argv": []string{"/nonexistent"}}}}}, "/experiment/cases/1/argv/0"},
		{"pprof-http compare target", "capture_and_compare_profiles", map[string]any{"target": target(e.dir, "/nonexistent"), "provider": map[string]any{"kind": "pprof-http", "url": url, "profile": "heap"},
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}}}, "/target/argv/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind := tc.args["provider"].(map[string]any)["kind"]
			if kind == "perf" {
				if _, err := exec.LookPath("perf"); err != nil || !probeAllowed() {
					t.Skip("perf cannot record here (PROVIDER_UNAVAILABLE comes first)")
				}
			}
			m, code := e.call(tc.tool, tc.args)
			if code != contract.CodeExecutionFailed || m["error"].(map[string]any)["field"] != tc.field {
				t.Fatalf("%v %s", code, toJSON(m))
			}
			// Nothing ran: not even a scratch directory was made.
			if made, _ := filepath.Glob(filepath.Join(tmp, "inquest-capture-*")); len(made) > 0 {
				t.Fatalf("scratch directories were made: %v", made)
			}
		})
	}
}

// TestCaptureCompareExclusionMessage: a compared case whose every capture
// failed is an analysis_failure whose message counts the exclusions by
// reason in words, never a Go map.
func TestCaptureCompareExclusionMessage(t *testing.T) {
	e := newCaptureEnv(t)
	srv := httptest.NewServer(http.DefaultServeMux)
	defer srv.Close()
	res := e.mustCall("capture_and_compare_profiles", map[string]any{
		"target":   target(e.dir, "true"),
		"provider": map[string]any{"kind": "pprof-http", "url": srv.URL, "profile": "heap"},
		"experiment": map[string]any{"cases": []any{
			map[string]any{"name": "a"}, map[string]any{"name": "b", "argv": []string{"sh", "-c", "exit 3"}},
		}, "blocks": 2},
	})
	af, ok := data(res)["analysis_failure"].(map[string]any)
	want := `case "b" has no included capture to compare; excluded captures by reason: workload_failed: 2`
	if !ok || af["message"] != want {
		t.Fatalf("analysis_failure %s, want message %q", toJSON(af), want)
	}
	found := false
	for _, w := range res["warnings"].([]any) {
		found = found || strings.HasSuffix(w.(string), want)
		if strings.Contains(w.(string), "map[") {
			t.Errorf("warning %q", w)
		}
	}
	if !found {
		t.Fatalf("no warning names the exclusions: %s", toJSON(res["warnings"]))
	}
}

func TestFormatCounts(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]int
		want string
	}{
		{map[string]int{}, ""},
		{map[string]int{"workload_failed": 2}, "workload_failed: 2"},
		{map[string]int{"workload_failed": 1, "no_artifact": 3, "oracle_failed": 1}, "no_artifact: 3, oracle_failed: 1, workload_failed: 1"},
	} {
		if got := formatCounts(tc.in); got != tc.want {
			t.Errorf("formatCounts(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
