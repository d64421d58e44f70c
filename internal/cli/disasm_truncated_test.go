package cli

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// truncatedInputs writes, from the fixture, the damaged ELF files a
// disassembly must fail on: cut in half (the section header table past
// the end) and with .text's sh_offset moved so its bytes run past the end.
func truncatedInputs(t *testing.T, fixture string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := map[string]string{}
	half := filepath.Join(dir, "half")
	if err := os.WriteFile(half, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	out["half"] = half
	f, err := elf.NewFile(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	shoff := binary.LittleEndian.Uint64(data[0x28:])
	for i, s := range f.Sections {
		if s.Name != ".text" {
			continue
		}
		moved := append([]byte(nil), data...)
		// Elf64_Shdr: sh_offset at byte 24 of the 64-byte entry.
		binary.LittleEndian.PutUint64(moved[shoff+uint64(i)*64+24:], uint64(len(data))-16)
		p := filepath.Join(dir, "text-past-end")
		if err := os.WriteFile(p, moved, 0o644); err != nil {
			t.Fatal(err)
		}
		out["text-past-end"] = p
	}
	if len(out) != 2 {
		t.Fatal("the fixture has no .text")
	}
	return out
}

// TestDisasmTruncatedFails: on a truncated ELF file objdump -d -j .text
// reports an error (exit 1, or "file truncated"), and `bin disasm --section .text` (a page and
// --all) with DECODE_FAILED naming --section and the unresolved structure
// (its offset), printing no instruction; --json prints the tool's
// partial envelope with the reason, as MCP returns it.
func TestDisasmTruncatedFails(t *testing.T) {
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skip("objdump is not installed; .ci/run installs binutils")
	}
	t.Setenv("INQUEST_DATA_DIR", t.TempDir())
	fixture := filepath.Join("..", "bin", "testdata", "hello-hardened.elf")
	inputs := truncatedInputs(t, fixture)
	for _, c := range []struct {
		input, want string
		args        []string
	}{
		{"half", "section header table at offset", nil},
		{"half", "section header table at offset", []string{"--all"}},
		{"text-past-end", "extends past the end of the file", nil},
		{"text-past-end", "extends past the end of the file", []string{"--all"}},
	} {
		t.Run(c.input+strings.Join(c.args, ""), func(t *testing.T) {
			p := inputs[c.input]
			// objdump exits 1 on the half file ("file format not
			// recognized") and prints "error: ... Reading section .text
			// failed because: file truncated" (exit 0) on the other.
			od, err := exec.Command("objdump", "-d", "-j", ".text", p).CombinedOutput()
			if err == nil && !strings.Contains(string(od), "file truncated") {
				t.Fatalf("objdump -d -j .text %s reports no error: the input is not the truncated one objdump rejects\n%s", c.input, od)
			}
			out, errs, code := runCLI(t, append([]string{"bin", "disasm", "--section", ".text", p}, c.args...)...)
			if code == 0 || out != "" || !strings.Contains(errs, "DECODE_FAILED") || !strings.Contains(errs, "--section") || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
			}
			out, _, code = runCLI(t, "bin", "disasm", "--json", "--section", ".text", p)
			if code != 0 || !strings.Contains(out, `"status": "partial"`) || !strings.Contains(out, `"upstream"`) {
				t.Fatalf("--json: exit %d: %s", code, out)
			}
		})
	}
}
