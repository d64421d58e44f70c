package bin

import (
	"os"
	"runtime"
	"testing"

	"github.com/inquest-dev/inquest/internal/tool"
)

// An explicit max_instructions is the page size: a page of 2,000 rows
// (far above what the default 64 KiB budget holds) is returned whole,
// without the budget warning, and its next page starts at the address
// after its last row; without it the page keeps to the default budget.
func TestDisassemblePageHonoursMaxInstructions(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("disassembly covers x86-64 and arm64")
	}
	exe, err := os.Executable() // this test binary: a large .text
	if err != nil {
		t.Fatal(err)
	}
	r := registry(t, "")
	page := func(args map[string]any) ([]Instruction, string, []string, int) { return disasmPage(t, r, args) }
	sect := ".text"
	if runtime.GOOS == "darwin" {
		sect = "__TEXT,__text"
	}
	for _, tt := range []struct {
		name string
		max  int
	}{{"explicit 10", 10}, {"explicit 2000", 2000}, {"explicit 5000", 5000}, {"default", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"path": exe, "section": sect}
			if tt.max > 0 {
				args["max_instructions"] = tt.max
			}
			rows, next, warns, size := page(args)
			if next == "" {
				t.Fatal("the section fits one page; the test needs a larger one")
			}
			for _, w := range warns {
				if w == tool.BudgetWarning && tt.max > 0 {
					t.Fatalf("max_instructions %d: the page ended at the byte budget (%d rows)", tt.max, len(rows))
				}
			}
			if tt.max > 0 && len(rows) != tt.max {
				t.Fatalf("max_instructions %d: %d rows", tt.max, len(rows))
			}
			if tt.max == 0 && (len(rows) > 200 || size > tool.DefaultResultBytes) {
				t.Fatalf("default page: %d rows, %d delivered bytes", len(rows), size)
			}
			last := rows[len(rows)-1]
			args["cursor"] = next
			more, _, _, _ := page(args)
			lastAddr, _ := parseHex(last.Address)
			firstAddr, _ := parseHex(more[0].Address)
			if firstAddr != lastAddr+uint64(len(last.Bytes)/2) {
				t.Fatalf("page 2 starts at %s, page 1 ended at %s (+%d bytes)", more[0].Address, last.Address, len(last.Bytes)/2)
			}
		})
	}
}
