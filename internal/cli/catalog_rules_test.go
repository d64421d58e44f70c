package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/mcpserver"
	"github.com/inquest-dev/inquest/internal/tool"
)

// catalogTools is every tool of every toolset, as newRuntime registers
// them (the catalog tools/list publishes).
func catalogTools(t *testing.T) (*tool.Registry, []tool.Tool) {
	t.Helper()
	rt, err := newRuntime(context.Background(), runtimeOptions{NoHost: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt.Registry, rt.Registry.Tools()
}

// schemaProperties returns every property name the schema declares, at
// any depth.
func schemaProperties(s any, into map[string]bool) {
	switch n := s.(type) {
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok {
			for k, v := range props {
				into[k] = true
				schemaProperties(v, into)
			}
		}
		for k, v := range n {
			if k != "properties" {
				schemaProperties(v, into)
			}
		}
	case []any:
		for _, v := range n {
			schemaProperties(v, into)
		}
	}
}

// writesFiles are the argument names of a tool that creates files or
// directories at a path the caller names.
var writesFiles = []string{"destination", "output_directory", "output_path", "rescue_to"}

// TestCatalogAnnotations checks, for every tool, that its MCP hints say
// what it does, derived from what its arguments let a caller make it do:
//
//   - a tool that runs a program the caller names (an argv argument) is
//     not read-only, is destructive (the program may change or destroy
//     anything its user can) and open-world, and its description says it
//     runs the program as the user running inquest;
//   - a tool that writes at a path the caller names is not read-only;
//   - a read-only tool is not destructive.
func TestCatalogAnnotations(t *testing.T) {
	_, tools := catalogTools(t)
	runs := 0
	for _, tl := range tools {
		var s any
		if err := json.Unmarshal(tl.Input, &s); err != nil {
			t.Fatalf("%s: %v", tl.Name, err)
		}
		props := map[string]bool{}
		schemaProperties(s, props)
		a := tl.Annotations
		if props["argv"] {
			runs++
			if a.ReadOnly || !a.Destructive || !a.OpenWorld {
				t.Errorf("%s runs the argv it is given: want readOnly false, destructive true, openWorld true; got %+v", tl.Name, a)
			}
			if !strings.Contains(tl.Description, "as the user running inquest") {
				t.Errorf("%s runs the argv it is given; its description does not say it runs it as the user running inquest: %q", tl.Name, tl.Description)
			}
		}
		for _, w := range writesFiles {
			if props[w] && a.ReadOnly {
				t.Errorf("%s writes at %s the caller names but is annotated read-only", tl.Name, w)
			}
		}
		if a.ReadOnly && a.Destructive {
			t.Errorf("%s is annotated read-only and destructive", tl.Name)
		}
	}
	if runs < 6 {
		t.Errorf("only %d tools run a program; the six capture_and_* tools do", runs)
	}
}

// TestCatalogPortable checks every tool's published input schema (the
// lean one, tool.Lean) against the subset every client inquest registers
// with accepts (tool.PortableViolations: Gemini CLI's function-declaration
// schema, an OpenAPI 3.0 subset, and JSON Schema for the MCP Inspector
// and SDKs): no type arrays, no empty schemas, no const, oneOf,
// if/then/else, patternProperties or uniqueItems. Every violation fails;
// the full schemas the server validates against may use more.
func TestCatalogPortable(t *testing.T) {
	reg, tools := catalogTools(t)
	for _, tl := range tools {
		for _, v := range tool.PortableViolations(reg.LeanInputOf(tl.Name)) {
			t.Errorf("%s: %s", tl.Name, v)
		}
	}
}

// Catalog size ceilings, in bytes of compact JSON: the whole tools/list
// result (every definition with its output schema and annotations) is at
// most 160 KiB, and the part a model is given (name, title, description
// and input schema of every tool, what clients put into its context) at
// most 64 KiB. Input schemas are published lean (tool.Lean: no bounds,
// closedness, defaults or enums of more than tool.LeanEnumMax values,
// all enforced by the server from the full schema), which is what keeps
// the model-visible part within its ceiling.
const (
	maxToolsList    = 160 << 10
	maxModelVisible = 64 << 10
)

// maxOutputSchemas bounds the output schemas of all tools together (the
// envelope and each tool's data schema), in bytes of compact JSON.
const maxOutputSchemas = 95 << 10

// describesMembers reports whether a data schema names at least one
// member of data.
func describesMembers(schema json.RawMessage) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	return json.Unmarshal(schema, &s) == nil && len(s.Properties) > 0
}

// TestCatalogSize measures the catalog of all toolsets together as
// tools/list publishes it and prints the figures: the whole tools/list,
// the model-visible part, its input schemas (and how much of them is
// structure, without descriptions), and the largest tools.
func TestCatalogSize(t *testing.T) {
	reg, tools := catalogTools(t)
	type size struct {
		name              string
		visible, in, desc int
	}
	var defs []any
	var sizes []size
	visible, inputs, bare, output := 0, 0, 0, 0
	for _, tl := range tools {
		def := mcpserver.Definition(reg, tl)
		defs = append(defs, def)
		output += len(reg.OutputSchemaOf(tl.Name))
		b, err := json.Marshal(map[string]any{"name": def.Name, "title": def.Title, "description": def.Description, "inputSchema": def.InputSchema})
		if err != nil {
			t.Fatal(err)
		}
		in, _ := def.InputSchema.(json.RawMessage)
		visible += len(b)
		inputs += len(in)
		bare += len(withoutDescriptions(t, in))
		sizes = append(sizes, size{tl.Name, len(b), len(in), len(def.Description)})
	}
	whole, err := json.Marshal(map[string]any{"tools": defs})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tools: tools/list %d bytes (%.1f KiB, ceiling %d KiB); model-visible catalog %d bytes (%.1f KiB, ceiling %d KiB); published input schemas %d bytes, %d without descriptions",
		len(tools), len(whole), float64(len(whole))/1024, maxToolsList>>10, visible, float64(visible)/1024, maxModelVisible>>10, inputs, bare)
	sort.Slice(sizes, func(i, j int) bool { return sizes[i].visible > sizes[j].visible })
	for _, s := range sizes[:min(10, len(sizes))] {
		t.Logf("  %-34s %5d bytes: description %4d, input schema %5d", s.name, s.visible, s.desc, s.in)
	}
	t.Logf("output schemas %d bytes (%.1f KiB, ceiling %d KiB)", output, float64(output)/1024, maxOutputSchemas>>10)
	if output > maxOutputSchemas {
		t.Errorf("the output schemas are %d bytes, over %d", output, maxOutputSchemas)
	}
	if len(whole) > maxToolsList {
		t.Errorf("tools/list is %d bytes, over %d", len(whole), maxToolsList)
	}
	if visible > maxModelVisible {
		t.Errorf("the model-visible catalog is %d bytes, over %d", visible, maxModelVisible)
	}
}

// withoutDescriptions is the compact JSON of schema with every
// "description" member of a schema object removed (a property named
// description stays).
func withoutDescriptions(t *testing.T, schema json.RawMessage) []byte {
	t.Helper()
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		t.Fatal(err)
	}
	var strip func(n any, props bool)
	strip = func(n any, props bool) {
		switch v := n.(type) {
		case map[string]any:
			if !props {
				delete(v, "description")
			}
			for k, c := range v {
				strip(c, !props && k == "properties")
			}
		case []any:
			for _, c := range v {
				strip(c, false)
			}
		}
	}
	strip(doc, false)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCatalogWords checks the words of every published description
// (tool and argument) that mean two things or name what an agent cannot
// see: "profile" is qualified (a saved investigation profile, or pprof,
// perf or py-spy data), and nothing refers to "the TUI", which an agent
// never sees.
func TestCatalogWords(t *testing.T) {
	_, tools := catalogTools(t)
	qualified := regexp.MustCompile(`investigation profile|pprof|perf|py-spy`)
	for _, tl := range tools {
		if strings.Contains(strings.ToLower(tl.Description), "profile") && !qualified.MatchString(tl.Description) {
			t.Errorf("%s: description says profile without saying which (investigation profile, or pprof/perf/py-spy data): %q", tl.Name, tl.Description)
		}
		texts := []string{tl.Title, tl.Description}
		var s any
		_ = json.Unmarshal(tl.Input, &s)
		collectDescriptions(s, &texts)
		for _, x := range texts {
			if strings.Contains(x, "TUI") {
				t.Errorf("%s: published text refers to the TUI, which an agent cannot see: %q", tl.Name, x)
			}
		}
	}
}

// collectDescriptions appends every description string of a schema.
func collectDescriptions(s any, into *[]string) {
	switch n := s.(type) {
	case map[string]any:
		for k, v := range n {
			if d, ok := v.(string); ok && k == "description" {
				*into = append(*into, d)
			} else if k != "enum" && k != "default" {
				collectDescriptions(v, into)
			}
		}
	case []any:
		for _, v := range n {
			collectDescriptions(v, into)
		}
	}
}

// TestCatalogNextCallText checks every tool's description and details
// against what its results can carry: a sentence promising the next page
// through next_action or next_page belongs to a paged tool (tool.Paging),
// one promising "the next call" to a paged tool or a job tool (whose
// next_action continues the job or reads its rows), and a tool named
// beside next_action exists.
func TestCatalogNextCallText(t *testing.T) {
	reg, tools := catalogTools(t)
	sentence := regexp.MustCompile(`[^.;]*\bnext_(action|page)\b[^.;]*`)
	pages := regexp.MustCompile(`next page|the pages|the rest|resume with`)
	named := regexp.MustCompile(`\b([a-z]+_[a-z_]+) next_action\b`)
	for _, tl := range tools {
		for _, s := range sentence.FindAllString(tl.Description+" "+tl.Details, -1) {
			if pages.MatchString(s) && tl.Paging == nil {
				t.Errorf("%s is not paged but says: %q", tl.Name, s)
			}
			if strings.Contains(s, "next call") && tl.Paging == nil && !tl.Job {
				t.Errorf("%s neither pages nor runs a job but says: %q", tl.Name, s)
			}
			for _, m := range named.FindAllStringSubmatch(s, -1) {
				if _, ok := reg.Lookup(m[1]); !ok {
					t.Errorf("%s names %s beside next_action, which is not a tool: %q", tl.Name, m[1], s)
				}
			}
		}
	}
}

// TestCatalogPerKindFields checks every tool whose kind argument selects
// the row shape and whose projection names row fields: the schema
// publishes, per kind, the fields that kind has (an anyOf branch fixing
// kind), and the registry refuses a field of another kind at the
// projection item, listing the kind's own fields in expected.
func TestCatalogPerKindFields(t *testing.T) {
	reg, tools := catalogTools(t)
	checked := 0
	for _, tl := range tools {
		var s map[string]any
		if err := json.Unmarshal(tl.Input, &s); err != nil {
			t.Fatal(err)
		}
		props, _ := s["properties"].(map[string]any)
		kind, _ := props["kind"].(map[string]any)
		kinds, _ := kind["enum"].([]any)
		read, _ := props["read"].(map[string]any)
		rp, _ := read["properties"].(map[string]any)
		if len(kinds) == 0 || rp["projection"] == nil {
			continue
		}
		checked++
		perKind := map[string][]any{}
		branches, _ := s["anyOf"].([]any)
		for _, b := range branches {
			bp, _ := b.(map[string]any)["properties"].(map[string]any)
			k, _ := bp["kind"].(map[string]any)["enum"].([]any)
			br, _ := bp["read"].(map[string]any)
			brp, _ := br["properties"].(map[string]any)
			proj, _ := brp["projection"].(map[string]any)
			items, _ := proj["items"].(map[string]any)
			if len(k) == 1 {
				perKind[k[0].(string)], _ = items["enum"].([]any)
			}
		}
		union := map[string]bool{}
		for _, fs := range perKind {
			for _, f := range fs {
				union[f.(string)] = true
			}
		}
		for _, kv := range kinds {
			k := kv.(string)
			fields := perKind[k]
			if len(fields) == 0 {
				t.Errorf("%s: kind %s publishes no fields of its own", tl.Name, k)
				continue
			}
			own := map[string]bool{}
			for _, f := range fields {
				own[f.(string)] = true
			}
			args := func(f string) json.RawMessage {
				b, _ := json.Marshal(map[string]any{"kind": k, "process_ref": "p", "read": map[string]any{"projection": []string{f}}})
				return b
			}
			if err := reg.Validate(tl.Name, args(fields[0].(string))); err != nil {
				t.Errorf("%s: kind %s refuses its own field %v: %v", tl.Name, k, fields[0], err)
			}
			// A name no kind has is refused the same way: the per-kind
			// branches, not a union enum, are what validates projection.
			union["no_such_field"] = true
			for f := range union {
				if own[f] {
					continue
				}
				e := contract.AsError(reg.Validate(tl.Name, args(f)))
				if e == nil {
					t.Errorf("%s: kind %s accepts field %s of another kind", tl.Name, k, f)
					break
				}
				got, _ := json.Marshal(e.Expected)
				want, _ := json.Marshal(map[string]any{"enum": fields})
				if e.Code != contract.CodeInvalidArgument || e.Field != "/read/projection/0" || string(got) != string(want) {
					t.Errorf("%s: kind %s with field %s: %+v; want INVALID_ARGUMENT at /read/projection/0 listing %s", tl.Name, k, f, e, want)
				}
				break
			}
		}
	}
	if checked == 0 {
		t.Error("no tool has a kind that selects its projection fields (start_capture does)")
	}
}

// TestOutputSchemasAcceptRealResults validates real results of every
// tool (testdata/results/TOOL.jsonl: envelopes the tools returned in this
// repository's tests, kept by `go test ./internal/tool -run
// TestGenerateDataSchemas -gen DIR -samples DIR`) against the output
// schema the tool publishes: every tool has at least one, and every one
// validates. The result check in TestMain does the same for every result
// this package's tests receive.
func TestOutputSchemasAcceptRealResults(t *testing.T) {
	reg, tools := catalogTools(t)
	counts, problems := tool.CheckResultLog("testdata/results", reg.OutputSchemaOf)
	for _, p := range problems {
		t.Error(p)
	}
	for _, tl := range tools {
		if counts[tl.Name] == 0 {
			t.Errorf("%s: no real result in testdata/results/%s.jsonl", tl.Name, tl.Name)
		}
	}
}

// TestCatalogReadProjection checks the projection of the read option of
// the job tools and of read_capture against the rows each can deliver:
// get_process_info's job has process-info rows, so read names only their
// fields; get_job and read_capture read a capture of any kind, so they
// take any capture row field and refuse a name no kind has.
func TestCatalogReadProjection(t *testing.T) {
	reg, _ := catalogTools(t)
	cases := []struct {
		tool, args, field string // field "" means accepted
	}{
		{"get_process_info", `{"process_ref":"p","read":{"projection":["exe","pid"]}}`, ""},
		{"get_process_info", `{"process_ref":"p","read":{"projection":["protocol"]}}`, "/read/projection/0"},
		{"get_process_info", `{"process_ref":"p","read":{"projection":["no_such_field"]}}`, "/read/projection/0"},
		{"get_job", `{"job_id":"j","read":{"projection":["protocol","exe"]}}`, ""},
		{"get_job", `{"job_id":"j","read":{"projection":["no_such_field"]}}`, "/read/projection/0"},
		{"get_job", `{"job_id":"j","read":{"limit":0}}`, "/read/limit"},
		{"read_capture", `{"capture_id":"c","projection":["path"]}`, ""},
		{"read_capture", `{"capture_id":"c","projection":["no_such_field"]}`, "/projection/0"},
		{"start_capture", `{"kind":"network","read":{"projection":["protocol"],"path":" "}}`, "/read/path"},
	}
	for _, c := range cases {
		err := reg.Validate(c.tool, json.RawMessage(c.args))
		if c.field == "" {
			if err != nil {
				t.Errorf("%s %s: %v, want accepted", c.tool, c.args, err)
			}
			continue
		}
		e := contract.AsError(err)
		if e == nil || e.Code != contract.CodeInvalidArgument || e.Field != c.field {
			t.Errorf("%s %s: %v, want INVALID_ARGUMENT at %s", c.tool, c.args, err, c.field)
		}
	}
}

// TestMisplacedArgumentNamesItsHome checks, for every tool, that a
// member of one of its nested objects given at the top level (as
// start_capture's read.projection given as projection, or get_history's
// target.process_ref as process_ref) is refused with
// INVALID_ARGUMENT at that member and a message naming where it belongs
// ("projection belongs under read: {"read":{"projection":[...]}}"), so a
// caller corrects the call in one step.
func TestMisplacedArgumentNamesItsHome(t *testing.T) {
	reg, tools := catalogTools(t)
	checked := map[string]bool{}
	for _, tl := range tools {
		var s map[string]any
		if err := json.Unmarshal(tl.Input, &s); err != nil {
			t.Fatalf("%s: %v", tl.Name, err)
		}
		top, _ := s["properties"].(map[string]any)
		defs, _ := s["$defs"].(map[string]any)
		deref := func(n any) map[string]any {
			m, _ := n.(map[string]any)
			if ref, ok := m["$ref"].(string); ok {
				m, _ = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
			}
			return m
		}
		for _, parent := range keysOf(top) {
			// The member's own properties and those of its alternatives
			// (get_history's target: {process_ref} or {pid}).
			child := deref(top[parent])
			props := map[string]any{}
			for _, alt := range append([]any{child}, append(asSlice(child["anyOf"]), asSlice(child["oneOf"])...)...) {
				p, _ := deref(alt)["properties"].(map[string]any)
				for k, v := range p {
					props[k] = v
				}
			}
			for _, name := range keysOf(props) {
				if _, ok := top[name]; ok {
					continue
				}
				checked[tl.Name+" "+name] = true
				args, _ := json.Marshal(map[string]any{name: 1})
				e := contract.AsError(reg.Validate(tl.Name, args))
				want := name + " belongs "
				if e == nil || e.Code != contract.CodeInvalidArgument || e.Field != "/"+name || !strings.Contains(e.Message, want) || !strings.Contains(e.Message, parent) {
					t.Errorf("%s {%q: ...}: %+v; want INVALID_ARGUMENT at /%s saying %q and naming %s", tl.Name, name, e, name, want, parent)
				}
			}
		}
	}
	for _, want := range []string{"start_capture projection", "get_history process_ref"} {
		if !checked[want] {
			t.Errorf("%s was not checked: the walk misses a nested member", want)
		}
	}
}

// asSlice is v as a JSON array (nil when it is not one).
func asSlice(v any) []any { a, _ := v.([]any); return a }

// keysOf returns m's keys, sorted.
func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
