package bin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// TestDisassembleAllSameRows lists this test binary's .text (its first
// 12,000 instructions) with DisassembleAll at several page sizes and with
// the disassemble tool's pages (max_instructions 1000, next_cursor
// followed): the rows are the same, in the same order. A bad page size
// is INVALID_ARGUMENT naming max_instructions; a missing file is the
// tool's own error.
func TestDisassembleAllSameRows(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("disassembly covers x86-64 and arm64")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sect := ".text"
	if runtime.GOOS == "darwin" {
		sect = "__TEXT,__text"
	}
	const n = 12000
	r := registry(t, "")
	args := map[string]any{"path": exe, "section": sect, "max_instructions": 1000}
	paged := pagedRows(t, r, args, n)
	paged = paged[:min(n, len(paged))]
	delete(args, "cursor")
	raw, _ := json.Marshal(args)
	cont := evidence.NewContinuations([]byte("test-key"))
	env := Env{Continuations: func(context.Context) *evidence.Continuations { return cont }}
	enough := errors.New("enough rows")
	for _, page := range []int{1, 7, 1000, MaxAllPage} {
		var all []Instruction
		labels := 0
		err := env.DisassembleAll(context.Background(), raw, page, func(in *Instruction) error {
			r := *in
			if r.Label != "" {
				// The symbol header of --all's text, not a row's.
				labels++
				r.Label = ""
			}
			all = append(all, r)
			if len(all) == len(paged) {
				return enough
			}
			return nil
		}, func(string) {})
		if err != nil && err != enough {
			t.Fatalf("page %d: %v", page, err)
		}
		if len(all) != len(paged) {
			t.Fatalf("page %d: %d rows, the tool's pages %d", page, len(all), len(paged))
		}
		if labels == 0 {
			t.Errorf("page %d: the listing's first row has no label", page)
		}
		for i := range all {
			if !reflect.DeepEqual(all[i], paged[i]) {
				t.Fatalf("page %d: row %d is %+v, the tool's %+v", page, i, all[i], paged[i])
			}
		}
	}
	for _, tt := range []struct {
		name  string
		args  map[string]any
		page  int
		field string
	}{
		{"page 0", args, 0, "/max_instructions"},
		{"page past the cap", args, MaxAllPage + 1, "/max_instructions"},
		{"missing file", map[string]any{"path": exe + ".missing", "section": sect}, 10, "/path"},
	} {
		raw, _ := json.Marshal(tt.args)
		err := env.DisassembleAll(context.Background(), raw, tt.page, func(*Instruction) error { return nil }, func(string) {})
		var ce *contract.Error
		if !errors.As(err, &ce) || ce.Code != contract.CodeInvalidArgument || ce.Field != tt.field {
			t.Errorf("%s: %v, want INVALID_ARGUMENT at %s", tt.name, err, tt.field)
		}
	}
}
