package bin

import (
	"bytes"
	"debug/elf"
	"debug/pe"
	"fmt"
	"sort"
)

// Relocation is one relocation entry whose place lies inside an
// instruction, as objdump -dr prints it under the instruction: Address is
// the place (the section-relative address of the patched bytes in a
// relocatable object), Type the relocation type's name (R_X86_64_PLT32),
// Target the symbol (or section, for a section symbol) with the addend
// ("puts-0x4"; REL entries, whose addend is in the patched bytes, name the
// symbol alone). Read from the SHT_RELA/SHT_REL sections whose sh_info
// names the disassembled section.
type Relocation struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	Target  string `json:"target"`

	place uint64
}

// elfRelocations returns the relocations applied to section sect of an
// ELF file, sorted by place. ok is false when a relocation section that
// applies could not be read (the caller says so).
func elfRelocations(in *Inspection, data []byte, sect int) (out []Relocation, ok bool) {
	var f *elf.File
	var err error
	if !guard(in, "section header table", 0, func() { f, err = newELFFile(in, data) }) || err != nil {
		return nil, false
	}
	if sect < 0 || sect >= len(f.Sections) {
		return nil, true
	}
	base := f.Sections[sect].Addr
	var syms []elf.Symbol
	symsRead := false
	ok = true
	for _, r := range f.Sections {
		if (r.Type != elf.SHT_RELA && r.Type != elf.SHT_REL) || int(r.Info) != sect || r.Flags&elf.SHF_ALLOC != 0 {
			continue
		}
		if !symsRead {
			symsRead = true
			if !guard(in, ".symtab", 0, func() { syms, err = f.Symbols() }) || err != nil {
				syms = nil
			}
		}
		var b []byte
		if !guard(in, r.Name, r.Offset, func() { b, err = r.Data() }) || err != nil {
			ok = false
			continue
		}
		rela := r.Type == elf.SHT_RELA
		size := map[[2]bool]int{{true, true}: 24, {true, false}: 16, {false, true}: 12, {false, false}: 8}[[2]bool{f.Class == elf.ELFCLASS64, rela}]
		for off := 0; off+size <= len(b); off += size {
			e := b[off : off+size]
			var place, symIdx uint64
			var typ uint32
			var addend int64
			if f.Class == elf.ELFCLASS64 {
				place = f.ByteOrder.Uint64(e)
				info := f.ByteOrder.Uint64(e[8:])
				symIdx, typ = info>>32, uint32(info)
				if rela {
					addend = int64(f.ByteOrder.Uint64(e[16:]))
				}
			} else {
				place = uint64(f.ByteOrder.Uint32(e))
				info := f.ByteOrder.Uint32(e[4:])
				symIdx, typ = uint64(info>>8), info&0xff
				if rela {
					addend = int64(int32(f.ByteOrder.Uint32(e[8:])))
				}
			}
			target := "*ABS*"
			if symIdx > 0 && int(symIdx) <= len(syms) {
				s := syms[symIdx-1]
				target = s.Name
				if elf.ST_TYPE(s.Info) == elf.STT_SECTION && int(s.Section) < len(f.Sections) {
					target = f.Sections[s.Section].Name
				}
			} else if symIdx > 0 {
				target = fmt.Sprintf("symbol #%d (unreadable)", symIdx)
				ok = false
			}
			if rela && addend != 0 {
				if addend < 0 {
					target += fmt.Sprintf("-0x%x", uint64(-addend))
				} else {
					target += fmt.Sprintf("+0x%x", uint64(addend))
				}
			}
			out = append(out, Relocation{Address: hexU(base + place), Type: elfRelocType(f.Machine, typ), Target: target, place: base + place})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].place < out[j].place })
	return out, ok
}

// elfRelocType names a relocation type for the machine, as readelf does.
func elfRelocType(m elf.Machine, t uint32) string {
	switch m {
	case elf.EM_X86_64:
		return elf.R_X86_64(t).String()
	case elf.EM_386:
		return elf.R_386(t).String()
	case elf.EM_AARCH64:
		return elf.R_AARCH64(t).String()
	}
	return fmt.Sprintf("%d", t)
}

// attachRelocations adds to each row the relocations whose place lies in
// its bytes.
func attachRelocations(rows []Instruction, relocs []Relocation) {
	if len(relocs) == 0 {
		return
	}
	for i := range rows {
		a, err := parseHex(rows[i].Address)
		if err != nil {
			continue
		}
		n := uint64(len(rows[i].Bytes) / 2)
		j := sort.Search(len(relocs), func(k int) bool { return relocs[k].place >= a })
		for ; j < len(relocs) && relocs[j].place < a+n; j++ {
			rows[i].Relocations = append(rows[i].Relocations, relocs[j])
		}
	}
}

// coffRelocTypes name IMAGE_REL_* types (PE/COFF specification, "Type
// Indicators") as objdump prints them.
var coffRelocTypes = map[uint16]map[uint16]string{
	0x8664: {0: "IMAGE_REL_AMD64_ABSOLUTE", 1: "IMAGE_REL_AMD64_ADDR64", 2: "IMAGE_REL_AMD64_ADDR32", 3: "IMAGE_REL_AMD64_ADDR32NB", 4: "IMAGE_REL_AMD64_REL32", 5: "IMAGE_REL_AMD64_REL32_1", 6: "IMAGE_REL_AMD64_REL32_2", 7: "IMAGE_REL_AMD64_REL32_3", 8: "IMAGE_REL_AMD64_REL32_4", 9: "IMAGE_REL_AMD64_REL32_5", 0xa: "IMAGE_REL_AMD64_SECTION", 0xb: "IMAGE_REL_AMD64_SECREL"},
	0x14c:  {0: "IMAGE_REL_I386_ABSOLUTE", 6: "IMAGE_REL_I386_DIR32", 7: "IMAGE_REL_I386_DIR32NB", 0xa: "IMAGE_REL_I386_SECTION", 0xb: "IMAGE_REL_I386_SECREL", 0x14: "IMAGE_REL_I386_REL32"},
}

// coffRelocations returns the relocations of section sect (an index into
// the inspection's Sections) of a COFF object, read by debug/pe, sorted by
// place. Targets are the COFF symbols' names.
func coffRelocations(in *Inspection, data []byte, sect int) (out []Relocation, ok bool) {
	var f *pe.File
	var err error
	if !guard(in, "section table", 0, func() { f, err = pe.NewFile(bytes.NewReader(data)) }) || err != nil {
		return nil, false
	}
	if sect < 0 || sect >= len(f.Sections) {
		return nil, true
	}
	machine := f.FileHeader.Machine
	ok = true
	for _, r := range f.Sections[sect].Relocs {
		typ := coffRelocTypes[machine][r.Type]
		if typ == "" {
			typ = fmt.Sprintf("0x%x", r.Type)
		}
		target := fmt.Sprintf("symbol #%d (unreadable)", r.SymbolTableIndex)
		if int(r.SymbolTableIndex) < len(f.COFFSymbols) {
			if n, err := f.COFFSymbols[r.SymbolTableIndex].FullName(f.StringTable); err == nil {
				target = n
			} else {
				ok = false
			}
		} else {
			ok = false
		}
		out = append(out, Relocation{Address: hexU(uint64(r.VirtualAddress)), Type: typ, Target: target, place: uint64(r.VirtualAddress)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].place < out[j].place })
	return out, ok
}
