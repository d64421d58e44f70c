package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

const testSchema = `{"type":"object","additionalProperties":false,"required":["ids"],"properties":{
"ids":{"type":"array","minItems":1,"items":{"type":"string","enum":["a","b"]}},
"limit":{"type":"integer","minimum":1,"maximum":5000},
"mode":{"type":"string","enum":["raw","summary"]},
"target":{"oneOf":[{"type":"object","additionalProperties":false,"required":["ref"],"properties":{"ref":{"type":"string","maxLength":8}}},
                   {"type":"object","additionalProperties":false,"required":["system"],"properties":{"system":{"const":true}}}]},
"filter":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"}}}}}`

func testRegistry(t testing.TB) *Registry {
	r := NewRegistry()
	err := r.Add(Tool{Name: "t", Toolset: Proc, Description: "needs ids", Input: json.RawMessage(testSchema),
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			return contract.NewResult("test", time.Time{}, map[string]any{}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestValidationProjection(t *testing.T) {
	r := testRegistry(t)
	tests := []struct {
		name, args                  string
		field, constraint, expected string
	}{
		{"missing required", `{}`, "/ids", "/required", `{"required":["ids"]}`},
		{"unknown field", `{"ids":["a"],"secret_field":"hunter2"}`, "/secret_field", "/additionalProperties", `{"additionalProperties":false,"properties":["filter","ids","limit","mode","target"],"type":"object"}`},
		{"wrong enum", `{"ids":["a"],"mode":"hunter2"}`, "/mode", "/properties/mode/enum", `{"enum":["raw","summary"]}`},
		{"above maximum", `{"ids":["a"],"limit":5001}`, "/limit", "/properties/limit/maximum", `{"maximum":5000,"type":"integer"}`},
		{"wrong type", `{"ids":["a"],"limit":"hunter2"}`, "/limit", "/properties/limit/type", `{"type":"integer"}`},
		{"item enum", `{"ids":["a","hunter2"]}`, "/ids/1", "/properties/ids/items/enum", `{"enum":["a","b"]}`},
		{"nested unknown", `{"ids":["a"],"filter":{"hunter2":1}}`, "/filter/hunter2", "/properties/filter/additionalProperties", `{"additionalProperties":false,"properties":["name"],"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Call(context.Background(), "t", json.RawMessage(tt.args))
			e, ok := err.(*contract.Error)
			if !ok || e.Code != contract.CodeInvalidArgument {
				t.Fatalf("got %v", err)
			}
			if e.Field != tt.field || e.Constraint != tt.constraint {
				t.Errorf("field %q constraint %q", e.Field, e.Constraint)
			}
			exp, _ := json.Marshal(e.Expected)
			if string(exp) != tt.expected {
				t.Errorf("expected %s", exp)
			}
			b, _ := json.Marshal(e)
			if strings.Contains(string(b), "hunter2") && tt.name != "unknown field" && tt.name != "nested unknown" {
				t.Errorf("error echoes the rejected value: %s", b)
			}
		})
	}
	if _, err := r.Call(context.Background(), "t", json.RawMessage(`{"ids":["a"],"limit":5}`)); err != nil {
		t.Fatalf("valid call rejected: %v", err)
	}
	if _, err := r.Call(context.Background(), "nope", nil); err != ErrUnknownTool {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestAddRejectsLooseSchemas(t *testing.T) {
	h := func(context.Context, json.RawMessage) (*contract.Result, error) { return nil, nil }
	for _, s := range []string{`{"type":"object"}`, `{"type":"string"}`, `not json`} {
		if err := NewRegistry().Add(Tool{Name: "x", Input: json.RawMessage(s), Handler: h}); err == nil {
			t.Errorf("schema %s accepted", s)
		}
	}
}

func TestCheckCompilesEverySchema(t *testing.T) {
	h := func(context.Context, json.RawMessage) (*contract.Result, error) { return nil, nil }
	tests := []struct {
		name, input, output string
		ok                  bool
	}{
		{"strict", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"integer"}}}`, "", true},
		{"bad keyword value", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":7}}}`, "", false},
		{"bad output", `{"type":"object","additionalProperties":false}`, `not json`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			r.MustAdd(Tool{Name: "x", Input: json.RawMessage(tc.input), OutputData: json.RawMessage(tc.output), Handler: h})
			if err := r.Check(); (err == nil) != tc.ok {
				t.Fatalf("Check() = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok && tc.output == "" {
				// The same failure reaches a caller as INTERNAL_ERROR, never a panic.
				_, err := r.Call(context.Background(), "x", json.RawMessage(`{}`))
				var ce *contract.Error
				if !errors.As(err, &ce) || ce.Code != contract.CodeInternalError {
					t.Fatalf("Call with a broken schema = %v, want INTERNAL_ERROR", err)
				}
			}
		})
	}
}

func TestHandlerPanicIsInternalError(t *testing.T) {
	r := NewRegistry()
	r.MustAdd(Tool{Name: "boom", Input: json.RawMessage(`{"type":"object","additionalProperties":false}`),
		Handler: func(context.Context, json.RawMessage) (*contract.Result, error) { panic("boom") }})
	_, err := r.Call(context.Background(), "boom", nil)
	if contract.CodeOf(err) != contract.CodeInternalError {
		t.Fatalf("got %v", err)
	}
}

func FuzzValidate(f *testing.F) {
	r := testRegistry(f)
	for _, s := range []string{`{}`, `{"ids":["a"]}`, `{"ids":[]}`, `{"ids":["a"],"target":{"ref":"x"}}`, `{"target":{"system":false}}`, `[]`, `null`, `{"ids":["a"],"filter":{"name":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := r.Call(context.Background(), "t", json.RawMessage(b))
		// The locator explains exactly the library's rejections.
		var inst any
		if json.Unmarshal(b, &inst) == nil {
			en := r.byName["t"]
			en.explainer()
			l := locator{root: en.doc, patterns: en.patterns}
			if located := len(l.check(en.doc, "", inst, nil)) > 0; located != (err != nil) {
				t.Fatalf("library rejected=%v, locator found a failure=%v (%v)", err != nil, located, err)
			}
		}
		if err == nil {
			return
		}
		e, ok := err.(*contract.Error)
		if !ok || e.Code != contract.CodeInvalidArgument {
			t.Fatalf("unexpected error %v", err)
		}
		if e.Field != "" && !strings.HasPrefix(e.Field, "/") {
			t.Fatalf("field %q is not a JSON Pointer", e.Field)
		}
		if json.Valid(b) && len(b) <= MaxArgumentBytes && !strings.HasPrefix(e.Constraint, "/") {
			t.Fatalf("constraint %q is not a JSON Pointer", e.Constraint)
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatal(err)
		}
	})
}

func TestIntegralNumbersAndLongNames(t *testing.T) {
	r := NewRegistry()
	var got json.RawMessage
	r.MustAdd(Tool{Name: "n", Input: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"limit":{"type":"integer","minimum":1},"x":{"type":"number"}}}`),
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			got = args
			var a struct {
				Limit int     `json:"limit"`
				X     float64 `json:"x"`
			}
			if err := json.Unmarshal(args, &a); err != nil || a.Limit != 1000 || a.X != 2.5 {
				t.Fatalf("handler got %s (%v)", args, err)
			}
			return contract.NewResult("t", time.Time{}, map[string]any{}), nil
		}})
	if _, err := r.Call(context.Background(), "n", json.RawMessage(`{"limit":1e3,"x":2.5}`)); err != nil {
		t.Fatalf("1e3 as integer: %v (%s)", err, got)
	}
	long := strings.Repeat("K", 100000)
	_, err := r.Call(context.Background(), "n", json.RawMessage(`{"`+long+`":1}`))
	b, _ := json.Marshal(err)
	if contract.CodeOf(err) != contract.CodeInvalidArgument || len(b) > 2000 || strings.Contains(string(b), "KKKK") {
		t.Fatalf("long unknown name: %d bytes: %.200s", len(b), b)
	}
}

// TestUnknownMemberNamesItsHome: an argument the tool does not take
// where it was given, but does take elsewhere (a member of a nested
// object given at the top level, through a local $ref or an anyOf
// alternative too, or a top-level member given inside an object), is
// INVALID_ARGUMENT at the member given, with a message naming where it belongs and an example
// (before a required member missing beside it, which it names too); a
// name the tool has nowhere gets no hint.
func TestUnknownMemberNamesItsHome(t *testing.T) {
	r := NewRegistry()
	schema := `{"type":"object","additionalProperties":false,"required":["kind"],"$defs":{"sel":{"type":"object","additionalProperties":false,"properties":{"projection":{"type":"array","items":{"type":"string"}},"path":{"type":"string"}}}},
"properties":{"target":{"anyOf":[{"type":"object","additionalProperties":false,"properties":{"process_ref":{"type":"string"}}},{"type":"object","additionalProperties":false,"properties":{"pid":{"type":"integer"}}}]},"kind":{"type":"string"},"wait_ms":{"type":"integer"},"read":{"$ref":"#/$defs/sel"},"filter":{"type":"object","additionalProperties":false,"properties":{"path":{"type":"string"}}}}}`
	err := r.Add(Tool{Name: "t", Toolset: Proc, Description: "d", Input: json.RawMessage(schema),
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			return contract.NewResult("test", time.Time{}, map[string]any{}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ args, field, hint string }{
		{`{"kind":"network","projection":["pid"]}`, "/projection", `projection belongs under read: {"read":{"projection":[...]}}`},
		{`{"projection":["pid"]}`, "/projection", `projection belongs under read: {"read":{"projection":[...]}}; kind is required too`},
		{`{"kind":"x","path":"x"}`, "/path", `path belongs under filter or read: {"filter":{"path":"..."}}`},
		{`{"kind":"x","read":{"wait_ms":5}}`, "/read/wait_ms", `wait_ms belongs at the top level: {"wait_ms":...}`},
		{`{"kind":"x","read":{"kind":"x"}}`, "/read/kind", `kind belongs at the top level: {"kind":"..."}`},
		{`{"kind":"x","process_ref":"p"}`, "/process_ref", `process_ref belongs under target: {"target":{"process_ref":"..."}}`},
		{`{"kind":"x","nowhere":1}`, "/nowhere", ""},
	}
	for _, tc := range tests {
		err := r.Validate("t", json.RawMessage(tc.args))
		e := contract.AsError(err)
		if e == nil || e.Code != contract.CodeInvalidArgument || e.Field != tc.field {
			t.Errorf("%s: %v, want INVALID_ARGUMENT at %s", tc.args, err, tc.field)
			continue
		}
		if tc.hint == "" && strings.Contains(e.Message, "belongs") || !strings.Contains(e.Message, tc.hint) {
			t.Errorf("%s: message %q, want it to say %q", tc.args, e.Message, tc.hint)
		}
	}
}

// TestUnknownMemberNamed: a member no schema at its place accepts is
// named (field at it, every accepted member in expected.properties),
// with what else the object needs, rather than reported as the first
// alternative's missing member.
func TestUnknownMemberNamed(t *testing.T) {
	r := testRegistry(t)
	tests := []struct {
		name, args, field, expected, message string
	}{
		{"unknown in alternatives", `{"ids":["a"],"target":{"bogus":1}}`, "/target/bogus",
			`{"additionalProperties":false,"one_of_required":[["ref"],["system"]],"properties":["ref","system"],"type":"object"}`,
			"an argument is not accepted by this tool (at /target/bogus); give one of ref or system"},
		{"unknown beside a missing member", `{"idz":["a"]}`, "/idz",
			`{"additionalProperties":false,"properties":["filter","ids","limit","mode","target"],"type":"object"}`,
			"an argument is not accepted by this tool (at /idz); ids is required too"},
		{"unknown beside a chosen alternative", `{"ids":["a"],"target":{"ref":"x","bogus":1}}`, "/target/bogus",
			`{"additionalProperties":false,"properties":["ref"],"type":"object"}`,
			"an argument is not accepted by this tool (at /target/bogus)"},
		{"no member at all", `{"ids":["a"],"target":{}}`, "/target",
			`{"one_of_required":[["ref"],["system"]]}`,
			"one of these is required: ref or system (at /target)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Call(context.Background(), "t", json.RawMessage(tt.args))
			e, ok := err.(*contract.Error)
			if !ok || e.Code != contract.CodeInvalidArgument {
				t.Fatalf("got %v", err)
			}
			exp, _ := json.Marshal(e.Expected)
			if e.Field != tt.field || string(exp) != tt.expected || e.Message != tt.message {
				t.Errorf("field %q expected %s message %q", e.Field, exp, e.Message)
			}
		})
	}
}
