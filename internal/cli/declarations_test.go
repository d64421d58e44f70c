package cli

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/inquest-dev/inquest/internal/tool"
)

// TestEveryToolIsOneTypedDeclaration walks the whole catalog as `inquest
// mcp` publishes it (normal and raw delivery): every tool is declared with
// one arguments type whose fields are exactly the schema's properties
// (nested objects too), and every paged tool takes its toolset's paging
// arguments and publishes the one page shape.
func TestEveryToolIsOneTypedDeclaration(t *testing.T) {
	for _, raw := range []bool{false, true} {
		rt, err := newRuntime(context.Background(), runtimeOptions{NoHost: true, Raw: raw})
		if err != nil {
			t.Fatal(err)
		}
		tools := rt.Registry.Tools()
		if len(tools) < 50 {
			t.Fatalf("raw=%v: only %d tools in the catalog", raw, len(tools))
		}
		paged := 0
		for _, tl := range tools {
			if err := tool.CheckArgs(tl); err != nil {
				t.Errorf("raw=%v: %v", raw, err)
			}
			if tl.Paging == nil {
				continue
			}
			paged++
			var s struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(tl.Input, &s); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.Properties[tl.Paging.Token]; !ok {
				t.Errorf("%s: paged tool without its %q argument", tl.Name, tl.Paging.Token)
			}
			if tl.Paging != tool.CursorPaging && tl.Paging != tool.ContinuationPaging && !reflect.DeepEqual(*tl.Paging, tool.Paging{Token: "cursor", Limit: tl.Paging.Limit}) {
				t.Errorf("%s: paging %+v is neither toolset descriptor", tl.Name, *tl.Paging)
			}
		}
		if paged < 15 {
			t.Errorf("raw=%v: only %d paged tools", raw, paged)
		}
		rt.Close()
	}
}
