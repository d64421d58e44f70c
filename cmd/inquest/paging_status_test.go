package main

import (
	"os/exec"
	"runtime"
	"testing"

	"github.com/inquest-dev/inquest/internal/tool"
)

// TestPagesAreCompleteNotPartial checks, over the built binary, that
// paging is not missing evidence: a page of a proc listing (list_processes)
// or a bin listing (list_symbols) with more pages after it, and a proc
// page the result byte budget ended early, are `complete` with
// data.page.more true and next_action the same call with the cursor; the
// byte-ended page says so in warnings. A proc page states its coverage
// once, as the envelope's, never again under data.
func TestPagesAreCompleteNotPartial(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the proc listing here reads Linux /proc")
	}
	// Enough processes of this test's own that a small byte budget ends
	// the listing's first page early, whatever else runs here.
	for range 40 {
		c := exec.Command("sleep", "600")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	env := isolatedEnv(t)
	tests := []struct {
		name     string
		mcpArgs  []string
		tool     string
		args     map[string]any
		byBudget bool
		// once: coverage is the envelope's alone (the proc pages).
		once bool
	}{
		{"proc page by limit", []string{"--in-process", "--toolsets", "proc"}, "list_processes", map[string]any{"limit": 1}, false, true},
		{"proc page by bytes", []string{"--in-process", "--toolsets", "proc", "--max-result-bytes", "16384"}, "list_processes", map[string]any{"projection": []string{"all"}}, true, true},
		{"bin page by limit", []string{"--toolsets", "bin"}, "list_symbols", map[string]any{"path": binary, "limit": 1}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := connect(t, env, "2025-11-25", tc.mcpArgs...)
			m, isErr := call(t, cs, tc.tool, tc.args)
			if isErr {
				t.Fatalf("%s failed: %v", tc.tool, m["error"])
			}
			data, _ := m["data"].(map[string]any)
			page, _ := data["page"].(map[string]any)
			if page["more"] != true {
				t.Fatalf("page.more = %v, want true (the listing has more rows than this page)", page["more"])
			}
			if m["status"] != "complete" {
				t.Errorf("status = %v with warnings %v, want complete: paging is not missing evidence", m["status"], m["warnings"])
			}
			next, _ := m["next_action"].(map[string]any)
			nargs, _ := next["arguments"].(map[string]any)
			if next["tool"] != tc.tool || nargs["cursor"] == nil || nargs["cursor"] != data["next_cursor"] {
				t.Errorf("next_action = %v, want %s with cursor = data.next_cursor", next, tc.tool)
			}
			budget := false
			for _, w := range m["warnings"].([]any) {
				budget = budget || w == tool.BudgetWarning
			}
			if budget != tc.byBudget {
				t.Errorf("budget warning present = %v, want %v (warnings %v)", budget, tc.byBudget, m["warnings"])
			}
			if _, dup := data["coverage"]; dup && tc.once {
				t.Error("data.coverage repeats the envelope's coverage")
			}
			if _, ok := m["coverage"].(map[string]any); !ok {
				t.Errorf("envelope coverage = %v, want an object", m["coverage"])
			}
		})
	}
}
