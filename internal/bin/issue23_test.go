package bin

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// computeC is a C program with a function named compute, built with DWARF.
const computeC = `#include <stdio.h>
__attribute__((noinline)) int compute(int x) { return x * 3 + 1; }
int main(int argc, char **argv) { printf("%d\n", compute(argc)); return 0; }
`

// writeFile writes b to dir/name and returns the path.
func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// elfSection returns the header of the named section of the ELF at p and
// the file offset of its section header entry.
func elfSection(t testing.TB, p, name string) (*elf.Section, uint64) {
	t.Helper()
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := mustRead(t, p)
	shoff := binary.LittleEndian.Uint64(b[40:])
	for i, s := range f.Sections {
		if s.Name == name {
			return s, shoff + uint64(i)*64
		}
	}
	t.Fatalf("%s has no section %s", p, name)
	return nil, 0
}

func facetState(t testing.TB, in *Inspection, name string) FacetCoverage {
	t.Helper()
	f, ok := in.Facets[name]
	if !ok {
		t.Fatalf("facet %s missing: %v", name, in.Facets)
	}
	return f
}

// callErr calls a tool that must fail and returns the typed error.
func callErr(t testing.TB, name string, args any) *contract.Error {
	t.Helper()
	m, err := call(t, registry(t, ""), name, args)
	if err == nil {
		t.Fatalf("%s %v: want an error, got status %v warnings %v", name, args, m["status"], m["warnings"])
	}
	return contract.AsError(err)
}

// wantUnknown asserts m is a partial answer with no rows whose warning
// says the answer is unknown.
func wantUnknown(t testing.TB, what string, m map[string]any) {
	t.Helper()
	if m["status"] != "partial" || len(rows(m)) != 0 {
		t.Fatalf("%s: status %v rows %d, want partial with no rows", what, m["status"], len(rows(m)))
	}
	w, _ := m["warnings"].([]any)
	if len(w) == 0 || !strings.Contains(w[0].(string), "unknown, not absent") {
		t.Fatalf("%s: warnings %v, want the unknown reason", what, w)
	}
}

// TestCase1UnknownIsNeverAbsent: structure that would decide an answer and
// was not read leaves it unknown (partial), never complete, not_applicable
// or INVALID_ARGUMENT.
func TestCase1UnknownIsNeverAbsent(t *testing.T) {
	buildCorpus(t)
	dir := t.TempDir()
	c := gccBuild(t, dir, "compute", computeC, "-g", "-O1")
	whole := mustRead(t, c)

	t.Run("DWARF of a cut ELF is unresolved", func(t *testing.T) {
		in, err := Inspect(context.Background(), whole[:8000])
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"debug_info", "sections", "go_build_info"} {
			if st := facetState(t, in, n).State; st != FacetUnresolved {
				t.Errorf("first 8000 bytes: facet %s = %s, want unresolved", n, st)
			}
		}
		full, _ := Inspect(context.Background(), whole)
		if st := facetState(t, full, "debug_info").State; st != FacetComplete || !full.Debug.Present {
			t.Errorf("whole file: debug_info %s present %v, want complete and present", st, full.Debug.Present)
		}
	})

	t.Run("Go build info with zeroed magic is unresolved", func(t *testing.T) {
		b := bytes.Clone(mustRead(t, corpus["go-linux-amd64"]))
		i := bytes.Index(b, []byte("\xff Go buildinf:"))
		if i < 0 {
			t.Fatal("no build info magic in the Go build")
		}
		in, _ := Inspect(context.Background(), b)
		if st := facetState(t, in, "go_build_info").State; st != FacetComplete || in.GoBuildInfo == nil {
			t.Fatalf("intact Go binary: go_build_info %s", st)
		}
		clear(b[i : i+14])
		in, _ = Inspect(context.Background(), b)
		if f := facetState(t, in, "go_build_info"); f.State != FacetUnresolved || !strings.Contains(f.Reason, "go.build") {
			t.Errorf("zeroed magic: go_build_info %+v, want unresolved naming the Go marker", f)
		}
		cin, _ := Inspect(context.Background(), whole)
		if st := facetState(t, cin, "go_build_info").State; st != FacetComplete {
			t.Errorf("C binary: go_build_info %s, want complete (not a Go binary)", st)
		}
	})

	symtab, _ := elfSection(t, c, ".symtab")
	strtab, strHdr := elfSection(t, c, ".strtab")
	cut := writeFile(t, dir, "cut", whole[:symtab.Offset+16])
	// .strtab moved past the end of the file, section headers intact.
	moved := bytes.Clone(whole)
	binary.LittleEndian.PutUint64(moved[strHdr+24:], uint64(len(whole))+4096)
	movedPath := writeFile(t, dir, "strtab-moved", moved)
	_ = strtab

	t.Run("disassemble a symbol of unread symbol tables", func(t *testing.T) {
		r := registry(t, "")
		if m := mustCall(t, r, "disassemble", map[string]any{"path": c, "symbol": "compute"}); m["status"] != "complete" || len(rows(m)) == 0 {
			t.Fatalf("whole file: %v %v", m["status"], m["warnings"])
		}
		for _, p := range []string{cut, movedPath} {
			m, err := call(t, r, "disassemble", map[string]any{"path": p, "symbol": "compute"})
			if err != nil {
				t.Fatalf("%s: %v, want a partial unknown answer", filepath.Base(p), err)
			}
			wantUnknown(t, filepath.Base(p), m)
		}
		// A complete symbol table without the name is the caller's mistake.
		if e := callErr(t, "disassemble", map[string]any{"path": c, "symbol": "no_such_function"}); e.Code != contract.CodeInvalidArgument || e.Field != "/symbol" {
			t.Errorf("missing symbol in a complete table: %v %v", e.Code, e.Field)
		}
	})

	t.Run("strings and disassemble by section and address on a cut file", func(t *testing.T) {
		r := registry(t, "")
		m, err := call(t, r, "search_strings", map[string]any{"path": cut, "section": ".strtab"})
		if err != nil {
			t.Fatalf("strings --section .strtab on a cut file: %v", err)
		}
		wantUnknown(t, "strings .strtab", m)
		// The section table lies at the end of the file: on the cut file
		// no address can be placed in a section.
		text, _ := elfSection(t, c, ".text")
		m, err = call(t, r, "disassemble", map[string]any{"path": cut, "start": hexU(text.Addr)})
		if err != nil {
			t.Fatalf("start in .text of the cut file: %v", err)
		}
		wantUnknown(t, "disassemble on the cut file", m)
		// .text's size moved past the end of the file, headers intact.
		b := bytes.Clone(whole)
		_, textHdr := elfSection(t, c, ".text")
		binary.LittleEndian.PutUint64(b[textHdr+24:], uint64(len(whole))+64)
		m, err = call(t, r, "disassemble", map[string]any{"path": writeFile(t, dir, "text-moved", b), "start": hexU(text.Addr + 4)})
		if err != nil {
			t.Fatalf("start in a section past the end of the file: %v", err)
		}
		wantUnknown(t, "disassemble in a section past the end", m)
		if e := callErr(t, "disassemble", map[string]any{"path": c, "start": "0x10"}); e.Code != contract.CodeInvalidArgument {
			t.Errorf("an address outside every section of a complete table: %v", e.Code)
		}
	})

	t.Run("a section cut by the end of the file is searched in part", func(t *testing.T) {
		// The section table is at the end of the file, so a tail cut
		// loses it: patch .rodata's size past the end instead.
		ro, roHdr := elfSection(t, c, ".rodata")
		b := bytes.Clone(whole)
		binary.LittleEndian.PutUint64(b[roHdr+32:], uint64(len(whole))-ro.Offset+100)
		p := writeFile(t, dir, "long-rodata", b)
		m := mustCall(t, registry(t, ""), "search_strings", map[string]any{"path": p, "section": ".rodata"})
		if m["status"] != "partial" || len(rows(m)) == 0 {
			t.Fatalf("section past the end: status %v rows %d, want partial with the strings that were read", m["status"], len(rows(m)))
		}
	})

	t.Run("a disassemble end beyond the section is reported", func(t *testing.T) {
		text, _ := elfSection(t, c, ".text")
		m := mustCall(t, registry(t, ""), "disassemble", map[string]any{"path": c, "section": ".text", "start": hexU(text.Addr), "end": hexU(text.Addr + text.Size + 0x1000), "max_instructions": 5000})
		if m["status"] != "partial" || !strings.Contains(strings.Join(warnings(m), " "), "beyond section .text") {
			t.Fatalf("end beyond .text: status %v warnings %v", m["status"], m["warnings"])
		}
	})
}

func warnings(m map[string]any) []string {
	var out []string
	for _, w := range m["warnings"].([]any) {
		out = append(out, w.(string))
	}
	return out
}

// TestCase2DOSHeaderRecognizedSeparately: the MZ header is recognised at any
// length; what lies at e_lfanew decides PE, a DOS executable, or unknown.
func TestCase2DOSHeaderRecognizedSeparately(t *testing.T) {
	buildCorpus(t)
	exe := mustRead(t, corpus["go-windows-amd64.exe"])
	lfanew := binary.LittleEndian.Uint32(exe[0x3c:])
	dosExe := bytes.Clone(exe[:512])
	copy(dosExe[lfanew:], "\x00\x00\x00\x00")
	ne := bytes.Clone(exe[:512])
	copy(ne[lfanew:], "NE")
	farLfanew := bytes.Clone(exe[:128])
	cases := []struct {
		name       string
		data       []byte
		format     string
		newHeader  string
		header     string
		sections   string
		unresolved bool
	}{
		{"2-byte MZ", []byte("MZ"), FormatDOS, NewHeaderUnresolved, FacetPartial, FacetUnresolved, true},
		{"10-byte MZ", exe[:10], FormatDOS, NewHeaderUnresolved, FacetPartial, FacetUnresolved, true},
		{"DOS header, e_lfanew past the end", farLfanew, FormatDOS, NewHeaderUnresolved, FacetPartial, FacetUnresolved, true},
		{"no PE signature", dosExe, FormatDOS, NewHeaderAbsent, FacetComplete, FacetNotApplicable, false},
		{"NE signature", ne, FormatDOS, NewHeaderNE, FacetComplete, FacetNotApplicable, false},
		{"PE signature, COFF header cut", exe[:lfanew+10], FormatPE, NewHeaderPE, FacetPartial, FacetUnresolved, true},
		{"whole PE", exe, FormatPE, NewHeaderPE, FacetComplete, FacetComplete, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := Inspect(context.Background(), c.data)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if in.Header.Format != c.format || in.Header.DOS == nil || in.Header.DOS.NewHeader != c.newHeader {
				t.Fatalf("format %q dos %+v, want %q new_header %q", in.Header.Format, in.Header.DOS, c.format, c.newHeader)
			}
			if n := len(in.Header.DOS.Fields); n != min(len(c.data)/2, len(dosFields)) || in.Header.DOS.Fields[0].Name != "e_magic" {
				t.Errorf("%d DOS header fields, want every field that fits", n)
			}
			if got := facetState(t, in, "header").State; got != c.header {
				t.Errorf("header facet %s, want %s", got, c.header)
			}
			for _, n := range []string{"sections", "imports", "debug_info", "go_build_info"} {
				if got := facetState(t, in, n).State; got != c.sections {
					t.Errorf("facet %s = %s, want %s", n, got, c.sections)
				}
			}
			if (len(in.Unresolved) > 0) != c.unresolved {
				t.Errorf("unresolved %v, want some: %v", in.Unresolved, c.unresolved)
			}
		})
	}
	// file(1), run on the same bytes, tells a DOS, NE and PE executable
	// apart the same way.
	if _, err := exec.LookPath("file"); err == nil {
		dir := t.TempDir()
		for _, c := range []struct {
			data []byte
			want string
		}{{dosExe, "MS-DOS executable"}, {ne, "MS-DOS executable, NE"}, {exe, "PE32+ executable"}, {exe[:lfanew+10], "PE"}} {
			in, _ := Inspect(context.Background(), c.data)
			out, err := exec.Command("file", "-b", writeFile(t, dir, "f", c.data)).Output()
			if err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSpace(string(out))
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("file(1) says %q, want %q (we say format %s, new_header %s)", got, c.want, in.Header.Format, in.Header.DOS.NewHeader)
			}
			if ours := in.Header.DOS.NewHeader; (strings.Contains(got, "PE")) != (ours == NewHeaderPE) || strings.Contains(got, ", NE") != (ours == NewHeaderNE) {
				t.Errorf("file(1) %q and our new_header %s disagree", got, ours)
			}
		}
	}
	// A DOS executable has no sections: naming one is the caller's
	// mistake; a cut MZ header leaves it unknown.
	dir := t.TempDir()
	if e := callErr(t, "search_strings", map[string]any{"path": writeFile(t, dir, "dos", dosExe), "section": ".text"}); e.Code != contract.CodeInvalidArgument {
		t.Errorf("section of a DOS executable: %v", e.Code)
	}
	m := mustCall(t, registry(t, ""), "search_strings", map[string]any{"path": writeFile(t, dir, "mz10", exe[:10]), "section": ".text"})
	wantUnknown(t, "section of a cut MZ file", m)
	if _, err := Recognize([]byte("M")); contract.CodeOf(err) != contract.CodeUnsupportedFormat {
		t.Errorf("one byte: %v, want UNSUPPORTED_FORMAT", err)
	}
}

// TestCase9SelectionCompleteParentPartial: comparing a binary with a copy
// whose .symtab cannot be read (its sh_link names no string table), the
// section selection is complete although the symbol inventory is partial;
// a selection including symbols is partial.
func TestCase9SelectionCompleteParentPartial(t *testing.T) {
	dir := t.TempDir()
	c := gccBuild(t, dir, "compute", computeC, "-O1")
	b := bytes.Clone(mustRead(t, c))
	_, hdr := elfSection(t, c, ".symtab")
	binary.LittleEndian.PutUint32(b[hdr+40:], 0)
	bad := writeFile(t, dir, "symtab-unlinked", b)
	r := registry(t, "")
	m := mustCall(t, r, "compare_binaries", map[string]any{"left": c, "right": bad, "kinds": []string{"section"}})
	cov := m["coverage"].(map[string]any)
	up, _ := cov["upstream"].(map[string]any)
	if m["status"] != "complete" || cov["selection"] != "complete" || up["right.symbols"] != "partial" {
		t.Fatalf("sections: status %v coverage %v warnings %v; want a complete selection with the partial symbol inventory named", m["status"], cov, m["warnings"])
	}
	m = mustCall(t, r, "compare_binaries", map[string]any{"left": c, "right": bad, "kinds": []string{"symbol", "section"}})
	if cov := m["coverage"].(map[string]any); m["status"] != "partial" || cov["selection"] != "partial" {
		t.Fatalf("symbols: status %v coverage %v", m["status"], cov)
	}
}

// FuzzDOSHeader: any MZ file is recognised; it is "pe" exactly when the PE
// signature was read, and when what lies at e_lfanew is unresolved no
// facet claims complete or not_applicable.
func FuzzDOSHeader(f *testing.F) {
	f.Add([]byte("MZ"))
	stub := make([]byte, 0x48)
	copy(stub, "MZ")
	stub[0x3c] = 0x40
	f.Add(bytes.Clone(stub))
	copy(stub[0x40:], "PE\x00\x00")
	f.Add(bytes.Clone(stub))
	copy(stub[0x40:], "NE")
	f.Add(bytes.Clone(stub))
	f.Fuzz(func(t *testing.T, data []byte) {
		data = append([]byte("MZ"), data...)
		in, err := Inspect(context.Background(), data)
		if err != nil {
			t.Fatalf("an MZ file is not recognised: %v", err)
		}
		d := in.Header.DOS
		if d == nil || (in.Header.Format == FormatPE) != (d.NewHeader == NewHeaderPE) || in.Header.Format != FormatPE && in.Header.Format != FormatDOS {
			t.Fatalf("format %s dos %+v", in.Header.Format, d)
		}
		if d.NewHeader == NewHeaderUnresolved {
			for n, c := range in.Facets {
				if c.State == FacetComplete || c.State == FacetNotApplicable {
					t.Fatalf("facet %s is %s although e_lfanew's target is unresolved", n, c.State)
				}
			}
		}
	})
}

// TestCase6ChecksBeforeTheFile: arguments that can be judged without the
// file are judged first: end <= start is INVALID_ARGUMENT at /end even
// when the path does not exist.
func TestCase6ChecksBeforeTheFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	e := callErr(t, "disassemble", map[string]any{"path": missing, "start": "0x20", "end": "0x10"})
	if e.Code != contract.CodeInvalidArgument || e.Field != "/end" {
		t.Fatalf("end <= start on a missing file: %v %s %q, want INVALID_ARGUMENT at /end", e.Code, e.Field, e.Message)
	}
	e = callErr(t, "disassemble", map[string]any{"path": missing, "end": "0x10"})
	if e.Code != contract.CodeInvalidArgument || e.Field != "/end" || !strings.Contains(e.Message, "requires start") {
		t.Fatalf("end without start: %v %s %q", e.Code, e.Field, e.Message)
	}
	e = callErr(t, "disassemble", map[string]any{"path": missing})
	if !strings.Contains(e.Message, "symbol, start or section") {
		t.Fatalf("no selection: %q, want every alternative named", e.Message)
	}
}

// TestCase9DecodeFailureIdentifiesTheInput: a HAR that does not decode
// still names the file bytes it read: size and sha256 (sha256sum agrees),
// labelled as a digest of file bytes, with the format's own cause.
func TestCase9DecodeFailureIdentifiesTheInput(t *testing.T) {
	needTool(t, "sha256sum")
	dir := t.TempDir()
	p := writeFile(t, dir, "cut.har", []byte(`{"log":{"version":"1.2","entries":[{"request":`))
	out, err := exec.Command("sha256sum", p).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(out))[0]
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"inspect_http_capture", map[string]any{"path": p}},
		{"compare_http_captures", map[string]any{"left": map[string]any{"path": p}, "right": map[string]any{"path": p}}},
	} {
		e := callErr(t, c.tool, c.args)
		in, _ := e.Details["input"].(map[string]any)
		if e.Code != contract.CodeDecodeFailed || !strings.Contains(e.Message, "truncated") || in["sha256"] != want || in["size_bytes"] != "46" || in["digest_of"] != "file_bytes" {
			t.Errorf("%s: %v %q input %v; want DECODE_FAILED naming the truncation with sha256 %s of 46 file bytes", c.tool, e.Code, e.Message, in, want)
		}
	}
}
