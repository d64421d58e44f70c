package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// graphHost is a host with four scripted system samples and a paused
// graph workspace (so every export of it ends at the same displayed
// time), a TUI session and an MCP bridge session.
func graphHost(t *testing.T) (h *Host, tui, bs *Session) {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	step := func(total, avail uint64) func(*sample.Snapshot) {
		return func(s *sample.Snapshot) {
			s.System.Set(sample.SMemTotal, total)
			s.System.Set(sample.SMemAvailable, avail)
		}
	}
	var steps []func(*sample.Snapshot)
	for i := range 64 {
		steps = append(steps, step(1<<40, uint64(1<<53)+uint64(i)*3))
	}
	h = testHost(t, time.Hour, &scripted{t0: t0, steps: steps})
	h.Sampler().Step()
	h.Sampler().Step()
	tui = h.NewSession()
	mustCall(t, h, tui, GraphWorkspaceMethod, map[string]any{"action": "pause"})
	bs = h.NewSession()
	MarkMCPBridge(bs)
	return h, tui, bs
}

// setExportHook installs fn as the writer's hook for this test.
func setExportHook(t *testing.T, fn func(path string)) {
	exportWriteHook = fn
	t.Cleanup(func() { exportWriteHook = nil })
}

// awaitOperation polls get_operation until the operation is terminal.
func awaitOperation(t *testing.T, h *Host, id string) map[string]any {
	t.Helper()
	s := h.NewSession()
	defer s.Close()
	var d map[string]any
	waitFor(t, 3*time.Minute, "the export to finish", func() bool {
		d, _ = mustCall(t, h, s, "get_operation", map[string]any{"operation_id": id})
		return d["state"] == "succeeded" || d["state"] == "failed"
	})
	return d
}

// export_graphs is an operation: accepted, its CSV snapshot is written by
// a background writer. With wait_ms 0 the reply is the running operation
// with an exact get_operation continuation; meanwhile the mutation slot is
// held (BUSY) while reads and display edits go on; the requesting
// connection closing and later graph/display edits change nothing in the
// file, which equals a synchronous export of the same workspace.
func TestExportGraphsBackgroundWriter(t *testing.T) {
	h, tui, bs := graphHost(t)
	dir := t.TempDir()
	sync, _ := mustCall(t, h, bs, "export_graphs", map[string]any{"wait_ms": 10000, "output_directory": dir, "filename": "sync.csv",
		"metrics": []any{map[string]any{"metric_id": "memory_available_bytes"}, map[string]any{"metric_id": "memory_total_bytes"}}})
	if sync["state"] != "succeeded" {
		t.Fatalf("synchronous export: %v", sync)
	}
	syncOut := sync["outcome"].(map[string]any)
	if syncOut["output_path"] != filepath.Join(dir, "sync.csv") || syncOut["rows"] != 4.0 {
		t.Fatalf("synchronous outcome: %v", syncOut)
	}

	entered, gate := make(chan string, 1), make(chan struct{})
	setExportHook(t, func(p string) {
		if strings.HasSuffix(p, "bg.csv") {
			entered <- p
			<-gate
		}
	})
	d, res := mustCall(t, h, bs, "export_graphs", map[string]any{"wait_ms": 0, "operation_id": "bg-1", "output_directory": filepath.Join(dir, "sub", "dir"), "filename": "bg.csv"})
	if d["state"] != "running" || d["operation_id"] != "bg-1" || d["outcome"] != nil {
		t.Fatalf("wait_ms 0: %v", d)
	}
	if res.NextAction == nil || res.NextAction.Tool != "get_operation" || res.NextAction.Arguments["operation_id"] != "bg-1" {
		t.Fatalf("continuation: %+v", res.NextAction)
	}
	path := <-entered // the writer created the file (and its parents) and waits
	if path != filepath.Join(dir, "sub", "dir", "bg.csv") {
		t.Fatalf("path %s", path)
	}
	// the single mutation slot stays occupied; reads and the TUI go on
	_, _, err := call(t, h, bs, "add_graphs", map[string]any{"metrics": []any{map[string]any{"metric_id": "load1"}}})
	wantCode(t, err, contract.CodeBusy)
	_, _, err = call(t, h, h.NewSession(), "export_graphs", map[string]any{"output_directory": dir})
	wantCode(t, err, contract.CodeBusy)
	if d, _ := mustCall(t, h, bs, "get_operation", map[string]any{"operation_id": "bg-1"}); d["state"] != "running" {
		t.Fatalf("get_operation while writing: %v", d)
	}
	// a repeat of the id with identical arguments is the same operation
	if d, _ := mustCall(t, h, bs, "export_graphs", map[string]any{"wait_ms": 0, "operation_id": "bg-1", "output_directory": filepath.Join(dir, "sub", "dir"), "filename": "bg.csv"}); d["state"] != "running" {
		t.Fatalf("repeat while running: %v", d)
	}
	ws, _ := mustCall(t, h, bs, "get_graphs", map[string]any{})
	mustCall(t, h, tui, GraphWorkspaceMethod, map[string]any{"action": "resume"})
	mustCall(t, h, tui, GraphWorkspaceMethod, map[string]any{"action": "remove", "graph_id": ws["graphs"].([]any)[0].(map[string]any)["graph_id"]})
	h.Sampler().Step()
	bs.Close() // the requesting connection goes away mid-write
	close(gate)

	fin := awaitOperation(t, h, "bg-1")
	if fin["state"] != "succeeded" {
		t.Fatalf("after disconnect: %v", fin)
	}
	out := fin["outcome"].(map[string]any)
	if out["output_path"] != path || out["rows"] != syncOut["rows"] {
		t.Fatalf("outcome %v", out)
	}
	if len(out["workspace"].(map[string]any)["graphs"].([]any)) != 2 {
		t.Fatalf("the outcome's workspace is not the accepted one: %v", out["workspace"])
	}
	a, _ := os.ReadFile(filepath.Join(dir, "sync.csv"))
	b, err := os.ReadFile(path)
	if err != nil || string(a) != string(b) || len(a) == 0 {
		t.Fatalf("background export differs from the synchronous one (%v):\n%s\n---\n%s", err, a, b)
	}
	// the slot is free again
	bs2 := h.NewSession()
	MarkMCPBridge(bs2)
	mustCall(t, h, bs2, "add_graphs", map[string]any{"wait_ms": 0, "metrics": []any{map[string]any{"metric_id": "load1"}}})
}

// A connection that is gone before acceptance cancels the export: nothing
// is added, no file is written.
func TestExportGraphsCancelledBeforeAcceptance(t *testing.T) {
	h, _, bs := graphHost(t)
	dir := filepath.Join(t.TempDir(), "out")
	gone := h.NewSession()
	MarkMCPBridge(gone)
	gone.Close()
	_, _, err := call(t, h, gone, "export_graphs", map[string]any{"wait_ms": 10000, "output_directory": dir, "operation_id": "c-1",
		"metrics": []any{map[string]any{"metric_id": "memory_total_bytes"}}})
	e := wantCode(t, err, contract.CodeCancelled)
	if e.Details["operation_id"] != "c-1" || e.Details["state"] != "failed" {
		t.Fatalf("details %v", e.Details)
	}
	if ws, _ := mustCall(t, h, bs, "get_graphs", map[string]any{}); len(ws["graphs"].([]any)) != 0 {
		t.Fatalf("a cancelled export added graphs: %v", ws["graphs"])
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a cancelled export created its directory: %v", err)
	}
	// get_operation tells the same outcome
	d, _ := mustCall(t, h, bs, "get_operation", map[string]any{"operation_id": "c-1"})
	if d["state"] != "failed" || d["error"].(map[string]any)["code"] != string(contract.CodeCancelled) {
		t.Fatalf("get_operation: %v", d)
	}
}
