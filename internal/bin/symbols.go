package bin

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"sort"
)

// Symbol tables named in Symbol.Table.
const (
	TableSymtab = ".symtab"
	TableDynsym = ".dynsym"
	TableCOFF   = "COFF symbol table"
	TableMachO  = "LC_SYMTAB"
)

// Symbol is one symbol table entry. Size is st_size for ELF; COFF and
// Mach-O symbols carry no size, so Size there is derived as the distance to
// the next symbol in the same section (SizeSource says which).
type Symbol struct {
	Name       string `json:"name"`
	Table      string `json:"table"`
	Address    string `json:"address"`
	Size       string `json:"size,omitempty"`
	SizeSource string `json:"size_source,omitempty"`
	Type       string `json:"type,omitempty"`
	Binding    string `json:"binding,omitempty"`
	Section    string `json:"section"`
	Defined    bool   `json:"defined"`
	Library    string `json:"library,omitempty"`
	// Version is the ELF symbol version (GNU .gnu.version indexing
	// .gnu.version_d for a definition, .gnu.version_r for a reference or
	// a copy-relocated definition),
	// as readelf --dyn-syms prints after @ or @@; empty when the symbol
	// has none (index 0 or 1, or no .gnu.version section).
	Version string `json:"version,omitempty"`
	// DefaultVersion is set with Version: true when the version is the
	// default one a link binds to (readelf's name@@version: a definition
	// whose .gnu.version entry lacks the hidden bit 0x8000 and names a
	// version of .gnu.version_d), false for a non-default definition
	// (name@version), for every reference, and for a definition whose
	// version is a needed one of .gnu.version_r (a copy-relocated
	// variable: readelf's stderr@GLIBC_2.2.5).
	DefaultVersion *bool `json:"default_version,omitempty"`

	value   uint64
	size    uint64
	sect    int // index into the inspection's Sections, -1 when none
	isFunc  bool
	derived bool
	// verBase: a dynamic symbol whose .gnu.version index is 1
	// (VER_NDX_GLOBAL), which objdump prints as name@@Base (name@Base
	// when undefined) and readelf bare.
	verBase bool
}

// symbolSet is every symbol of a binary with the coverage of its tables.
type symbolSet struct {
	syms []Symbol
	// tables lists the tables read; unresolved the ones that failed.
	tables     []string
	unresolved []Unresolved
}

// loadSymbols reads every symbol table of data (already inspected as in).
func loadSymbols(in *Inspection, data []byte) *symbolSet {
	ss := &symbolSet{}
	switch in.Header.Format {
	case FormatELF:
		elfSymbols(ss, in, data)
	case FormatPE:
		peSymbols(ss, in, data)
	case FormatMachO:
		machoSymbols(ss, in, data)
	}
	return ss
}

func (ss *symbolSet) fail(in *Inspection, table string, off, size uint64, reason string) {
	tmp := &Inspection{}
	tmp.unresolved(table, off, size, reason)
	ss.unresolved = append(ss.unresolved, tmp.Unresolved...)
}

func elfSymbols(ss *symbolSet, in *Inspection, data []byte) {
	var f *elf.File
	var err error
	if !guard(in, "section header table", 0, func() { f, err = newELFFile(in, data) }) || err != nil {
		ss.fail(in, "section header table", 0, 0, "the section header table was not admitted; symbol tables are unknown")
		return
	}
	secIndex := map[string]int{}
	for i, s := range in.Sections {
		secIndex[s.Name] = i
	}
	for _, t := range []struct {
		typ  elf.SectionType
		name string
		read func() ([]elf.Symbol, error)
	}{{elf.SHT_SYMTAB, TableSymtab, f.Symbols}, {elf.SHT_DYNSYM, TableDynsym, f.DynamicSymbols}} {
		sec := f.SectionByType(t.typ)
		if sec == nil {
			continue
		}
		var syms []elf.Symbol
		var err error
		if !guard(in, t.name, sec.Offset, func() { syms, err = t.read() }) || err != nil {
			ss.fail(in, t.name, sec.Offset, sec.Size, "the symbol table or its string table could not be read")
			continue
		}
		ss.tables = append(ss.tables, t.name)
		for _, s := range syms {
			y := Symbol{Name: s.Name, Table: t.name, Address: hexU(s.Value), Size: decU(s.Size), SizeSource: "st_size", Type: elfTypeName(elf.ST_TYPE(s.Info)), Binding: elfBindName(elf.ST_BIND(s.Info)), Library: s.Library, value: s.Value, size: s.Size, sect: -1, isFunc: elf.ST_TYPE(s.Info) == elf.STT_FUNC || elf.ST_TYPE(s.Info) == sttGNUIFunc}
			y.Version, y.DefaultVersion = elfVersion(s)
			y.verBase = t.name == TableDynsym && s.HasVersion && s.VersionIndex.Index() == 1
			switch {
			case s.Section == elf.SHN_UNDEF:
				y.Section = "UND"
			case s.Section == elf.SHN_ABS:
				y.Section, y.Defined = "ABS", true
			case s.Section == elf.SHN_COMMON:
				y.Section, y.Defined = "COMMON", true
			case int(s.Section) < len(f.Sections):
				y.Section, y.Defined = f.Sections[s.Section].Name, true
				y.sect = int(s.Section)
			default:
				y.Section, y.Defined = hexU(uint64(s.Section)), true
			}
			ss.syms = append(ss.syms, y)
		}
	}
}

func peSymbols(ss *symbolSet, in *Inspection, data []byte) {
	var f *pe.File
	var err error
	if !guard(in, "COFF symbol table", 0, func() { f, err = pe.NewFile(bytes.NewReader(data)) }) || err != nil {
		ss.fail(in, "COFF symbol table", 0, 0, "debug/pe did not admit the file or its COFF symbol table; symbols are unknown")
		return
	}
	var base uint64
	switch oh := f.OptionalHeader.(type) {
	case *pe.OptionalHeader32:
		base = uint64(oh.ImageBase)
	case *pe.OptionalHeader64:
		base = oh.ImageBase
	}
	if f.FileHeader.PointerToSymbolTable != 0 {
		ss.tables = append(ss.tables, TableCOFF)
	}
	var local []Symbol
	for _, s := range f.Symbols {
		y := Symbol{Name: s.Name, Table: TableCOFF, sect: -1, Binding: peStorageClass(s.StorageClass), Type: hexU(uint64(s.Type))}
		y.isFunc = s.Type&0x30 == 0x20 // complex type DT_FUNCTION
		switch {
		case s.SectionNumber > 0 && int(s.SectionNumber) <= len(f.Sections):
			sec := f.Sections[s.SectionNumber-1]
			y.value = base + uint64(sec.VirtualAddress) + uint64(s.Value)
			y.Section, y.Defined, y.sect = sec.Name, true, int(s.SectionNumber-1)
			if sec.Characteristics&pe.IMAGE_SCN_CNT_CODE != 0 && s.StorageClass == 2 {
				y.isFunc = true
			}
		case s.SectionNumber == 0:
			y.Section = "UND"
		case s.SectionNumber == -1:
			y.Section, y.Defined, y.value = "ABS", true, uint64(s.Value)
		default:
			y.Section = "DEBUG"
		}
		y.Address = hexU(y.value)
		local = append(local, y)
	}
	deriveSizes(local, in)
	ss.syms = append(ss.syms, local...)
	for _, imp := range in.Imports {
		ss.syms = append(ss.syms, Symbol{Name: imp.Name, Table: imp.Source, Address: "0x0", Section: "UND", Library: imp.Library, sect: -1})
	}
	if len(in.Imports) > 0 {
		ss.tables = append(ss.tables, "import directory")
	}
}

func peStorageClass(c uint8) string {
	switch c {
	case 2:
		return "EXTERNAL"
	case 3:
		return "STATIC"
	case 6:
		return "LABEL"
	case 103:
		return "FILE"
	}
	return hexU(uint64(c))
}

func machoSymbols(ss *symbolSet, in *Inspection, data []byte) {
	var f *macho.File
	var err error
	if !guard(in, "LC_SYMTAB", 0, func() { f, err = macho.NewFile(bytes.NewReader(data)) }) || err != nil {
		ss.fail(in, "load commands", 0, 0, "debug/macho did not admit the file; symbols are unknown")
		return
	}
	if f.Symtab == nil {
		return
	}
	ss.tables = append(ss.tables, TableMachO)
	raw := machoRawNames(f, data)
	var local []Symbol
	for i, s := range f.Symtab.Syms {
		if s.Type&0xe0 != 0 {
			continue // N_STAB
		}
		name := s.Name
		if raw != nil {
			name = raw[i]
		}
		y := Symbol{Name: name, Table: TableMachO, Address: hexU(s.Value), value: s.Value, sect: -1}
		if s.Type&0x01 != 0 {
			y.Binding = "EXTERNAL"
		} else {
			y.Binding = "LOCAL"
		}
		switch s.Type & 0x0e {
		case 0x0:
			y.Section = "UND"
		case 0x2:
			y.Section, y.Defined = "ABS", true
		case 0xe:
			y.Defined = true
			if int(s.Sect) >= 1 && int(s.Sect) <= len(f.Sections) {
				sec := f.Sections[s.Sect-1]
				y.Section, y.sect = sec.Seg+","+sec.Name, int(s.Sect-1)
				y.isFunc = sec.Flags&0x80000000 != 0 // S_ATTR_PURE_INSTRUCTIONS
			}
		default:
			y.Section = hexU(uint64(s.Type & 0x0e))
		}
		local = append(local, y)
	}
	deriveSizes(local, in)
	ss.syms = append(ss.syms, local...)
}

// deriveSizes sets a size for defined section symbols that have none: the
// distance to the next distinct address in the same section, or to the
// section end. It is an estimate and says so in SizeSource.
func deriveSizes(syms []Symbol, in *Inspection) {
	idx := make([]int, 0, len(syms))
	for i, s := range syms {
		if s.sect >= 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := syms[idx[a]], syms[idx[b]]
		if x.sect != y.sect {
			return x.sect < y.sect
		}
		return x.value < y.value
	})
	for k, i := range idx {
		s := &syms[i]
		end := uint64(0)
		for j := k + 1; j < len(idx); j++ {
			n := syms[idx[j]]
			if n.sect != s.sect {
				break
			}
			if n.value > s.value {
				end = n.value
				break
			}
		}
		if end == 0 {
			if lo, hi, ok := sectionSpan(in, s.sect); ok && s.value >= lo && s.value < hi {
				end = hi
			}
		}
		if end > s.value {
			s.size, s.derived = end-s.value, true
			s.Size, s.SizeSource = decU(s.size), "derived: next symbol or section end"
		}
	}
}

// sectionSpan returns the address range [lo, hi) of section i in in.
func sectionSpan(in *Inspection, i int) (uint64, uint64, bool) {
	if i < 0 || i >= len(in.Sections) {
		return 0, 0, false
	}
	s := in.Sections[i]
	lo, err1 := parseHex(s.Address)
	size, err2 := parseDec(s.Size)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return lo, lo + size, true
}

// machoRawNames returns the LC_SYMTAB names exactly as the string table
// holds them, indexed like f.Symtab.Syms: debug/macho drops the leading
// "_" of names that contain a dot (Go's own symbols, but also C names
// like "_main.eh"), where nm, llvm-nm and llvm-objdump keep it. It returns
// nil when the table cannot be re-read (the caller keeps debug/macho's).
func machoRawNames(f *macho.File, data []byte) []string {
	lb := f.Symtab.LoadBytes
	if len(lb) < 24 {
		return nil
	}
	o := f.ByteOrder
	symoff, nsyms, stroff, strsize := uint64(o.Uint32(lb[8:])), uint64(o.Uint32(lb[12:])), uint64(o.Uint32(lb[16:])), uint64(o.Uint32(lb[20:]))
	if nsyms != uint64(len(f.Symtab.Syms)) {
		return nil
	}
	ent := uint64(16)
	if f.Magic == macho.Magic32 {
		ent = 12
	}
	strtab, ok := sliceAt(data, stroff, strsize)
	if !ok {
		return nil
	}
	out := make([]string, nsyms)
	for i := uint64(0); i < nsyms; i++ {
		e, ok := sliceAt(data, symoff+i*ent, 4)
		if !ok {
			return nil
		}
		strx := uint64(o.Uint32(e))
		if strx >= uint64(len(strtab)) {
			return nil
		}
		n := strtab[strx:]
		if j := bytes.IndexByte(n, 0); j >= 0 {
			n = n[:j]
		}
		out[i] = string(n)
	}
	return out
}

// elfVersion returns the GNU symbol version of a dynamic symbol read by
// debug/elf (.gnu.version with .gnu.version_d / .gnu.version_r) and
// whether it is the default version (readelf's @@): a defined symbol whose
// version is one the file defines (.gnu.version_d) and whose version index
// lacks the hidden bit (VERSYM_HIDDEN, 0x8000). A reference (SHN_UNDEF) is
// never a default definition (readelf prints name@version), nor is a
// defined symbol whose version is a needed one (.gnu.version_r, which
// debug/elf reports with the needing file in Symbol.Library): a
// copy-relocated variable such as an executable's stderr, which readelf
// (get_symbol_version_string) and objdump print as stderr@GLIBC_2.2.5.
// Both are zero when the symbol has no named version, and for a version's
// own definition symbol (SHN_ABS, named as its version).
func elfVersion(s elf.Symbol) (string, *bool) {
	if !s.HasVersion || s.Version == "" {
		return "", nil
	}
	if s.Section == elf.SHN_ABS && s.Name == s.Version {
		// The version's own definition symbol (ld emits one per
		// version node): readelf and nm print it bare, not V1@@V1.
		return "", nil
	}
	def := s.Section != elf.SHN_UNDEF && s.Library == "" && !s.VersionIndex.IsHidden()
	return s.Version, &def
}
