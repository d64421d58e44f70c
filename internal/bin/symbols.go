package bin

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"encoding/json"
	"fmt"
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
	// VersionSource is "DT_VERNEED" when the version and library were
	// read through the dynamic section's DT_VERNEED, as the dynamic
	// loader and readelf find them, because the .gnu.version_r section
	// header points outside the file; absent otherwise.
	VersionSource string `json:"version_source,omitempty"`

	value   uint64
	size    uint64
	sect    int // index into the inspection's Sections, -1 when none
	isFunc  bool
	derived bool
	// verBase: a dynamic symbol whose .gnu.version index is 1
	// (VER_NDX_GLOBAL), which objdump prints as name@@Base (name@Base
	// when undefined) and readelf bare.
	verBase bool
	// nameUnknown and versionUnknown are the reasons the name (its
	// st_name could not be looked up in a string table) or the version
	// and library (.gnu.version, .gnu.version_r or .gnu.version_d could
	// not be read) are unknown; empty when known.
	nameUnknown    string
	versionUnknown string
}

// MarshalJSON encodes s as its exported fields, except that a name or a
// version that could not be read is null (with version's library), and
// "unknown" maps each such field ("name", "version") to the reason.
func (s Symbol) MarshalJSON() ([]byte, error) {
	type plain Symbol
	v := struct {
		plain
		Name    json.RawMessage   `json:"name"`
		Version json.RawMessage   `json:"version,omitempty"`
		Library json.RawMessage   `json:"library,omitempty"`
		Unknown map[string]string `json:"unknown,omitempty"`
	}{plain: plain(s)}
	v.Name, _ = json.Marshal(s.Name)
	if s.Version != "" {
		v.Version, _ = json.Marshal(s.Version)
	}
	if s.Library != "" {
		v.Library, _ = json.Marshal(s.Library)
	}
	if s.nameUnknown != "" {
		v.Name = json.RawMessage("null")
		v.Unknown = map[string]string{"name": s.nameUnknown}
	}
	if s.versionUnknown != "" {
		v.Version, v.Library = json.RawMessage("null"), json.RawMessage("null")
		if v.Unknown == nil {
			v.Unknown = map[string]string{}
		}
		v.Unknown["version"] = s.versionUnknown
	}
	return json.Marshal(v)
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
		names := elfNameCheck(f, sec, len(syms))
		if names.table != "" {
			ss.fail(in, t.name+" names", sec.Offset, sec.Size, names.table)
		} else if names.count > 0 {
			ss.fail(in, t.name+" names", sec.Offset, sec.Size, fmt.Sprintf("%d symbol names could not be read (%s)", names.count, names.first))
		}
		var vers *elfVersionCheck
		if t.typ == elf.SHT_DYNSYM {
			vers = newELFVersionCheck(f, data)
		}
		nver := 0
		var firstVer string
		for i, s := range syms {
			y := Symbol{Name: s.Name, Table: t.name, Address: hexU(s.Value), Size: decU(s.Size), SizeSource: "st_size", Type: elfTypeName(elf.ST_TYPE(s.Info)), Binding: elfBindName(elf.ST_BIND(s.Info)), Library: s.Library, value: s.Value, size: s.Size, sect: -1, isFunc: elf.ST_TYPE(s.Info) == elf.STT_FUNC || elf.ST_TYPE(s.Info) == sttGNUIFunc}
			y.Version, y.DefaultVersion = elfVersion(s)
			y.verBase = t.name == TableDynsym && s.HasVersion && s.VersionIndex.Index() == 1
			y.nameUnknown = names.reasons[i]
			if vers != nil {
				ver, lib, why := vers.resolve(i, s)
				if y.versionUnknown = why; why != "" {
					if nver++; nver == 1 {
						firstVer = why
					}
				} else if ver != "" {
					y.Version, y.Library, y.DefaultVersion, y.VersionSource = ver, lib, ptr(false), "DT_VERNEED"
				}
			}
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
		if nver > 0 {
			ss.fail(in, t.name+" versions", vers.off, vers.size, fmt.Sprintf("the versions and libraries of %d symbols could not be read (%s)", nver, firstVer))
		}
	}
}

// elfNames is the outcome of looking up a symbol table's names.
type elfNames struct {
	// reasons[i] says why symbol i's name (entry i+1 of the table) is
	// unknown; "" when it is known.
	reasons []string
	// table is set when the table's string table itself is unusable.
	table string
	count int
	first string
}

// elfNameCheck checks what debug/elf does not: that sec's sh_link names a
// string table (SHT_STRTAB) and that each symbol's st_name (the first 4
// bytes of its Elf32_Sym/Elf64_Sym entry) indexes a NUL-terminated string
// in it. debug/elf returns "" for a name it cannot look up; such a name is
// unknown, not empty. An st_name of 0 is the empty name by definition.
func elfNameCheck(f *elf.File, sec *elf.Section, n int) elfNames {
	out := elfNames{reasons: make([]string, n)}
	ent := 24
	if f.Class == elf.ELFCLASS32 {
		ent = 16
	}
	raw, err := sec.Data()
	if err != nil || int(sec.Link) >= len(f.Sections) {
		return out // debug/elf read the table, so neither happens
	}
	strSec := f.Sections[sec.Link]
	var str []byte
	if strSec.Type != elf.SHT_STRTAB {
		out.table = fmt.Sprintf("sh_link %d names section %d %q of type %s, not a string table (SHT_STRTAB): the names of the symbols are unknown", sec.Link, sec.Link, strSec.Name, strSec.Type)
	} else if str, err = strSec.Data(); err != nil {
		out.table = fmt.Sprintf("its string table %s could not be read (%v): the names of the symbols are unknown", strSec.Name, err)
	}
	for i := range n {
		o := (i + 1) * ent
		if o+4 > len(raw) {
			break
		}
		name := f.ByteOrder.Uint32(raw[o:])
		if name == 0 {
			continue
		}
		switch {
		case out.table != "":
			out.reasons[i] = out.table
		case uint64(name) >= uint64(len(str)):
			out.reasons[i] = fmt.Sprintf("st_name %d is past the end of string table %s (%d bytes)", name, strSec.Name, len(str))
		case bytes.IndexByte(str[name:], 0) < 0:
			out.reasons[i] = fmt.Sprintf("st_name %d starts a string that string table %s does not terminate", name, strSec.Name)
		default:
			continue
		}
		if out.count++; out.count == 1 {
			out.first = out.reasons[i]
		}
	}
	return out
}

// elfVersionCheck decides which .dynsym versions debug/elf could not
// read: it drops an unreadable .gnu.version, .gnu.version_r or
// .gnu.version_d silently, leaving the symbol without version and library.
type elfVersionCheck struct {
	order     binary.ByteOrder
	versym    []byte
	versymErr string
	// lost names the unreadable version definition/need sections.
	lost      string
	off, size uint64
	// needs maps a version index to its version and library, read
	// through DT_VERNEED when .gnu.version_r could not be read.
	needs map[uint16][2]string
}

func newELFVersionCheck(f *elf.File, data []byte) *elfVersionCheck {
	vs := f.SectionByType(elf.SHT_GNU_VERSYM)
	if vs == nil {
		return nil
	}
	c := &elfVersionCheck{order: f.ByteOrder, off: vs.Offset, size: vs.Size}
	if d, err := vs.Data(); err != nil {
		c.versymErr = fmt.Sprintf("%s (file offset %d, %d bytes) could not be read: %v", vs.Name, vs.Offset, vs.Size, err)
	} else {
		c.versym = d
	}
	for _, t := range []elf.SectionType{elf.SHT_GNU_VERNEED, elf.SHT_GNU_VERDEF} {
		s := f.SectionByType(t)
		if s == nil {
			continue
		}
		if _, err := s.Data(); err != nil || s.Offset+s.Size > uint64(len(data)) || s.Offset+s.Size < s.Offset {
			if c.lost != "" {
				c.lost += " and "
			}
			c.lost += fmt.Sprintf("%s (file offset %d, %d bytes) extends past the end of the file (%d bytes)", s.Name, s.Offset, s.Size, len(data))
			c.off, c.size = s.Offset, s.Size
			if t == elf.SHT_GNU_VERNEED {
				c.needs = dynVerneed(f, data)
			}
		}
	}
	return c
}

// dynVerneed reads the version needs (Elf_Verneed and Elf_Vernaux
// records) through the dynamic section's DT_VERNEED, a virtual address
// mapped to a file offset through the PT_LOAD segment whose file bytes
// hold it, and DT_VERNEEDNUM, as the dynamic loader and readelf find them;
// names come from the dynamic symbol table's string table. It returns
// version index (vna_other) -> {version, library}, or nil when the tags,
// the records or the strings are not all in the file.
func dynVerneed(f *elf.File, data []byte) map[uint16][2]string {
	at, _ := f.DynValue(elf.DT_VERNEED)
	num, _ := f.DynValue(elf.DT_VERNEEDNUM)
	dynsym := f.SectionByType(elf.SHT_DYNSYM)
	if len(at) != 1 || len(num) != 1 || dynsym == nil || int(dynsym.Link) >= len(f.Sections) {
		return nil
	}
	str, err := f.Sections[dynsym.Link].Data()
	if err != nil {
		return nil
	}
	off, ok := uint64(0), false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && at[0] >= p.Vaddr && at[0]-p.Vaddr < p.Filesz {
			off, ok = p.Off+(at[0]-p.Vaddr), true
			break
		}
	}
	if !ok {
		return nil
	}
	o := f.ByteOrder
	name := func(i uint32) (string, bool) {
		if uint64(i) >= uint64(len(str)) {
			return "", false
		}
		n := bytes.IndexByte(str[i:], 0)
		if n < 0 {
			return "", false
		}
		return string(str[i : int(i)+n]), true
	}
	out := map[uint16][2]string{}
	for range min(num[0], 1024) {
		vn, ok := sliceAt(data, off, 16)
		if !ok || o.Uint16(vn) != 1 {
			return nil
		}
		lib, ok := name(o.Uint32(vn[4:]))
		if !ok {
			return nil
		}
		aux := off + uint64(o.Uint32(vn[8:]))
		for range min(o.Uint16(vn[2:]), 1024) {
			va, ok := sliceAt(data, aux, 16)
			if !ok {
				return nil
			}
			ver, ok := name(o.Uint32(va[8:]))
			if !ok {
				return nil
			}
			out[o.Uint16(va[6:])&0x7fff] = [2]string{ver, lib}
			next := o.Uint32(va[12:])
			if next == 0 {
				break
			}
			aux += uint64(next)
		}
		next := o.Uint32(vn[12:])
		if next == 0 {
			break
		}
		off += uint64(next)
	}
	return out
}

// unknown returns why symbol i's version is unknown, or "".
func (c *elfVersionCheck) unknown(i int, s elf.Symbol) string {
	_, _, why := c.resolve(i, s)
	return why
}

// resolve returns the version and library of symbol i that debug/elf
// left out because .gnu.version_r could not be read, from DT_VERNEED;
// or why its version is unknown; or all "" when debug/elf's is right.
func (c *elfVersionCheck) resolve(i int, s elf.Symbol) (ver, lib, why string) {
	if c.versymErr != "" {
		return "", "", c.versymErr
	}
	o := (i + 1) * 2
	if o+2 > len(c.versym) {
		return "", "", fmt.Sprintf(".gnu.version (%d bytes) has no entry for symbol %d", len(c.versym), i+1)
	}
	ndx := elf.VersionIndex(c.order.Uint16(c.versym[o:])).Index()
	if ndx <= 1 || s.HasVersion {
		return "", "", ""
	}
	if v, ok := c.needs[ndx]; ok {
		return v[0], v[1], ""
	}
	if c.lost != "" {
		return "", "", fmt.Sprintf("version index %d: %s", ndx, c.lost)
	}
	return "", "", fmt.Sprintf("version index %d is in neither .gnu.version_d nor .gnu.version_r", ndx)
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
	files := coffFileNames(f, data)
	for i, s := range f.Symbols {
		y := Symbol{Name: s.Name, Table: TableCOFF, sect: -1, Binding: peStorageClass(s.StorageClass), Type: hexU(uint64(s.Type))}
		if n, ok := files[i]; ok {
			// objdump -t and dumpbin print a .file symbol as the
			// source file its auxiliary records name.
			y.Name = n
		}
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

// coffFileNames maps the index (in pe.File.Symbols, which leaves out
// auxiliary records) of each .file symbol (storage class
// IMAGE_SYM_CLASS_FILE, 103) with auxiliary records to the source file
// name they hold (read from data, the file's bytes): the records' 18
// bytes each, concatenated, up to the first NUL (PE/COFF "Auxiliary
// Format 4: Files"), or, when the first 4
// bytes are 0, the string table entry at the offset in the next 4 (as
// objdump reads a name longer than the record). A name that cannot be read
// leaves the symbol named .file.
func coffFileNames(f *pe.File, data []byte) map[int]string {
	out := map[int]string{}
	k := 0
	for i := 0; i < len(f.COFFSymbols); k++ {
		cs := f.COFFSymbols[i]
		n := int(cs.NumberOfAuxSymbols)
		if cs.StorageClass == 103 && n > 0 && i+n < len(f.COFFSymbols) {
			// The records are read from the file: debug/pe reads every
			// auxiliary record as format 5 and drops its last 3 bytes.
			name, ok := sliceAt(data, uint64(f.FileHeader.PointerToSymbolTable)+18*uint64(i+1), 18*uint64(n))
			if !ok {
				i += 1 + n
				continue
			}
			if binary.LittleEndian.Uint32(name) == 0 {
				// A name longer than the records is in the
				// string table at the offset in bytes 4-7
				// (binutils' x_file.x_n.x_offset).
				if v, err := f.StringTable.String(binary.LittleEndian.Uint32(name[4:])); err == nil && v != "" {
					out[k] = v
				}
			} else {
				if j := bytes.IndexByte(name, 0); j >= 0 {
					name = name[:j]
				}
				out[k] = string(name)
			}
		}
		i += 1 + n
	}
	return out
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
			if machoCommon(s) {
				// A common symbol (nlist(5): N_UNDF|N_EXT with
				// n_value its size), llvm-nm's C: defined by
				// the link, not imported.
				y.Section, y.Defined = "COMMON", true
				y.Size, y.SizeSource, y.size = decU(s.Value), "n_value (common symbol size)", s.Value
				break
			}
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
