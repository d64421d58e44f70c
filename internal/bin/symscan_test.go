package bin

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// symEntry is one symbol as the hardening check sees it: its name and
// section index.
type symEntry struct {
	name    string
	section elf.SectionIndex
}

// scanned returns what scanSymtab visits in f (read from data), with
// each name read by symName, and whether it handled the table. It fails
// t when hardeningTable.name disagrees with the name: a member of the
// hardening names once any @version is cut.
func scanned(t *testing.T, f *elf.File, data []byte) ([]symEntry, bool) {
	var got []symEntry
	ok := scanSymtab(f, data, func(strtab []byte, off uint64, section elf.SectionIndex) {
		name := string(symName(strtab, off))
		got = append(got, symEntry{name, section})
		want := name
		if i := strings.IndexByte(want, '@'); i > 0 {
			want = want[:i]
		}
		wantOK := hardening().names[want]
		if n, ok := hardening().name(strtab, off); ok != wantOK || (ok && n != want) {
			t.Errorf("hardening name of %q = %q, %v; want %q, %v", name, n, ok, want, wantOK)
		}
	})
	return got, ok
}

// viaDebugELF returns the same projection of debug/elf's File.Symbols.
func viaDebugELF(f *elf.File) ([]symEntry, error) {
	syms, err := f.Symbols()
	if err != nil {
		return nil, err
	}
	out := make([]symEntry, 0, len(syms))
	for _, s := range syms {
		out = append(out, symEntry{s.Name, s.Section})
	}
	return out, nil
}

// checkScan fails t when scanSymtab handled f's table but debug/elf
// reads it differently (or not at all). It returns whether the table was
// handled.
func checkScan(t *testing.T, what string, data []byte) bool {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return false
	}
	got, ok := scanned(t, f, data)
	want, werr := viaDebugELF(f)
	if !ok {
		if got != nil {
			t.Errorf("%s: scanSymtab declined but visited %d symbols", what, len(got))
		}
		return false
	}
	if werr != nil {
		t.Errorf("%s: scanSymtab read %d symbols where debug/elf fails: %v", what, len(got), werr)
		return true
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d symbols, debug/elf %d", what, len(got), len(want))
		return true
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: symbol %d is %+v, debug/elf %+v", what, i, got[i], want[i])
			return true
		}
	}
	return true
}

// synthSymtab describes a synthetic ELF relocatable file with a .symtab,
// its .strtab and .shstrtab, and the damage to give it.
type synthSymtab struct {
	class elf.Class
	order binary.ByteOrder
	// names are the symbols' st_name offsets into strtab; shndx their
	// st_shndx.
	names  []uint32
	shndx  []uint16
	strtab []byte
	// symSize, when not 0, replaces .symtab's sh_size; link, when not
	// 0, its sh_link; symFlags are added to its sh_flags.
	symSize  uint64
	link     uint32
	symFlags elf.SectionFlag
	// strType, when not 0, replaces .strtab's sh_type; strSize, when not
	// 0, its sh_size.
	strType elf.SectionType
	strSize uint64
}

// build writes the file: the ELF header, .shstrtab, .strtab, .symtab
// (a null entry, then one entry per name), then the section headers
// (null, .symtab, .strtab, .shstrtab).
func (s synthSymtab) build() []byte {
	is64 := s.class == elf.ELFCLASS64
	ehsize, shentsize, syment := 52, 40, 16
	if is64 {
		ehsize, shentsize, syment = 64, 64, 24
	}
	shstr := []byte("\x00.symtab\x00.strtab\x00.shstrtab\x00")
	shstrOff := uint64(ehsize)
	strOff := shstrOff + uint64(len(shstr))
	symOff := strOff + uint64(len(s.strtab))
	symSize := uint64((len(s.names) + 1) * syment)
	shOff := symOff + symSize
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, s.order, v) }
	ident := [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(s.class), 1, byte(elf.EV_CURRENT)}
	if s.order == binary.BigEndian {
		ident[elf.EI_DATA] = byte(elf.ELFDATA2MSB)
	}
	if is64 {
		w(elf.Header64{Ident: ident, Type: uint16(elf.ET_REL), Machine: uint16(elf.EM_X86_64), Version: 1, Shoff: shOff, Ehsize: uint16(ehsize), Shentsize: uint16(shentsize), Shnum: 4, Shstrndx: 3})
	} else {
		w(elf.Header32{Ident: ident, Type: uint16(elf.ET_REL), Machine: uint16(elf.EM_386), Version: 1, Shoff: uint32(shOff), Ehsize: uint16(ehsize), Shentsize: uint16(shentsize), Shnum: 4, Shstrndx: 3})
	}
	b.Write(shstr)
	b.Write(s.strtab)
	if is64 {
		w(elf.Sym64{})
		for i, n := range s.names {
			w(elf.Sym64{Name: n, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: s.shndx[i], Value: uint64(i)})
		}
	} else {
		w(elf.Sym32{})
		for i, n := range s.names {
			w(elf.Sym32{Name: n, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: s.shndx[i], Value: uint32(i)})
		}
	}
	link, ss, st, sz := uint32(2), symSize, elf.SHT_STRTAB, uint64(len(s.strtab))
	if s.link != 0 {
		link = s.link
	}
	if s.symSize != 0 {
		ss = s.symSize
	}
	if s.strType != 0 {
		st = s.strType
	}
	if s.strSize != 0 {
		sz = s.strSize
	}
	type sh struct {
		name  uint32
		typ   elf.SectionType
		flags elf.SectionFlag
		off   uint64
		size  uint64
		link  uint32
		ent   uint64
	}
	for _, h := range []sh{{}, {1, elf.SHT_SYMTAB, s.symFlags, symOff, ss, link, uint64(syment)}, {9, st, 0, strOff, sz, 0, 0}, {17, elf.SHT_STRTAB, 0, shstrOff, uint64(len(shstr)), 0, 0}} {
		if is64 {
			w(elf.Section64{Name: h.name, Type: uint32(h.typ), Flags: uint64(h.flags), Off: h.off, Size: h.size, Link: h.link, Addralign: 1, Entsize: h.ent})
		} else {
			w(elf.Section32{Name: h.name, Type: uint32(h.typ), Flags: uint32(h.flags), Off: uint32(h.off), Size: uint32(h.size), Link: h.link, Addralign: 1, Entsize: uint32(h.ent)})
		}
	}
	return b.Bytes()
}

// synthStrtab names: __stack_chk_fail (undefined), memcpy@GLIBC_2.14
// (undefined), main (section 1), an offset at a NUL (the empty name), one
// past the table's end, @read (an @ first: kept), __memcpy_chk_longer (a
// hardening name's prefix), and read@ in an unterminated tail (read as
// empty).
var (
	synthStrtab = []byte("\x00__stack_chk_fail\x00memcpy@GLIBC_2.14\x00main\x00@read\x00__memcpy_chk_longer\x00read@")
	synthNames  = []uint32{1, 18, 36, 40, 100, 41, 47, 67, 69}
	synthShndx  = []uint16{0, 0, 1, 1, 0xfff1, 0, 0, 0, 0}
)

// TestScanSymtabSynthetic: in both classes and byte orders scanSymtab
// reads what debug/elf's File.Symbols reads (names cut at the first NUL,
// empty when the offset is past the table or the name unterminated), and
// declines every table that is not plain file bytes, leaving it to
// debug/elf.
func TestScanSymtabSynthetic(t *testing.T) {
	for _, class := range []elf.Class{elf.ELFCLASS32, elf.ELFCLASS64} {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			base := synthSymtab{class: class, order: order, names: synthNames, shndx: synthShndx, strtab: synthStrtab}
			for _, c := range []struct {
				name    string
				mod     func(s *synthSymtab)
				handled bool
			}{
				{"plain", func(*synthSymtab) {}, true},
				{"no symbols but the null entry", func(s *synthSymtab) { s.names, s.shndx = nil, nil }, true},
				{"size not a multiple of the entry", func(s *synthSymtab) { s.symSize = 17 }, false},
				{"table past the end of the file", func(s *synthSymtab) { s.symSize = 1 << 20 }, false},
				{"sh_link out of range", func(s *synthSymtab) { s.link = 9 }, false},
				{"sh_link to itself", func(s *synthSymtab) { s.link = 1 }, true},
				{"compressed", func(s *synthSymtab) { s.symFlags = elf.SHF_COMPRESSED }, false},
				{"string table SHT_NOBITS", func(s *synthSymtab) { s.strType = elf.SHT_NOBITS }, false},
				{"string table past the end of the file", func(s *synthSymtab) { s.strSize = 1 << 20 }, false},
			} {
				s := base
				c.mod(&s)
				what := fmt.Sprintf("%v %v %s", class, order, c.name)
				data := s.build()
				if _, err := elf.NewFile(bytes.NewReader(data)); err != nil {
					if c.handled {
						t.Fatalf("%s: debug/elf does not admit the synthetic file: %v", what, err)
					}
					continue
				}
				if got := checkScan(t, what, data); got != c.handled {
					t.Errorf("%s: handled %v, want %v", what, got, c.handled)
				}
			}
			// The plain table's facts, spelled out.
			data := base.build()
			f, _ := elf.NewFile(bytes.NewReader(data))
			got, _ := scanned(t, f, data)
			want := []symEntry{{"__stack_chk_fail", 0}, {"memcpy@GLIBC_2.14", 0}, {"main", 1}, {"", 1}, {"", 0xfff1}, {"@read", 0}, {"__memcpy_chk_longer", 0}, {"", 0}, {"", 0}}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v %v: %v, want %v", class, order, got, want)
			}
		}
	}
}

// TestScanSymtabMatchesDebugELF: on every ELF of the corpus (Go builds
// for amd64, 386, arm64, PIE; gcc builds with and without hardening;
// a relocatable object), the Go compile tool and the system's shared C
// library, scanSymtab reads the static symbol table exactly as debug/elf
// does; at least one 32-bit and several 64-bit tables are compared.
func TestScanSymtabMatchesDebugELF(t *testing.T) {
	buildCorpus(t)
	var paths []string
	for _, p := range corpus {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	paths = append(paths, "testdata/reloc-amd64.o", filepath.Join(runtime.GOROOT(), "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH, "compile"))
	libc, _ := filepath.Glob("/usr/lib/*/libc.so.6")
	paths = append(paths, libc...)
	handled := map[elf.Class]int{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte("\x7fELF")) {
			continue
		}
		if checkScan(t, p, data) {
			handled[elf.Class(data[elf.EI_CLASS])]++
		}
	}
	if handled[elf.ELFCLASS32] < 1 || handled[elf.ELFCLASS64] < 4 {
		t.Errorf("symbol tables compared: %v, want at least one 32-bit and four 64-bit", handled)
	}
}

// FuzzScanSymtab: on any bytes debug/elf admits, scanSymtab either
// declines or reads the static symbol table exactly as File.Symbols does.
func FuzzScanSymtab(f *testing.F) {
	for _, class := range []elf.Class{elf.ELFCLASS32, elf.ELFCLASS64} {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			f.Add(synthSymtab{class: class, order: order, names: synthNames, shndx: synthShndx, strtab: synthStrtab}.build())
		}
	}
	if b, err := os.ReadFile("testdata/reloc-amd64.o"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkScan(t, "fuzz input", data)
	})
}
