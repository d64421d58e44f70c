package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKClientAcceptsEveryResult: through the Go SDK client, every
// tool's input and output schema resolve with the SDK's own JSON Schema
// library (jsonschema-go), and every tool's results validate against its
// output schema: an error result for each (an argument no tool has) and
// the success or error of each read-only tool called with no arguments.
func TestGoSDKClientAcceptsEveryResult(t *testing.T) {
	cs := connect(t, isolatedEnv(t), "2025-11-25", "--in-process")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(name, which string, v any) *jsonschema.Resolved {
		b, _ := json.Marshal(v)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %s schema does not decode: %v", name, which, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %s schema does not resolve: %v", name, which, err)
		}
		return r
	}
	successes := 0
	for _, tl := range lt.Tools {
		resolve(tl.Name, "input", tl.InputSchema)
		out := resolve(tl.Name, "output", tl.OutputSchema)
		check := func(args map[string]any) *mcp.CallToolResult {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tl.Name, Arguments: args})
			if err != nil {
				t.Fatalf("%s %v: %v", tl.Name, args, err)
			}
			b, _ := json.Marshal(res.StructuredContent)
			var v any
			json.Unmarshal(b, &v)
			if err := out.Validate(v); err != nil {
				t.Errorf("%s %v: the result does not match the output schema: %v\n%s", tl.Name, args, err, b)
			}
			// Every sentence about a next call matches the fields.
			for _, m := range tool.NextCallMismatches(b) {
				t.Errorf("%s %v: %s", tl.Name, args, m)
			}
			return res
		}
		if res := check(map[string]any{"zz_not_an_argument": 1}); !res.IsError {
			t.Errorf("%s accepted an unknown argument", tl.Name)
		}
		if tl.Annotations != nil && tl.Annotations.ReadOnlyHint {
			if !check(map[string]any{}).IsError {
				successes++
			}
		}
	}
	if successes < 8 {
		t.Errorf("only %d read-only tools succeeded with no arguments: too few successes validated", successes)
	}
}
