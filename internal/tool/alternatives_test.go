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

// TestSeveralAlternatives: an object that gives the members of more than
// one oneOf alternative is refused at the object the caller sent, naming
// every alternative, not at a member of the first branch it failed.
func TestSeveralAlternatives(t *testing.T) {
	r := NewRegistry()
	schema := `{"type":"object","additionalProperties":false,"properties":{"target":{"oneOf":[
{"type":"object","additionalProperties":false,"required":["process_ref"],"properties":{"process_ref":{"type":"string"}}},
{"type":"object","additionalProperties":false,"required":["pid"],"properties":{"pid":{"type":"integer"}}},
{"type":"object","additionalProperties":false,"required":["system"],"properties":{"system":{"const":true}}}]}}}`
	if err := r.Add(Tool{Name: "a", Toolset: Proc, Description: "a", Input: json.RawMessage(schema), Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		return contract.NewResult("test", time.Time{}, map[string]any{}), nil
	}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ args, field, says string }{
		{`{"target":{"pid":1,"system":true}}`, "/target", "give exactly one of process_ref, pid or system, not several (at /target)"},
		{`{"target":{"pid":1,"process_ref":"p","system":true}}`, "/target", "not several"},
		// one alternative with a wrong value is that member's error
		{`{"target":{"pid":"1"}}`, "/target/pid", "wrong type"},
		// one alternative plus an unknown member points at the unknown one
		{`{"target":{"pid":1,"name":"x"}}`, "/target/name", "not accepted"},
	} {
		_, err := r.Call(context.Background(), "a", json.RawMessage(c.args))
		e := contract.AsError(err)
		if e == nil || e.Code != contract.CodeInvalidArgument || e.Field != c.field || !strings.Contains(e.Message, c.says) {
			t.Errorf("%s: %+v; want field %q saying %q", c.args, e, c.field, c.says)
		}
	}
	if _, err := r.Call(context.Background(), "a", json.RawMessage(`{"target":{"system":true}}`)); err != nil {
		t.Errorf("valid call: %v", err)
	}
}
