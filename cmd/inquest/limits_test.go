package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPLimits: `inquest mcp --limits` lowers the analysis ceilings of
// that server: get_status shows them under data.analysis_limits, the perf
// tools' schemas publish them, a call may lower them further and is
// refused above them; an invalid --limits is an error naming the flag
// before the server starts.
func TestMCPLimits(t *testing.T) {
	env := isolatedEnv(t)
	cs := connect(t, env, "2025-11-25", "--limits", `{"max_rows":500,"timeout_seconds":60}`)
	st, isErr := call(t, cs, "get_status", map[string]any{})
	if isErr {
		t.Fatalf("get_status: %v", st)
	}
	al, _ := st["data"].(map[string]any)["analysis_limits"].(map[string]any)
	if al["max_rows"] != 500.0 || al["timeout_seconds"] != 60.0 || al["default_rows"] != 100.0 || al["source"] != "--limits" {
		t.Fatalf("analysis_limits %v", al)
	}
	p := filepath.Join(t.TempDir(), "bench.txt")
	if err := os.WriteFile(p, []byte("BenchmarkA-2 \t 100\t 10 ns/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := []any{map[string]any{"kind": "path", "path": p, "format": "gobench"}}
	for _, tc := range []struct {
		limits map[string]any
		ok     bool
	}{
		{map[string]any{"max_rows": 500}, true},
		{map[string]any{"max_rows": 20}, true},
		{map[string]any{"max_rows": 501}, false},
		{map[string]any{"timeout_seconds": 61}, false},
	} {
		res, isErr := call(t, cs, "summarize_benchmarks", map[string]any{"sources": src, "limits": tc.limits})
		if isErr == tc.ok {
			t.Errorf("limits %v: error %v, want accepted %v: %v", tc.limits, isErr, tc.ok, res)
		}
	}
	for _, tc := range []struct{ limits, want string }{
		{`{"max_rows":50000}`, "--limits: max_rows 50000 is out of range"},
		{`{"colour":1}`, `--limits: unknown key "colour"`},
		{`[1]`, "--limits: want a JSON object"},
	} {
		cmd := exec.Command(binary, "mcp", "--limits", tc.limits)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("--limits %s: err %v, output %q, want %q", tc.limits, err, out, tc.want)
		}
	}
}
