package bin

import (
	"bytes"
	"cmp"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// elfHeader is this package's own bounded read of the ELF identification
// and file header (System V gABI "ELF Header"), independent of debug/elf.
type elfHeader struct {
	class     elf.Class
	order     binary.ByteOrder
	typ       elf.Type
	machine   elf.Machine
	osabi     elf.OSABI
	entry     uint64
	phoff     uint64
	shoff     uint64
	phentsize uint64
	phnum     uint64
	shentsize uint64
	shnum     uint64
}

func readELFHeader(in *Inspection, data []byte) (*elfHeader, bool) {
	if len(data) < elf.EI_NIDENT {
		// The identification bytes that are there still say what they
		// say: a file cut after EI_DATA has a known class and encoding.
		if len(data) > elf.EI_CLASS {
			in.Header.Class = elf.Class(data[elf.EI_CLASS]).String()
		}
		if len(data) > elf.EI_DATA {
			switch elf.Data(data[elf.EI_DATA]) {
			case elf.ELFDATA2LSB:
				in.Header.Endianness = "little"
			case elf.ELFDATA2MSB:
				in.Header.Endianness = "big"
			}
		}
		if len(data) > elf.EI_OSABI {
			osabi := elf.OSABI(data[elf.EI_OSABI])
			in.Header.OSABI = field(uint64(osabi), osabi.String(), "e_ident[EI_OSABI]")
		}
		in.unresolved("ELF identification", 0, elf.EI_NIDENT, fmt.Sprintf("the file ends inside e_ident (%d of %d bytes)", len(data), elf.EI_NIDENT))
		return nil, false
	}
	h := &elfHeader{class: elf.Class(data[elf.EI_CLASS]), osabi: elf.OSABI(data[elf.EI_OSABI])}
	in.Header.Class = h.class.String()
	switch elf.Data(data[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		h.order = binary.LittleEndian
		in.Header.Endianness = "little"
	case elf.ELFDATA2MSB:
		h.order = binary.BigEndian
		in.Header.Endianness = "big"
	default:
		in.unresolved("ELF identification", elf.EI_DATA, 1, fmt.Sprintf("EI_DATA %d is not a known data encoding", data[elf.EI_DATA]))
		return nil, false
	}
	osabi := elf.OSABI(data[elf.EI_OSABI])
	in.Header.OSABI = field(uint64(osabi), osabi.String(), "e_ident[EI_OSABI]")
	var size int
	switch h.class {
	case elf.ELFCLASS32:
		size = 52
	case elf.ELFCLASS64:
		size = 64
	default:
		in.unresolved("ELF identification", elf.EI_CLASS, 1, fmt.Sprintf("EI_CLASS %d is not a known class", data[elf.EI_CLASS]))
		return nil, false
	}
	if len(data) < size {
		in.unresolved("ELF file header", 0, uint64(size), "the file ends inside the ELF header")
		return nil, false
	}
	o := h.order
	h.typ = elf.Type(o.Uint16(data[16:]))
	h.machine = elf.Machine(o.Uint16(data[18:]))
	var flags uint32
	if h.class == elf.ELFCLASS64 {
		h.entry, h.phoff, h.shoff = o.Uint64(data[24:]), o.Uint64(data[32:]), o.Uint64(data[40:])
		flags = o.Uint32(data[48:])
		h.phentsize, h.phnum = uint64(o.Uint16(data[54:])), uint64(o.Uint16(data[56:]))
		h.shentsize, h.shnum = uint64(o.Uint16(data[58:])), uint64(o.Uint16(data[60:]))
	} else {
		h.entry, h.phoff, h.shoff = uint64(o.Uint32(data[24:])), uint64(o.Uint32(data[28:])), uint64(o.Uint32(data[32:]))
		flags = o.Uint32(data[36:])
		h.phentsize, h.phnum = uint64(o.Uint16(data[42:])), uint64(o.Uint16(data[44:]))
		h.shentsize, h.shnum = uint64(o.Uint16(data[46:])), uint64(o.Uint16(data[48:]))
	}
	in.Header.Type = field(uint64(h.typ), h.typ.String(), "e_type")
	in.Header.Machine = field(uint64(h.machine), h.machine.String(), "e_machine")
	in.Header.Entry = hexU(h.entry)
	in.Header.EntrySource = "e_entry"
	in.Header.Flags = field(uint64(flags), "", "e_flags")
	return h, true
}

// elfProgs reads the program header table itself, bounded by the file.
func elfProgs(in *Inspection, h *elfHeader, data []byte) []elf.ProgHeader {
	if h.phnum == 0 {
		in.facet("segments", FacetComplete, "no program headers (e_phnum 0)")
		return nil
	}
	want := uint64(56)
	if h.class == elf.ELFCLASS32 {
		want = 32
	}
	if h.phentsize < want || h.phnum == 0xffff {
		in.unresolved("program header table", h.phoff, 0, fmt.Sprintf("e_phentsize %d / e_phnum %d is not a layout this reader resolves", h.phentsize, h.phnum))
		in.facet("segments", FacetUnresolved, "program header table unresolved")
		return nil
	}
	var progs []elf.ProgHeader
	o := h.order
	for i := uint64(0); i < h.phnum; i++ {
		off := h.phoff + i*h.phentsize
		b, ok := sliceAt(data, off, want)
		if !ok || off < h.phoff {
			in.unresolved(fmt.Sprintf("program header %d", i), off, want, "extends past the end of the file")
			break
		}
		var p elf.ProgHeader
		if h.class == elf.ELFCLASS64 {
			p = elf.ProgHeader{Type: elf.ProgType(o.Uint32(b[0:])), Flags: elf.ProgFlag(o.Uint32(b[4:])), Off: o.Uint64(b[8:]), Vaddr: o.Uint64(b[16:]), Paddr: o.Uint64(b[24:]), Filesz: o.Uint64(b[32:]), Memsz: o.Uint64(b[40:]), Align: o.Uint64(b[48:])}
		} else {
			p = elf.ProgHeader{Type: elf.ProgType(o.Uint32(b[0:])), Off: uint64(o.Uint32(b[4:])), Vaddr: uint64(o.Uint32(b[8:])), Paddr: uint64(o.Uint32(b[12:])), Filesz: uint64(o.Uint32(b[16:])), Memsz: uint64(o.Uint32(b[20:])), Flags: elf.ProgFlag(o.Uint32(b[24:])), Align: uint64(o.Uint32(b[28:]))}
		}
		progs = append(progs, p)
		in.Segments = append(in.Segments, Segment{Index: int(i), Type: progTypeName(p.Type, h.machine, h.osabi), Offset: decU(p.Off), Address: hexU(p.Vaddr), FileSize: decU(p.Filesz), MemSize: decU(p.Memsz), Flags: progFlags(p.Flags), FlagsRaw: hexU(uint64(p.Flags)), Align: hexU(p.Align)})
	}
	if uint64(len(progs)) == h.phnum {
		in.facet("segments", FacetComplete, "")
	} else {
		in.facet("segments", FacetPartial, fmt.Sprintf("%d of %d program headers resolved", len(progs), h.phnum))
	}
	return progs
}

// progTypeName names p_type as readelf -l does, with the PT_ prefix:
// the generic types, the GNU and OpenBSD OS-specific ones, the
// processor-specific ones of the file's machine, else LOOS+0x..,
// LOPROC+0x.. or the number (readelf's "<unknown>") — never a name that
// belongs to another machine. readelf leaves the machine off ARM and MIPS
// names (EXIDX, REGINFO); here they keep it (PT_ARM_EXIDX, as elf.h).
// Under ELFOSABI_SOLARIS the Solaris segment types are named
// (PT_SUNWBSS, PT_SUNW_UNWIND, ...); under a GNU or FreeBSD OSABI the
// PT_GNU_MBIND range is PT_GNU_MBIND+off.
func progTypeName(t elf.ProgType, m elf.Machine, osabi elf.OSABI) string {
	v := uint32(t)
	if v <= 7 {
		return t.String() // PT_NULL ... PT_TLS
	}
	if n, ok := map[uint32]string{
		0x6474e550: "GNU_EH_FRAME", 0x6474e551: "GNU_STACK", 0x6474e552: "GNU_RELRO", 0x6474e553: "GNU_PROPERTY", 0x6474e554: "GNU_SFRAME",
		0x65a3dbe6: "OPENBSD_RANDOMIZE", 0x65a3dbe7: "OPENBSD_WXNEED", 0x65a41be6: "OPENBSD_BOOTDATA",
	}[v]; ok {
		return "PT_" + n
	}
	switch {
	case (osabi == elf.ELFOSABI_LINUX || osabi == elf.ELFOSABI_FREEBSD) && v >= 0x6474e555 && v <= 0x6474f554:
		// PT_GNU_MBIND_LO..HI: memory policy segments, readelf's GNU_MBIND+off.
		if v == 0x6474e555 {
			return "PT_GNU_MBIND+0" // C's %#x prints 0 bare
		}
		return fmt.Sprintf("PT_GNU_MBIND+%#x", v-0x6474e555)
	case osabi == elf.ELFOSABI_SOLARIS:
		// sys/elf.h; readelf prints these with the PT_ prefix.
		if n, ok := map[uint32]string{0x6464e550: "SUNW_UNWIND", 0x6ffffff7: "LOSUNW", 0x6ffffffa: "SUNWBSS", 0x6ffffffb: "SUNWSTACK", 0x6ffffffc: "SUNWDTRACE", 0x6ffffffd: "SUNWCAP", 0x6fffffff: "HISUNW"}[v]; ok {
			return "PT_" + n
		}
	}
	if v >= 0x70000000 && v <= 0x7fffffff {
		var n string
		switch m {
		case elf.EM_ARM:
			n = map[uint32]string{0x70000001: "ARM_EXIDX"}[v]
		case elf.EM_AARCH64:
			n = map[uint32]string{0x70000000: "AARCH64_ARCHEXT", 0x70000002: "AARCH64_MEMTAG_MTE"}[v]
		case elf.EM_MIPS, elf.EM_MIPS_RS3_LE:
			n = map[uint32]string{0x70000000: "MIPS_REGINFO", 0x70000001: "MIPS_RTPROC", 0x70000002: "MIPS_OPTIONS", 0x70000003: "MIPS_ABIFLAGS"}[v]
		case elf.EM_RISCV:
			n = map[uint32]string{0x70000003: "RISCV_ATTRIBUTES"}[v]
		}
		if n != "" {
			return "PT_" + n
		}
	}
	return rangeTypeName("PT_", v)
}

// rangeTypeName spells a section or segment type no table names as
// readelf does: LOOS+off, LOPROC+off or LOUSER+off within those ranges
// (off in hex, 0 as "0"), else the number in hex.
func rangeTypeName(prefix string, v uint32) string {
	off := func(base uint32) string {
		if v == base {
			return "0"
		}
		return fmt.Sprintf("%#x", v-base)
	}
	switch {
	case v >= 0x60000000 && v <= 0x6fffffff:
		return prefix + "LOOS+" + off(0x60000000)
	case v >= 0x70000000 && v <= 0x7fffffff:
		return prefix + "LOPROC+" + off(0x70000000)
	case v >= 0x80000000 && prefix == "SHT_" && v <= 0x8fffffff:
		return prefix + "LOUSER+" + off(0x80000000)
	}
	return hexU(uint64(v))
}

// progFlags renders p_flags as readelf does: R, W, E in that order.
func progFlags(f elf.ProgFlag) string {
	var b strings.Builder
	for _, x := range []struct {
		bit elf.ProgFlag
		c   byte
	}{{elf.PF_R, 'R'}, {elf.PF_W, 'W'}, {elf.PF_X, 'E'}} {
		if f&x.bit != 0 {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}

// sectionFlags renders sh_flags with readelf -S's letters, lowest bit
// first: W A X M S I L O G T C E for the generic flags; R (SHF_GNU_RETAIN)
// and D (SHF_GNU_MBIND) when EI_OSABI is GNU or FreeBSD; the machine's own
// letters (x86-64 l for SHF_X86_64_LARGE, ARM y for SHF_ARM_PURECODE),
// D also under OSABI NONE, as readelf;
// then, as readelf does, one o for any other OS-specific bits, one p for
// any other processor-specific bits (which also covers E when a lower
// processor bit came first), and x for each unknown generic bit.
func sectionFlags(f uint64, m elf.Machine, osabi elf.OSABI) string {
	const maskOS, maskProc = 0x0ff00000, 0xf0000000
	gnu := osabi == elf.ELFOSABI_LINUX || osabi == elf.ELFOSABI_FREEBSD
	var b strings.Builder
	for f != 0 {
		bit := f & -f
		f &^= bit
		switch {
		case bit <= 0x800 && bit != 0x8:
			b.WriteByte(map[uint64]byte{0x1: 'W', 0x2: 'A', 0x4: 'X', 0x10: 'M', 0x20: 'S', 0x40: 'I', 0x80: 'L', 0x100: 'O', 0x200: 'G', 0x400: 'T', 0x800: 'C'}[bit])
		case bit == 0x80000000:
			b.WriteByte('E') // SHF_EXCLUDE
		case bit == 0x200000 && gnu:
			b.WriteByte('R') // SHF_GNU_RETAIN
		case bit == 0x1000000 && (gnu || osabi == elf.ELFOSABI_NONE):
			b.WriteByte('D') // SHF_GNU_MBIND
		case bit == 0x10000000 && m == elf.EM_X86_64:
			b.WriteByte('l') // SHF_X86_64_LARGE
		case bit == 0x20000000 && m == elf.EM_ARM:
			b.WriteByte('y') // SHF_ARM_PURECODE
		case bit&maskOS != 0:
			b.WriteByte('o')
			f &^= maskOS
		case bit&maskProc != 0:
			b.WriteByte('p')
			f &^= maskProc
		default:
			b.WriteByte('x')
		}
	}
	return b.String()
}

// openELF admits data through debug/elf, guarding against reader panics.
func openELF(in *Inspection, h *elfHeader, data []byte) *elf.File {
	var f *elf.File
	var err error
	if !guard(in, "section header table", h.shoff, func() { f, err = elf.NewFile(bytes.NewReader(data)) }) {
		return nil
	}
	if err != nil {
		end := h.shoff + h.shnum*h.shentsize
		reason := "debug/elf did not admit the section structure: " + err.Error()
		if h.shnum > 0 && (end < h.shoff || end > uint64(len(data))) {
			reason = fmt.Sprintf("section header table (%d entries of %d bytes) extends past the end of the file", h.shnum, h.shentsize)
		}
		in.unresolved("section header table", h.shoff, h.shnum*h.shentsize, reason)
		return nil
	}
	return f
}

func inspectELF(ctx context.Context, in *Inspection, data []byte) {
	h, ok := readELFHeader(in, data)
	if !ok {
		in.facet("header", FacetPartial, "the ELF header is incomplete")
		for _, n := range []string{"sections", "segments", "dynamic", "imports", "exports", "build_id", "go_build_info", "hardening"} {
			in.facet(n, FacetUnresolved, "the ELF header is incomplete")
		}
		return
	}
	in.facet("header", FacetComplete, "")
	progs := elfProgs(in, h, data)
	f := openELF(in, h, data)
	in.Admitted = f != nil
	if f != nil {
		in.dynsyms = sync.OnceValues(f.DynamicSymbols)
	}
	if f == nil {
		for _, n := range []string{"sections", "imports", "exports", "build_id"} {
			in.facet(n, FacetUnresolved, "the section header table was not admitted")
		}
		in.facet("go_build_info", FacetUnresolved, "the section header table was not admitted")
		if in.Facets["segments"].State == FacetComplete {
			// The loaded notes are still there: read them through
			// PT_NOTE, as readelf -n does. Notes only in sections
			// (not loaded) stay unknown.
			elfNotes(in, h.order, nil, progs, data)
			in.facet("build_id", FacetPartial, "read through the PT_NOTE segments: the section header table was not admitted, so notes in sections no segment loads are unknown")
		}
		tags := elfDynamic(in, h, nil, progs, data)
		elfHardening(in, h, progs, nil, tags, data)
		return
	}
	// Sections.
	secState := FacetComplete
	for i, s := range f.Sections {
		if ctx.Err() != nil {
			return
		}
		// debug/elf reports a compressed section's uncompressed size as
		// Size; sh_size is FileSize.
		sec := Section{Index: i, Name: s.Name, Type: sectionTypeName(s.Type, h.machine, h.osabi), Address: hexU(s.Addr), Offset: decU(s.Offset), Size: decU(s.FileSize), FlagsRaw: hexU(rawSectionFlags(h, data, i, s.Flags))}
		sec.Flags = sectionFlags(rawSectionFlags(h, data, i, s.Flags), h.machine, h.osabi)
		claim, compressed := s.Size, s.Flags&elf.SHF_COMPRESSED != 0
		if z, ok := zdebugClaim(s, data); ok && !compressed {
			// A GNU .zdebug_ section: "ZLIB" and the big-endian
			// uncompressed size, which the DWARF readers allocate.
			claim, compressed = z, true
		}
		if compressed {
			sec.UncompressedSize = decU(claim)
			// debug/elf decompresses exactly the size the compression
			// header claims, so the claims bound the work.
			if claim > MaxDecompressedBytes-in.decompressClaim {
				if in.oversized == nil {
					in.oversized = map[string]bool{}
				}
				in.oversized[s.Name] = true
				in.unresolved("section "+s.Name+" decompressed contents", s.Offset, s.FileSize, fmt.Sprintf("the compression header claims %d uncompressed bytes; with the file's other compressed sections that passes the limit of %d decompressed bytes per file, so the section is not decompressed", claim, MaxDecompressedBytes))
			} else {
				in.decompressClaim += claim
			}
		}
		switch {
		case s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL:
			sec.FileSize = "0"
			sec.Content = "none"
		default:
			sec.FileSize = decU(s.FileSize)
			if b, ok := sliceAt(data, s.Offset, s.FileSize); ok {
				in.digest(&sec, b)
			} else {
				sec.Content = "unresolved"
				secState = FacetPartial
				in.unresolved("section "+s.Name+" contents", s.Offset, s.FileSize, "extends past the end of the file")
			}
		}
		in.Sections = append(in.Sections, sec)
	}
	in.facet("sections", secState, "")
	disarmOversized(in, f)
	tags := elfDynamic(in, h, f, progs, data)
	elfImportsExports(in, f, data)
	elfNotes(in, f.ByteOrder, f.Sections, progs, data)
	goBuildInfo(in, data)
	elfHardening(in, h, progs, f, tags, data)
}

// zdebugClaim returns the uncompressed size a GNU-style compressed
// DWARF section (.zdebug_*, contents "ZLIB" then a big-endian 64-bit
// size, then zlib data) claims, and whether s is one.
func zdebugClaim(s *elf.Section, data []byte) (uint64, bool) {
	if !strings.HasPrefix(s.Name, ".zdebug_") || s.Type == elf.SHT_NOBITS {
		return 0, false
	}
	b, ok := sliceAt(data, s.Offset, 12)
	if !ok || s.FileSize < 12 || string(b[:4]) != "ZLIB" {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[4:]), true
}

// rawSectionFlags returns section i's sh_flags as the section header
// holds it: all 64 bits in an ELFCLASS64 file (debug/elf keeps 32 of
// them), or f when the header cannot be read.
func rawSectionFlags(h *elfHeader, data []byte, i int, f elf.SectionFlag) uint64 {
	if h.class != elf.ELFCLASS64 {
		return uint64(f)
	}
	off := h.shoff + uint64(i)*h.shentsize + 8
	if b, ok := sliceAt(data, off, 8); ok && off > h.shoff && h.shentsize >= 16 {
		return h.order.Uint64(b)
	}
	return uint64(f)
}

// sectionTypeName names sh_type as readelf -S does, with the SHT_
// prefix (except that readelf leaves GNU_ off VERDEF, VERNEED and VERSYM):
// the generic types, the GNU OS-specific ones, the processor-specific ones
// of the file's machine (x86-64, ARM, AArch64, RISC-V), else LOOS+0x..,
// LOPROC+0x.., LOUSER+0x.. or the number (readelf's "<unknown>").
// The OS-specific range follows EI_OSABI as readelf does: under
// ELFOSABI_SOLARIS the Solaris types (SHT_SUNW_cap, SHT_SUNW_move, ...,
// with readelf's mixed case) replace GNU_ATTRIBUTES and
// GNU_INCREMENTAL_INPUTS; the version, GNU_HASH and GNU_LIBLIST types
// keep their GNU names under every OSABI, as readelf's do.
func sectionTypeName(t elf.SectionType, m elf.Machine, osabi elf.OSABI) string {
	v := uint32(t)
	switch {
	case v <= 11 || v >= 14 && v <= 18:
		return t.String() // SHT_NULL ... SHT_SYMTAB_SHNDX
	case v == 19: // generic ABI (2022): relative relocations, -z pack-relative-relocs
		return "SHT_RELR"
	}
	if n, ok := gnuSectionTypes()[v]; ok {
		return "SHT_" + n
	}
	if v >= 0x60000000 && v <= 0x6fffffff {
		n, ok := gnuOSSectionTypes()[v]
		if osabi == elf.ELFOSABI_SOLARIS {
			n, ok = solarisSectionTypes()[v]
		}
		if ok {
			return "SHT_" + n
		}
	}
	var n string
	switch m {
	case elf.EM_X86_64:
		n = map[uint32]string{0x70000001: "X86_64_UNWIND"}[v]
	case elf.EM_ARM:
		n = map[uint32]string{0x70000001: "ARM_EXIDX", 0x70000002: "ARM_PREEMPTMAP", 0x70000003: "ARM_ATTRIBUTES", 0x70000004: "ARM_DEBUGOVERLAY", 0x70000005: "ARM_OVERLAYSECTION"}[v]
	case elf.EM_AARCH64:
		n = map[uint32]string{0x70000003: "AARCH64_ATTRIBUTES"}[v]
	case elf.EM_RISCV:
		n = map[uint32]string{0x70000003: "RISCV_ATTRIBUTES"}[v]
	case elf.EM_MIPS, elf.EM_MIPS_RS3_LE:
		n = map[uint32]string{0x70000000: "MIPS_LIBLIST", 0x70000001: "MIPS_MSYM", 0x70000002: "MIPS_CONFLICT", 0x70000003: "MIPS_GPTAB"}[v]
	}
	if n != "" {
		return "SHT_" + n
	}
	return rangeTypeName("SHT_", v)
}

// gnuSectionTypes are the section types readelf names before it looks at
// EI_OSABI (0x6ffffffc is an older VERDEF, 0x6ffffff0 an older VERSYM).
var gnuSectionTypes = sync.OnceValue(func() map[uint32]string {
	return map[uint32]string{
		0x6ffffff6: "GNU_HASH", 0x6ffffff7: "GNU_LIBLIST",
		0x6ffffffc: "GNU_VERDEF", 0x6ffffffd: "GNU_VERDEF", 0x6ffffffe: "GNU_VERNEED", 0x6fffffff: "GNU_VERSYM", 0x6ffffff0: "GNU_VERSYM",
		0x7ffffffd: "AUXILIARY", 0x7fffffff: "FILTER",
	}
})

// gnuOSSectionTypes are the OS-specific section types readelf names under
// every EI_OSABI but Solaris.
var gnuOSSectionTypes = sync.OnceValue(func() map[uint32]string {
	return map[uint32]string{0x6fff4700: "GNU_INCREMENTAL_INPUTS", 0x6ffffff5: "GNU_ATTRIBUTES"}
})

// solarisSectionTypes are the Solaris OS-specific section types
// (sys/elf.h SHT_SUNW_*), spelled as readelf prints them under
// ELFOSABI_SOLARIS.
var solarisSectionTypes = sync.OnceValue(func() map[uint32]string {
	return map[uint32]string{
		0x6fffffee: "SUNW_ancillary", 0x6fffffef: "SUNW_capchain", 0x6ffffff1: "SUNW_symsort", 0x6ffffff2: "SUNW_tlssort",
		0x6ffffff3: "SUNW_LDYNSYM", 0x6ffffff4: "SUNW_dof", 0x6ffffff5: "SUNW_cap", 0x6ffffff8: "SUNW_DEBUGSTR",
		0x6ffffff9: "SUNW_DEBUG", 0x6ffffffa: "SUNW_move", 0x6ffffffb: "SUNW_COMDAT",
	}
})

// dynTags holds the integer values of the dynamic tags hardening rests on,
// or known false when the dynamic table could not be read.
type dynTags struct {
	known bool
	vals  map[elf.DynTag][]uint64
}

func (t dynTags) first(tag elf.DynTag) (uint64, bool) {
	v := t.vals[tag]
	if len(v) == 0 {
		return 0, false
	}
	return v[0], true
}

// elfDynamic reads the dynamic facts from SHT_DYNAMIC through debug/elf
// when the section table has one, else from the PT_DYNAMIC segment (the
// loader's view: section headers may be stripped or unresolved).
func elfDynamic(in *Inspection, h *elfHeader, f *elf.File, progs []elf.ProgHeader, data []byte) dynTags {
	d := &Dynamic{Needed: []string{}, RPath: []string{}, RunPath: []string{}}
	in.Dynamic = d
	var dynSeg *elf.ProgHeader
	interpMissing := false
	for i, p := range progs {
		switch p.Type {
		case elf.PT_INTERP:
			if p.Filesz == 0 {
				// A debug-only companion (objcopy --only-keep-debug) keeps
				// the program headers but not the segment contents.
				in.unresolved("PT_INTERP contents", p.Off, 0, "the interpreter is not present in the file (PT_INTERP file size 0, as in a debug-only companion file)")
				interpMissing = true
			} else if b, ok := sliceAt(data, p.Off, p.Filesz); ok {
				d.Interpreter = string(bytes.TrimRight(b, "\x00"))
			} else {
				in.unresolved("PT_INTERP contents", p.Off, p.Filesz, "extends past the end of the file")
			}
		case elf.PT_DYNAMIC:
			dynSeg = &progs[i]
		}
	}
	if f == nil || f.SectionByType(elf.SHT_DYNAMIC) == nil {
		if dynSeg == nil {
			if in.Facets["segments"].State != FacetComplete {
				in.facet("dynamic", FacetUnresolved, "program headers unresolved")
				return dynTags{}
			}
			in.facet("dynamic", FacetComplete, "no PT_DYNAMIC program header: statically linked")
			return dynTags{known: true}
		}
		if dynSeg.Filesz == 0 {
			in.unresolved("PT_DYNAMIC contents", dynSeg.Off, 0, "the dynamic section is not present in the file (PT_DYNAMIC file size 0, SHT_NOBITS .dynamic: a debug-only companion file)")
			in.facet("dynamic", FacetUnresolved, "the dynamic section is not present in the file")
			in.Dynamic, in.Libraries = nil, nil
			return dynTags{}
		}
		tags := elfDynamicSegment(in, h, progs, dynSeg, data)
		if interpMissing {
			in.facet("dynamic", FacetPartial, "the interpreter is not present in the file")
		}
		return tags
	}
	tags := dynTags{known: true, vals: map[elf.DynTag][]uint64{}}
	state := FacetComplete
	var err error
	strs := func(tag elf.DynTag) []string {
		var v []string
		ok := guard(in, "dynamic section", 0, func() { v, err = f.DynString(tag) })
		if !ok || err != nil {
			// Not read: unknown (null), never none.
			state = FacetPartial
			return nil
		}
		if v == nil {
			return []string{}
		}
		return v
	}
	d.Needed, d.RPath, d.RunPath = strs(elf.DT_NEEDED), strs(elf.DT_RPATH), strs(elf.DT_RUNPATH)
	if so := strs(elf.DT_SONAME); len(so) > 0 {
		d.SOName = so[0]
	}
	for _, tag := range []elf.DynTag{elf.DT_FLAGS, elf.DT_FLAGS_1, elf.DT_BIND_NOW, elf.DT_DEBUG} {
		var v []uint64
		var e error
		if guard(in, "dynamic section", 0, func() { v, e = f.DynValue(tag) }) && e == nil {
			tags.vals[tag] = v
		} else {
			state = FacetPartial
		}
	}
	if v, ok := tags.first(elf.DT_FLAGS); ok {
		d.Flags = hexU(v)
	}
	if v, ok := tags.first(elf.DT_FLAGS_1); ok {
		d.Flags1 = hexU(v)
	}
	if state != FacetComplete {
		s := f.SectionByType(elf.SHT_DYNAMIC)
		in.unresolved("dynamic section", s.Offset, s.Size, "the dynamic section or its string table could not be read")
		tags.known = false
	}
	in.Libraries = append(in.Libraries, d.Needed...)
	if d.Needed == nil {
		in.Libraries = nil
	}
	reason := ""
	if state != FacetComplete {
		reason = "the dynamic section or its string table could not be read"
	}
	if interpMissing && state == FacetComplete {
		state, reason = FacetPartial, "the interpreter is not present in the file"
	}
	in.facet("dynamic", state, reason)
	return tags
}

// elfDynamicSegment reads the dynamic array at PT_DYNAMIC (gABI "Dynamic
// Section") and its string table located through DT_STRTAB/DT_STRSZ and
// the PT_LOAD mappings.
func elfDynamicSegment(in *Inspection, h *elfHeader, progs []elf.ProgHeader, p *elf.ProgHeader, data []byte) dynTags {
	b, ok := sliceAt(data, p.Off, p.Filesz)
	if !ok {
		in.unresolved("PT_DYNAMIC contents", p.Off, p.Filesz, "extends past the end of the file")
		in.facet("dynamic", FacetUnresolved, "PT_DYNAMIC contents unresolved")
		return dynTags{}
	}
	ent := 16
	if h.class == elf.ELFCLASS32 {
		ent = 8
	}
	tags := dynTags{known: true, vals: map[elf.DynTag][]uint64{}}
	type kv struct {
		tag elf.DynTag
		val uint64
	}
	var list []kv
	for i := 0; i+ent <= len(b); i += ent {
		var t, v uint64
		if ent == 16 {
			t, v = h.order.Uint64(b[i:]), h.order.Uint64(b[i+8:])
		} else {
			t, v = uint64(h.order.Uint32(b[i:])), uint64(h.order.Uint32(b[i+4:]))
		}
		if elf.DynTag(t) == elf.DT_NULL {
			break
		}
		list = append(list, kv{elf.DynTag(t), v})
		tags.vals[elf.DynTag(t)] = append(tags.vals[elf.DynTag(t)], v)
	}
	d := in.Dynamic
	state := FacetComplete
	strtab, _ := tags.first(elf.DT_STRTAB)
	strsz, _ := tags.first(elf.DT_STRSZ)
	var str []byte
	for _, l := range progs {
		if l.Type == elf.PT_LOAD && strtab >= l.Vaddr && strtab-l.Vaddr < l.Filesz {
			str, ok = sliceAt(data, l.Off+(strtab-l.Vaddr), strsz)
			if !ok {
				str = nil
			}
		}
	}
	get := func(off uint64) (string, bool) {
		if off >= uint64(len(str)) {
			return "", false
		}
		s := str[off:]
		if i := bytes.IndexByte(s, 0); i >= 0 {
			return string(s[:i]), true
		}
		return "", false
	}
	// missed: lists with an entry whose string was not read; such a list
	// left empty is unknown (null), not none.
	missed := map[*[]string]bool{}
	for _, e := range list {
		var dst *[]string
		switch e.tag {
		case elf.DT_NEEDED:
			dst = &d.Needed
		case elf.DT_RPATH:
			dst = &d.RPath
		case elf.DT_RUNPATH:
			dst = &d.RunPath
		case elf.DT_SONAME:
		default:
			continue
		}
		v, ok := get(e.val)
		if !ok {
			state = FacetPartial
			if dst != nil {
				missed[dst] = true
			}
			continue
		}
		if dst == nil {
			d.SOName = v
		} else {
			*dst = append(*dst, v)
		}
	}
	if state != FacetComplete {
		in.unresolved("dynamic string table", strtab, strsz, "DT_STRTAB is not inside a PT_LOAD segment's file bytes")
	}
	if v, ok := tags.first(elf.DT_FLAGS); ok {
		d.Flags = hexU(v)
	}
	if v, ok := tags.first(elf.DT_FLAGS_1); ok {
		d.Flags1 = hexU(v)
	}
	for dst := range missed {
		if len(*dst) == 0 {
			*dst = nil
		}
	}
	in.Libraries = append(in.Libraries, d.Needed...)
	if d.Needed == nil {
		in.Libraries = nil
	}
	in.facet("dynamic", state, "read through PT_DYNAMIC (no SHT_DYNAMIC section available)")
	return tags
}

func elfImportsExports(in *Inspection, f *elf.File, data []byte) {
	var syms []elf.Symbol
	var err error
	if len(f.Sections) == 0 {
		in.facet("imports", FacetUnresolved, "no section header table: the dynamic symbol table is not located")
		in.facet("exports", FacetUnresolved, "no section header table: the dynamic symbol table is not located")
		return
	}
	if f.SectionByType(elf.SHT_DYNSYM) == nil {
		if s := f.Section(".dynsym"); s != nil && s.Type == elf.SHT_NOBITS {
			in.unresolved(".dynsym", s.Offset, 0, "the dynamic symbol table is not present in the file (SHT_NOBITS, as in a debug-only companion file)")
			in.facet("imports", FacetUnresolved, ".dynsym is not present in the file")
			in.facet("exports", FacetUnresolved, ".dynsym is not present in the file")
			in.Imports, in.Exports = nil, nil
			return
		}
		in.facet("imports", FacetComplete, "no .dynsym section")
		in.facet("exports", FacetComplete, "no .dynsym section")
		return
	}
	if !guard(in, ".dynsym", 0, func() { syms, err = in.dynsyms() }) || err != nil {
		s := f.SectionByType(elf.SHT_DYNSYM)
		in.unresolved(".dynsym", s.Offset, s.Size, "the dynamic symbol table could not be read")
		in.facet("imports", FacetUnresolved, ".dynsym unresolved")
		in.facet("exports", FacetUnresolved, ".dynsym unresolved")
		return
	}
	sec := f.SectionByType(elf.SHT_DYNSYM)
	names := elfNameCheck(f, sec, len(syms))
	vers := newELFVersionCheck(f, data)
	var lostNames, lostVers [2]int // imports, exports
	var verReason string
	// Size both lists once: a C library exports thousands of symbols, and
	// growing the slices by appending copied each row about twice.
	var nImp, nExp int
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF {
			nImp++
		} else if b := elf.ST_BIND(s.Info); b == elf.STB_GLOBAL || b == elf.STB_WEAK || b == stbGNUUnique {
			nExp++
		}
	}
	impNil, expNil := in.Imports == nil, in.Exports == nil
	in.Imports = slices.Grow(in.Imports, nImp)
	in.Exports = slices.Grow(in.Exports, nExp)
	defer func() {
		// A list none of whose rows survived stays as it was (nil).
		if impNil && len(in.Imports) == 0 {
			in.Imports = nil
		}
		if expNil && len(in.Exports) == 0 {
			in.Exports = nil
		}
	}()
	for i, s := range syms {
		bind := elf.ST_BIND(s.Info)
		kind := -1
		if s.Section == elf.SHN_UNDEF {
			kind = 0
		} else if bind == elf.STB_GLOBAL || bind == elf.STB_WEAK || bind == stbGNUUnique {
			kind = 1
		}
		if kind < 0 {
			continue
		}
		if names.reasons[i] != "" {
			lostNames[kind]++
			continue
		}
		if s.Name == "" {
			continue
		}
		var unknown map[string]string
		imp := Import{Name: s.Name, Library: s.Library, Version: s.Version, Source: ".dynsym"}
		if vers != nil {
			if ver, lib, r := vers.resolve(i, s); r != "" {
				unknown, verReason = map[string]string{"version": r}, r
				lostVers[kind]++
			} else if ver != "" {
				imp.Version, imp.Library, imp.VersionSource = ver, lib, "DT_VERNEED"
			}
		}
		if kind == 0 {
			imp.Unknown = unknown
			in.Imports = append(in.Imports, imp)
		} else {
			ex := Export{Name: s.Name, Address: hexU(s.Value), Source: ".dynsym", Unknown: unknown}
			ex.Version, ex.DefaultVersion = elfVersion(s)
			in.Exports = append(in.Exports, ex)
		}
	}
	if names.count > 0 {
		in.unresolved(".dynsym names", sec.Offset, sec.Size, cmp.Or(names.table, fmt.Sprintf("%d symbol names could not be read (%s)", names.count, names.first)))
	}
	if lostVers[0]+lostVers[1] > 0 {
		in.unresolved(".dynsym versions", vers.off, vers.size, fmt.Sprintf("the versions and libraries of %d symbols could not be read (%s)", lostVers[0]+lostVers[1], verReason))
	}
	for k, facet := range []string{"imports", "exports"} {
		var why []string
		if lostNames[k] > 0 {
			why = append(why, fmt.Sprintf("%d %s whose names could not be read are not listed", lostNames[k], facet))
		}
		if lostVers[k] > 0 {
			why = append(why, fmt.Sprintf("%d %s have an unknown version and library (their rows' unknown says why)", lostVers[k], facet))
		}
		if len(why) > 0 {
			in.facet(facet, FacetPartial, strings.Join(why, "; "))
		} else {
			in.facet(facet, FacetComplete, "")
		}
	}
}

// elfNotes reads every SHT_NOTE section (ELF gABI "Note Section"), or
// every PT_NOTE segment when the file has no section header table.
func elfNotes(in *Inspection, order binary.ByteOrder, sections []*elf.Section, progs []elf.ProgHeader, data []byte) {
	bid := &BuildID{}
	state := FacetComplete
	type region struct {
		Name         string
		Offset, Size uint64
	}
	var regions []region
	for _, s := range sections {
		if s.Type == elf.SHT_NOTE {
			regions = append(regions, region{s.Name, s.Offset, s.FileSize})
		}
	}
	if len(sections) == 0 {
		for i, p := range progs {
			if p.Type == elf.PT_NOTE {
				regions = append(regions, region{fmt.Sprintf("PT_NOTE[%d]", i), p.Off, p.Filesz})
			}
		}
	}
	for _, s := range regions {
		b, ok := sliceAt(data, s.Offset, s.Size)
		if !ok {
			state = FacetPartial
			continue // already listed as unresolved section contents
		}
		o := order
		pos := s.Offset
		for len(b) >= 12 {
			namesz, descsz, typ := uint64(o.Uint32(b)), uint64(o.Uint32(b[4:])), o.Uint32(b[8:])
			nameEnd := 12 + align4(namesz)
			descEnd := nameEnd + align4(descsz)
			if namesz > uint64(len(b)) || descsz > uint64(len(b)) || descEnd > uint64(len(b)) {
				state = FacetPartial
				in.unresolved("note in "+s.Name, pos, 0, "a note's name or descriptor extends past its section")
				break
			}
			owner := string(bytes.TrimRight(b[12:12+namesz], "\x00"))
			desc := b[nameEnd : nameEnd+descsz]
			bid.Notes = append(bid.Notes, Note{Owner: owner, Type: fmt.Sprintf("0x%x", typ), DescSize: decU(descsz), Section: s.Name})
			switch {
			case owner == "GNU" && typ == 3: // NT_GNU_BUILD_ID
				bid.GNU = hex.EncodeToString(desc)
			case owner == "Go" && typ == 4: // Go linker's build id note
				bid.Go = string(desc)
			case owner == "GNU" && typ == 5: // NT_GNU_PROPERTY_TYPE_0
				in.gnuProperty = append(in.gnuProperty, gnuPropertyNote{desc: desc, where: s.Name})
			}
			b = b[descEnd:]
			pos += descEnd
		}
	}
	in.BuildID = bid
	in.facet("build_id", state, "")
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// fortifiable lists every glibc function X that has a __X_chk variant
// (glibc's debug/ directory: the 79 __*_chk@@ definitions of glibc 2.36's
// libc.so.6, plus strlcpy, strlcat, wcslcpy and wcslcat of glibc 2.38),
// the set checksec compares a binary's imports with; an import of the
// plain name beside no variant is an unfortified call site. fdelt's
// variant __fdelt_chk serves the FD_SET macros.
var fortifiable = []string{
	"asprintf", "confstr", "dprintf", "explicit_bzero", "fdelt", "fgets",
	"fgets_unlocked", "fgetws", "fgetws_unlocked", "fprintf", "fread",
	"fread_unlocked", "fwprintf", "getcwd", "getdomainname", "getgroups",
	"gethostname", "getlogin_r", "gets", "getwd", "longjmp", "mbsnrtowcs",
	"mbsrtowcs", "mbstowcs", "memcpy", "memmove", "mempcpy", "memset",
	"obstack_printf", "obstack_vprintf", "poll", "ppoll", "pread64", "pread",
	"printf", "ptsname_r", "read", "readlink", "readlinkat", "realpath", "recv",
	"recvfrom", "snprintf", "sprintf", "stpcpy", "stpncpy", "strcat", "strcpy",
	"strlcat", "strlcpy", "strncat", "strncpy", "swprintf", "syslog",
	"ttyname_r", "vasprintf", "vdprintf", "vfprintf", "vfwprintf", "vprintf",
	"vsnprintf", "vsprintf", "vswprintf", "vsyslog", "vwprintf", "wcpcpy",
	"wcpncpy", "wcrtomb", "wcscat", "wcscpy", "wcslcat", "wcslcpy", "wcsncat",
	"wcsncpy", "wcsnrtombs", "wcsrtombs", "wcstombs", "wctomb", "wmemcpy",
	"wmemmove", "wmempcpy", "wmemset", "wprintf",
}

func elfHardening(in *Inspection, h *elfHeader, progs []elf.ProgHeader, f *elf.File, tags dynTags, data []byte) {
	segs := in.Facets["segments"].State == FacetComplete
	var interp, stack, relro, dyn *elf.ProgHeader
	for i := range progs {
		switch progs[i].Type {
		case elf.PT_INTERP:
			interp = &progs[i]
		case elf.PT_GNU_STACK:
			stack = &progs[i]
		case elf.PT_GNU_RELRO:
			relro = &progs[i]
		case elf.PT_DYNAMIC:
			dyn = &progs[i]
		}
	}
	add := func(name, verdict string, basis ...string) {
		in.Hardening = append(in.Hardening, Check{Name: name, Verdict: verdict, Basis: basis})
	}
	if h.typ == elf.ET_CORE {
		// checksec: N/A; a core file is a memory image, not loaded.
		for _, n := range []string{"pie", "nx", "relro", "stack_canary", "fortify", "no_rpath", "ibt", "shstk"} {
			add(n, VerdictNotApplicable, "e_type ET_CORE: a core dump is a memory image; the verdicts apply to the executable it was taken from")
		}
		in.facet("hardening", FacetComplete, "")
		return
	}
	if h.typ == elf.ET_REL {
		// A relocatable object is never loaded: the linker decides
		// PIE, RELRO, the stack's permissions and the search paths.
		add("pie", VerdictNotApplicable, "e_type ET_REL: a relocatable object is not loaded; the link decides")
		stackBasis := "no .note.GNU-stack section: the linker's default applies"
		if f != nil {
			if ns := f.Section(".note.GNU-stack"); ns != nil {
				if ns.Flags&elf.SHF_EXECINSTR != 0 {
					stackBasis = ".note.GNU-stack has SHF_EXECINSTR: the object asks for an executable stack"
				} else {
					stackBasis = ".note.GNU-stack without SHF_EXECINSTR: the object asks for a non-executable stack"
				}
			}
		}
		add("nx", VerdictNotApplicable, "e_type ET_REL: the stack's permission is set when linking", stackBasis)
		add("relro", VerdictNotApplicable, "e_type ET_REL: RELRO is set when linking")
		add("no_rpath", VerdictNotApplicable, "e_type ET_REL: search paths are set when linking")
	}
	flags, haveFlags := tags.first(elf.DT_FLAGS)
	flags1, haveFlags1 := tags.first(elf.DT_FLAGS_1)
	_, bindNow := tags.first(elf.DT_BIND_NOW)
	_, hasDebug := tags.first(elf.DT_DEBUG)
	rel := h.typ == elf.ET_REL
	// PIE.
	switch {
	case rel:
	case h.typ == elf.ET_EXEC:
		add("pie", VerdictNo, "e_type ET_EXEC")
	case h.typ == elf.ET_DYN && haveFlags1 && flags1&uint64(elf.DF_1_PIE) != 0:
		add("pie", VerdictYes, "e_type ET_DYN", "DT_FLAGS_1 has DF_1_PIE")
	case h.typ == elf.ET_DYN && !tags.known:
		add("pie", VerdictUnknown, "e_type ET_DYN", "dynamic section unresolved")
	case h.typ == elf.ET_DYN && hasDebug:
		add("pie", VerdictYes, "e_type ET_DYN", "DT_DEBUG present (an executable's dynamic section)")
	case h.typ == elf.ET_DYN && interp != nil:
		add("pie", VerdictNotApplicable, "e_type ET_DYN with PT_INTERP but neither DF_1_PIE nor DT_DEBUG: a shared object that can also be run (as libc.so.6 can)")
	case h.typ == elf.ET_DYN:
		add("pie", VerdictNotApplicable, "e_type ET_DYN without PT_INTERP or DF_1_PIE: a shared object")
	default:
		add("pie", VerdictNotApplicable, "e_type "+h.typ.String())
	}
	// NX.
	switch {
	case rel:
	case stack != nil && stack.Flags&elf.PF_X == 0:
		add("nx", VerdictYes, "PT_GNU_STACK flags "+progFlags(stack.Flags)+" (no PF_X)")
	case stack != nil:
		add("nx", VerdictNo, "PT_GNU_STACK flags "+progFlags(stack.Flags)+" (PF_X set)")
	case !segs:
		add("nx", VerdictUnknown, "program header table not fully resolved")
	default:
		add("nx", VerdictNo, "no PT_GNU_STACK program header: the loader's default (executable stack) applies")
	}
	// RELRO.
	now := bindNow || (haveFlags && flags&uint64(elf.DF_BIND_NOW) != 0) || (haveFlags1 && flags1&uint64(elf.DF_1_NOW) != 0)
	var nowBasis []string
	if bindNow {
		nowBasis = append(nowBasis, "DT_BIND_NOW")
	}
	if haveFlags && flags&uint64(elf.DF_BIND_NOW) != 0 {
		nowBasis = append(nowBasis, "DT_FLAGS has DF_BIND_NOW")
	}
	if haveFlags1 && flags1&uint64(elf.DF_1_NOW) != 0 {
		nowBasis = append(nowBasis, "DT_FLAGS_1 has DF_1_NOW")
	}
	switch {
	case rel:
	case relro != nil && now:
		add("relro", VerdictFull, append([]string{"PT_GNU_RELRO present"}, nowBasis...)...)
	case relro != nil && dyn != nil && !tags.known:
		add("relro", VerdictUnknown, "PT_GNU_RELRO present", "dynamic section unresolved")
	case relro != nil:
		add("relro", VerdictPartial, "PT_GNU_RELRO present", "no DT_BIND_NOW, DF_BIND_NOW or DF_1_NOW: lazy binding leaves the GOT writable")
	case !segs:
		add("relro", VerdictUnknown, "program header table not fully resolved")
	default:
		add("relro", VerdictNone, "no PT_GNU_RELRO program header")
	}
	rpathCheck := func() {
		d := in.Dynamic
		switch {
		case rel:
		case d == nil || in.Facets["dynamic"].State != FacetComplete:
			add("no_rpath", VerdictUnknown, "dynamic table not fully resolved")
		case len(d.RPath) > 0 || len(d.RunPath) > 0:
			var b []string
			if len(d.RPath) > 0 {
				b = append(b, "DT_RPATH "+strings.Join(d.RPath, ":"))
			}
			if len(d.RunPath) > 0 {
				b = append(b, "DT_RUNPATH "+strings.Join(d.RunPath, ":"))
			}
			add("no_rpath", VerdictNo, b...)
		case dyn == nil:
			add("no_rpath", VerdictYes, "no PT_DYNAMIC program header: statically linked")
		default:
			add("no_rpath", VerdictYes, "no DT_RPATH or DT_RUNPATH entry")
		}
	}
	elfCET(in, h, add)
	if f == nil {
		add("stack_canary", VerdictUnknown, "symbol tables unresolved")
		add("fortify", VerdictUnknown, "symbol tables unresolved")
		add("stripped", VerdictUnknown, "section header table unresolved")
		rpathCheck()
		in.facet("hardening", FacetPartial, "verdicts resting on symbol tables are unknown")
		return
	}
	// Symbols for canary and fortify: only undefined references (imports)
	// show use; a definition (the C library itself, or a library that
	// exports __stack_chk_fail) is not use.
	names := map[string]string{}   // undefined references -> table
	defined := map[string]string{} // definitions -> table
	ht := hardening()
	symState := FacetComplete
	tables := 0
	symtab := false
	for _, t := range []struct {
		typ  elf.SectionType
		name string
		read func() ([]elf.Symbol, error)
	}{{elf.SHT_DYNSYM, ".dynsym", in.dynsyms}, {elf.SHT_SYMTAB, ".symtab", f.Symbols}} {
		if f.SectionByType(t.typ) == nil {
			continue
		}
		tables++
		symtab = symtab || t.typ == elf.SHT_SYMTAB
		// note records one symbol whose name, less any @version, is
		// one of the hardening names (ht).
		note := func(n string, section elf.SectionIndex) {
			m := defined
			if section == elf.SHN_UNDEF {
				m = names
			}
			if _, ok := m[n]; !ok {
				m[n] = t.name
			}
		}
		// The static symbol table (the large one) is read in place;
		// debug/elf reads it when it is not plain file bytes, and reads
		// .dynsym (whose symbol versions it checks).
		if t.typ == elf.SHT_SYMTAB && scanSymtab(f, data, func(strtab []byte, name uint64, section elf.SectionIndex) {
			if n, ok := ht.name(strtab, name); ok {
				note(n, section)
			}
		}) {
			continue
		}
		var syms []elf.Symbol
		var err error
		if !guard(in, t.name, 0, func() { syms, err = t.read() }) || err != nil {
			symState = FacetPartial
			continue
		}
		for _, s := range syms {
			n := s.Name
			if i := strings.IndexByte(n, '@'); i > 0 {
				n = n[:i]
			}
			if ht.names[n] {
				note(n, s.Section)
			}
		}
	}
	if in.Facets["imports"].State == FacetUnresolved && symtab == false {
		symState = FacetPartial
	}
	staticExe := dyn == nil && h.typ != elf.ET_REL
	guards, guardWhere, guardRead := stackGuardAccesses(f, h, data)
	guardBasis := fmt.Sprintf("%d instructions read the stack guard %s in the executable sections", guards, guardWhere)
	if staticExe && guards > 0 {
		guardBasis += " (the program's code and the library code linked in)"
	}
	switch {
	case names["__stack_chk_fail"] != "" && guards > 0:
		add("stack_canary", VerdictYes, "undefined symbol __stack_chk_fail in "+names["__stack_chk_fail"], guardBasis)
	case names["__stack_chk_fail"] != "":
		add("stack_canary", VerdictYes, "undefined symbol __stack_chk_fail in "+names["__stack_chk_fail"])
	case names["__stack_chk_guard"] != "":
		add("stack_canary", VerdictYes, "undefined symbol __stack_chk_guard in "+names["__stack_chk_guard"])
	case guards > 0:
		// The code itself shows the check (the C library, a static
		// or stripped build): the symbols need not say so.
		add("stack_canary", VerdictYes, guardBasis)
	case guardRead && tables > 0 && symState == FacetComplete:
		b := []string{"no undefined __stack_chk_fail or __stack_chk_guard symbol in .dynsym/.symtab", guardBasis}
		if defined["__stack_chk_fail"] != "" {
			b = append(b, "__stack_chk_fail is defined in "+defined["__stack_chk_fail"]+": a definition is not use")
		}
		add("stack_canary", VerdictNo, b...)
	case guardRead && tables == 0:
		add("stack_canary", VerdictNo, "no .dynsym or .symtab: symbols stripped", guardBasis)
	case tables == 0:
		add("stack_canary", VerdictUnknown, "no .dynsym or .symtab: symbols stripped", "the code was not read for stack-guard loads ("+guardWhere+")")
	case symState != FacetComplete:
		add("stack_canary", VerdictUnknown, "a symbol table could not be read")
	case staticExe && defined["__stack_chk_fail"] != "":
		add("stack_canary", VerdictUnknown, "statically linked: __stack_chk_fail is defined in "+defined["__stack_chk_fail"]+" (the C library linked in); a definition does not show that the program's code uses it", "the code was not read for stack-guard loads ("+guardWhere+")")
	case defined["__stack_chk_fail"] != "":
		add("stack_canary", VerdictUnknown, "__stack_chk_fail is defined in "+defined["__stack_chk_fail"]+" but not referenced", "the code was not read for stack-guard loads ("+guardWhere+")")
	default:
		add("stack_canary", VerdictNo, "no undefined __stack_chk_fail or __stack_chk_guard symbol in .dynsym/.symtab")
	}
	var fortified, plain, definedChk []string
	for _, fn := range fortifiable {
		if names["__"+fn+"_chk"] != "" {
			fortified = append(fortified, "__"+fn+"_chk")
		} else if names[fn] != "" {
			plain = append(plain, fn)
		}
		if defined["__"+fn+"_chk"] != "" {
			definedChk = append(definedChk, "__"+fn+"_chk")
		}
	}
	sort.Strings(fortified)
	defNote := []string{}
	if len(definedChk) > 0 {
		defNote = append(defNote, fmt.Sprintf("%d __*_chk functions are defined here, not referenced: a definition is not use", len(definedChk)))
	}
	switch {
	case tables == 0:
		add("fortify", VerdictUnknown, "no .dynsym or .symtab: symbols stripped")
	case len(fortified) > 0 && len(plain) > 0:
		add("fortify", VerdictPartial, "fortified: "+strings.Join(fortified, ","), "unfortified imports: "+strings.Join(plain, ","))
	case len(fortified) > 0:
		add("fortify", VerdictYes, "fortified: "+strings.Join(fortified, ","))
	case symState != FacetComplete:
		add("fortify", VerdictUnknown, "a symbol table could not be read")
	case staticExe && len(definedChk) > 0:
		add("fortify", VerdictUnknown, append([]string{"statically linked: the C library's __*_chk functions are linked in"}, defNote...)...)
	case len(plain) > 0:
		add("fortify", VerdictNo, append([]string{"unfortified imports: " + strings.Join(plain, ","), "no undefined __*_chk symbol"}, defNote...)...)
	default:
		add("fortify", VerdictNotApplicable, append([]string{"no fortifiable libc function and no __*_chk symbol referenced in .dynsym/.symtab"}, defNote...)...)
	}
	if symtab {
		add("stripped", VerdictNo, ".symtab present")
	} else {
		add("stripped", VerdictYes, "no .symtab section")
	}
	rpathCheck()
	if symState != FacetComplete || !segs {
		in.facet("hardening", FacetPartial, "some verdicts rest on unresolved structure")
	} else {
		in.facet("hardening", FacetComplete, "")
	}
}

// scanSymtab calls visit with the string table, st_name (symName reads
// the name there as debug/elf does) and st_shndx of every entry of f's
// SHT_SYMTAB section after the first (null) one, reading the table and
// its string table in place in data, the file f was read from: nothing is
// copied or allocated per symbol. It returns false, having called visit
// for none, when the tables are not plain file bytes inside data (a
// compressed or SHT_NOBITS section, one extending past the end of the
// file, an invalid sh_link, a size that is zero or not a multiple of the
// entry size, an unknown class): the caller then reads them through
// debug/elf (File.Symbols), which decides those cases.
func scanSymtab(f *elf.File, data []byte, visit func(strtab []byte, name uint64, section elf.SectionIndex)) bool {
	s := f.SectionByType(elf.SHT_SYMTAB)
	var ent uint64
	switch f.Class {
	case elf.ELFCLASS64:
		ent = 24 // Elf64_Sym
	case elf.ELFCLASS32:
		ent = 16 // Elf32_Sym
	}
	if s == nil || ent == 0 || s.Flags&elf.SHF_COMPRESSED != 0 || s.Size == 0 || s.Size%ent != 0 {
		return false
	}
	if s.Link == 0 || int(s.Link) >= len(f.Sections) {
		return false
	}
	st := f.Sections[s.Link]
	if st.Type == elf.SHT_NOBITS || st.Flags&elf.SHF_COMPRESSED != 0 {
		return false
	}
	syms, ok := sliceAt(data, s.Offset, s.Size)
	if !ok {
		return false
	}
	strs, ok := sliceAt(data, st.Offset, st.Size)
	if !ok {
		return false
	}
	bo := f.ByteOrder
	for e := syms[ent:]; len(e) > 0; e = e[ent:] {
		// st_name is the first word of both layouts; st_shndx is at 6
		// (Elf64_Sym) or 14 (Elf32_Sym).
		off := uint64(bo.Uint32(e[0:4]))
		shndx := bo.Uint16(e[6:8])
		if ent == 16 {
			shndx = bo.Uint16(e[14:16])
		}
		visit(strs, off, elf.SectionIndex(shndx))
	}
	return true
}

// symName is the name at offset off of the string table strtab as
// debug/elf reads it: the bytes up to the next NUL, empty when off is
// past the table or the name has no NUL.
func symName(strtab []byte, off uint64) []byte {
	if off < uint64(len(strtab)) {
		if n := bytes.IndexByte(strtab[off:], 0); n >= 0 {
			return strtab[off : off+uint64(n)]
		}
	}
	return nil
}

// name returns the name at off of strtab (symName) less any @version
// suffix, and whether it is one of h.names. It reads at most h.maxName+1
// bytes of a name that is not: a longer name cannot be one.
func (h *hardeningTable) name(strtab []byte, off uint64) (string, bool) {
	if off >= uint64(len(strtab)) {
		return "", false
	}
	rest := strtab[off:]
	if len(rest) < 2 || h.prefixes[rest[0]][rest[1]>>6]&(1<<(rest[1]&63)) == 0 {
		// No hardening name starts with these two bytes (every one
		// has at least two).
		return "", false
	}
	head := rest[:min(len(rest), h.maxName+1)]
	i := -1
	for j, c := range head {
		if c == 0 || c == '@' {
			i = j
			break
		}
	}
	if i <= 0 {
		// No end within the longest name (or an empty name, or one
		// starting with @, which keeps its @): not one of them.
		return "", false
	}
	if !h.names[string(head[:i])] {
		return "", false
	}
	if head[i] == '@' && bytes.IndexByte(rest[i:], 0) < 0 {
		// Unterminated: debug/elf reads the name as empty.
		return "", false
	}
	return string(head[:i]), true
}

// hardeningTable holds the only symbol names elfHardening looks up (the
// stack protector's and each fortifiable function with its __*_chk
// form), the length of the longest, and prefixes, which has bit b%64 of
// word b/64 of entry a set when one of the names starts with the bytes
// a, b. Built on first use (hardening), not at package initialisation:
// every command links this package, few inspect a binary.
type hardeningTable struct {
	names    map[string]bool
	maxName  int
	prefixes [256][4]uint64
}

// hardening returns the hardeningTable, built once.
var hardening = sync.OnceValue(func() *hardeningTable {
	h := &hardeningTable{names: make(map[string]bool, 2+2*len(fortifiable))}
	h.names["__stack_chk_fail"] = true
	h.names["__stack_chk_guard"] = true
	for _, fn := range fortifiable {
		h.names[fn] = true
		h.names["__"+fn+"_chk"] = true
	}
	for s := range h.names {
		h.maxName = max(h.maxName, len(s))
		h.prefixes[s[0]][s[1]>>6] |= 1 << (s[1] & 63)
	}
	return h
})

// gnuPropertyNote is the descriptor of one NT_GNU_PROPERTY_TYPE_0 note
// and the section (or PT_NOTE segment) it was read from.
type gnuPropertyNote struct {
	desc  []byte
	where string
}

// GNU property types and x86 feature bits (the x86-64 psABI, "Program
// Property"), as readelf -n decodes them.
const (
	gnuPropertyX86Feature1And = 0xc0000002
	gnuPropertyX86FeatureIBT  = 1 << 0
	gnuPropertyX86FeatureSHST = 1 << 1
)

// elfCET reports the CET verdicts ibt and shstk from the
// GNU_PROPERTY_X86_FEATURE_1_AND property of .note.gnu.property: the
// bits say every object linked in was compiled for indirect-branch
// tracking (endbr64 at indirect targets) and the shadow stack.
func elfCET(in *Inspection, h *elfHeader, add func(name, verdict string, basis ...string)) {
	if h.machine != elf.EM_X86_64 && h.machine != elf.EM_386 {
		add("ibt", VerdictNotApplicable, "e_machine "+h.machine.String()+": CET is an x86 feature")
		add("shstk", VerdictNotApplicable, "e_machine "+h.machine.String()+": CET is an x86 feature")
		return
	}
	align := 8
	if h.class == elf.ELFCLASS32 {
		align = 4
	}
	found := false
	var bits uint32
	where := ""
	malformed := false
	for _, n := range in.gnuProperty {
		b := n.desc
		for len(b) >= 8 {
			typ, sz := h.order.Uint32(b), h.order.Uint32(b[4:])
			if uint64(sz) > uint64(len(b)-8) {
				malformed = true
				break
			}
			if typ == gnuPropertyX86Feature1And && sz >= 4 {
				found, where = true, n.where
				bits = h.order.Uint32(b[8:])
			}
			step := 8 + (int(sz)+align-1)/align*align
			if step > len(b) {
				break
			}
			b = b[step:]
		}
	}
	switch {
	case found:
		for _, c := range []struct {
			name, what string
			bit        uint32
		}{{"ibt", "IBT", gnuPropertyX86FeatureIBT}, {"shstk", "SHSTK", gnuPropertyX86FeatureSHST}} {
			if bits&c.bit != 0 {
				add(c.name, VerdictYes, fmt.Sprintf("GNU_PROPERTY_X86_FEATURE_1_AND 0x%x in %s has %s", bits, where, c.what))
			} else {
				add(c.name, VerdictNo, fmt.Sprintf("GNU_PROPERTY_X86_FEATURE_1_AND 0x%x in %s lacks %s", bits, where, c.what))
			}
		}
	case malformed:
		add("ibt", VerdictUnknown, "a GNU property note is malformed")
		add("shstk", VerdictUnknown, "a GNU property note is malformed")
	case in.Facets["build_id"].State != FacetComplete:
		add("ibt", VerdictUnknown, "the note sections were not all read")
		add("shstk", VerdictUnknown, "the note sections were not all read")
	default:
		add("ibt", VerdictNo, "no GNU_PROPERTY_X86_FEATURE_1_AND property (.note.gnu.property)")
		add("shstk", VerdictNo, "no GNU_PROPERTY_X86_FEATURE_1_AND property (.note.gnu.property)")
	}
}

// newELFFile opens data with debug/elf and disarms the sections in
// in.oversized (filled when inspect read the section table): their
// compression flag is cleared and their size set to the file size, so a
// later Data call returns the compressed file bytes instead of
// decompressing more than MaxDecompressedBytes. openELF, the first
// opener, fills in.oversized from the same section table.
func newELFFile(in *Inspection, data []byte) (*elf.File, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil || f == nil {
		return f, err
	}
	disarmOversized(in, f)
	return f, nil
}

func disarmOversized(in *Inspection, f *elf.File) {
	for _, s := range f.Sections {
		if in.oversized[s.Name] && s.Flags&elf.SHF_COMPRESSED != 0 {
			s.Flags &^= elf.SHF_COMPRESSED
			s.Size = s.FileSize
		}
	}
}

// stbGNUUnique is STB_GNU_UNIQUE (10, the first OS-specific binding,
// which debug/elf prints as STB_LOOS): a global symbol the dynamic linker
// keeps unique across the process (readelf "UNIQUE", nm "u"). It is
// exported like STB_GLOBAL.
const stbGNUUnique = elf.SymBind(10)

// sttGNUIFunc is STT_GNU_IFUNC (10, debug/elf's STT_LOOS): an indirect
// function whose resolver picks the implementation (readelf "IFUNC", nm
// "i").
const sttGNUIFunc = elf.SymType(10)

// elfBindName is the name readelf's GNU spelling gives a binding:
// STB_GNU_UNIQUE for 10, else debug/elf's name.
func elfBindName(b elf.SymBind) string {
	if b == stbGNUUnique {
		return "STB_GNU_UNIQUE"
	}
	return b.String()
}

// elfTypeName is the name of a symbol type with the GNU spelling:
// STT_GNU_IFUNC for 10, else debug/elf's name.
func elfTypeName(t elf.SymType) string {
	if t == sttGNUIFunc {
		return "STT_GNU_IFUNC"
	}
	return t.String()
}

// stackGuardAccesses counts the instructions of f's executable sections
// that read the stack-protector guard where glibc's gcc and clang code
// reads it: %fs:0x28 on x86-64 (64 [REX] op ModRM=00 reg 100 SIB=25
// disp32=0x28: mov %fs:0x28,%rax at entry, sub/xor/cmp at the check) and
// %gs:0x14 on i386 (65 a1 14000000, or 65 op ModRM=00 reg 101 disp32).
// where names the location; read is false when the code could not be
// scanned (another machine, or a section outside the file).
func stackGuardAccesses(f *elf.File, h *elfHeader, data []byte) (n int, where string, read bool) {
	var pat func(b []byte, i int) bool
	switch h.machine {
	case elf.EM_X86_64:
		where = "%fs:0x28"
		pat = func(b []byte, i int) bool {
			j := i + 1
			if j < len(b) && b[j]&0xf0 == 0x40 {
				j++ // REX
			}
			if j+7 > len(b) {
				return false
			}
			m := b[j+1]
			return m&0xc7 == 0x04 && b[j+2] == 0x25 && b[j+3] == 0x28 && b[j+4] == 0 && b[j+5] == 0 && b[j+6] == 0
		}
	case elf.EM_386:
		where = "%gs:0x14"
		pat = func(b []byte, i int) bool {
			if i+6 <= len(b) && b[i+1] == 0xa1 && b[i+2] == 0x14 && b[i+3] == 0 && b[i+4] == 0 && b[i+5] == 0 {
				return true
			}
			return i+7 <= len(b) && b[i+2]&0xc7 == 0x05 && b[i+3] == 0x14 && b[i+4] == 0 && b[i+5] == 0 && b[i+6] == 0
		}
	default:
		return 0, "the guard's location on " + h.machine.String() + " is not read from code", false
	}
	seg := byte(0x64)
	if h.machine == elf.EM_386 {
		seg = 0x65
	}
	scanned := 0
	for _, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 || s.Size == 0 {
			continue
		}
		scanned++
		if s.Offset > uint64(len(data)) || s.Size > uint64(len(data))-s.Offset {
			return 0, where, false
		}
		b := data[s.Offset : s.Offset+s.Size]
		for i := 0; i < len(b); {
			k := bytes.IndexByte(b[i:], seg)
			if k < 0 {
				break
			}
			i += k
			if pat(b, i) {
				n++
			}
			i++
		}
	}
	if scanned == 0 {
		return 0, where + " (no executable section to read)", false
	}
	return n, where, true
}
