package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestPortableRewrites: each rewrite yields a schema in the portable
// subset (PortableViolations finds nothing) that accepts and refuses
// the same arguments as the original, and a schema that needs nothing
// comes back as the same bytes.
func TestPortableRewrites(t *testing.T) {
	provider := `{"type":"object","additionalProperties":false,"properties":{"p":{"required":["kind"],"properties":{"kind":{"enum":["a","b","c"]}},
"if":{"properties":{"kind":{"const":"a"}}},"then":{"type":"object","additionalProperties":false,"required":["kind"],"properties":{"kind":{"const":"a"},"n":{"type":"integer","maximum":3}}},
"else":{"if":{"properties":{"kind":{"const":"b"}}},"then":{"type":"object","additionalProperties":false,"required":["kind","url"],"properties":{"kind":{"const":"b"},"url":{"type":"string"}}},
"else":{"type":"object","additionalProperties":false,"required":["kind"],"properties":{"kind":{"const":"c"}}}}}}}`
	for _, c := range []struct {
		name, schema string
		accept       []string
		refuse       []string
	}{
		{"typeless enum", `{"type":"object","additionalProperties":false,"properties":{"s":{"enum":["x","y"]}}}`,
			[]string{`{"s":"x"}`}, []string{`{"s":"z"}`, `{"s":1}`}},
		{"string const", `{"type":"object","additionalProperties":false,"properties":{"k":{"const":"x"}}}`,
			[]string{`{"k":"x"}`}, []string{`{"k":"y"}`}},
		{"nullable type", `{"type":"object","additionalProperties":false,"properties":{"n":{"type":["integer","null"],"minimum":1}}}`,
			[]string{`{"n":1}`, `{}`}, []string{`{"n":0}`, `{"n":"1"}`}},
		{"several types", `{"type":"object","additionalProperties":false,"properties":{"v":{"type":["number","string"],"pattern":"^[0-9]+$","maximum":9}}}`,
			[]string{`{"v":5}`, `{"v":"12"}`}, []string{`{"v":10}`, `{"v":"a"}`, `{"v":true}`}},
		{"discriminated chain", provider,
			[]string{`{"p":{"kind":"a","n":2}}`, `{"p":{"kind":"b","url":"u"}}`, `{"p":{"kind":"c"}}`},
			[]string{`{"p":{"kind":"a","url":"u"}}`, `{"p":{"kind":"b"}}`, `{"p":{"kind":"d"}}`, `{"p":{"kind":"a","n":4}}`}},
		{"exclusive oneOf", `{"type":"object","additionalProperties":false,"properties":{"t":{"oneOf":[
{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string"}}},
{"type":"object","additionalProperties":false,"required":["b"],"properties":{"b":{"type":"integer"}}}]}}}`,
			[]string{`{"t":{"a":"x"}}`, `{"t":{"b":1}}`}, []string{`{"t":{"a":"x","b":1}}`, `{"t":{}}`}},
		{"oneOf by type", `{"type":"object","additionalProperties":false,"properties":{"t":{"oneOf":[{"type":"integer","minimum":0},{"type":"string","pattern":"^[0-9]+$"}]}}}`,
			[]string{`{"t":1}`, `{"t":"1"}`}, []string{`{"t":-1}`, `{"t":"x"}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Portable(json.RawMessage(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			if v := PortableViolations(out); len(v) > 0 {
				t.Errorf("rewritten schema is not portable: %v\n%s", v, out)
			}
			for _, in := range []json.RawMessage{json.RawMessage(c.schema), out} {
				r := NewRegistry()
				e := &entry{Tool: Tool{Name: "x", Input: in}}
				r.tools = append(r.tools, e)
				for _, a := range c.accept {
					if err := e.validate(json.RawMessage(a)); err != nil {
						t.Errorf("%s refused by %s: %v", a, in, err)
					}
				}
				for _, a := range c.refuse {
					if err := e.validate(json.RawMessage(a)); err == nil {
						t.Errorf("%s accepted by %s", a, in)
					}
				}
			}
		})
	}
	same := json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string"}}}`)
	if out, _ := Portable(same); string(out) != string(same) {
		t.Errorf("a portable schema was rewritten: %s", out)
	}
}

// TestPortableViolations: each construct outside the subset is named at
// its JSON Pointer.
func TestPortableViolations(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":["object","null"]}`, `(root): type must be one string`},
		{`{"type":"object","properties":{"e":{}}}`, `/properties/e: no type`},
		{`{"type":"object","properties":{"c":{"type":"string","const":"x"}}}`, `/properties/c: keyword "const"`},
		{`{"type":"object","if":{},"then":{}}`, `(root): keyword "if"`},
		{`{"type":"array"}`, `(root): an array needs items`},
		{`{"type":"integer","enum":[1,2]}`, `enum value 1 is not a string`},
		{`{"type":"object","additionalProperties":{"type":"string"}}`, `additionalProperties must be false`},
		{`{"type":"string","format":"uri"}`, `format "uri" is not portable`},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","uniqueItems":true}}}}`, `/properties/a/items: keyword "uniqueItems"`},
		{`not json`, `not JSON`},
	} {
		got := strings.Join(PortableViolations(json.RawMessage(c.schema)), "; ")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.schema, got, c.want)
		}
	}
	if v := PortableViolations(json.RawMessage(`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string","enum":["x"],"description":"d"},"l":{"type":"array","items":{"type":"integer","minimum":0}},"o":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`)); len(v) > 0 {
		t.Errorf("portable schema flagged: %v", v)
	}
}

// TestDiscriminatedBranchError: a failure inside the branch a caller
// selected by kind is reported at that branch's member, with that
// branch's bound, not as another branch's kind mismatch.
func TestDiscriminatedBranchError(t *testing.T) {
	schema := `{"type":"object","additionalProperties":false,"properties":{"p":{"required":["kind"],"properties":{"kind":{"enum":["a","b"]}},
"if":{"properties":{"kind":{"const":"a"}}},"then":{"type":"object","additionalProperties":false,"required":["kind"],"properties":{"kind":{"const":"a"},"n":{"type":"integer","maximum":3}}},
"else":{"type":"object","additionalProperties":false,"required":["kind","url"],"properties":{"kind":{"const":"b"},"url":{"type":"string"}}}}}}`
	r := NewRegistry()
	if err := r.Add(Tool{Name: "d", Toolset: Perf, Description: "d", Input: json.RawMessage(schema), Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		return contract.NewResult("test", time.Time{}, map[string]any{}), nil
	}}); err != nil {
		t.Fatal(err)
	}
	// The registry publishes the portable form.
	if tl, _ := r.Lookup("d"); len(PortableViolations(tl.Input)) > 0 || strings.Contains(string(tl.Input), `"if"`) {
		t.Errorf("published schema is not the portable form: %s", tl.Input)
	}
	for _, c := range []struct{ args, field, says, expected string }{
		{`{"p":{"kind":"a","n":4}}`, "/p/n", "out of range", `{"maximum":3,"type":"integer"}`},
		{`{"p":{"kind":"b"}}`, "/p/url", "required argument is missing", ``},
		{`{"p":{"kind":"a","url":"u"}}`, "/p/url", "not accepted", ``},
		{`{"p":{"kind":"z"}}`, "/p/kind", "not one of the accepted values", `{"enum":["a","b"]}`},
	} {
		_, err := r.Call(context.Background(), "d", json.RawMessage(c.args))
		e := contract.AsError(err)
		got, _ := json.Marshal(e.Expected)
		if e.Code != contract.CodeInvalidArgument || e.Field != c.field || !strings.Contains(e.Message, c.says) || (c.expected != "" && string(got) != c.expected) {
			t.Errorf("%s: %s at %q %q expected %s; want %q saying %q expected %s", c.args, e.Code, e.Field, e.Message, got, c.field, c.says, c.expected)
		}
	}
}
