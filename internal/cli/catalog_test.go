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

// checkClosed requires additionalProperties:false on every object schema.
func checkClosed(t *testing.T, at string, s map[string]any) {
	t.Helper()
	if s["type"] == "object" && s["additionalProperties"] != false {
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
				if m, ok := v.(map[string]any); ok {
					checkClosed(t, at+"/"+kw, m)
				}
			}
		}
	}
}
