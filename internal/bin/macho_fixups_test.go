package bin

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// chainedFixtures are the executables testdata/macho_chained/build.sh
// links with ld64.lld -fixup_chains (gzip-compressed there).
var chainedFixtures = []string{"plain-arm64", "plain-x86_64", "addend-arm64", "addend-x86_64", "addend64-arm64", "addend64-x86_64"}

// llvmImport is one "dyld chained import[i]" of llvm-objdump
// --chained-fixups.
type llvmImport struct {
	ordinal int
	lib     string
	weak    bool
	name    string
	addend  int64
}

var (
	reLLVMImport   = regexp.MustCompile(`(?m)^dyld chained import(?: addend| addend64)?\[\d+\]\n  lib_ordinal = (-?\d+) \(([^)]*)\)\n  weak_import = (\d)\n  name_offset = \d+ \((.*)\)(?:\n  addend      = (-?\d+))?$`)
	reLLVMFormat   = regexp.MustCompile(`(?m)^  imports_format = (\d+) `)
	reLLVMTrie     = regexp.MustCompile(`(?m)^0x([0-9A-Fa-f]+)  (\S+)`)
	reLLVMNMUndef  = regexp.MustCompile(`(?m)^\s+U (\S+)$`)
	reLLVMReexport = regexp.MustCompile(`(?m)^\[re-export\] (\S+)`)
)

// unpackFixture writes testdata/macho_chained/name.gz decompressed into
// dir and returns its path and bytes.
func unpackFixture(t *testing.T, dir, name string) (string, []byte) {
	t.Helper()
	gz, err := os.ReadFile(filepath.Join("testdata", "macho_chained", name+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// machoLoadCommand returns the file offset of the first load command cmd
// of a little-endian 64-bit Mach-O file, or -1.
func machoLoadCommand(b []byte, cmd uint32) int {
	le := binary.LittleEndian
	off := 32
	for i := uint32(0); i < le.Uint32(b[16:]) && off+8 <= len(b); i++ {
		if le.Uint32(b[off:]) == cmd {
			return off
		}
		off += int(le.Uint32(b[off+4:]))
	}
	return -1
}

// emptySymtab returns a copy of b whose LC_SYMTAB and LC_DYSYMTAB count
// no symbols (nsyms, every index and count 0): what a table recorded only
// in the dyld link-edit data looks like.
func emptySymtab(t *testing.T, b []byte) []byte {
	t.Helper()
	c := append([]byte(nil), b...)
	s, d := machoLoadCommand(c, 0x2), machoLoadCommand(c, 0xb)
	if s < 0 || d < 0 {
		t.Fatal("no LC_SYMTAB or LC_DYSYMTAB")
	}
	binary.LittleEndian.PutUint32(c[s+12:], 0) // nsyms
	clear(c[d+8 : d+80])                       // ilocalsym ... nlocrel
	return c
}

// TestMachOChainedFixups (issue 36 case 2): imports recorded in
// LC_DYLD_CHAINED_FIXUPS (formats DYLD_CHAINED_IMPORT, _ADDEND and
// _ADDEND64, arm64 and x86_64 builds of ld64.lld -fixup_chains) and
// exports in LC_DYLD_EXPORTS_TRIE are read as llvm-objdump --macho
// --chained-fixups and --exports-trie print them in the same run: the same
// names, library ordinals (and libraries), weak imports and export
// addresses, complete, also in a copy whose symbol table counts zero
// symbols; with the symbol table the imports are llvm-nm's undefined
// symbols and the chained ones. An imports format this reader does not
// know, or names outside the blob, make imports partial with the reason.
func TestMachOChainedFixups(t *testing.T) {
	needReference(t, "llvm-objdump-16", "llvm-16")
	needReference(t, "llvm-nm-16", "llvm-16")
	dir := t.TempDir()
	formats := map[string]bool{}
	for _, name := range chainedFixtures {
		t.Run(name, func(t *testing.T) {
			p, b := unpackFixture(t, dir, name)
			cf := run(t, "llvm-objdump-16", "--macho", "--chained-fixups", p)
			var want []llvmImport
			for _, m := range reLLVMImport.FindAllStringSubmatch(cf, -1) {
				o, _ := strconv.Atoi(m[1])
				a, _ := strconv.ParseInt(m[5], 10, 64)
				want = append(want, llvmImport{ordinal: o, lib: m[2], weak: m[3] == "1", name: m[4], addend: a})
			}
			// The addends are not part of the listing: compare the
			// parser's own table, entry by entry.
			lc := machoLoadCommand(b, lcDyldChainedFixups)
			if lc < 0 {
				t.Fatal("no LC_DYLD_CHAINED_FIXUPS")
			}
			off, size := binary.LittleEndian.Uint32(b[lc+8:]), binary.LittleEndian.Uint32(b[lc+12:])
			parsed := parseChainedFixups(b[off:off+size], binary.LittleEndian)
			if parsed.partial != "" || len(parsed.imports) != len(want) {
				t.Fatalf("parsed %+v; llvm-objdump %+v", parsed, want)
			}
			for i, w := range want {
				if g := parsed.imports[i]; g.name != w.name || g.ordinal != w.ordinal || g.weak != w.weak || g.addend != w.addend {
					t.Errorf("import %d: %+v; llvm-objdump %+v", i, g, w)
				}
			}
			if fm := reLLVMFormat.FindStringSubmatch(cf); fm != nil {
				formats[fm[1]] = true
			}
			if len(want) == 0 {
				t.Fatalf("llvm-objdump --chained-fixups lists no imports:\n%s", cf)
			}
			trie := map[string]string{}
			tr := run(t, "llvm-objdump-16", "--macho", "--exports-trie", p)
			for _, m := range reLLVMTrie.FindAllStringSubmatch(tr, -1) {
				v, _ := strconv.ParseUint(m[1], 16, 64)
				trie[m[2]] = hexU(v)
			}
			if len(trie) == 0 || reLLVMReexport.MatchString(tr) {
				t.Fatalf("llvm-objdump --exports-trie: %s", tr)
			}
			undef := map[string]bool{}
			for _, m := range reLLVMNMUndef.FindAllStringSubmatch(run(t, "llvm-nm-16", p), -1) {
				undef[m[1]] = true
			}
			stripped := filepath.Join(dir, name+"-nosyms")
			if err := os.WriteFile(stripped, emptySymtab(t, b), 0o644); err != nil {
				t.Fatal(err)
			}
			if out := run(t, "llvm-nm-16", stripped); strings.TrimSpace(out) != "" && !strings.Contains(out, "no symbols") {
				t.Fatalf("llvm-nm lists symbols in the emptied copy: %s", out)
			}
			for _, c := range []struct {
				path   string
				symtab bool
			}{{p, true}, {stripped, false}} {
				_, in := inspectPath(t, c.path)
				for _, f := range []string{"imports", "exports"} {
					if st := in.Facets[f]; st.State != FacetComplete {
						t.Errorf("symtab %v: %s %+v; want complete", c.symtab, f, st)
					}
				}
				got := map[string]Import{}
				for _, imp := range in.Imports {
					got[imp.Name] = imp
				}
				names := map[string]bool{}
				for _, w := range want {
					names[w.name] = true
					g, ok := got[w.name]
					switch {
					case !ok:
						t.Errorf("symtab %v: import %s (llvm-objdump: ordinal %d) missing", c.symtab, w.name, w.ordinal)
					case g.Ordinal != strconv.Itoa(w.ordinal) || !strings.HasPrefix(path.Base(g.Library), w.lib+"."):
						t.Errorf("symtab %v: import %s ordinal %q library %q; llvm-objdump ordinal %d (%s)", c.symtab, w.name, g.Ordinal, g.Library, w.ordinal, w.lib)
					case !c.symtab && strings.Contains(g.Source, "weak_import") != w.weak:
						t.Errorf("import %s source %q; llvm-objdump weak_import %v", w.name, g.Source, w.weak)
					}
				}
				if c.symtab {
					for n := range undef {
						names[n] = true
					}
				}
				if len(got) != len(names) || len(in.Imports) != len(got) {
					t.Errorf("symtab %v: %d imports (%d names) %v; want %d: chained %v, llvm-nm U %v", c.symtab, len(in.Imports), len(got), in.Imports, len(names), want, undef)
				}
				exp := map[string]string{}
				for _, e := range in.Exports {
					exp[e.Name] = e.Address
				}
				for n, a := range trie {
					if exp[n] != a {
						t.Errorf("symtab %v: export %s at %q; llvm-objdump --exports-trie %s", c.symtab, n, exp[n], a)
					}
				}
				if !c.symtab && len(exp) != len(trie) {
					t.Errorf("exports %v; llvm-objdump --exports-trie %v", exp, trie)
				}
			}
		})
	}
	for _, f := range []string{"1", "2", "3"} {
		if !formats[f] && !t.Failed() {
			t.Errorf("imports_format %s not exercised: %v", f, formats)
		}
	}
	t.Run("unknown format and names out of range", func(t *testing.T) {
		_, b := unpackFixture(t, dir, "plain-arm64")
		lc := machoLoadCommand(b, lcDyldChainedFixups)
		if lc < 0 {
			t.Fatal("no LC_DYLD_CHAINED_FIXUPS")
		}
		le := binary.LittleEndian
		hdr, size := int(le.Uint32(b[lc+8:])), le.Uint32(b[lc+12:])
		for _, c := range []struct {
			name   string
			field  int
			value  uint32
			reason string
		}{
			{"imports_format 4", 20, 4, "imports_format 4 is not"},
			{"symbols_format 1", 24, 1, "symbols_format 1"},
			{"symbols_offset past the blob", 12, size, "is not a NUL-terminated string"},
			{"imports_count past the blob", 16, size, "extends past the chained fixups blob"},
		} {
			t.Run(c.name, func(t *testing.T) {
				m := emptySymtab(t, b)
				le.PutUint32(m[hdr+c.field:], c.value)
				p := filepath.Join(dir, "patched")
				if err := os.WriteFile(p, m, 0o644); err != nil {
					t.Fatal(err)
				}
				_, in := inspectPath(t, p)
				if st := in.Facets["imports"]; st.State != FacetPartial || !strings.Contains(st.Reason, c.reason) {
					t.Fatalf("imports %+v; want partial, reason with %q", st, c.reason)
				}
				if in.Complete() {
					t.Fatal("inspection complete")
				}
			})
		}
	})
}

// FuzzMachODyldTables: the chained-fixups and exports-trie parsers never
// panic, never return more imports than the blob can hold, and never
// return an export name longer than the bound; seeded with the fixtures'
// own blobs.
func FuzzMachODyldTables(f *testing.F) {
	for _, name := range chainedFixtures {
		gz, err := os.ReadFile(filepath.Join("testdata", "macho_chained", name+".gz"))
		if err != nil {
			f.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			f.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			f.Fatal(err)
		}
		for _, cmd := range []uint32{lcDyldChainedFixups, lcDyldExportsTrie} {
			if lc := machoLoadCommand(b, cmd); lc >= 0 {
				off, size := binary.LittleEndian.Uint32(b[lc+8:]), binary.LittleEndian.Uint32(b[lc+12:])
				f.Add(b[off : off+size])
			}
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 0x01, 'a', 0, 0})
	f.Fuzz(func(t *testing.T, blob []byte) {
		for _, o := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			cf := parseChainedFixups(blob, o)
			if len(cf.imports) > len(blob)/4 {
				t.Fatalf("%d imports from %d bytes", len(cf.imports), len(blob))
			}
		}
		ex, _ := parseExportsTrie(blob)
		for _, e := range ex {
			if len(e.name) > maxTrieName {
				t.Fatalf("export name of %d bytes", len(e.name))
			}
		}
	})
}
