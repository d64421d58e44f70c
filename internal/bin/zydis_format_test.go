//go:build linux || darwin || freebsd

package bin

import (
	"bytes"
	"os"
	"testing"
)

// TestZydisFormatsOnDemand disassembles a page of plain instructions
// (x86asm spells them all) and one of AVX instructions (Zydis's text):
// with the row memo off, Zydis formats none of the plain ones, and each
// AVX one twice (its AT&T text, and its Intel text, whose mnemonic
// attMnemonicFromIntel compares), and the rows have objdump's text.
func TestZydisFormatsOnDemand(t *testing.T) {
	lib, err := loadZydis()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Zydis under CI: %v", err)
		}
		t.Skip("no Zydis (install libzydis4.0): " + err.Error())
	}
	dec := x86Decoder{lib: lib, Name: lib.version()}
	noTextMemo = true
	defer func() { noTextMemo = false }()
	for _, c := range []struct {
		name    string
		insn    []byte
		text    string
		formats int64 // per instruction
	}{
		{"plain", []byte{0x48, 0x89, 0xe5}, "mov %rsp,%rbp", 0},
		{"avx", []byte{0xc5, 0xfd, 0x6f, 0xc1}, "vmovdqa %ymm1,%ymm0", 2},
	} {
		code := bytes.Repeat(c.insn, 500)
		before := zydisFormats.Load()
		rows, _ := disassemble(dec, ArchAMD64, "gnu", code, 0x1000, 0, 1000, nil, nil)
		got := zydisFormats.Load() - before
		if len(rows) != 500 {
			t.Fatalf("%s: %d rows, want 500", c.name, len(rows))
		}
		for i, r := range rows {
			if r.Text != c.text || r.Error != "" {
				t.Fatalf("%s: row %d is %+v, want text %q", c.name, i, r, c.text)
			}
		}
		if want := c.formats * 500; got != want {
			t.Errorf("%s: Zydis formatted %d instructions for 500 rows, want %d", c.name, got, want)
		}
	}
}
