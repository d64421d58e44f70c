package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestRequiredAlternativesAndDependencies: a missing choice among required
// alternatives names every alternative; a member given without the member
// it depends on points at it and names the missing one.
func TestRequiredAlternativesAndDependencies(t *testing.T) {
	r := NewRegistry()
	schema := `{"type":"object","additionalProperties":false,"properties":{"symbol":{"type":"string"},"start":{"type":"string"},"end":{"type":"string"},"limit":{"type":"integer","minimum":1}},
"anyOf":[{"required":["symbol"]},{"required":["start"]}],"dependentRequired":{"end":["start"]}}`
	if err := r.Add(Tool{Name: "d", Toolset: Bin, Description: "d", Input: json.RawMessage(schema), Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		return contract.NewResult("test", time.Time{}, map[string]any{}), nil
	}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args, field, says string
		expected          string
	}{
		{`{}`, "", "one of these is required: symbol or start", `{"one_of_required":[["symbol"],["start"]]}`},
		{`{"symbol":"f","end":"0x10"}`, "/end", "end requires start, which is missing", `{"end":["start"]}`},
		{`{"symbol":"f","limit":0}`, "/limit", "out of range", `{"minimum":1,"type":"integer"}`},
	} {
		_, err := r.Call(context.Background(), "d", json.RawMessage(c.args))
		e := contract.AsError(err)
		got, _ := json.Marshal(e.Expected)
		if e.Code != contract.CodeInvalidArgument || e.Field != c.field || !strings.Contains(e.Message, c.says) || string(got) != c.expected {
			t.Errorf("%s: %s field %q %q expected %s; want field %q saying %q expected %s", c.args, e.Code, e.Field, e.Message, got, c.field, c.says, c.expected)
		}
	}
	if _, err := r.Call(context.Background(), "d", json.RawMessage(`{"start":"0x1","end":"0x10"}`)); err != nil {
		t.Errorf("valid call: %v", err)
	}
}

// TestRequiredAlternativeSets: an alternative needing several members
// names them together, at the nested object.
func TestRequiredAlternativeSets(t *testing.T) {
	r := NewRegistry()
	schema := `{"type":"object","additionalProperties":false,"properties":{"src":{"type":"object","properties":{"kind":{"type":"string"},"path":{"type":"string"},"id":{"type":"string"}},"oneOf":[{"required":["kind","path"]},{"required":["id"]}]}}}`
	if err := r.Add(Tool{Name: "s", Toolset: Bin, Description: "s", Input: json.RawMessage(schema), Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		return contract.NewResult("test", time.Time{}, map[string]any{}), nil
	}}); err != nil {
		t.Fatal(err)
	}
	_, err := r.Call(context.Background(), "s", json.RawMessage(`{"src":{}}`))
	e := contract.AsError(err)
	got, _ := json.Marshal(e.Expected)
	if e.Field != "/src" || !strings.Contains(e.Message, "kind and path or id (at /src)") || string(got) != `{"one_of_required":[["kind","path"],["id"]]}` {
		t.Fatalf("%q at %q expected %s", e.Message, e.Field, got)
	}
}
