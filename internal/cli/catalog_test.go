package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/mcpserver"
)

var update = flag.Bool("update", false, "rewrite tool snapshots and docs/tools.md")

// TestCatalog checks every tool in one place: a description naming its
// required arguments, a strict input schema (every object closed), an
// output schema, explicit annotations; then compares each published
// definition with testdata/toolsnaps/<tool>.json (a missing snapshot
// fails) and docs/tools.md with the generated catalog.
func TestCatalog(t *testing.T) {
	rt, err := newRuntime(context.Background(), runtimeOptions{NoHost: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// Schemas compile on first use at run time; every one must compile.
	if err := rt.Registry.Check(); err != nil {
		t.Fatal(err)
	}
	reg := rt.Registry
	nameRE := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for _, tl := range reg.Tools() {
		t.Run(tl.Name, func(t *testing.T) {
			if !nameRE.MatchString(tl.Name) {
				t.Errorf("name %q is not snake_case", tl.Name)
			}
			var s map[string]any
			if err := json.Unmarshal(tl.Input, &s); err != nil {
				t.Fatal(err)
			}
			if req, ok := s["required"].([]any); ok {
				for _, r := range req {
					if !strings.Contains(tl.Description, r.(string)) {
						t.Errorf("description does not name required argument %q", r)
					}
				}
			}
			checkClosed(t, "", s)
			if len(reg.OutputSchemaOf(tl.Name)) == 0 {
				t.Error("no output schema")
			}
			// The published output schema says what this tool's data
			// holds (its members and row fields with their types), not
			// only the common envelope.
			if d := reg.DataSchemaOf(tl.Name); !describesMembers(d) {
				t.Errorf("publishes no data schema with members (%s): add its entry to internal/tool/dataschemas.json", d)
			}
			// Longer guidance goes to Details (mcp inspect --tool).
			if len(tl.Description) > maxDescription {
				t.Errorf("description is %d bytes, more than %d: move examples and detail to Details", len(tl.Description), maxDescription)
			}
			def := mcpserver.Definition(reg, tl)
			got, _ := json.MarshalIndent(def, "", "  ")
			path := filepath.Join("testdata", "toolsnaps", tl.Name+".json")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("missing tool snapshot %s; run go test ./internal/cli -run TestCatalog -update", path)
			}
			if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(got)) {
				t.Errorf("tool definition changed; review and run with -update")
			}
		})
	}
	var md bytes.Buffer
	writeToolsMarkdown(&md, reg)
	docPath := filepath.Join("..", "..", "docs", "tools.md")
	if *update {
		os.MkdirAll(filepath.Dir(docPath), 0o755)
		if err := os.WriteFile(docPath, md.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want, err := os.ReadFile(docPath); err != nil || !bytes.Equal(want, md.Bytes()) {
		t.Errorf("docs/tools.md is stale; run go test ./internal/cli -run TestCatalog -update")
	}
}

// maxDescription bounds a published tool description: about two
// sentences saying what the tool is for and naming its required
// arguments (the longest, start_capture and wait_condition, list what
// each kind or condition takes, which the schema does not say).
const maxDescription = 400

// TestMCPInspectToolShowsDetails checks that `inquest mcp inspect --tool
// NAME` prints the definition tools/list publishes (without Details)
// followed by the tool's longer guidance, for every tool that has some,
// so nothing cut from tools/list is lost to a user.
func TestMCPInspectToolShowsDetails(t *testing.T) {
	rt, err := newRuntime(context.Background(), runtimeOptions{NoHost: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	n := 0
	for _, tl := range rt.Registry.Tools() {
		if tl.Details == "" {
			continue
		}
		n++
		out, errs, code := runCLI(t, "mcp", "inspect", "--tool", tl.Name)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tl.Name, code, errs)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		var def map[string]any
		if err := dec.Decode(&def); err != nil {
			t.Fatalf("%s: the definition is not JSON: %v\n%s", tl.Name, err, out)
		}
		if def["name"] != tl.Name || def["description"] != tl.Description || def["inputSchema"] == nil || def["outputSchema"] == nil {
			t.Errorf("%s: definition is not the published one: %v", tl.Name, def)
		}
		if strings.Contains(out[:dec.InputOffset()], tl.Details) {
			t.Errorf("%s: the published definition carries the details", tl.Name)
		}
		if rest := strings.TrimSpace(out[dec.InputOffset():]); rest != tl.Details {
			t.Errorf("%s: after the definition got %q, want the details %q", tl.Name, rest, tl.Details)
		}
	}
	if n < 10 {
		t.Errorf("only %d tools have details", n)
	}
}

// constraintBranch reports whether branch, one of s's anyOf, only
// narrows members s itself declares ({"type":"object","required":[...]},
// or properties all named in s's properties, as start_capture's per-kind
// projections): it declares no object of its own.
func constraintBranch(s, branch map[string]any) bool {
	if branch["type"] != "object" || branch["additionalProperties"] != nil {
		return false
	}
	own, _ := s["properties"].(map[string]any)
	props, _ := branch["properties"].(map[string]any)
	for k := range props {
		if _, ok := own[k]; !ok {
			return false
		}
	}
	return true
}

// closedBranches reports whether s is an object that must match one of
// its anyOf branches, each a closed object (a discriminated choice: the
// branches close it).
func closedBranches(s map[string]any) bool {
	list, ok := s["anyOf"].([]any)
	if !ok || len(list) == 0 {
		return false
	}
	for _, b := range list {
		m, _ := b.(map[string]any)
		if m["type"] != "object" || m["additionalProperties"] != false {
			return false
		}
	}
	return true
}

// checkClosed requires additionalProperties:false on every object schema
// (or on every branch of its anyOf).
func checkClosed(t *testing.T, at string, s map[string]any) {
	t.Helper()
	if s["type"] == "object" && s["additionalProperties"] != false && !closedBranches(s) {
		t.Errorf("object at %q is not closed (additionalProperties:false)", at)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for k, v := range props {
			if m, ok := v.(map[string]any); ok {
				checkClosed(t, at+"/properties/"+k, m)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		checkClosed(t, at+"/items", items)
	}
	for _, kw := range []string{"oneOf", "anyOf", "allOf"} {
		if list, ok := s[kw].([]any); ok {
			for _, v := range list {
				// A branch that only requires members of the enclosing
				// object ({"type":"object","required":[...]}) declares no
				// object of its own.
				if m, ok := v.(map[string]any); ok && !constraintBranch(s, m) {
					checkClosed(t, at+"/"+kw, m)
				}
			}
		}
	}
}
