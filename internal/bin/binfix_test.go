package bin

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// needReference skips when the reference tool is absent on a developer's
// machine; under CI=true (.ci/run installs it) its absence fails the test.
func needReference(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (Debian %s; .ci/run installs it)", name, pkg)
		}
		t.Skipf("%s is not installed; .ci/run installs Debian %s", name, pkg)
	}
}

// machoSym is one nlist_64 entry for writeMachO.
type machoSym struct {
	name  string
	typ   uint8
	sect  uint8
	desc  uint16
	value uint64
}

// writeMachO writes a little-endian x86_64 Mach-O file of the given
// filetype holding only an LC_SYMTAB with syms (mach-o/loader.h,
// mach-o/nlist.h layouts).
func writeMachO(t *testing.T, path string, filetype uint32, syms []machoSym) {
	t.Helper()
	le := binary.LittleEndian
	const hdr, symtab = 32, 24
	strtab := []byte{' ', 0} // index 0 is the empty name
	var nl []byte
	for _, s := range syms {
		e := make([]byte, 16)
		le.PutUint32(e[0:], uint32(len(strtab)))
		e[4], e[5] = s.typ, s.sect
		le.PutUint16(e[6:], s.desc)
		le.PutUint64(e[8:], s.value)
		nl = append(nl, e...)
		strtab = append(strtab, s.name...)
		strtab = append(strtab, 0)
	}
	for len(strtab)%8 != 0 {
		strtab = append(strtab, 0)
	}
	b := make([]byte, hdr+symtab)
	le.PutUint32(b[0:], 0xfeedfacf)  // MH_MAGIC_64
	le.PutUint32(b[4:], 0x01000007)  // CPU_TYPE_X86_64
	le.PutUint32(b[8:], 3)           // CPU_SUBTYPE_X86_64_ALL
	le.PutUint32(b[12:], filetype)   // filetype
	le.PutUint32(b[16:], 1)          // ncmds
	le.PutUint32(b[20:], symtab)     // sizeofcmds
	le.PutUint32(b[32:], 0x2)        // LC_SYMTAB
	le.PutUint32(b[36:], symtab)     // cmdsize
	le.PutUint32(b[40:], hdr+symtab) // symoff
	le.PutUint32(b[44:], uint32(len(syms)))
	le.PutUint32(b[48:], uint32(hdr+symtab+len(nl))) // stroff
	le.PutUint32(b[52:], uint32(len(strtab)))
	b = append(append(b, nl...), strtab...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMachOCommonSymbolsAndDSYMType (issue 36 case 8): a common symbol
// (N_UNDF|N_EXT, n_value its size) is listed COMMON and defined with its
// size, as llvm-nm's C in the same run, and is not an import; a plain
// undefined external still is (llvm-nm U). A dSYM companion's filetype
// MH_DSYM (10) is named, as llvm-objdump --private-headers names it DSYM.
func TestMachOCommonSymbolsAndDSYMType(t *testing.T) {
	needReference(t, "llvm-nm", "llvm")
	needReference(t, "llvm-objdump", "llvm")
	dir := t.TempDir()
	syms := []machoSym{
		{name: "_common_buf", typ: 0x01, desc: 3 << 8, value: 64}, // alignment 2^3
		{name: "_common_one", typ: 0x01, value: 1},
		{name: "_printf", typ: 0x01, desc: 1 << 8},
		{name: "_absval", typ: 0x03, value: 5}, // N_ABS|N_EXT
	}
	for _, c := range []struct {
		name     string
		filetype uint32
		want     string // Header.Type.Name
		llvm     string // llvm-objdump's filetype column
	}{
		{"object", 1, "Obj", "OBJECT"},
		{"dsym", 10, "Dsym", "DSYM"},
		{"kext", 11, "KextBundle", "KEXTBUNDLE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			writeMachO(t, p, c.filetype, syms)
			nm := map[string][2]string{} // name -> letter, value
			for _, l := range strings.Split(run(t, "llvm-nm", p), "\n") {
				f := strings.Fields(l)
				switch len(f) {
				case 3:
					nm[f[2]] = [2]string{f[1], f[0]}
				case 2:
					nm[f[1]] = [2]string{f[0], ""}
				}
			}
			if nm["_common_buf"][0] != "C" || nm["_printf"][0] != "U" || nm["_absval"][0] != "A" {
				t.Fatalf("llvm-nm letters %v; want _common_buf C, _printf U, _absval A", nm)
			}
			hdr := run(t, "llvm-objdump", "--macho", "--private-headers", p)
			if !regexp.MustCompile(`\b` + c.llvm + `\b`).MatchString(hdr) {
				t.Fatalf("llvm-objdump --private-headers does not name the filetype %s:\n%s", c.llvm, hdr)
			}
			_, in := inspectPath(t, p)
			if in.Header.Type == nil || in.Header.Type.Name != c.want {
				t.Errorf("filetype %+v; llvm-objdump %s", in.Header.Type, c.llvm)
			}
			var imports []string
			for _, imp := range in.Imports {
				imports = append(imports, imp.Name)
			}
			if strings.Join(imports, " ") != "_printf" {
				t.Errorf("imports %v; llvm-nm's only U symbol is _printf", imports)
			}
			rs, _, _ := follow(t, context.Background(), registry(t, t.TempDir()), "list_symbols", map[string]any{"path": p, "limit": 100})
			got := map[string]map[string]any{}
			for _, r := range rs {
				var m map[string]any
				json.Unmarshal([]byte(r), &m)
				got[m["name"].(string)] = m
			}
			for name, ref := range nm {
				g := got[name]
				if g == nil {
					t.Errorf("%s (llvm-nm %s) not listed", name, ref[0])
					continue
				}
				var want string
				switch ref[0] {
				case "C":
					want = "COMMON"
					if g["size"] != "64" && name == "_common_buf" || g["size"] != "1" && name == "_common_one" {
						t.Errorf("%s size %v; llvm-nm value %s (the common size)", name, g["size"], ref[1])
					}
				case "U":
					want = "UND"
				case "A":
					want = "ABS"
				}
				if g["section"] != want || g["defined"] != (ref[0] != "U") {
					t.Errorf("%s section %v defined %v; llvm-nm %s", name, g["section"], g["defined"], ref[0])
				}
				if ref[1] != "" && mustHex(t, g["address"].(string)) != hx("0x"+ref[1]) {
					t.Errorf("%s address %v; llvm-nm %s", name, g["address"], ref[1])
				}
			}
		})
	}
}
