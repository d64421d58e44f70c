package bin

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestNoSuchSectionNextAction: a section the file does not have is
// INVALID_ARGUMENT at /section whose next_action is the inspect_binary
// call listing the same file's sections, and that call succeeds with
// section rows.
func TestNoSuchSectionNextAction(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := registry(t, "")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"disassemble", map[string]any{"path": exe, "section": ".nosuch"}},
		{"search_strings", map[string]any{"path": exe, "section": ".nosuch"}},
	} {
		_, err := call(t, r, c.tool, c.args)
		var ce *contract.Error
		if !errors.As(err, &ce) || ce.Code != contract.CodeInvalidArgument || ce.Field != "/section" {
			t.Fatalf("%s: %v, want INVALID_ARGUMENT at /section", c.tool, err)
		}
		na := ce.NextAction
		if na == nil || na.Tool != "inspect_binary" || na.Arguments["path"] != exe {
			t.Fatalf("%s: next_action %+v, want inspect_binary of %s", c.tool, na, exe)
		}
		// The suggested call is followed as given (through JSON, as a
		// client sends it back).
		raw, _ := json.Marshal(na.Arguments)
		var args map[string]any
		json.Unmarshal(raw, &args)
		m := mustCall(t, r, na.Tool, args)
		sections := 0
		for _, row := range rows(m) {
			if row.(map[string]any)["facet"] == "sections" {
				sections++
			}
		}
		if sections == 0 || sections != len(rows(m)) {
			t.Errorf("%s: the next_action lists %d section rows of %d", c.tool, sections, len(rows(m)))
		}
	}
}
