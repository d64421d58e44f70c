package perf

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/inquest-dev/inquest/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOverMCP drives the perf tools through the MCP server with the Go SDK
// client over in-memory transports: the catalog lists the ten perf tools
// with their annotations, a paged analysis returns the same envelope in
// structuredContent and text, and next_action submitted unchanged resumes.
func TestOverMCP(t *testing.T) {
	e := newEnv(t)
	srv := mcpserver.New(e.reg, mcpserver.Options{Version: "test"})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "perf-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"preview_artifact": true, "summarize_profile": true, "compare_profiles": true, "summarize_benchmarks": true, "compare_benchmarks": true,
		"inspect_trace_window": true, "summarize_executions": true, "preserve_evidence": false, "query_evidence": true, "inspect_evidence": true, "rescue_evidence": false}
	if len(list.Tools) != len(want) {
		t.Fatalf("%d tools listed", len(list.Tools))
	}
	for _, tl := range list.Tools {
		ro, ok := want[tl.Name]
		if !ok || tl.Annotations.ReadOnlyHint != ro || *tl.Annotations.OpenWorldHint {
			t.Errorf("%s: listed=%v readOnly=%v", tl.Name, ok, tl.Annotations.ReadOnlyHint)
		}
	}
	p := e.write("a.txt", "a\nb\nc\n")
	args := map[string]any{"sources": []any{pathSrc(p)}, "page_size": 2}
	var lines []float64
	for {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "preview_artifact", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %v", err, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		sc, _ := json.Marshal(res.StructuredContent)
		var a, b map[string]any
		json.Unmarshal([]byte(text), &a)
		json.Unmarshal(sc, &b)
		if mustJSON(a) != mustJSON(b) {
			t.Fatal("text and structuredContent differ")
		}
		for _, r := range data(a)["rows"].([]any) {
			lines = append(lines, r.(map[string]any)["line"].(float64))
		}
		na, ok := a["next_action"].(map[string]any)
		if !ok {
			break
		}
		args = na["arguments"].(map[string]any)
	}
	if mustJSON(lines) != "[1,2,3]" {
		t.Fatalf("lines %v", lines)
	}
	// A failure is a tool result with isError and the error envelope.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "inspect_evidence", Arguments: map[string]any{"evidence_id": "ev-aaaaaaaaaaaaaaaaaaaaaaaaaa"}})
	if err != nil || !res.IsError {
		t.Fatalf("missing evidence: %v %v", err, res)
	}
	var f map[string]any
	json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &f)
	if f["error"].(map[string]any)["code"] != "EVIDENCE_NOT_FOUND" {
		t.Fatalf("error %v", f)
	}
}
