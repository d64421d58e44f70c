package host

import (
	"reflect"
	"slices"
	"testing"
)

// declShape is a declaration without its functions (which reflect cannot
// compare), with whether each is set.
func declShape(d Decl) (Decl, [3]bool) {
	set := [3]bool{d.Run != nil, d.PIDLeave != nil, d.Handler != nil}
	d.Run, d.PIDLeave, d.Handler = nil, nil, nil
	return d, set
}

// TestToolsNamed: in every delivery mode, ToolsNamed of each proc tool's
// name builds that one declaration equal to ToolsFor's entry (schema,
// description, delivery, pid placement and which functions are set); all
// names together give ToolsFor's whole list in its order; names that are
// no proc tool are skipped; toolTable's names are ToolsFor's.
func TestToolsNamed(t *testing.T) {
	for _, d := range []Delivery{{}, {Raw: true}} {
		full := ToolsFor(d)
		if len(full) != len(toolTable) {
			t.Fatalf("raw %v: ToolsFor has %d tools, toolTable %d", d.Raw, len(full), len(toolTable))
		}
		var names []string
		for i, want := range full {
			if toolTable[i].name != want.Name {
				t.Fatalf("raw %v: toolTable[%d] is named %q, its declaration %q", d.Raw, i, toolTable[i].name, want.Name)
			}
			names = append(names, want.Name)
			got := ToolsNamed(d, "no_such_tool", want.Name)
			if len(got) != 1 {
				t.Fatalf("raw %v: ToolsNamed(%q) gave %d tools", d.Raw, want.Name, len(got))
			}
			g, gs := declShape(got[0])
			w, ws := declShape(want)
			if !reflect.DeepEqual(g, w) || gs != ws {
				t.Fatalf("raw %v: ToolsNamed(%q) differs from ToolsFor's entry:\n%+v %v\n%+v %v", d.Raw, want.Name, g, gs, w, ws)
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
			t.Fatalf("raw %v: a proc tool name is listed twice: %v", d.Raw, names)
		}
		reversed := slices.Clone(names)
		slices.Reverse(reversed)
		all := ToolsNamed(d, reversed...)
		if len(all) != len(full) {
			t.Fatalf("raw %v: ToolsNamed of every name gave %d tools, ToolsFor %d", d.Raw, len(all), len(full))
		}
		for i := range all {
			if all[i].Name != full[i].Name {
				t.Fatalf("raw %v: ToolsNamed's tool %d is %s, ToolsFor's %s", d.Raw, i, all[i].Name, full[i].Name)
			}
		}
		if got := ToolsNamed(d); len(got) != 0 {
			t.Fatalf("raw %v: ToolsNamed of no name gave %d tools", d.Raw, len(got))
		}
	}
}
