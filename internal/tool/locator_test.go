package tool

import (
	"context"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestLocatorAgreesOnCatalog checks, over every published (lean) input
// schema (the tool snapshots of internal/cli), closed at the top level, that the locator finds a failing
// keyword exactly when the JSON Schema library rejects the arguments, and
// that each rejection projects to a field and constraint that are JSON
// Pointers. Arguments are generated from each schema (seeded, so the run
// is reproducible): mostly-valid objects with one or more values replaced
// by wrong types, out-of-range numbers, bad lengths, unknown names,
// repeated items or missing required properties.
func TestLocatorAgreesOnCatalog(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "cli", "testdata", "toolsnaps", "*.json"))
	if len(files) == 0 {
		t.Skip("no tool snapshots found")
	}
	h := func(context.Context, json.RawMessage) (*contract.Result, error) { return nil, nil }
	rng := rand.New(rand.NewSource(1))
	checked, rejected := 0, 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var snap struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(b, &snap); err != nil {
			t.Fatal(err)
		}
		// The snapshots hold the lean schemas tools/list publishes
		// (Lean), which leave the top level open; the registry takes
		// only closed top levels.
		var top map[string]any
		if err := json.Unmarshal(snap.InputSchema, &top); err != nil {
			t.Fatal(err)
		}
		top["additionalProperties"] = false
		snap.InputSchema, _ = json.Marshal(top)
		r := NewRegistry()
		if err := r.Add(Tool{Name: snap.Name, Input: snap.InputSchema, Handler: h}); err != nil {
			t.Fatalf("%s: %v", snap.Name, err)
		}
		e := r.byName[snap.Name]
		if err := e.compiled(); err != nil {
			t.Fatalf("%s: %v", snap.Name, err)
		}
		e.explainer()
		var doc any
		json.Unmarshal(snap.InputSchema, &doc)
		for i := 0; i < 300; i++ {
			g := gen{rng: rng, root: doc, bad: 0.08}
			inst := g.value(doc, 0)
			args, _ := json.Marshal(inst)
			var back any
			json.Unmarshal(args, &back)
			err := e.validate(args)
			l := locator{root: e.doc, patterns: e.patterns}
			located := len(l.check(e.doc, "", back, nil)) > 0
			if located != (err != nil) {
				t.Fatalf("%s %s: library rejected=%v (%v), locator found a failure=%v", snap.Name, args, err != nil, err, located)
			}
			checked++
			if err != nil {
				rejected++
				ce, ok := err.(*contract.Error)
				if !ok || ce.Code != contract.CodeInvalidArgument || !strings.HasPrefix(ce.Constraint, "/") {
					t.Fatalf("%s %s: projection %#v", snap.Name, args, err)
				}
			}
		}
	}
	if rejected == 0 || rejected == checked {
		t.Fatalf("generated arguments were all accepted or all rejected (%d of %d rejected)", rejected, checked)
	}
	t.Logf("%d argument objects over %d schemas, %d rejected", checked, len(files), rejected)
}

// gen makes an instance of a schema, breaking it with probability bad at
// each value.
type gen struct {
	rng  *rand.Rand
	root any
	bad  float64
}

func (g *gen) value(schema any, depth int) any {
	s, _ := schema.(map[string]any)
	if s == nil || depth > 6 {
		return nil
	}
	if ref, ok := s["$ref"].(string); ok && strings.HasPrefix(ref, "#") {
		return g.value(resolve(g.root, ref[1:]), depth+1)
	}
	if g.rng.Float64() < g.bad {
		return g.wrong(s)
	}
	for _, kw := range []string{"oneOf", "anyOf"} {
		if br, ok := s[kw].([]any); ok && len(br) > 0 {
			return g.value(br[g.rng.Intn(len(br))], depth+1)
		}
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[g.rng.Intn(len(e))]
	}
	t, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		t, _ = ts[g.rng.Intn(len(ts))].(string)
	}
	switch t {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req := map[string]bool{}
		if rs, ok := s["required"].([]any); ok {
			for _, r := range rs {
				if n, ok := r.(string); ok {
					req[n] = true
				}
			}
		}
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if req[n] || g.rng.Float64() < 0.3 {
				out[n] = g.value(props[n], depth+1)
			}
		}
		if g.rng.Float64() < g.bad {
			out["no_such_argument"] = 1
		}
		return out
	case "array":
		n := 1
		if m, ok := s["minItems"].(float64); ok && int(m) > n {
			n = int(m)
		}
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			out = append(out, g.value(s["items"], depth+1))
		}
		if g.rng.Float64() < g.bad && len(out) > 0 {
			out = append(out, out[0])
		}
		return out
	case "string":
		n := 1
		if m, ok := s["minLength"].(float64); ok && int(m) > n {
			n = int(m)
		}
		if _, ok := s["pattern"]; ok && g.rng.Float64() < 0.5 {
			return "a"
		}
		return strings.Repeat("a", n)
	case "integer", "number":
		v := 1.0
		if m, ok := s["minimum"].(float64); ok {
			v = m
		}
		if m, ok := s["maximum"].(float64); ok && v > m {
			v = m
		}
		return v
	case "boolean":
		return g.rng.Intn(2) == 0
	}
	return nil
}

// wrong returns a value s probably rejects.
func (g *gen) wrong(s map[string]any) any {
	switch g.rng.Intn(6) {
	case 0:
		return "wrong"
	case 1:
		return -1e12
	case 2:
		return 1e12
	case 3:
		return []any{1, 1}
	case 4:
		return map[string]any{}
	default:
		return strings.Repeat("z", 5000)
	}
}
