package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

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

// notYetPortable are constructs some tools' validation still needs and
// the portable subset cannot express without changing what the tool
// accepts (uniqueItems, exclusive bounds, patternProperties of env,
// dependentRequired, a boolean const, an integer enum). They are logged,
// not failed; every other violation fails.
var notYetPortable = regexp.MustCompile(`keyword "(uniqueItems|exclusiveMinimum|exclusiveMaximum|patternProperties|dependentRequired)"|/properties/system: (keyword "const"|no type)|interval_seconds: enum`)

// TestCatalogPortable checks every tool's published input schema against
// the subset every client inquest registers with accepts
// (tool.PortableViolations: Gemini CLI's function-declaration schema, an
// OpenAPI 3.0 subset, and JSON Schema for the MCP Inspector and SDKs): no
// type arrays, no empty schemas, no const, oneOf or if/then/else.
func TestCatalogPortable(t *testing.T) {
	_, tools := catalogTools(t)
	pending := 0
	for _, tl := range tools {
		for _, v := range tool.PortableViolations(tl.Input) {
			if notYetPortable.MatchString(v) {
				pending++
				t.Logf("not yet portable: %s: %s", tl.Name, v)
				continue
			}
			t.Errorf("%s: %s", tl.Name, v)
		}
	}
	t.Logf("%d constructs not yet portable", pending)
}
