package bin

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// TestDisassembleMemoSameRows pages through the first 20,000 instructions
// of this test binary's .text with the row memo off, then cold, then warm
// (the memo the cold listing left), in AT&T and Intel syntax interleaved
// (a memo belongs to one syntax): every listing's rows are the same.
func TestDisassembleMemoSameRows(t *testing.T) {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("the memo serves the external x86 decoder; this test reads an x86-64 ELF")
	}
	if d := x86DecoderFor(); d.lib == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no external x86 decoder under CI: %s", d.Missing)
		}
		t.Skip("no external x86 decoder (install libzydis4.0): " + d.Missing)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := registry(t, "")
	list := func(syntax string) []Instruction {
		t.Helper()
		return pagedRows(t, r, map[string]any{"path": exe, "section": ".text", "max_instructions": 5000, "syntax": syntax}, 20000)
	}
	for _, syntax := range []string{"gnu", "intel"} {
		noTextMemo = true
		plain := list(syntax)
		noTextMemo = false
		putTextMemo(nil)
		cold := list(syntax)
		other := list(map[string]string{"gnu": "intel", "intel": "gnu"}[syntax])
		warm := list(syntax)
		if len(plain) < 10000 || len(other) != len(plain) {
			t.Fatalf("%s: %d rows without the memo, %d in the other syntax", syntax, len(plain), len(other))
		}
		for name, rows := range map[string][]Instruction{"cold": cold, "warm": warm} {
			if len(rows) != len(plain) {
				t.Fatalf("%s %s: %d rows, %d without the memo", syntax, name, len(rows), len(plain))
			}
			for i := range rows {
				if !reflect.DeepEqual(rows[i], plain[i]) {
					t.Fatalf("%s %s: row %d is %+v, without the memo %+v", syntax, name, i, rows[i], plain[i])
				}
			}
		}
	}
}

// disasmPage calls disassemble with args once: the page's rows, its
// next_cursor ("" on the last page), warnings and delivered size in bytes.
func disasmPage(t *testing.T, r *tool.Registry, args map[string]any) (rows []Instruction, next string, warnings []string, size int) {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, err := r.Call(context.Background(), "disassemble", raw)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := contract.Marshal(res, nil)
	var env struct {
		Warnings []string `json:"warnings"`
		Data     struct {
			Rows       []Instruction `json:"rows"`
			NextCursor *string       `json:"next_cursor"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	if env.Data.NextCursor != nil {
		next = *env.Data.NextCursor
	}
	return env.Data.Rows, next, env.Warnings, tool.DeliveredBytes(body)
}

// pagedRows calls disassemble with args and each next_cursor until the
// last page or until at least n rows, returning the rows in order.
func pagedRows(t *testing.T, r *tool.Registry, args map[string]any, n int) []Instruction {
	t.Helper()
	var all []Instruction
	for len(all) < n {
		rows, next, _, _ := disasmPage(t, r, args)
		all = append(all, rows...)
		if next == "" {
			break
		}
		args["cursor"] = next
	}
	return all
}
