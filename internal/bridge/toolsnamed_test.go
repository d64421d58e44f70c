package bridge

import (
	"context"
	"reflect"
	"testing"

	"github.com/inquest-dev/inquest/internal/tool"
)

// TestToolsNamedMatchesTools: in raw and normal mode, with and without a
// result budget, each proc tool ToolsNamed binds alone is the tool Tools
// publishes (name, schema, annotations, paging, arguments type), with a
// handler.
func TestToolsNamedMatchesTools(t *testing.T) {
	get := func(context.Context) (Backend, error) { return nil, nil }
	for _, mode := range []Mode{{}, {Raw: true}, {ResultBudget: tool.HardResultBytes}} {
		full := Tools(get, mode)
		for _, want := range full {
			got := ToolsNamed(get, mode, want.Name)
			if len(got) != 1 {
				t.Fatalf("mode %+v: ToolsNamed(%q) gave %d tools", mode, want.Name, len(got))
			}
			g, w := got[0], want
			if g.Handler == nil {
				t.Fatalf("mode %+v: ToolsNamed(%q) has no handler", mode, want.Name)
			}
			g.Handler, w.Handler = nil, nil
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("mode %+v: ToolsNamed(%q) differs from Tools':\n%+v\n%+v", mode, want.Name, g, w)
			}
		}
	}
}
