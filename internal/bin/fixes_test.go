package bin

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// TestSearchStringsRegexSeesWholeString: a regex matches text beyond the
// MaxStringText characters returned inline (ASCII and UTF-16LE), and a
// string longer than MaxRegexChars whose searched prefix does not match
// makes the result partial with coverage.regex_partly_searched.
func TestSearchStringsRegexSeesWholeString(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a", 2000) + "NEEDLE" + strings.Repeat("b", 280) // 2,286 chars
	var utf16 []byte
	for _, c := range []byte(strings.ReplaceAll(long, "NEEDLE", "UNEEDLE")) {
		utf16 = binary.LittleEndian.AppendUint16(utf16, uint16(c))
	}
	file := append([]byte("\x00\x00"+long+"\x00\x00\x01"), utf16...)
	p := filepath.Join(dir, "blob")
	if err := os.WriteFile(p, file, 0o600); err != nil {
		t.Fatal(err)
	}
	r := registry(t, "")
	m := mustCall(t, r, "search_strings", map[string]any{"path": p, "regex": "NEEDLE"})
	if got := len(rows(m)); got != 2 || m["status"] != "complete" {
		t.Fatalf("rows = %d status %v, want 2 complete (ASCII and UTF-16LE beyond char 1024): %v", got, m["status"], m["warnings"])
	}
	for _, x := range rows(m) {
		row := x.(map[string]any)
		if row["truncated"] != true || row["length"] == "" {
			t.Errorf("row %v: want truncated with exact length", row["offset"])
		}
	}

	huge := strings.Repeat("c", MaxRegexChars+10) + "NEEDLE"
	p2 := filepath.Join(dir, "huge")
	if err := os.WriteFile(p2, []byte("\x00"+huge+"\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	m = mustCall(t, r, "search_strings", map[string]any{"path": p2, "regex": "NEEDLE"})
	cov := m["coverage"].(map[string]any)
	if m["status"] != "partial" || len(m["warnings"].([]any)) == 0 || cov["regex_partly_searched"] != float64(1) {
		t.Fatalf("status %v warnings %v coverage %v: want partial, a warning and regex_partly_searched 1", m["status"], m["warnings"], cov)
	}
	m = mustCall(t, r, "search_strings", map[string]any{"path": p2, "regex": "^c+"})
	if m["status"] != "complete" || len(rows(m)) != 1 {
		t.Fatalf("a match inside the searched prefix: status %v rows %d", m["status"], len(rows(m)))
	}
}

// TestPagesWithMoreRowsAreComplete: every paged tool marks a page that
// has rows after it complete (paging is not missing evidence), with a
// note in warnings, page.more and next_action; the last page is complete
// with page.more false.
func TestPagesWithMoreRowsAreComplete(t *testing.T) {
	buildCorpus(t)
	dir := t.TempDir()
	har := filepath.Join(dir, "a.har")
	var entries []string
	for i := range 3 {
		entries = append(entries, fmt.Sprintf(`{"request":{"method":"GET","url":"https://x.test/%d"},"response":{"status":200,"content":{"size":1,"mimeType":"text/plain","text":"x"}},"time":1}`, i))
	}
	if err := os.WriteFile(har, []byte(`{"log":{"version":"1.2","creator":{"name":"t"},"entries":[`+strings.Join(entries, ",")+`]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := corpus["go-linux-amd64"]
	side := map[string]any{"path": har}
	r := registry(t, "")
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"list_symbols", map[string]any{"path": bin, "limit": 1}},
		{"search_strings", map[string]any{"path": bin, "limit": 1}},
		{"disassemble", map[string]any{"path": bin, "symbol": "main.main", "max_instructions": 1}},
		{"compare_binaries", map[string]any{"left": bin, "right": corpus["go-linux-amd64-changed"], "limit": 1}},
		{"inspect_http_capture", map[string]any{"path": har, "limit": 1}},
		{"compare_http_captures", map[string]any{"left": side, "right": side, "limit": 1}},
	} {
		m := mustCall(t, r, c.name, c.args)
		pg := data(m)["page"].(map[string]any)
		ws := fmt.Sprint(m["warnings"])
		if m["status"] != "complete" || pg["more"] != true || m["next_action"] == nil || !strings.Contains(ws, "follow next_action") {
			t.Errorf("%s first page: status %v page %v next_action %v warnings %s", c.name, m["status"], pg, m["next_action"], ws)
		}
	}
	m := mustCall(t, r, "inspect_http_capture", map[string]any{"path": har, "limit": 3})
	if m["status"] != "complete" || data(m)["page"].(map[string]any)["more"] != false {
		t.Errorf("last page: status %v page %v", m["status"], data(m)["page"])
	}
}

// TestPreservedCaptureArtifactName: a preserved inspect_http_capture
// names its input artifact "capture", not "binary".
func TestPreservedCaptureArtifactName(t *testing.T) {
	har := filepath.Join(t.TempDir(), "a.har")
	if err := os.WriteFile(har, []byte(`{"log":{"version":"1.2","creator":{"name":"t"},"entries":[]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := registry(t, t.TempDir())
	m := mustCall(t, r, "inspect_http_capture", map[string]any{"path": har})
	p := mustCall(t, r, "preserve_evidence", map[string]any{"analysis_id": data(m)["analysis_id"]})
	var names []string
	for _, a := range data(p)["manifest"].(map[string]any)["artifacts"].([]any) {
		names = append(names, a.(map[string]any)["name"].(string))
	}
	if !slices.Contains(names, "capture") || slices.Contains(names, "binary") {
		t.Errorf("artifact names %v, want capture (and result)", names)
	}
}

var objdumpInsn = regexp.MustCompile(`^\s*([0-9a-f]+):\t(.*)$`)

// objdumpText returns GNU objdump -d's instruction text by address for
// [start, stop) of p, without raw bytes.
func objdumpText(t *testing.T, p string, start, stop uint64) map[uint64]string {
	t.Helper()
	out := run(t, "objdump", "-d", "--no-show-raw-insn", fmt.Sprintf("--start-address=%#x", start), fmt.Sprintf("--stop-address=%#x", stop), p)
	m := map[uint64]string{}
	for _, l := range strings.Split(out, "\n") {
		if g := objdumpInsn.FindStringSubmatch(l); g != nil {
			a, _ := strconv.ParseUint(g[1], 16, 64)
			m[a] = g[2]
		}
	}
	return m
}

// normInsn makes objdump's and our GNU text comparable: branch targets
// lose objdump's "<symbol>" annotation and every "0x" prefix goes (objdump
// prints branch targets bare), whitespace collapses, and an explicit zero
// displacement before a base register ("0x0(%rax)") is dropped, the one
// difference gnuSyntax documents.
func normInsn(s string) string {
	s = strings.ReplaceAll(s, " 0x0(", " (")
	s = strings.ReplaceAll(s, ",0x0(", ",(")
	if i := strings.Index(s, " <"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "#"); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, "0x", "")
	return strings.Join(strings.Fields(s), " ")
}

// TestDisassembleGNUMatchesObjdump cross-checks every instruction of
// main.main of the 386 and amd64 builds against GNU objdump, rendered
// without symbolization (objdump prints absolute operands as numbers); the
// first 386 instruction is the TLS load "mov %gs:0x0,%ecx".
func TestDisassembleGNUMatchesObjdump(t *testing.T) {
	needTool(t, "objdump")
	buildCorpus(t)
	for _, name := range []string{"go-linux-386", "go-linux-amd64"} {
		t.Run(name, func(t *testing.T) {
			p := corpus[name]
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			in, err := inspect(context.Background(), data, false)
			if err != nil {
				t.Fatal(err)
			}
			ss := loadSymbols(in, data)
			cr, err := resolveSymbol(in, ss, "main.main")
			if err != nil {
				t.Fatal(err)
			}
			ref := objdumpText(t, p, cr.base, cr.base+uint64(len(cr.code)))
			none := func(uint64) (string, uint64) { return "", 0 }
			arch := archOf(in)
			mode := 64
			if arch == Arch386 {
				mode = 32
			}
			n := 0
			for off := 0; off < len(cr.code); {
				pc := cr.base + uint64(off)
				inst, err := x86asm.Decode(cr.code[off:], mode)
				if err != nil || inst.Len == 0 {
					t.Fatalf("undecodable at %#x", pc)
				}
				got := gnuSyntax(inst, pc, none)
				if want, ok := ref[pc]; !ok {
					t.Errorf("%#x: objdump has no instruction here", pc)
				} else if normInsn(got) != normInsn(want) {
					t.Errorf("%#x: ours %q, objdump %q", pc, got, want)
				}
				if off == 0 && arch == Arch386 && got != "mov %gs:0x0,%ecx" {
					t.Errorf("first 386 instruction %q, want mov %%gs:0x0,%%ecx", got)
				}
				n++
				off += inst.Len
			}
			if n < 10 {
				t.Fatalf("only %d instructions compared", n)
			}
		})
	}
}

var objdumpPLTCall = regexp.MustCompile(`^\s*([0-9a-f]+):\t(?:call|jmp)\s+([0-9a-f]+) <([^>]+@plt)>`)

// TestDisassemblePLTSymbolized: in the gcc-built binaries every call or
// jump objdump annotates as "<name@plt>" has that target_symbol in our
// disassembly of .text (PLT slots mapped through .rela.plt / .rela.dyn).
func TestDisassemblePLTSymbolized(t *testing.T) {
	needTool(t, "objdump")
	buildCorpus(t)
	for _, name := range []string{"c-hardened", "c-plain"} {
		t.Run(name, func(t *testing.T) {
			p, ok := corpus[name]
			if !ok {
				t.Skip(corpusSkip[name])
			}
			want := map[string]string{}
			for _, l := range strings.Split(run(t, "objdump", "-d", "--no-show-raw-insn", "-j", ".text", p), "\n") {
				if g := objdumpPLTCall.FindStringSubmatch(l); g != nil {
					a, _ := strconv.ParseUint(g[1], 16, 64)
					want[hexU(a)] = g[3]
				}
			}
			if len(want) < 2 {
				t.Fatalf("objdump shows only %d PLT calls in .text", len(want))
			}
			_, in := inspectPath(t, p)
			var text *Section
			for i := range in.Sections {
				if in.Sections[i].Name == ".text" {
					text = &in.Sections[i]
				}
			}
			if text == nil {
				t.Fatal("no .text")
			}
			r := registry(t, "")
			end, _ := parseHex(text.Address)
			args := map[string]any{"path": p, "start": text.Address, "end": hexU(end + uint64(len(text.data))), "max_instructions": 5000}
			got := map[string]string{}
			for _, x := range rows(mustCall(t, r, "disassemble", args)) {
				row := x.(map[string]any)
				if s, _ := row["target_symbol"].(string); strings.HasSuffix(s, "@plt") {
					got[row["address"].(string)] = s
				}
			}
			for a, w := range want {
				if got[a] != w {
					t.Errorf("%s: target_symbol %q, objdump <%s>", a, got[a], w)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d PLT targets symbolized, objdump %d", len(got), len(want))
			}
			for _, w := range want {
				m := mustCall(t, r, "disassemble", map[string]any{"path": p, "symbol": w})
				if len(rows(m)) == 0 || !strings.Contains(fmt.Sprint(rows(m)[0]), "jmp") {
					t.Errorf("disassemble symbol %s: %v", w, rows(m))
				}
				break
			}
		})
	}
}
