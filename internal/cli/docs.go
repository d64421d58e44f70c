package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/inquest-dev/inquest/internal/tool"
)

// writeToolsMarkdown renders docs/tools.md from the registry: per toolset,
// each tool's description, its longer guidance (Details), annotations and arguments (from the input schema).
func writeToolsMarkdown(w io.Writer, reg *tool.Registry) {
	fmt.Fprintln(w, "# inquest tools")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Generated from the tool registry by `inquest mcp inspect --markdown`; do not edit by hand.")
	fmt.Fprintln(w, "Every tool returns the envelope described in README.md; failures carry `error.code`.")
	for _, set := range tool.Toolsets {
		tools := reg.Tools(set)
		if len(tools) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n## %s\n", set)
		for _, t := range tools {
			fmt.Fprintf(w, "\n### `%s`\n\n%s\n\n", t.Name, t.Description)
			if t.Details != "" {
				fmt.Fprintf(w, "%s\n\n", t.Details)
			}
			var hints []string
			if t.Annotations.ReadOnly {
				hints = append(hints, "read-only")
			}
			if t.Annotations.Destructive {
				hints = append(hints, "destructive")
			}
			if t.Annotations.Idempotent {
				hints = append(hints, "idempotent")
			}
			if t.Annotations.OpenWorld {
				hints = append(hints, "open-world")
			}
			if len(hints) > 0 {
				fmt.Fprintf(w, "Annotations: %s.\n\n", strings.Join(hints, ", "))
			}
			var s struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			_ = json.Unmarshal(t.Input, &s)
			if len(s.Properties) == 0 {
				fmt.Fprintln(w, "No arguments.")
				continue
			}
			fmt.Fprintln(w, "| argument | required | schema |")
			fmt.Fprintln(w, "|---|---|---|")
			names := make([]string, 0, len(s.Properties))
			for n := range s.Properties {
				names = append(names, n)
			}
			sort.Strings(names)
			req := map[string]bool{}
			for _, r := range s.Required {
				req[r] = true
			}
			for _, n := range names {
				fmt.Fprintf(w, "| `%s` | %v | %s |\n", n, req[n], summarizeSchema(s.Properties[n]))
			}
		}
	}
}

// summarizeSchema renders one property schema compactly for the table.
func summarizeSchema(raw json.RawMessage) string {
	// Numbers stay json.Number, so a bound prints as its schema spells it
	// (9223372036854775807, not the float 9.223372036854776e+18).
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return ""
	}
	var parts []string
	if t, ok := m["type"]; ok {
		parts = append(parts, fmt.Sprint(t))
	}
	if e, ok := m["enum"].([]any); ok {
		var vs []string
		for _, v := range e {
			vs = append(vs, fmt.Sprint(v))
		}
		parts = append(parts, "one of "+strings.Join(vs, ", "))
	}
	for _, k := range []string{"minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %v", k, v))
		}
	}
	if d, ok := m["description"].(string); ok {
		parts = append(parts, d)
	}
	return strings.ReplaceAll(strings.Join(parts, "; "), "|", "\\|")
}
