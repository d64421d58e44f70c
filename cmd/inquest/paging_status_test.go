package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inquest-dev/inquest/internal/tool"
)

// TestPagesAreCompleteNotPartial checks, over the built binary, that
// paging is not missing evidence, for a page of each kind of paged tool:
// a proc listing (list_processes), a capture's first page (start_capture)
// and a capture page (read_capture), bin listings (list_symbols,
// search_strings, disassemble) and a perf analysis (summarize_profile),
// each with more pages after it, by the row limit or by the result byte
// budget. Each is `complete` with data.page.more true and next_action
// the exact next call (the same tool, or read_capture for a capture's
// first page, with the cursor data.next_cursor, or the perf
// continuation, whose token is data.next_cursor); a byte-ended page says so in warnings.
// Coverage is stated once, as the envelope's, never again under data, and
// next_action is never repeated under data.
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
	// A child holding 300 files open: its open_files capture is whole
	// (every fd of its own readable) and far larger than a 16 KiB page.
	dir := t.TempDir()
	holder := exec.Command("bash", "-c", `i=0; while [ $i -lt 300 ]; do eval "exec $((i+10))<\"$0/f$i\""; i=$((i+1)); done; echo ready; exec sleep 600`, dir)
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
		t.Fatalf("file holder: %q", l)
	}
	// A folded profile of 5 distinct stacks.
	prof := filepath.Join(t.TempDir(), "cpu.folded")
	if err := os.WriteFile(prof, []byte("main;a 5\nmain;b 4\nmain;c 3\nmain;d 2\nmain;e 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv(t)
	proc16 := []string{"--in-process", "--toolsets", "proc", "--max-result-bytes", "16384"}
	openFiles := map[string]any{"kind": "open_files", "pid": holder.Process.Pid, "wait_ms": 10000}
	tests := []struct {
		name    string
		mcpArgs []string
		// before is a call whose result names the tested call's
		// arguments (read_capture reads the capture it made); nil when
		// args is the call.
		before   func(t *testing.T, cs *mcp.ClientSession) map[string]any
		tool     string
		args     map[string]any
		next     string // the tool next_action names
		byBudget bool
	}{
		{"proc page by limit", []string{"--in-process", "--toolsets", "proc"}, nil, "list_processes", map[string]any{"limit": 1}, "list_processes", false},
		{"proc page by bytes", []string{"--in-process", "--toolsets", "proc", "--max-result-bytes", "16384"}, nil, "list_processes", map[string]any{"projection": []string{"all"}}, "list_processes", true},
		{"capture first page by bytes", proc16, nil, "start_capture", openFiles, "read_capture", true},
		{"capture first page by limit", proc16, nil, "start_capture", map[string]any{"kind": "open_files", "pid": holder.Process.Pid, "wait_ms": 10000, "read": map[string]any{"limit": 2}}, "read_capture", false},
		{"capture page by bytes", proc16, func(t *testing.T, cs *mcp.ClientSession) map[string]any {
			m, isErr := call(t, cs, "start_capture", map[string]any{"kind": "open_files", "pid": holder.Process.Pid, "wait_ms": 10000, "retain_capture": true, "read": map[string]any{"limit": 1}})
			if isErr {
				t.Fatalf("start_capture: %v", m["error"])
			}
			return map[string]any{"capture_id": m["data"].(map[string]any)["capture_id"]}
		}, "read_capture", nil, "read_capture", true},
		{"bin page by limit", []string{"--toolsets", "bin"}, nil, "list_symbols", map[string]any{"path": binary, "limit": 1}, "list_symbols", false},
		{"bin strings by limit", []string{"--toolsets", "bin"}, nil, "search_strings", map[string]any{"path": binary, "limit": 1}, "search_strings", false},
		{"bin disassembly by limit", []string{"--toolsets", "bin"}, nil, "disassemble", map[string]any{"path": binary, "symbol": "main.main", "max_instructions": 2}, "disassemble", false},
		{"perf page by page_size", []string{"--toolsets", "perf"}, nil, "summarize_profile", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": prof, "format": "folded"}}, "page_size": 2}, "summarize_profile", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := connect(t, env, "2025-11-25", tc.mcpArgs...)
			args := tc.args
			if tc.before != nil {
				args = tc.before(t, cs)
			}
			m, isErr := call(t, cs, tc.tool, args)
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
			switch {
			case next["tool"] != tc.next:
				t.Errorf("next_action = %v, want %s", next, tc.next)
			case nargs["continuation"] != nil:
				// perf: next_action is the continuation, stated once
				// (no data.next_page repeating it); data.next_cursor is
				// its token, as a proc page's is its cursor.
				if np, ok := data["next_page"]; ok {
					t.Errorf("data.next_page %v repeats next_action %v", np, next)
				}
				if data["next_cursor"] != nargs["continuation"] {
					t.Errorf("data.next_cursor %v, want next_action's continuation", data["next_cursor"])
				}
			case nargs["cursor"] == nil || nargs["cursor"] != data["next_cursor"]:
				t.Errorf("next_action = %v, want %s with cursor = data.next_cursor %v", next, tc.next, data["next_cursor"])
			}
			budget := false
			for _, w := range m["warnings"].([]any) {
				budget = budget || w == tool.BudgetWarning
			}
			if budget != tc.byBudget {
				t.Errorf("budget warning present = %v, want %v (warnings %v)", budget, tc.byBudget, m["warnings"])
			}
			if dup := tool.DataRepeats(m); len(dup) > 0 {
				t.Errorf("data repeats the envelope's %v", dup)
			}
			if _, ok := m["coverage"].(map[string]any); !ok {
				t.Errorf("envelope coverage = %v, want an object", m["coverage"])
			}
		})
	}
}
