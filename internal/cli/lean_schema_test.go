package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// leanCase is one tool call's arguments and where the test found them.
type leanCase struct {
	tool, from string
	args       json.RawMessage
}

// recordedCalls collects the tools/call requests of the stdio transcripts
// and the next_action calls the golden results and error files name: the
// argument sets real sessions send.
func recordedCalls(t *testing.T) []leanCase {
	t.Helper()
	var out []leanCase
	var walk func(from string, v any)
	walk = func(from string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if name, ok := x["tool"].(string); ok {
				if a, ok := x["arguments"].(map[string]any); ok {
					b, _ := json.Marshal(a)
					out = append(out, leanCase{name, from, b})
				}
			}
			if x["method"] == "tools/call" {
				if p, ok := x["params"].(map[string]any); ok {
					if name, ok := p["name"].(string); ok {
						a, _ := p["arguments"].(map[string]any)
						if a == nil {
							a = map[string]any{}
						}
						b, _ := json.Marshal(a)
						out = append(out, leanCase{name, from, b})
					}
				}
			}
			for _, c := range x {
				walk(from, c)
			}
		case []any:
			for _, c := range x {
				walk(from, c)
			}
		}
	}
	var files []string
	for _, glob := range []string{"../../cmd/inquest/testdata/transcripts/*.txtar", "../../cmd/inquest/testdata/errors/*.json", "testdata/*/*.json", "testdata/*.txtar", "../../cmd/inquest/testdata/script/*.txtar"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var whole any
		if json.Unmarshal(b, &whole) == nil {
			walk(f, whole)
			continue
		}
		// Line-delimited JSON (a transcript's messages).
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var v any
			if json.Unmarshal([]byte(strings.TrimSpace(sc.Text())), &v) == nil {
				walk(f, v)
			}
		}
	}
	return out
}

// minimal returns a value for schema s: its const or first enum member,
// the first branch of an anyOf/oneOf, an object of its required members,
// an array of minItems (at least one) items, a number at its minimum, a
// string of minLength "x"s. The full schema may still refuse it (a
// pattern); the caller counts those.
func minimal(s map[string]any) any {
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if br, ok := s[k].([]any); ok && len(br) > 0 {
			if b, ok := br[0].(map[string]any); ok {
				merged := map[string]any{}
				for k, v := range s {
					if k != "anyOf" && k != "oneOf" {
						merged[k] = v
					}
				}
				for k, v := range b {
					merged[k] = v
				}
				if req, ok := b["required"].([]any); ok {
					if top, ok := s["required"].([]any); ok {
						merged["required"] = append(slices.Clone(top), req...)
					}
				}
				return minimal(merged)
			}
		}
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	switch typ {
	case "object", "":
		props, _ := s["properties"].(map[string]any)
		out := map[string]any{}
		req, _ := s["required"].([]any)
		for _, r := range req {
			if ps, ok := props[r.(string)].(map[string]any); ok {
				out[r.(string)] = minimal(ps)
			}
		}
		return out
	case "array":
		n := 1
		if m, ok := s["minItems"].(float64); ok && int(m) > n {
			n = int(m)
		}
		items, _ := s["items"].(map[string]any)
		var out []any
		for i := 0; i < n; i++ {
			out = append(out, minimal(items))
		}
		if e, ok := items["enum"].([]any); ok && len(e) >= n {
			out = slices.Clone(e[:n])
		}
		return out
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return true
	case "string":
		n := 1
		if m, ok := s["minLength"].(float64); ok && int(m) > n {
			n = int(m)
		}
		return strings.Repeat("x", n)
	}
	return nil
}

// boundCases derives, from a tool's full input schema, its minimal
// argument set and that set with each top-level integer at and past its
// bounds and each string enum member (and a value outside the enum): the
// values a lean schema (which drops bounds and long enums) must let
// through to the server, which judges them by the full schema.
func boundCases(name string, full json.RawMessage) []leanCase {
	var s map[string]any
	if json.Unmarshal(full, &s) != nil {
		return nil
	}
	base, _ := minimal(s).(map[string]any)
	with := func(p string, v any) json.RawMessage {
		m := map[string]any{}
		for k, x := range base {
			m[k] = x
		}
		m[p] = v
		b, _ := json.Marshal(m)
		return b
	}
	b, _ := json.Marshal(base)
	out := []leanCase{{name, "minimal", b}}
	props, _ := s["properties"].(map[string]any)
	for p, x := range props {
		ps, _ := x.(map[string]any)
		if ps["type"] == "integer" {
			for _, k := range []string{"minimum", "maximum"} {
				if v, ok := ps[k].(float64); ok {
					for _, d := range []float64{0, -1, 1} {
						out = append(out, leanCase{name, fmt.Sprintf("%s %s%+v", p, k, d), with(p, int64(v+d))})
					}
				}
			}
		}
		if e, ok := ps["enum"].([]any); ok {
			for _, v := range append(slices.Clone(e), "no-such-value-inquest") {
				out = append(out, leanCase{name, p + " enum", with(p, v)})
			}
		}
		out = append(out, leanCase{name, p + " minimal", with(p, minimal(ps))})
	}
	return out
}

// TestLeanAcceptsWhatFullAccepts: the input schema tools/list publishes
// (tool.Lean) only relaxes the full one, so every argument set the server
// accepts is valid against the published schema too (a client that
// checks arguments before sending never refuses a good call). The cases
// are the calls recorded in transcripts and golden results, and each
// tool's values at its integer bounds and enum members.
func TestLeanAcceptsWhatFullAccepts(t *testing.T) {
	rt, err := newRuntime(context.Background(), runtimeOptions{NoHost: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	reg := rt.Registry
	cases := recordedCalls(t)
	recorded := len(cases)
	for _, tl := range reg.Tools() {
		cases = append(cases, boundCases(tl.Name, tl.Input)...)
	}
	lean := map[string]*jsonschema.Resolved{}
	accepted, refused := 0, 0
	tools := map[string]bool{}
	for _, c := range cases {
		if _, ok := lean[c.tool]; !ok {
			raw := reg.LeanInputOf(c.tool)
			if raw == nil {
				continue // a tool of another build (a recorded call to a renamed tool)
			}
			var js jsonschema.Schema
			if err := json.Unmarshal(raw, &js); err != nil {
				t.Fatalf("%s: lean schema: %v", c.tool, err)
			}
			rs, err := js.Resolve(nil)
			if err != nil {
				t.Fatalf("%s: lean schema does not compile: %v", c.tool, err)
			}
			lean[c.tool] = rs
		}
		rs := lean[c.tool]
		if rs == nil {
			continue
		}
		if reg.Validate(c.tool, c.args) != nil {
			refused++
			continue
		}
		accepted++
		tools[c.tool] = true
		var v any
		_ = json.Unmarshal(c.args, &v)
		if err := rs.Validate(v); err != nil {
			t.Errorf("%s (%s): the full schema accepts %s, the published lean schema refuses it: %v", c.tool, c.from, c.args, err)
		}
	}
	t.Logf("%d recorded calls, %d derived; %d accepted by the full schema (over %d tools), %d refused by it", recorded, len(cases)-recorded, accepted, len(tools), refused)
	// The lean schemas still judge types: a string for list_processes'
	// integer limit is refused (the check above can fail).
	if rs := lean["list_processes"]; rs == nil || rs.Validate(map[string]any{"limit": "ten"}) == nil {
		t.Errorf("the lean list_processes schema accepts a string limit (or is missing)")
	}
	if recorded < 5 || accepted < 500 || len(tools) < 40 {
		t.Fatalf("too few cases to mean anything: %d recorded, %d accepted over %d tools", recorded, accepted, len(tools))
	}
}

// TestLeanDroppedBoundsAndEnumsAreStated: a value past a bound or outside
// an enum the lean schema no longer publishes is refused by the server
// with INVALID_ARGUMENT at that argument, its message stating the bound
// and, for an enum, expected.enum listing every allowed value.
func TestLeanDroppedBoundsAndEnumsAreStated(t *testing.T) {
	rt, err := newRuntime(context.Background(), runtimeOptions{NoHost: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	reg := rt.Registry
	enums, bounds := 0, 0
	for _, tl := range reg.Tools() {
		var full struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		_ = json.Unmarshal(tl.Input, &full)
		var lean struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		_ = json.Unmarshal(reg.LeanInputOf(tl.Name), &lean)
		for p, ps := range full.Properties {
			lp := lean.Properties[p]
			if e, ok := ps["enum"].([]any); ok && len(e) > tool.LeanEnumMax && lp["enum"] == nil {
				enums++
				err := reg.Validate(tl.Name, json.RawMessage(fmt.Sprintf(`{%q:"no-such-value-inquest"}`, p)))
				ce := contract.AsError(err)
				if ce == nil || ce.Code != contract.CodeInvalidArgument || ce.Field != "/"+p {
					t.Errorf("%s.%s: a value outside the dropped enum gave %+v", tl.Name, p, ce)
					continue
				}
				b, _ := json.Marshal(ce.Expected)
				for _, v := range e {
					if vb, _ := json.Marshal(v); !strings.Contains(string(b), string(vb)) {
						t.Errorf("%s.%s: the error's expected %s does not list %s", tl.Name, p, b, vb)
						break
					}
				}
			}
			if max, ok := ps["maximum"].(float64); ok && ps["type"] == "integer" && lp["maximum"] == nil {
				bounds++
				err := reg.Validate(tl.Name, json.RawMessage(fmt.Sprintf(`{%q:%d}`, p, int64(max)+1)))
				ce := contract.AsError(err)
				if ce == nil || ce.Code != contract.CodeInvalidArgument || ce.Field != "/"+p || !strings.Contains(ce.Message, fmt.Sprint(int64(max))) {
					t.Errorf("%s.%s: a value past the dropped maximum %d gave %+v", tl.Name, p, int64(max), ce)
				}
			}
		}
	}
	t.Logf("%d dropped enums, %d dropped maxima checked", enums, bounds)
	if enums == 0 || bounds < 10 {
		t.Fatalf("only %d dropped enums and %d dropped maxima found: the lean schema keeps them, or the walk is broken", enums, bounds)
	}
}
