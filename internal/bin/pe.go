package bin

import (
	"bytes"
	"context"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"strings"
)

// peHeader is this package's own bounded read of the DOS stub pointer, the
// COFF file header and the fixed part of the optional header (the
// Microsoft PE/COFF specification, "Overview" and "Optional Header").
type peHeader struct {
	lfanew uint64
	// coffOff is the file offset of the COFF file header: after the PE
	// signature in an image, 0 in a COFF object file (no MZ stub).
	coffOff     uint64
	coffObj     bool
	machine     uint16
	nsections   uint16
	chars       uint16
	magic       uint16
	entry       uint64
	imageBase   uint64
	dllChars    uint16
	subsystem   uint16
	dirs        []pe.DataDirectory
	sectionsOff uint64
}

func readPEHeader(in *Inspection, data []byte) (*peHeader, bool) {
	le := binary.LittleEndian
	if len(data) < 2 || data[0] != 'M' || data[1] != 'Z' {
		if len(data) < 20 {
			in.unresolved("COFF file header", 0, 20, "the file ends inside the COFF file header")
			return nil, false
		}
		return readCOFFObjectHeader(in, data)
	}
	lfanew, ok := readDOSHeader(in, data)
	if !ok {
		return nil, false
	}
	h := &peHeader{lfanew: lfanew}
	h.coffOff = h.lfanew + 4
	b, ok := sliceAt(data, h.lfanew, 24)
	if !ok {
		in.unresolved("COFF file header", h.lfanew+4, 20, fmt.Sprintf("the file (%d bytes) ends inside the COFF file header after the PE signature", len(data)))
		return nil, false
	}
	h.machine, h.nsections, h.chars = le.Uint16(b[4:]), le.Uint16(b[6:]), le.Uint16(b[22:])
	optSize := uint64(le.Uint16(b[20:]))
	in.Header.Machine = field(uint64(h.machine), peMachineName(h.machine), "IMAGE_FILE_HEADER.Machine")
	in.Header.Type = field(uint64(h.chars), peCharNames(h.chars), "IMAGE_FILE_HEADER.Characteristics")
	in.Header.Endianness = "little"
	optOff := h.lfanew + 24
	h.sectionsOff = optOff + optSize
	ob, ok := sliceAt(data, optOff, optSize)
	if !ok || optSize < 2 {
		in.unresolved("optional header", optOff, optSize, "the optional header extends past the end of the file")
		return h, false
	}
	h.magic = le.Uint16(ob)
	var ndirOff, dirOff uint64
	switch h.magic {
	case 0x10b:
		in.Header.Class = "PE32"
		if optSize < 96 {
			in.unresolved("optional header", optOff, optSize, "SizeOfOptionalHeader is smaller than the PE32 fixed fields")
			return h, false
		}
		h.imageBase = uint64(le.Uint32(ob[28:]))
		ndirOff, dirOff = 92, 96
	case 0x20b:
		in.Header.Class = "PE32+"
		if optSize < 112 {
			in.unresolved("optional header", optOff, optSize, "SizeOfOptionalHeader is smaller than the PE32+ fixed fields")
			return h, false
		}
		h.imageBase = le.Uint64(ob[24:])
		ndirOff, dirOff = 108, 112
	default:
		in.unresolved("optional header", optOff, 2, fmt.Sprintf("optional header magic 0x%x is not PE32 or PE32+", h.magic))
		return h, false
	}
	h.entry = uint64(le.Uint32(ob[16:]))
	h.subsystem, h.dllChars = le.Uint16(ob[68:]), le.Uint16(ob[70:])
	in.Header.OSABI = field(uint64(h.subsystem), peSubsystemName(h.subsystem), "IMAGE_OPTIONAL_HEADER.Subsystem")
	in.Header.Entry = hexU(h.imageBase + h.entry)
	in.Header.EntrySource = "ImageBase + AddressOfEntryPoint"
	in.Header.Flags = field(uint64(h.dllChars), "", "IMAGE_OPTIONAL_HEADER.DllCharacteristics")
	n := uint64(le.Uint32(ob[ndirOff:]))
	for i := uint64(0); i < n && i < 16; i++ {
		o := dirOff + 8*i
		if o+8 > optSize {
			in.unresolved("data directories", optOff+o, 8, "NumberOfRvaAndSizes exceeds SizeOfOptionalHeader")
			break
		}
		h.dirs = append(h.dirs, pe.DataDirectory{VirtualAddress: le.Uint32(ob[o:]), Size: le.Uint32(ob[o+4:])})
	}
	return h, true
}

// DOS header new_header values: what the bytes at e_lfanew establish.
const (
	// NewHeaderPE: the "PE\0\0" signature (a PE image).
	NewHeaderPE = "pe"
	// NewHeaderNE, NewHeaderLE, NewHeaderLX: a 16-bit Windows/OS2 or
	// virtual-device executable header; no PE structures follow.
	NewHeaderNE = "ne"
	NewHeaderLE = "le"
	NewHeaderLX = "lx"
	// NewHeaderAbsent: the bytes at e_lfanew were read and carry no known
	// signature: a plain DOS executable.
	NewHeaderAbsent = "absent"
	// NewHeaderUnresolved: the DOS header or the bytes at e_lfanew lie
	// past the end of the file: whether a PE image follows is unknown.
	NewHeaderUnresolved = "unresolved"
)

// DOSHeader is the MS-DOS (MZ) header (IMAGE_DOS_HEADER) at offset 0 of a
// DOS or PE executable: the fields that fit in the file, and what lies at
// e_lfanew (NewHeader, one of the NewHeader* values; NewHeaderReason says
// why when it is not "pe").
type DOSHeader struct {
	Fields          []*Field `json:"fields"`
	Lfanew          string   `json:"e_lfanew,omitempty"`
	NewHeader       string   `json:"new_header"`
	NewHeaderReason string   `json:"new_header_reason,omitempty"`
}

// dosFields are IMAGE_DOS_HEADER's 16-bit fields before e_res, by offset.
var dosFields = []string{"e_magic", "e_cblp", "e_cp", "e_crlc", "e_cparhdr", "e_minalloc", "e_maxalloc", "e_ss", "e_sp", "e_csum", "e_ip", "e_cs", "e_lfarlc", "e_ovno"}

// readDOSHeader reads the MZ header of data (which starts with "MZ") into
// in.Header.DOS and sets in.Header.Format to FormatDOS until the PE
// signature at e_lfanew is read (then FormatPE). It returns e_lfanew and
// true only when that signature is "PE\0\0"; otherwise the reason is in
// DOS.NewHeader and, when bytes are missing, in in.Unresolved.
func readDOSHeader(in *Inspection, data []byte) (uint64, bool) {
	le := binary.LittleEndian
	in.Header.Format = FormatDOS
	in.Header.Endianness = "little"
	d := &DOSHeader{Fields: []*Field{}, NewHeader: NewHeaderUnresolved}
	in.Header.DOS = d
	for i, n := range dosFields {
		if 2*i+2 > len(data) {
			break
		}
		d.Fields = append(d.Fields, field(uint64(le.Uint16(data[2*i:])), n, "IMAGE_DOS_HEADER."+n))
	}
	if len(data) < 0x40 {
		d.NewHeaderReason = fmt.Sprintf("the file (%d bytes) ends inside the 64-byte DOS header: e_lfanew is not read, so whether a PE header follows is unknown", len(data))
		in.unresolved("DOS header", 0, 0x40, d.NewHeaderReason)
		return 0, false
	}
	lfanew := uint64(le.Uint32(data[0x3c:]))
	d.Lfanew = hexU(lfanew)
	sig, ok := sliceAt(data, lfanew, 4)
	if !ok {
		d.NewHeaderReason = fmt.Sprintf("e_lfanew (%d) points past the end of the file (%d bytes): whether a PE header follows is unknown", lfanew, len(data))
		in.unresolved("PE signature", lfanew, 4, d.NewHeaderReason)
		return 0, false
	}
	switch {
	case bytes.Equal(sig, []byte("PE\x00\x00")):
		d.NewHeader = NewHeaderPE
		in.Header.Format = FormatPE
		return lfanew, true
	case bytes.HasPrefix(sig, []byte("NE")):
		d.NewHeader = NewHeaderNE
	case bytes.HasPrefix(sig, []byte("LE")):
		d.NewHeader = NewHeaderLE
	case bytes.HasPrefix(sig, []byte("LX")):
		d.NewHeader = NewHeaderLX
	default:
		d.NewHeader = NewHeaderAbsent
		d.NewHeaderReason = fmt.Sprintf("no PE, NE, LE or LX signature at e_lfanew (%d, bytes %x): a DOS executable", lfanew, sig)
		return 0, false
	}
	d.NewHeaderReason = fmt.Sprintf("an %s header at e_lfanew (%d): not a PE image; its structures are not read", strings.ToUpper(d.NewHeader), lfanew)
	return 0, false
}

func (h *peHeader) dir(i int) pe.DataDirectory {
	if i < len(h.dirs) {
		return h.dirs[i]
	}
	return pe.DataDirectory{}
}

func peMachineName(m uint16) string {
	switch m {
	case pe.IMAGE_FILE_MACHINE_AMD64:
		return "IMAGE_FILE_MACHINE_AMD64"
	case pe.IMAGE_FILE_MACHINE_I386:
		return "IMAGE_FILE_MACHINE_I386"
	case pe.IMAGE_FILE_MACHINE_ARM64:
		return "IMAGE_FILE_MACHINE_ARM64"
	case pe.IMAGE_FILE_MACHINE_ARMNT:
		return "IMAGE_FILE_MACHINE_ARMNT"
	case pe.IMAGE_FILE_MACHINE_RISCV64:
		return "IMAGE_FILE_MACHINE_RISCV64"
	}
	return ""
}

func peCharNames(c uint16) string {
	var n []string
	for _, x := range []struct {
		bit  uint16
		name string
	}{{pe.IMAGE_FILE_RELOCS_STRIPPED, "RELOCS_STRIPPED"}, {pe.IMAGE_FILE_EXECUTABLE_IMAGE, "EXECUTABLE_IMAGE"}, {pe.IMAGE_FILE_LARGE_ADDRESS_AWARE, "LARGE_ADDRESS_AWARE"}, {pe.IMAGE_FILE_32BIT_MACHINE, "32BIT_MACHINE"}, {pe.IMAGE_FILE_DEBUG_STRIPPED, "DEBUG_STRIPPED"}, {pe.IMAGE_FILE_DLL, "DLL"}} {
		if c&x.bit != 0 {
			n = append(n, x.name)
		}
	}
	return strings.Join(n, "|")
}

func peSubsystemName(s uint16) string {
	switch s {
	case pe.IMAGE_SUBSYSTEM_WINDOWS_GUI:
		return "WINDOWS_GUI"
	case pe.IMAGE_SUBSYSTEM_WINDOWS_CUI:
		return "WINDOWS_CUI"
	case pe.IMAGE_SUBSYSTEM_NATIVE:
		return "NATIVE"
	case pe.IMAGE_SUBSYSTEM_EFI_APPLICATION:
		return "EFI_APPLICATION"
	}
	return ""
}

func peSectionFlags(c uint32) string {
	var n []string
	for _, x := range []struct {
		bit  uint32
		name string
	}{{pe.IMAGE_SCN_CNT_CODE, "CODE"}, {pe.IMAGE_SCN_CNT_INITIALIZED_DATA, "INITIALIZED_DATA"}, {pe.IMAGE_SCN_CNT_UNINITIALIZED_DATA, "UNINITIALIZED_DATA"}, {pe.IMAGE_SCN_MEM_DISCARDABLE, "DISCARDABLE"}, {0x10000000, "SHARED"}, {pe.IMAGE_SCN_MEM_EXECUTE, "EXECUTE"}, {pe.IMAGE_SCN_MEM_READ, "READ"}, {pe.IMAGE_SCN_MEM_WRITE, "WRITE"}} {
		if c&x.bit != 0 {
			n = append(n, x.name)
		}
	}
	return strings.Join(n, "|")
}

// openPE admits data through debug/pe. When only the COFF symbol table is
// out of reach (a truncated tail), it admits a copy with the symbol table
// pointer cleared so sections and directories stay available, and records
// the symbol table as unresolved.
func openPE(in *Inspection, h *peHeader, data []byte) (*pe.File, bool) {
	var f *pe.File
	var err error
	if !guard(in, "section table", h.sectionsOff, func() { f, err = pe.NewFile(bytes.NewReader(data)) }) {
		return nil, false
	}
	if err == nil {
		return f, true
	}
	symOff := uint64(binary.LittleEndian.Uint32(data[h.coffOff+8:]))
	nsyms := uint64(binary.LittleEndian.Uint32(data[h.coffOff+12:]))
	if symOff != 0 {
		patched := append([]byte(nil), data...)
		binary.LittleEndian.PutUint32(patched[h.coffOff+8:], 0)
		binary.LittleEndian.PutUint32(patched[h.coffOff+12:], 0)
		var err2 error
		if guard(in, "section table", h.sectionsOff, func() { f, err2 = pe.NewFile(bytes.NewReader(patched)) }) && err2 == nil {
			in.unresolved("COFF symbol table", symOff, nsyms*pe.COFFSymbolSize, "the COFF symbol or string table could not be read: "+err.Error())
			return f, false
		}
	}
	in.unresolved("section table", h.sectionsOff, uint64(h.nsections)*40, "debug/pe did not admit the section table: "+err.Error())
	return nil, false
}

// rvaReader maps relative virtual addresses to file bytes through the
// section table.
type rvaReader struct {
	data     []byte
	sections []*pe.Section
}

func (r rvaReader) off(rva uint32) (uint64, uint64, bool) {
	for _, s := range r.sections {
		span := s.VirtualSize
		if s.Size > span {
			span = s.Size
		}
		if rva >= s.VirtualAddress && rva-s.VirtualAddress < span {
			d := rva - s.VirtualAddress
			if d >= s.Size {
				return 0, 0, false
			}
			return uint64(s.Offset) + uint64(d), uint64(s.Size - d), true
		}
	}
	return 0, 0, false
}

func (r rvaReader) bytes(rva uint32, n uint64) ([]byte, bool) {
	off, avail, ok := r.off(rva)
	if !ok || n > avail {
		return nil, false
	}
	return sliceAt(r.data, off, n)
}

func (r rvaReader) cstring(rva uint32) (string, bool) {
	off, avail, ok := r.off(rva)
	if !ok {
		return "", false
	}
	if avail > 4096 {
		avail = 4096
	}
	b, ok := sliceAt(r.data, off, avail)
	if !ok {
		b, ok = sliceAt(r.data, off, uint64(len(r.data))-off)
		if !ok {
			return "", false
		}
	}
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", false
	}
	return string(b[:i]), true
}

func inspectPE(ctx context.Context, in *Inspection, data []byte) {
	h, ok := readPEHeader(in, data)
	if d := in.Header.DOS; h == nil && d != nil && d.NewHeader != NewHeaderUnresolved && d.NewHeader != NewHeaderPE {
		// The signature at e_lfanew was read and is not PE: the DOS header
		// is all there is to read, and no PE structure exists.
		in.facet("header", FacetComplete, "a DOS (MZ) executable: "+d.NewHeaderReason)
		for _, n := range []string{"sections", "segments", "dynamic", "imports", "exports", "build_id", "go_build_info", "debug_info", "hardening"} {
			in.facet(n, FacetNotApplicable, "not a PE image ("+d.NewHeaderReason+")")
		}
		return
	}
	if h == nil || !ok {
		in.facet("header", FacetPartial, "the PE headers are incomplete")
		for _, n := range []string{"sections", "segments", "dynamic", "imports", "exports", "build_id", "go_build_info", "debug_info", "hardening"} {
			in.facet(n, FacetUnresolved, "the PE headers are incomplete")
		}
		return
	}
	in.facet("header", FacetComplete, "")
	f, _ := openPE(in, h, data)
	in.Admitted = f != nil
	if f == nil {
		for _, n := range []string{"sections", "dynamic", "imports", "exports", "build_id", "go_build_info"} {
			in.facet(n, FacetUnresolved, "the section table was not admitted")
		}
		peHardening(in, h, rvaReader{}, false)
		return
	}
	state := FacetComplete
	for i, s := range f.Sections {
		if ctx.Err() != nil {
			return
		}
		sec := Section{Index: i + 1, Name: s.Name, Address: hexU(h.imageBase + uint64(s.VirtualAddress)), Offset: decU(uint64(s.Offset)), Size: decU(uint64(s.VirtualSize)), FileSize: decU(uint64(s.Size)), Flags: peSectionFlags(s.Characteristics), FlagsRaw: hexU(uint64(s.Characteristics))}
		if s.Size == 0 {
			sec.Content = "none"
		} else if b, ok := sliceAt(data, uint64(s.Offset), uint64(s.Size)); ok {
			in.digest(&sec, b)
		} else {
			sec.Content = "unresolved"
			state = FacetPartial
			in.unresolved("section "+s.Name+" raw data", uint64(s.Offset), uint64(s.Size), "extends past the end of the file")
		}
		in.Sections = append(in.Sections, sec)
	}
	in.facet("sections", state, "")
	in.facet("segments", FacetNotApplicable, "PE has no program headers")
	r := rvaReader{data: data, sections: f.Sections}
	peImports(in, h, f, r)
	peExports(in, h, r)
	peDebug(in, h, r, data)
	setGoBuildID(in, data, ".text")
	goBuildInfo(in, data)
	peHardening(in, h, r, true)
}

func peImports(in *Inspection, h *peHeader, f *pe.File, r rvaReader) {
	d := &Dynamic{Needed: []string{}, RPath: []string{}, RunPath: []string{}}
	state := FacetComplete
	// dirUnknown: the import directory exists but was not read, so the
	// DLLs and symbols it lists are unknown (null), not none.
	dirUnknown := false
	if dd := h.dir(pe.IMAGE_DIRECTORY_ENTRY_IMPORT); dd.Size != 0 {
		if _, ok := r.bytes(dd.VirtualAddress, 20); !ok {
			// debug/pe reports no imports (and no error) when no section
			// holds the directory's RVA; objdump -p says "There is an
			// import table, but the section containing it could not be
			// found".
			state, dirUnknown = FacetPartial, true
			in.unresolved("import directory", uint64(dd.VirtualAddress), uint64(dd.Size), "no section contains the import directory's RVA (offset is an RVA)")
		}
	}
	if dd := h.dir(pe.IMAGE_DIRECTORY_ENTRY_IMPORT); dd.Size != 0 && !dirUnknown {
		var syms, libs []string
		var err1, err2 error
		ok := guard(in, "import directory", 0, func() {
			syms, err1 = f.ImportedSymbols()
			libs, err2 = f.ImportedLibraries()
		})
		if !ok || err1 != nil || err2 != nil {
			state, dirUnknown = FacetPartial, true
			dd := h.dir(pe.IMAGE_DIRECTORY_ENTRY_IMPORT)
			in.unresolved("import directory", uint64(dd.VirtualAddress), uint64(dd.Size), "the import directory could not be read (offset is an RVA)")
		}
		seen := map[string]bool{}
		for _, s := range syms {
			name, dll, _ := strings.Cut(s, ":")
			in.Imports = append(in.Imports, Import{Name: name, Library: dll, Source: "import directory"})
			if !seen[dll] {
				seen[dll] = true
			}
		}
		for _, l := range libs {
			if !seen[l] {
				seen[l] = true
			}
		}
		for _, l := range libs {
			d.Needed = append(d.Needed, l)
		}
		// ImportedLibraries lists only DLLs with by-name imports; add the rest.
		for _, imp := range in.Imports {
			if !contains(d.Needed, imp.Library) {
				d.Needed = append(d.Needed, imp.Library)
			}
		}
	}
	// Delay-load import descriptors (PE/COFF "Delay-Load Import Tables").
	dd := h.dir(13)
	if dd.Size != 0 {
		le := binary.LittleEndian
		thunk := uint64(4)
		if h.magic == 0x20b {
			thunk = 8
		}
		for i := uint32(0); i < dd.Size/32 && i < 4096; i++ {
			b, ok := r.bytes(dd.VirtualAddress+32*i, 32)
			if !ok {
				state = FacetPartial
				in.unresolved("delay import descriptor", uint64(dd.VirtualAddress+32*i), 32, "RVA outside the section data (offset is an RVA)")
				break
			}
			attrs, nameRVA, intRVA := le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[16:])
			if nameRVA == 0 && intRVA == 0 {
				break
			}
			base := uint32(0)
			if attrs&1 == 0 { // version 1 descriptors hold VAs
				base = uint32(h.imageBase)
			}
			dll, ok := r.cstring(nameRVA - base)
			if !ok {
				state = FacetPartial
				in.unresolved("delay import DLL name", uint64(nameRVA), 0, "RVA outside the section data (offset is an RVA)")
				continue
			}
			if !contains(d.Needed, dll) {
				d.Needed = append(d.Needed, dll)
			}
			for j := uint64(0); j < 65536; j++ {
				tb, ok := r.bytes(intRVA-base+uint32(j*thunk), thunk)
				if !ok {
					state = FacetPartial
					in.unresolved("delay import name table", uint64(intRVA), 0, "RVA outside the section data (offset is an RVA)")
					break
				}
				var v uint64
				var ordinal bool
				if thunk == 8 {
					v = le.Uint64(tb)
					ordinal = v&(1<<63) != 0
				} else {
					v = uint64(le.Uint32(tb))
					ordinal = v&(1<<31) != 0
				}
				if v == 0 {
					break
				}
				if ordinal {
					in.Imports = append(in.Imports, Import{Library: dll, Ordinal: decU(v & 0xffff), Source: "delay import directory"})
					continue
				}
				name, ok := r.cstring(uint32(v) - base + 2)
				if !ok {
					state = FacetPartial
					continue
				}
				in.Imports = append(in.Imports, Import{Name: name, Library: dll, Source: "delay import directory"})
			}
		}
	}
	in.Dynamic = d
	in.Libraries = append(in.Libraries, d.Needed...)
	if dirUnknown {
		// Nothing read is unknown; what the delay-load directory gave is
		// a partial list.
		if len(in.Imports) == 0 {
			in.Imports = nil
		}
		if len(d.Needed) == 0 {
			d.Needed, in.Libraries = nil, nil
		}
	}
	reason := ""
	if dirUnknown {
		reason = "the import directory was not read (see unresolved)"
	}
	in.facet("imports", state, reason)
	in.facet("dynamic", state, reason)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// peExports reads IMAGE_EXPORT_DIRECTORY (data directory 0).
func peExports(in *Inspection, h *peHeader, r rvaReader) {
	dd := h.dir(pe.IMAGE_DIRECTORY_ENTRY_EXPORT)
	if dd.Size == 0 {
		in.facet("exports", FacetComplete, "no export directory")
		return
	}
	le := binary.LittleEndian
	b, ok := r.bytes(dd.VirtualAddress, 40)
	if !ok {
		in.unresolved("export directory", uint64(dd.VirtualAddress), 40, "RVA outside the section data (offset is an RVA)")
		in.facet("exports", FacetUnresolved, "export directory unresolved")
		return
	}
	base, nfuncs, nnames := le.Uint32(b[16:]), le.Uint32(b[20:]), le.Uint32(b[24:])
	funcs, names, ords := le.Uint32(b[28:]), le.Uint32(b[32:]), le.Uint32(b[36:])
	state := FacetComplete
	named := map[uint32]bool{}
	for i := uint32(0); i < nnames && i < 1<<20; i++ {
		nb, ok1 := r.bytes(names+4*i, 4)
		ob, ok2 := r.bytes(ords+2*i, 2)
		if !ok1 || !ok2 {
			state = FacetPartial
			in.unresolved("export name table", uint64(names), uint64(nnames)*4, "RVA outside the section data (offset is an RVA)")
			break
		}
		name, ok := r.cstring(le.Uint32(nb))
		idx := uint32(le.Uint16(ob))
		fb, ok3 := r.bytes(funcs+4*idx, 4)
		if !ok || !ok3 {
			state = FacetPartial
			continue
		}
		named[idx] = true
		in.Exports = append(in.Exports, peExport(h, r, dd, name, le.Uint32(fb), base+idx))
	}
	for i := uint32(0); i < nfuncs && i < 1<<20; i++ {
		if named[i] {
			continue
		}
		fb, ok := r.bytes(funcs+4*i, 4)
		if !ok {
			state = FacetPartial
			break
		}
		if a := le.Uint32(fb); a != 0 {
			in.Exports = append(in.Exports, peExport(h, r, dd, "", a, base+i))
		}
	}
	in.facet("exports", state, "")
}

// peExport builds one export; an address inside the export directory is
// a forwarder string (PE/COFF "Export Address Table").
func peExport(h *peHeader, r rvaReader, dd pe.DataDirectory, name string, rva, ordinal uint32) Export {
	e := Export{Name: name, Ordinal: decU(uint64(ordinal)), Source: "export directory"}
	if rva >= dd.VirtualAddress && rva-dd.VirtualAddress < dd.Size {
		if fw, ok := r.cstring(rva); ok {
			e.Forwarder = fw
			return e
		}
	}
	e.Address = hexU(h.imageBase + uint64(rva))
	return e
}

// peDebug reads the debug directory (data directory 6) for a CodeView
// RSDS record: PDB path, GUID and age.
func peDebug(in *Inspection, h *peHeader, r rvaReader, data []byte) {
	bid := &BuildID{}
	in.BuildID = bid
	dd := h.dir(pe.IMAGE_DIRECTORY_ENTRY_DEBUG)
	if dd.Size == 0 {
		in.facet("build_id", FacetComplete, "no debug directory")
		return
	}
	le := binary.LittleEndian
	state := FacetComplete
	for i := uint32(0); i < dd.Size/28 && i < 64; i++ {
		b, ok := r.bytes(dd.VirtualAddress+28*i, 28)
		if !ok {
			state = FacetPartial
			in.unresolved("debug directory entry", uint64(dd.VirtualAddress+28*i), 28, "RVA outside the section data (offset is an RVA)")
			break
		}
		typ, size, ptr := le.Uint32(b[12:]), le.Uint32(b[16:]), le.Uint32(b[24:])
		if typ != 2 { // IMAGE_DEBUG_TYPE_CODEVIEW
			continue
		}
		cv, ok := sliceAt(data, uint64(ptr), uint64(size))
		if !ok || size < 24 {
			state = FacetPartial
			in.unresolved("CodeView record", uint64(ptr), uint64(size), "extends past the end of the file")
			continue
		}
		if !bytes.Equal(cv[:4], []byte("RSDS")) {
			continue
		}
		g := cv[4:20]
		guid := fmt.Sprintf("%08X-%04X-%04X-%X-%X", le.Uint32(g), le.Uint16(g[4:]), le.Uint16(g[6:]), g[8:10], g[10:16])
		path := string(bytes.TrimRight(cv[24:], "\x00"))
		if j := bytes.IndexByte(cv[24:], 0); j >= 0 {
			path = string(cv[24 : 24+j])
		}
		bid.PDB = &PDB{Path: path, GUID: guid, Age: decU(uint64(le.Uint32(cv[20:])))}
	}
	in.facet("build_id", state, "")
}

// peHardening derives verdicts from IMAGE_OPTIONAL_HEADER.DllCharacteristics,
// the COFF Characteristics, the load configuration directory and the
// certificate table directory entry.
func peHardening(in *Inspection, h *peHeader, r rvaReader, admitted bool) {
	add := func(name, verdict string, basis ...string) {
		in.Hardening = append(in.Hardening, Check{Name: name, Verdict: verdict, Basis: basis})
	}
	if h.coffObj {
		for _, n := range []string{"aslr", "high_entropy_va", "nx", "cfg", "safeseh", "certificate_table"} {
			add(n, VerdictNotApplicable, "COFF object file: not loaded; the link sets the image's DllCharacteristics and directories")
		}
		in.facet("hardening", FacetComplete, "")
		return
	}
	dc := h.dllChars
	bit := func(mask uint16, name string) (bool, string) {
		if dc&mask != 0 {
			return true, fmt.Sprintf("DllCharacteristics has %s (0x%04x)", name, mask)
		}
		return false, fmt.Sprintf("DllCharacteristics lacks %s (0x%04x)", name, mask)
	}
	dyn, b := bit(0x0040, "IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE")
	switch {
	case dyn && h.chars&pe.IMAGE_FILE_RELOCS_STRIPPED != 0:
		add("aslr", VerdictPartial, b, "Characteristics has IMAGE_FILE_RELOCS_STRIPPED: the image cannot be relocated")
	case dyn:
		add("aslr", VerdictYes, b)
	default:
		add("aslr", VerdictNo, b)
	}
	he, b := bit(0x0020, "IMAGE_DLLCHARACTERISTICS_HIGH_ENTROPY_VA")
	switch {
	case h.magic != 0x20b:
		add("high_entropy_va", VerdictNotApplicable, "PE32 image: 32-bit address space")
	case he && dyn:
		add("high_entropy_va", VerdictYes, b)
	case he:
		add("high_entropy_va", VerdictPartial, b, "without DYNAMIC_BASE the flag has no effect")
	default:
		add("high_entropy_va", VerdictNo, b)
	}
	nx, b := bit(0x0100, "IMAGE_DLLCHARACTERISTICS_NX_COMPAT")
	add("nx", map[bool]string{true: VerdictYes, false: VerdictNo}[nx], b)
	cfg, b := bit(0x4000, "IMAGE_DLLCHARACTERISTICS_GUARD_CF")
	add("cfg", map[bool]string{true: VerdictYes, false: VerdictNo}[cfg], b)
	noSEH, b := bit(0x0400, "IMAGE_DLLCHARACTERISTICS_NO_SEH")
	lc := h.dir(pe.IMAGE_DIRECTORY_ENTRY_LOAD_CONFIG)
	switch {
	case h.magic == 0x20b:
		add("safeseh", VerdictNotApplicable, "PE32+ image: exception handling is table-based (.pdata), SafeSEH applies to PE32 only")
	case noSEH:
		add("safeseh", VerdictNotApplicable, b)
	case lc.Size == 0:
		add("safeseh", VerdictNo, "no load configuration directory (data directory 10)")
	case !admitted:
		add("safeseh", VerdictUnknown, "section table not admitted: the load configuration cannot be read")
	default:
		lb, ok := r.bytes(lc.VirtualAddress, 0x48)
		switch {
		case !ok:
			add("safeseh", VerdictUnknown, "load configuration directory shorter than SEHandlerCount or outside the section data")
		case binary.LittleEndian.Uint32(lb[0x40:]) != 0 && binary.LittleEndian.Uint32(lb[0x44:]) != 0:
			add("safeseh", VerdictYes, fmt.Sprintf("IMAGE_LOAD_CONFIG_DIRECTORY32.SEHandlerTable 0x%x, SEHandlerCount %d", binary.LittleEndian.Uint32(lb[0x40:]), binary.LittleEndian.Uint32(lb[0x44:])))
		default:
			add("safeseh", VerdictNo, "IMAGE_LOAD_CONFIG_DIRECTORY32.SEHandlerTable or SEHandlerCount is zero")
		}
	}
	ct := h.dir(pe.IMAGE_DIRECTORY_ENTRY_SECURITY)
	if ct.Size != 0 {
		add("certificate_table", VerdictYes, fmt.Sprintf("data directory 4 (certificate table) at file offset %d, %d bytes; presence only, the signature is not verified", ct.VirtualAddress, ct.Size))
	} else {
		add("certificate_table", VerdictNo, "data directory 4 (certificate table) is empty")
	}
	if admitted {
		in.facet("hardening", FacetComplete, "")
	} else {
		in.facet("hardening", FacetPartial, "SafeSEH rests on the unadmitted section table")
	}
}

// coffObjectMachines are the IMAGE_FILE_MACHINE values accepted for a COFF
// object file, which has no magic number of its own.
var coffObjectMachines = map[uint16]bool{0x14c: true, 0x8664: true, 0xaa64: true, 0x1c4: true, 0x1c0: true}

// isCOFFObject reports whether data starts with a plausible COFF file
// header of an object file (PE/COFF specification, "COFF File Header"):
// a known machine, no optional header, 1-96 sections whose table lies in
// the file, and a symbol table pointer inside the file.
func isCOFFObject(data []byte) bool {
	if len(data) < 20 {
		return false
	}
	le := binary.LittleEndian
	n := uint64(le.Uint16(data[2:]))
	symOff := uint64(le.Uint32(data[8:]))
	return coffObjectMachines[le.Uint16(data)] && le.Uint16(data[16:]) == 0 && n >= 1 && n <= 96 && 20+n*40 <= uint64(len(data)) && symOff <= uint64(len(data))
}

// readCOFFObjectHeader reads the COFF file header at offset 0 of an object
// file (.obj): there is no DOS stub, PE signature or optional header.
func readCOFFObjectHeader(in *Inspection, data []byte) (*peHeader, bool) {
	le := binary.LittleEndian
	if !isCOFFObject(data) {
		in.unresolved("COFF file header", 0, 20, "neither an MZ stub nor a COFF object file header")
		return nil, false
	}
	h := &peHeader{coffObj: true, sectionsOff: 20}
	h.machine, h.nsections, h.chars = le.Uint16(data), le.Uint16(data[2:]), le.Uint16(data[18:])
	in.Header.Machine = field(uint64(h.machine), peMachineName(h.machine), "IMAGE_FILE_HEADER.Machine")
	in.Header.Type = field(uint64(h.chars), "Obj", coffObjectSource)
	in.Header.Class = "COFF object"
	in.Header.Endianness = "little"
	return h, true
}
