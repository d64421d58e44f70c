package cli

import (
	"context"
	"testing"

	"github.com/inquest-dev/inquest/internal/tool"
)

// TestCatalogPortable checks every tool's input schema against the
// subset every registered client accepts (tool.PortableViolations).
func TestCatalogPortable(t *testing.T) {
	rt, err := newRuntime(context.Background(), runtimeOptions{NoHost: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tl := range rt.Registry.Tools() {
		for _, v := range tool.PortableViolations(tl.Input) {
			t.Errorf("%s: %s", tl.Name, v)
		}
	}
}
