package bin

import (
	"debug/elf"
	"strconv"

	"golang.org/x/arch/x86/x86asm"
)

// TableSyntheticPLT names the synthetic symbols pltSymbols derives; they
// are used to symbolize disassembly only, never listed by list_symbols.
const TableSyntheticPLT = "synthetic PLT"

// pltSymbols derives "name@plt" symbols for the x86 and x86-64 PLT entries
// of an ELF binary, as GNU objdump does (bfd elf_x86_64_get_synthetic_symtab
// / elf_i386_get_synthetic_symtab): each entry of .plt, .plt.sec and
// .plt.got (pltEntrySize bytes each) is decoded, past an endbr64/endbr32,
// until its indirect jmp through memory; the GOT slot it reads
// (RIP-relative on x86-64; absolute, or relative to the GOT base in %ebx,
// on 386) is matched to the r_offset of a relocation in .rela.plt/.rel.plt
// (JUMP_SLOT) or .rela.dyn/.rel.dyn (GLOB_DAT), whose dynamic symbol names
// the entry, followed by "+0x" and the addend in hex when the addend is
// not 0; a slot an IRELATIVE relocation (no symbol: an ifunc's resolved
// address) binds is "*ABS*+0xADDEND@plt" on x86-64 and "*ABS*@plt" on 386
// (a REL relocation: its addend is in the slot, which bfd does not read),
// as bfd _bfd_x86_elf_get_synthetic_symtab spells them. Entries that do
// not decode or match get no symbol, as in
// objdump: PLT0, and in an IBT binary the .plt entries that .plt.sec
// entries jump to for lazy binding. A binary it cannot read yields none:
// symbolization is best effort and never fails the disassembly.
func pltSymbols(in *Inspection, data []byte, arch string) (out []Symbol) {
	if in.Header.Format != FormatELF || (arch != ArchAMD64 && arch != Arch386) {
		return nil
	}
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	f, err := newELFFile(in, data)
	if err != nil {
		return nil
	}
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return nil
	}
	slots := map[uint64]string{}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA && s.Type != elf.SHT_REL {
			continue
		}
		if s.Link == 0 || int(s.Link) >= len(f.Sections) || f.Sections[s.Link].Type != elf.SHT_DYNSYM {
			continue
		}
		b, err := s.Data()
		if err != nil {
			continue
		}
		rela := s.Type == elf.SHT_RELA
		for _, r := range elfRelocs(f, rela, b) {
			var n string
			switch {
			case r.sym == 0 && irelative(f.Machine, r.typ):
				n = "*ABS*"
			case !pltReloc(f.Machine, r.typ) || r.sym == 0 || int(r.sym) > len(dyn):
				continue
			default:
				n = dyn[r.sym-1].Name
			}
			if n == "" {
				continue
			}
			if r.addend != 0 {
				n += "+0x" + strconv.FormatUint(uint64(r.addend), 16)
			}
			slots[r.off] = n
		}
	}
	if len(slots) == 0 {
		return nil
	}
	var gotBase uint64 // %ebx in 386 PIC PLT entries: _GLOBAL_OFFSET_TABLE_
	if s := f.Section(".got.plt"); s != nil {
		gotBase = s.Addr
	} else if s := f.Section(".got"); s != nil {
		gotBase = s.Addr
	}
	secIndex := map[string]int{}
	for i, s := range in.Sections {
		secIndex[s.Name] = i
	}
	mode := 64
	if arch == Arch386 {
		mode = 32
	}
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		s := f.Section(name)
		if s == nil || s.Type != elf.SHT_PROGBITS {
			continue
		}
		code, err := s.Data()
		if err != nil {
			continue
		}
		ent := pltEntrySize(name, s.Entsize, code)
		sect, ok := secIndex[name]
		if !ok {
			sect = -1
		}
		for off := uint64(0); off+ent <= uint64(len(code)); off += ent {
			got, ok := pltSlot(code[off:off+ent], s.Addr+off, mode, gotBase)
			if !ok {
				continue
			}
			if sym, ok := slots[got]; ok {
				a := s.Addr + off
				out = append(out, Symbol{Name: sym + "@plt", Table: TableSyntheticPLT, Address: hexU(a), Size: decU(ent), Type: "STT_FUNC", Section: name, Defined: true, value: a, size: ent, sect: sect, isFunc: true, derived: true})
			}
		}
	}
	return out
}

// pltEntrySize returns the size in bytes of one entry of the PLT section
// name whose sh_entsize is entsize and whose contents are code. The lazy
// .plt and the IBT .plt.sec have 16-byte entries on x86-64 and 386 alike
// (bfd's elf_x86_64_lazy_plt / elf_i386_lazy_plt and their IBT variants:
// plt_entry_size 16), whatever sh_entsize says (ld sets it to 4 for the
// i386 .plt). The non-lazy .plt.got has 8-byte entries, 16 when IBT
// prefixes them with endbr (bfd non_lazy_plt / non_lazy_ibt_plt), which
// ld records in sh_entsize; when sh_entsize is neither, an entry starting
// with endbr64/endbr32 is taken as 16 bytes, else 8.
func pltEntrySize(name string, entsize uint64, code []byte) uint64 {
	if name != ".plt.got" {
		return 16
	}
	if entsize == 8 || entsize == 16 {
		return entsize
	}
	if endbrLen(code) > 0 {
		return 16
	}
	return 8
}

// endbrLen returns 4 when code starts with endbr64 (f3 0f 1e fa) or
// endbr32 (f3 0f 1e fb), the CET marker golang.org/x/arch/x86/x86asm
// does not decode, else 0.
func endbrLen(code []byte) int {
	if len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && (code[3] == 0xfa || code[3] == 0xfb) {
		return 4
	}
	return 0
}

// pltSlot decodes one PLT entry at address pc and returns the GOT slot its
// first indirect jmp through memory reads (after an endbr64/endbr32).
func pltSlot(code []byte, pc uint64, mode int, gotBase uint64) (uint64, bool) {
	for off := endbrLen(code); off < len(code); {
		inst, err := x86asm.Decode(code[off:], mode)
		if err != nil || inst.Len == 0 {
			return 0, false
		}
		if inst.Op == x86asm.JMP {
			if m, ok := inst.Args[0].(x86asm.Mem); ok && m.Index == 0 {
				switch m.Base {
				case x86asm.RIP:
					return uint64(int64(pc) + int64(off+inst.Len) + m.Disp), true
				case 0:
					return uint64(uint32(m.Disp)), true
				case x86asm.EBX:
					return uint64(uint32(int64(gotBase) + m.Disp)), gotBase != 0
				}
			}
			return 0, false
		}
		off += inst.Len
	}
	return 0, false
}

type elfReloc struct {
	off    uint64
	typ    uint32
	sym    uint32
	addend int64 // r_addend of a RELA entry; 0 for REL
}

// elfRelocs decodes Elf32/64_Rel(a) entries (ELF gABI "Relocation").
func elfRelocs(f *elf.File, rela bool, b []byte) []elfReloc {
	var out []elfReloc
	bo := f.ByteOrder
	if f.Class == elf.ELFCLASS64 {
		n := 16
		if rela {
			n = 24
		}
		for i := 0; i+n <= len(b); i += n {
			info := bo.Uint64(b[i+8:])
			r := elfReloc{off: bo.Uint64(b[i:]), typ: uint32(info), sym: uint32(info >> 32)}
			if rela {
				r.addend = int64(bo.Uint64(b[i+16:]))
			}
			out = append(out, r)
		}
		return out
	}
	n := 8
	if rela {
		n = 12
	}
	for i := 0; i+n <= len(b); i += n {
		info := bo.Uint32(b[i+4:])
		r := elfReloc{off: uint64(bo.Uint32(b[i:])), typ: info & 0xff, sym: info >> 8}
		if rela {
			r.addend = int64(int32(bo.Uint32(b[i+8:])))
		}
		out = append(out, r)
	}
	return out
}

// pltReloc reports whether a relocation type binds a GOT slot a PLT entry
// jumps through: JUMP_SLOT, or GLOB_DAT (for .plt.got).
func pltReloc(m elf.Machine, typ uint32) bool {
	switch m {
	case elf.EM_X86_64:
		return elf.R_X86_64(typ) == elf.R_X86_64_JMP_SLOT || elf.R_X86_64(typ) == elf.R_X86_64_GLOB_DAT
	case elf.EM_386:
		return elf.R_386(typ) == elf.R_386_JMP_SLOT || elf.R_386(typ) == elf.R_386_GLOB_DAT
	}
	return false
}

// irelative reports whether a relocation type is R_X86_64_IRELATIVE or
// R_386_IRELATIVE (an ifunc's resolved address, no symbol).
func irelative(m elf.Machine, typ uint32) bool {
	return m == elf.EM_X86_64 && elf.R_X86_64(typ) == elf.R_X86_64_IRELATIVE ||
		m == elf.EM_386 && elf.R_386(typ) == elf.R_386_IRELATIVE
}

// dynRelocNames returns, for each r_offset of the ELF binary's dynamic
// relocations (every SHF_ALLOC SHT_RELA/SHT_REL section linked to
// .dynsym, as bfd's canonicalize_dynamic_reloc reads them), the name
// objdump prints for the relocation's symbol (Symbol.display: name@version,
// name@@version, name@Base), and the lowest and highest r_offset of them
// all. Relocations without a symbol or against an SHN_ABS one name
// nothing (objdump: "absolute relocations do not provide a more helpful
// symbolic address"), nor do those against an STT_TLS symbol (the TLS
// module and offset slots: a TLS symbol never names an address). A binary it cannot read yields none.
func dynRelocNames(in *Inspection, data []byte) (names map[uint64]string, lo, hi uint64) {
	if in.Header.Format != FormatELF {
		return nil, 0, 0
	}
	defer func() {
		if recover() != nil {
			names, lo, hi = nil, 0, 0
		}
	}()
	f, err := newELFFile(in, data)
	if err != nil {
		return nil, 0, 0
	}
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return nil, 0, 0
	}
	names = map[uint64]string{}
	first := true
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA && s.Type != elf.SHT_REL || s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		if s.Link == 0 || int(s.Link) >= len(f.Sections) || f.Sections[s.Link].Type != elf.SHT_DYNSYM {
			continue
		}
		b, err := s.Data()
		if err != nil {
			continue
		}
		for _, r := range elfRelocs(f, s.Type == elf.SHT_RELA, b) {
			if first || r.off < lo {
				lo = r.off
			}
			if first || r.off > hi {
				hi = r.off
			}
			first = false
			if r.sym == 0 || int(r.sym) > len(dyn) {
				continue
			}
			d := dyn[r.sym-1]
			if d.Section == elf.SHN_ABS || d.Name == "" || elf.ST_TYPE(d.Info) == elf.STT_TLS {
				continue
			}
			if _, ok := names[r.off]; ok {
				continue
			}
			y := Symbol{Name: d.Name, Table: TableDynsym, Defined: d.Section != elf.SHN_UNDEF}
			y.Version, y.DefaultVersion = elfVersion(d)
			y.verBase = d.HasVersion && d.VersionIndex.Index() == 1
			names[r.off] = y.display()
		}
	}
	return names, lo, hi
}
