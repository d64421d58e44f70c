package bin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestCursorAfterTruncation: a disassembly cursor resumed after its file
// was truncated so that the code can no longer be located (the section
// table is past the new end) is INPUT_CHANGED naming /path, not a partial
// answer with no rows that drops the cursor; the same truncated file
// without a cursor is still the unknown answer.
func TestCursorAfterTruncation(t *testing.T) {
	src, err := os.ReadFile("/usr/bin/ls")
	if err != nil {
		t.Skip("no /usr/bin/ls")
	}
	p := filepath.Join(t.TempDir(), "ls")
	if err := os.WriteFile(p, src, 0o755); err != nil {
		t.Fatal(err)
	}
	first := mustCall(t, registry(t, ""), "disassemble", map[string]any{"path": p, "section": ".text", "max_instructions": 100})
	cursor, _ := data(first)["next_cursor"].(string)
	if cursor == "" {
		t.Fatal("the first page has no next_cursor")
	}
	if err := os.Truncate(p, int64(len(src)/3)); err != nil {
		t.Fatal(err)
	}
	e := callErr(t, "disassemble", map[string]any{"path": p, "section": ".text", "max_instructions": 100, "cursor": cursor})
	if e.Code != contract.CodeInputChanged || e.Field != "/path" {
		t.Fatalf("resumed after truncation: %s %q (field %q), want INPUT_CHANGED at /path", e.Code, e.Message, e.Field)
	}
	wantUnknown(t, "no cursor", mustCall(t, registry(t, ""), "disassemble", map[string]any{"path": p, "section": ".text", "max_instructions": 100}))
}
