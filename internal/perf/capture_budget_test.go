//go:build linux

package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// TestEveryCaptureWithinBudget: every capture_and_ tool, with an argv of
// thousands of bytes in target.argv and in experiment.cases, delivers its
// result (tool.DeliveredBytes: text block and structuredContent) within a
// 16 KiB result budget (the direct captures also within the default
// 64 KiB one), and says in a warning what
// it left out to fit.
func TestEveryCaptureWithinBudget(t *testing.T) {
	e := newCaptureEnv(t)
	defer func() { e.ctx = nil }()
	mod := scaledModule(t)
	long := strings.Repeat("x", 8000)
	// A package argument of 4000 bytes that go test resolves to ".".
	pkg := strings.Repeat("./", 2000)
	goTest := map[string]any{"kind": "go-test", "bench": "Work", "benchtime": "10x"}
	direct := map[string]any{"kind": "direct"}
	type call struct {
		name, tool string
		args       map[string]any
	}
	calls := []call{
		{"executions target argv", "capture_and_summarize_executions", map[string]any{"target": target("/tmp", "true", long), "provider": direct,
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "blocks": 12}}},
		{"executions case argv", "capture_and_summarize_executions", map[string]any{"target": target("/tmp", "true"), "provider": direct, "preserve": true,
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a", "argv": []string{"true", long}}, map[string]any{"name": "b", "argv": []string{"true", long, long}}}, "blocks": 3}}},
		{"preview", "capture_and_preview_artifact", map[string]any{"target": target("/tmp", "sh", "-c", "echo hello", "sh", long, long), "provider": direct}},
		{"benchmarks", "capture_and_summarize_benchmarks", map[string]any{"target": target(mod, pkg, pkg, pkg), "provider": goTest}},
		{"profile", "capture_and_summarize_profile", map[string]any{"target": target(mod, pkg), "provider": goTest, "preserve": true}},
		{"compare benchmarks", "capture_and_compare_benchmarks", map[string]any{"target": target(mod, "."), "provider": goTest,
			"experiment": map[string]any{"cases": []any{
				map[string]any{"name": "base", "argv": []string{pkg, pkg, pkg}, "env": map[string]any{"BENCH_SCALE": "1"}},
				map[string]any{"name": "slow", "argv": []string{pkg, pkg, pkg, pkg}, "env": map[string]any{"BENCH_SCALE": "4"}},
			}, "blocks": 3}}},
		{"compare profiles", "capture_and_compare_profiles", map[string]any{"target": target(mod, pkg), "provider": goTest,
			"experiment": map[string]any{"cases": scaledCases(), "blocks": 2}}},
	}
	if probeAllowed() {
		calls = append(calls, call{"compare perf", "capture_and_compare_profiles", map[string]any{"target": target("/tmp", "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", "sh", long), "provider": map[string]any{"kind": "perf"},
			"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "argv": []string{"sh", "-c", "true", "sh", long, long}}}, "blocks": 2}}})
	}
	for _, budget := range []int{16384, tool.DefaultResultBytes} {
		for _, c := range calls {
			// The go test and perf captures (minutes each on a loaded
			// machine) run once, at the tighter budget: their results are
			// cut by the same code as the direct ones, which are checked
			// at both budgets.
			if p, _ := c.args["provider"].(map[string]any); budget != 16384 && p["kind"] != "direct" {
				continue
			}
			t.Run(fmt.Sprint(budget, "/", c.name), func(t *testing.T) {
				ctx := tool.WithResultBudget(context.Background(), budget)
				raw, _ := json.Marshal(c.args)
				res, err := e.reg.Call(ctx, c.tool, raw)
				if err != nil {
					t.Fatalf("%s: %v", c.tool, err)
				}
				body, _ := contract.Marshal(res, nil)
				if n := tool.DeliveredBytes(body); n > budget {
					t.Fatalf("%s: %d bytes as delivered, over the %d-byte budget", c.tool, n, budget)
				}
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatal(err)
				}
				if data(m)["analysis_failure"] != nil {
					t.Fatalf("analysis failed: %v", data(m)["analysis_failure"])
				}
				// Whatever an argv was left out of says so, and a warning
				// says why.
				omitted := strings.Count(string(body), `"argv_omitted"`)
				if omitted > 0 && !strings.Contains(fmt.Sprint(m["warnings"]), "argv") {
					t.Fatalf("%d argv left out without a warning: %v", omitted, m["warnings"])
				}
				if ex := capt(m)["executions"].([]any); len(ex) == 0 {
					t.Fatalf("capture.executions lists no execution: %v", m["warnings"])
				}
			})
		}
	}
}
