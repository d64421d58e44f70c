package bin

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"golang.org/x/arch/x86/x86asm"
)

// Architectures the disassembler decodes.
const (
	ArchAMD64 = "x86-64"
	Arch386   = "x86"
	ArchARM64 = "arm64"
)

// archOf maps the header's machine field to a decodable architecture, or "".
func archOf(in *Inspection) string {
	if in.Header.Machine == nil {
		return ""
	}
	switch in.Header.Machine.Name {
	case "EM_X86_64", "IMAGE_FILE_MACHINE_AMD64", "CpuAmd64":
		return ArchAMD64
	case "EM_386", "IMAGE_FILE_MACHINE_I386", "Cpu386":
		return Arch386
	case "EM_AARCH64", "IMAGE_FILE_MACHINE_ARM64", "CpuArm64":
		return ArchARM64
	}
	return ""
}

// Instruction is one decoded instruction. Target is the branch or call
// destination computed from a PC-relative operand, or the address a
// RIP-relative memory operand refers to (the two objdump annotates as
// "<sym+off>" and "# addr <sym+off>"); TargetSymbol is its symbolization
// ("name" or "name+0xoff", symIndex.name: objdump's choice of symbol).
// Text never names a symbol in GNU and Intel syntax, as objdump's does not.
// An undecodable position has Error set and advances by one byte (x86) or
// one word (arm64).
type Instruction struct {
	Address      string `json:"address"`
	Bytes        string `json:"bytes"`
	Text         string `json:"text,omitempty"`
	Target       string `json:"target,omitempty"`
	TargetSymbol string `json:"target_symbol,omitempty"`
	// Source is "file:line" from the DWARF line table, when present.
	Source string `json:"source,omitempty"`
	Error  string `json:"error,omitempty"`
	// Kind is "data" for bytes an ELF mapping symbol ($d) marks as data
	// inside code (an arm64 literal pool or jump table): Text is then
	// objdump's ".word 0x...", ".short" or ".byte" row; empty for an
	// instruction.
	Kind string `json:"kind,omitempty"`
	// Relocations lists the relocation entries applied to this
	// instruction's bytes (relocatable objects).
	Relocations []Relocation `json:"relocations,omitempty"`
	// Label is the symbol objdump -d heads this instruction with
	// ("main" for its "0000000000001129 <main>:" line): the symbol that
	// starts at its address, or for the first row of a listing that does
	// not start at one, the symbol it lies in with its offset
	// ("main+0x10"). Set by DisassembleAll only; not part of the tool's
	// rows.
	Label string `json:"-"`
}

// symIndex symbolizes addresses the way GNU objdump -d does
// (binutils objdump.c find_symbol_for_address over its sorted symbols):
// the symbols are those of .symtab when the binary has one, else those of
// .dynsym (objdump reads the dynamic table only when there is no static
// one), plus the synthetic name@plt entries and the Go function table of a
// binary stripped of both. Undefined, unnamed, section, file and
// thread-local (STT_TLS: their value is an offset in the TLS block, not
// an address) symbols are left out. Among symbols at one address objdump's
// compare_symbols order picks the name: functions (an STT_GNU_IFUNC is
// not one to bfd), then objects, then
// global before weak before local, then the larger st_size, then names
// not starting with '.', then by name.
//
// Like objdump, an address that is no symbol's own but is the r_offset of
// a dynamic relocation against a symbol (a GOT slot) is named by that
// relocation's symbol (objdump.c find_symbol_for_address, dynrelbuf),
// unless the nearest symbol is a synthetic name@plt.
type symIndex struct {
	syms []Symbol
	// names are the syms' display names (Symbol.display), made once.
	names []string
	// dynRelocs maps a dynamic relocation's r_offset to the name objdump
	// prints for its symbol.
	dynRelocs map[uint64]string
	// relLo and relHi are the lowest and highest dynamic r_offset.
	relLo, relHi uint64
	// maps are the ELF mapping symbols ($x, $d, $a, $t and their
	// "$d.N" forms) by address, which objdump reads to tell code from
	// data and never prints as names.
	maps []mapSym
}

// mapSym is one ELF mapping symbol: its address and whether it starts
// data ($d) rather than code ($x, $a, $t).
type mapSym struct {
	addr uint64
	data bool
}

// mappingSymbol reports whether y is an ELF mapping symbol (ARM ELF ABI,
// "Mapping symbols": $a, $t, $x or $d, alone or followed by "." and any
// text; by its name alone, as binutils' bfd_is_aarch64_special_symbol_name
// tells them), and whether it marks data.
func mappingSymbol(y *Symbol) (isMap, data bool) {
	n := y.Name
	if len(n) < 2 || n[0] != '$' || len(n) > 2 && n[2] != '.' {
		return false, false
	}
	switch n[1] {
	case 'x', 'a', 't':
		return true, false
	case 'd':
		return true, true
	}
	return false, false
}

// armData reports whether the byte at pc lies in data by the mapping
// symbols (the last one at or before pc is a $d), and how many bytes
// objdump prints as one data row there (aarch64-dis.c print_insn_data:
// up to the next 4-byte boundary, cut at the next symbol and at avail
// bytes, a 3-byte remainder printed as a .short or, at an odd address,
// a .byte).
func (x *symIndex) armData(pc uint64, avail int) (int, bool) {
	if x == nil || len(x.maps) == 0 || avail <= 0 {
		return 0, false
	}
	i, _ := slices.BinarySearchFunc(x.maps, pc, func(m mapSym, a uint64) int { return cmp.Compare(m.addr, a) })
	for i < len(x.maps) && x.maps[i].addr == pc {
		i++
	}
	// x.maps[:i] are at or before pc.
	if i == 0 || !x.maps[i-1].data {
		return 0, false
	}
	size := uint64(4 - pc&3)
	next := uint64(0)
	if i < len(x.maps) {
		next = x.maps[i].addr
	}
	j, _ := slices.BinarySearchFunc(x.syms, pc+1, func(y Symbol, a uint64) int { return cmp.Compare(y.value, a) })
	if j < len(x.syms) && (next == 0 || x.syms[j].value < next) {
		next = x.syms[j].value
	}
	if next > pc && next-pc < size {
		size = next - pc
	}
	size = min(size, uint64(avail))
	if size == 3 {
		size = 2 - pc&1
	}
	return int(size), true
}

// arm64DataRow fills row with the data bytes b (1, 2 or 4, little-endian)
// as objdump prints them: ".word 0x0000002a", ".short 0x1234",
// ".byte 0x09".
func arm64DataRow(row *Instruction, b []byte) {
	row.Bytes, row.Kind = hex.EncodeToString(b), "data"
	switch len(b) {
	case 4:
		row.Text = fmt.Sprintf(".word 0x%08x", binary.LittleEndian.Uint32(b))
	case 2:
		row.Text = fmt.Sprintf(".short 0x%04x", binary.LittleEndian.Uint16(b))
	default:
		row.Text = fmt.Sprintf(".byte 0x%02x", b[0])
	}
}

func newSymIndex(ss *symbolSet) *symIndex {
	hasSymtab := false
	for _, t := range ss.tables {
		if t == TableSymtab {
			hasSymtab = true
		}
	}
	// Sorted by index (a Symbol is large: moving indices, not symbols),
	// stably, in objdump's order; the first symbol of each address is kept.
	var order []int32
	var maps []mapSym
	for i := range ss.syms {
		y := &ss.syms[i]
		if !y.Defined || y.sect < 0 || y.Name == "" {
			continue
		}
		if hasSymtab && y.Table == TableDynsym || y.Table == TableGoPCLN && len(ss.tables) > 0 {
			continue
		}
		if y.Type == "STT_SECTION" || y.Type == "STT_FILE" || y.Type == "STT_TLS" {
			continue
		}
		if isMap, data := mappingSymbol(y); isMap {
			maps = append(maps, mapSym{addr: y.value, data: data})
			continue
		}
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(i, j int32) int {
		a, b := &ss.syms[i], &ss.syms[j]
		switch {
		case symBefore(a, b):
			return -1
		case symBefore(b, a):
			return 1
		}
		return 0
	})
	out := make([]Symbol, 0, len(order))
	for _, i := range order {
		y := &ss.syms[i]
		if len(out) > 0 && y.value == out[len(out)-1].value {
			continue
		}
		out = append(out, *y)
	}
	slices.SortStableFunc(maps, func(a, b mapSym) int { return cmp.Compare(a.addr, b.addr) })
	names := make([]string, len(out))
	for i := range out {
		names[i] = out[i].display()
	}
	return &symIndex{syms: out, names: names, maps: maps}
}

// symBefore is binutils objdump's compare_symbols order (see symIndex).
func symBefore(a, b *Symbol) bool {
	if a.value != b.value {
		return a.value < b.value
	}
	fileish := func(y *Symbol) bool {
		return strings.HasSuffix(y.Name, ".o") && len(y.Name) > 2 || strings.HasSuffix(y.Name, ".a") && len(y.Name) > 2
	}
	if fa, fb := fileish(a), fileish(b); fa != fb {
		return !fa
	}
	// bfd flags an STT_GNU_IFUNC symbol BSF_GNU_INDIRECT_FUNCTION, not
	// BSF_FUNCTION: the resolver at the same address is named first.
	if fa, fb := a.isFunc && a.Type != "STT_GNU_IFUNC", b.isFunc && b.Type != "STT_GNU_IFUNC"; fa != fb {
		return fa
	}
	if oa, ob := a.Type == "STT_OBJECT", b.Type == "STT_OBJECT"; oa != ob {
		return oa
	}
	if la, lb := a.Binding == "STB_LOCAL", b.Binding == "STB_LOCAL"; la != lb {
		return !la
	}
	if ga, gb := a.Binding == "STB_GLOBAL", b.Binding == "STB_GLOBAL"; ga != gb {
		return ga
	}
	if a.size != b.size {
		return a.size > b.size
	}
	if da, db := strings.HasPrefix(a.Name, "."), strings.HasPrefix(b.Name, "."); da != db {
		return !da
	}
	return a.Name < b.Name
}

// display is a symbol's name as objdump prints it: a versioned dynamic
// symbol as name@@version (the default version) or name@version.
// A dynamic symbol of version index 1 prints as name@@Base (name@Base
// when undefined), as bfd's _bfd_elf_get_symbol_version_string names it.
func (y Symbol) display() string {
	switch {
	case y.Table != TableDynsym:
		return y.Name
	case y.Version != "" && y.DefaultVersion != nil && *y.DefaultVersion:
		return y.Name + "@@" + y.Version
	case y.Version != "":
		return y.Name + "@" + y.Version
	case y.verBase && y.Defined:
		return y.Name + "@@Base"
	case y.verBase:
		return y.Name + "@Base"
	}
	return y.Name
}

// nearest returns the symbol at or before addr (objdump's choice: no
// extent check) and its address; ok is false when none precedes addr.
func (x *symIndex) nearest(addr uint64) (Symbol, bool) {
	i := x.nearestIndex(addr)
	if i < 0 {
		return Symbol{}, false
	}
	return x.syms[i], true
}

// nearestIndex is nearest's symbol's index in syms, -1 when none.
func (x *symIndex) nearestIndex(addr uint64) int {
	return sort.Search(len(x.syms), func(i int) bool { return x.syms[i].value > addr }) - 1
}

// lookup returns the symbol whose extent contains addr and its base
// address ("" when none does): the x86asm/arm64asm Go-syntax symbolizer.
func (x *symIndex) lookup(addr uint64) (string, uint64) {
	s, ok := x.nearest(addr)
	if !ok || s.size > 0 && addr >= s.value+s.size || s.size == 0 && addr != s.value {
		return "", 0
	}
	return s.Name, s.value
}

// name symbolizes addr as objdump's <name+0xoff> (without the brackets):
// the nearest symbol at or before it, "" when none precedes it.
func (x *symIndex) name(addr uint64) string {
	if x == nil {
		return ""
	}
	i := x.nearestIndex(addr)
	var s *Symbol
	if i >= 0 {
		s = &x.syms[i]
	}
	if (s == nil || addr != s.value) && (s == nil || s.Table != TableSyntheticPLT) && len(x.dynRelocs) > 0 && addr >= x.relLo && addr <= x.relHi {
		if n, ok := x.dynRelocs[addr]; ok {
			return n
		}
	}
	if s == nil {
		return ""
	}
	if addr == s.value {
		return x.names[i]
	}
	var h [16]byte
	return x.names[i] + "+0x" + string(strconv.AppendUint(h[:0], addr-s.value, 16))
}

// disassemble decodes at most max instructions of code (which starts at
// address base) from offset off, returning them and the offset after the
// last decoded instruction.
//
// Like objdump, it stops at the first instruction that starts at or after
// the range end, and reads an x86 instruction's bytes only up to its stop
// (the next symbol's start or the range end): one that would run past it
// is cut to a one-byte row (cutRow) and decoding goes on from the next
// byte. code's capacity past its length is read only to tell such an
// instruction from an undecodable one.
func disassemble(dec x86Decoder, arch, syntax string, code []byte, base uint64, off, max int, idx *symIndex, lines *lineTable) ([]Instruction, int) {
	out := takeInstructions(min(max, len(code)-off))
	var pending []extInsn // decoded ahead by the external x86 decoder
	symname := func(a uint64) (string, uint64) { return idx.lookup(a) }
	end := len(code)
	code = code[:min(cap(code), end+maxInsnLen)]
	// si is the first symbol after the current instruction's address:
	// objdump decodes each symbol's bytes from the symbol's own address,
	// so an instruction that runs across the next symbol's start is
	// printed whole and decoding resumes at that symbol (whose header
	// then heads a row), not after the instruction.
	si := 0
	if idx != nil {
		si = sort.Search(len(idx.syms), func(i int) bool { return idx.syms[i].value > base+uint64(off) })
	}
	var strs stringArena // the rows' addresses and hex bytes
	var memo *textMemo
	if dec.lib != nil && (arch == ArchAMD64 || arch == Arch386) {
		memo = takeTextMemo(memoOwner{idx: idx, lib: dec.lib, arch: arch, syntax: syntax})
		defer putTextMemo(memo)
	}
	for off < end && len(out) < max {
		pc := base + uint64(off)
		row := Instruction{Address: strs.hexU(pc), Source: lines.at(pc)}
		spelled := false   // row.Text is already objdump's spelling
		var memoKey []byte // the bytes of a row the memo may keep
		switch arch {
		case ArchAMD64, Arch386:
			mode := 64
			if arch == Arch386 {
				mode = 32
			}
			if dec.lib != nil {
				intel := syntax == "intel"
				// undecodable makes row the undecodable row at off: an
				// instruction the decoder lacks is one row of its
				// whole length, so the boundaries after it stay right.
				undecodable := func() {
					n := badLen(code[off:end], mode)
					if v := capstoneGapLen(code[off:], mode); v > 0 && dec.Lacks != "" {
						n = v
					}
					row.Bytes, row.Error = hex.EncodeToString(code[off:off+n]), "undecodable"
					off += n
				}
				if len(pending) == 0 {
					pending = decodeBatch(dec.lib, mode, intel, code[off:], pc, max-len(out))
					if len(pending) == 0 && unused66Group(code[off:end]) {
						// objdump prints the 66 before a fence or
						// vmptrst as an unused prefix ("data16
						// sfence"), where Zydis refuses the whole.
						if in, _ := dec.lib.decodeX86(mode, intel, code[off+1:], pc+1, 1); len(in) == 1 {
							pending = []extInsn{{size: 1 + in[0].size, text: in[0].text}}
						}
					}
					if len(pending) == 0 {
						undecodable()
						break
					}
				}
				e := pending[0]
				pending = pending[1:]
				folded := false
				if e.size == 1 && code[off] == 0x9b && off+1 < end {
					// objdump reads fwait before an x87 control
					// instruction with a no-wait form (fnstcw, fnstsw,
					// ...) as that instruction's waiting form: one row
					// "fstcw 0x2(%rsp)" of both instructions' bytes.
					if len(pending) == 0 {
						pending = decodeBatch(dec.lib, mode, intel, code[off+1:], pc+1, max-len(out))
					}
					if len(pending) > 0 {
						if n, ok := formatExt(dec.lib, pending[0], mode, intel, code[off+1:], pc+1); ok {
							pending[0] = n
							inner := code[off+1 : off+1+n.size]
							t := n.text
							if syntax != "intel" && syntax != "go" {
								t = attMnemonicFromIntel(dec.lib, mode, inner, pc+1, t)
							}
							if syntax != "go" {
								t = x86Spelling(t, syntax, inner, arch)
							}
							if w, ok := fwaitForm(t, intel); ok {
								e = extInsn{size: 1 + n.size, text: w}
								pending = pending[1:]
								folded = true
							}
						}
					}
				}
				hit := false
				if !folded {
					memoKey = code[off : off+e.size]
					if m, ok := memo.get(memoKey); ok {
						// The same bytes were decoded before and
						// named no target: their row is the same but
						// for its address.
						row.Bytes, row.Text, spelled, hit = m.hex, m.text, true, true
						memoKey = nil
					}
				}
				// x86asm's rendering is used when it decodes the same
				// instruction length; the external decoder's text
				// otherwise (EVEX, CET).
				// x86asm's VEX decoding misreads some prefix fields
				// (vvvv 1100 as a %gs: override, RIP-relative operands
				// without their base), so a VEX or EVEX instruction is
				// always the external decoder's.
				if folded {
					row.Text, spelled = e.text, true
				} else if hit {
				} else if inst, err := x86asm.Decode(code[off:], mode); err == nil && inst.Len == e.size && x86asmReads(code[off:off+e.size], mode) {
					x86Row(&row, inst, syntax, pc, symname, idx)
				} else {
					f, ok := formatExt(dec.lib, e, mode, intel, code[off:], pc)
					if !ok {
						// The decoder decodes what it cannot format:
						// undecodable, as a decoding and formatting in
						// one call stops there.
						pending, memoKey = nil, nil
						undecodable()
						break
					}
					e = f
					row.Text = e.text
					if syntax != "intel" && syntax != "go" {
						row.Text = attMnemonicFromIntel(dec.lib, mode, code[off:off+e.size], pc, e.text)
					}
					row.Text, spelled = x86Spelling(row.Text, syntax, code[off:off+e.size], arch), true
					if t, ok := e.target(); ok {
						row.Target, row.TargetSymbol = hexU(t), idx.name(t)
					} else if d, ok := ripDisp(row.Text); ok {
						t := uint64(int64(pc) + int64(e.size) + d)
						row.Target, row.TargetSymbol = hexU(t), idx.name(t)
					}
				}
				if row.Bytes == "" {
					row.Bytes = strs.hex(code[off : off+e.size])
				}
				off += e.size
				break
			}
			inst, err := x86asm.Decode(code[off:], mode)
			if err != nil || inst.Len == 0 {
				row.Bytes, row.Error = hex.EncodeToString(code[off:off+1]), "undecodable"
				off++
				break
			}
			row.Bytes = hex.EncodeToString(code[off : off+inst.Len])
			x86Row(&row, inst, syntax, pc, symname, idx)
			off += inst.Len
		}
		if (arch == ArchAMD64 || arch == Arch386) && row.Error == "" && !spelled {
			row.Text = x86Spelling(row.Text, syntax, code[off-len(row.Bytes)/2:off], arch)
		}
		if memoKey != nil && row.Target == "" && row.Error == "" {
			memo.put(memoKey, memoRow{hex: row.Bytes, text: row.Text})
		}
		switch arch {
		case ArchARM64:
			if n, ok := idx.armData(pc, end-off); ok {
				arm64DataRow(&row, code[off:off+n])
				off += n
				break
			}
			if off+4 > len(code) {
				row.Bytes, row.Error = hex.EncodeToString(code[off:]), "truncated instruction"
				off = len(code)
				break
			}
			arm64Row(&row, code[off:off+4], pc, syntax, symname, idx)
			off += 4
		}
		if idx != nil {
			for si < len(idx.syms) && idx.syms[si].value <= pc {
				si++
			}
		}
		if arch == ArchAMD64 || arch == Arch386 {
			// objdump reads an instruction's bytes only up to its stop:
			// the next symbol's start or the range's end. One that would
			// run past it (or that cannot be told from an invalid one
			// without bytes past it) is cut to its first byte, printed
			// as the prefix it is ("rex.W") or as ".byte 0xb8", and
			// decoding goes on from the next byte.
			stop := end
			if idx != nil && si < len(idx.syms) && idx.syms[si].value < base+uint64(end) {
				stop = int(idx.syms[si].value - base)
			}
			start := int(pc - base)
			cut := row.Error == "" && off > stop
			if row.Error != "" && stop-start == 1 {
				// One byte before the stop: objdump fetches past it to
				// read the opcode's next byte and stops, unless the byte
				// alone is invalid in 64-bit mode ("(bad)").
				cut = arch == Arch386 || !invalidAlone64(code[start])
			}
			if cut {
				row.Error = ""
				cutRow(&row, code[start], arch, &strs)
				off, pending = start+1, nil
			}
		}
		out = append(out, row)
		if idx != nil && arch == ArchARM64 && si < len(idx.syms) {
			if s := idx.syms[si].value; s < base+uint64(off) && s < base+uint64(end) {
				off, pending = int(s-base), nil
			}
		}
	}
	return out, off
}

// invalidAlone64 reports whether b is an opcode byte that is invalid by
// itself in 64-bit mode (the legacy one-byte opcodes AMD64 removed: push
// and pop of segment registers, daa/das/aaa/aas, pusha/popa, bound, far
// call/jmp, into, aam/aad, salc), which objdump prints "(bad)" without
// reading further.
func invalidAlone64(b byte) bool {
	switch b {
	case 0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x60, 0x61, 0x9a, 0xce, 0xd4, 0xd5, 0xd6, 0xea:
		return true
	}
	return false
}

// cutRow makes row the one-byte row objdump prints for an instruction
// whose bytes run past its stop (i386-dis.c, on a fetch past
// stop_vma): the byte's prefix name when it is a prefix (rex.W, data16,
// addr32, lock, repz, cs...), else ".byte 0x" and the byte in hex.
func cutRow(row *Instruction, b byte, arch string, strs *stringArena) {
	row.Bytes = strs.hex([]byte{b})
	row.Target, row.TargetSymbol, row.Relocations = "", "", nil
	row.Text = x86PrefixName(b, arch == ArchAMD64)
	if row.Text == "" {
		row.Text = ".byte 0x" + strconv.FormatUint(uint64(b), 16)
	}
}

// x86PrefixName is binutils i386-dis.c prefix_name for a prefix byte in
// 64-bit (long) or 32-bit mode, "" when b is no prefix there.
func x86PrefixName(b byte, long bool) string {
	if long && b >= 0x40 && b <= 0x4f {
		name := "rex"
		if b&0xf != 0 {
			name += "."
			for i, c := range "WRXB" {
				if b&(8>>i) != 0 {
					name += string(c)
				}
			}
		}
		return name
	}
	switch b {
	case 0xf3:
		return "repz"
	case 0xf2:
		return "repnz"
	case 0xf0:
		return "lock"
	case 0x2e:
		return "cs"
	case 0x36:
		return "ss"
	case 0x3e:
		return "ds"
	case 0x26:
		return "es"
	case 0x64:
		return "fs"
	case 0x65:
		return "gs"
	case 0x66:
		return "data16"
	case 0x67:
		if long {
			return "addr32"
		}
		return "addr16"
	case 0x9b:
		return "fwait"
	}
	return ""
}

// stringArena makes the short strings of a page's rows (addresses, hex
// bytes) in shared chunks of memory: one allocation for hundreds of rows
// instead of one each. A chunk is only ever appended to, so the strings
// made from it stay unchanged.
type stringArena struct{ buf []byte }

// make returns the string fill appends (at most 64 bytes).
func (a *stringArena) make(fill func([]byte) []byte) string {
	if cap(a.buf)-len(a.buf) < 64 {
		a.buf = make([]byte, 0, 16<<10)
	}
	n := len(a.buf)
	a.buf = fill(a.buf)
	if len(a.buf) == n {
		return ""
	}
	return unsafe.String(&a.buf[n], len(a.buf)-n)
}

// hexU is hexU(v) in the arena.
func (a *stringArena) hexU(v uint64) string {
	return a.make(func(b []byte) []byte { return strconv.AppendUint(append(b, "0x"...), v, 16) })
}

// hex is hex.EncodeToString(code) in the arena (code is one instruction:
// at most maxInsnLen bytes).
func (a *stringArena) hex(code []byte) string {
	if len(code) > 32 {
		return hex.EncodeToString(code)
	}
	return a.make(func(b []byte) []byte { return hex.AppendEncode(b, code) })
}

// unused66Group reports whether code is a 66 prefix before sfence (0f
// ae f8-ff) or vmptrst (0f c7 /7, memory), which objdump decodes with
// the 66 printed as "data16" and Zydis refuses (objdump's 66 before
// lfence is "(bad)": its prefix table says so; 66 before mfence's bytes
// is tpause).
func unused66Group(code []byte) bool {
	if len(code) < 4 || code[0] != 0x66 || code[1] != 0x0f {
		return false
	}
	m := code[3]
	return code[2] == 0xae && m >= 0xf8 || code[2] == 0xc7 && m>>6 != 3 && m>>3&7 == 7
}

// badLen is the length of the undecodable x86 row at the start of code,
// as objdump's "(bad)" spans it: i386-dis.c stops at the opcode it finds
// no instruction for and consumes the bytes it has read up to there, the
// legacy prefixes, REX and the opcode bytes (0f, 0f 38 and 0f 3a escapes
// included) but not the ModRM byte ("66 0f 01 c6" is a 3-byte "(bad)"
// and "c6" before a ModRM whose reg field is not 0 a 1-byte one). A VEX,
// EVEX or XOP encoding, or bytes that end before an opcode, is one byte,
// as is anything longer than the code left.
func badLen(code []byte, mode int) int {
	e := x86Encode(code, mode)
	if e.vex || len(e.opcode) == 0 {
		return 1
	}
	n := len(e.prefixes) + len(e.opcode)
	if e.rex != 0 {
		n++
	}
	if n > len(code) || n > maxInsnLen {
		return 1
	}
	return n
}

// x86asmReads reports whether x86asm's decoding of the instruction in
// code is the one to spell: not for VEX or EVEX (x86asm misreads some
// of their prefix fields) nor for an instruction a mandatory 66 prefix
// selects (x86asm reads 66 0f ae /6 as xsaveopt and /7 as clflush where
// they are clwb, tpause and clflushopt, and misnames movdir64b and
// invept).
func x86asmReads(code []byte, mode int) bool {
	e := x86Encode(code, mode)
	return !e.vex && !e.mandatory66()
}

// x86Spelling returns an x86 instruction's text (from any decoder) as
// objdump spells it in syntax: gnuATT for AT&T ("gnu", the default),
// gnuIntel for Intel; Go syntax is x86asm's own.
func x86Spelling(text, syntax string, code []byte, arch string) string {
	mode := 64
	if arch == Arch386 {
		mode = 32
	}
	switch syntax {
	case "go":
		return text
	case "intel":
		return gnuIntel(text, code, mode)
	}
	return gnuATT(text, code, mode)
}

// attMnemonicFromIntel returns the AT&T text of an instruction an
// external decoder formatted with its mnemonic replaced by the one its
// Intel formatter prints, when that is the AT&T one with one more letter:
// Zydis's AT&T formatter appends an operand-size letter to vector
// instructions with a memory operand ("vmovdqu64z", "vmovqq", "vmovdl")
// that objdump does not print, and so it does to the instructions a
// mandatory 66 prefix selects ("invpcidx", "movdir64bz").
func attMnemonicFromIntel(lib extDecoder, mode int, code []byte, pc uint64, text string) string {
	if _, ok := lib.(*zydisLib); !ok {
		return text
	}
	f := strings.Fields(text)
	i := 0
	for i < len(f)-1 && (attPrefixNames()[f[i]] || isPrefixWord(f[i])) {
		i++
	}
	if i >= len(f) || !strings.HasPrefix(f[i], "v") && !strings.HasPrefix(f[i], "k") && !x86Encode(code, mode).mandatory66() {
		return text
	}
	in, _ := lib.decodeX86(mode, true, code, pc, 1)
	if len(in) != 1 {
		return text
	}
	for _, w := range strings.Fields(in[0].text) {
		if len(w)+1 == len(f[i]) && strings.HasPrefix(f[i], w) {
			f[i] = w
			return strings.Join(f, " ")
		}
	}
	return text
}

// fwaitForm returns the waiting form objdump prints for an fwait followed
// by text, the objdump spelling (Intel when intel) of an x87 no-wait
// control instruction
// (i386-dis.c's FWAIT_OPCODE handling: "fnstcw" becomes "fstcw"), and
// whether text is one.
func fwaitForm(text string, intel bool) (string, bool) {
	mn, rest, _ := strings.Cut(text, " ")
	switch mn {
	case "fnstcw", "fnstsw", "fnstenv", "fnsave", "fnclex", "fninit", "fneni", "fndisi", "fnsetpm":
		if intel && (mn == "fnstcw" || mn == "fnstsw") && strings.HasPrefix(rest, "[") {
			// objdump -M intel sizes the 16-bit memory operand.
			rest = "WORD PTR " + rest
		}
		if rest != "" {
			return "f" + mn[2:] + " " + rest, true
		}
		return "f" + mn[2:], true
	}
	return "", false
}

// maxInsnLen is the longest x86 instruction in bytes (the architecture's
// limit); an arm64 instruction is 4.
const maxInsnLen = 15

// goCode returns a copy, in Go memory, of the bytes count instructions of
// code can span (at most count*maxInsnLen). The external decoders run in
// C; given a slice of a mapped file that shrank meanwhile, their read of a
// page the file no longer backs raises SIGBUS inside C, which kills the
// process. The copy faults in Go instead, where the goroutine panics
// (debug.SetPanicOnFault) and the tool reports INPUT_CHANGED
// (mappedFault).
func goCode(code []byte, count int) []byte {
	n := len(code)
	if count > 0 && count < n/maxInsnLen {
		n = count * maxInsnLen
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return append([]byte(nil), code[:n]...)
}

// x86Row fills row's text and branch target from an x86asm decoding.
func x86Row(row *Instruction, inst x86asm.Inst, syntax string, pc uint64, symname x86asm.SymLookup, idx *symIndex) {
	switch syntax {
	// objdump's AT&T and Intel text never names a symbol in an operand:
	// immediates stay numbers and targets are annotated beside the
	// instruction (here Target and TargetSymbol).
	case "intel":
		row.Text = x86asm.IntelSyntax(inst, pc, nil)
	case "go":
		row.Text = x86asm.GoSyntax(inst, pc, symname)
	default:
		row.Text = gnuSyntax(inst, pc, nil)
	}
	for _, a := range inst.Args {
		switch a := a.(type) {
		case x86asm.Rel:
			t := uint64(int64(pc) + int64(inst.Len) + int64(a))
			row.Target, row.TargetSymbol = hexU(t), idx.name(t)
		case x86asm.Mem:
			if a.Base == x86asm.RIP && a.Index == 0 {
				t := uint64(int64(pc) + int64(inst.Len) + a.Disp)
				row.Target, row.TargetSymbol = hexU(t), idx.name(t)
			}
		}
	}
}

// extInsn is one instruction decoded by the external x86 decoder: its
// length in bytes and its text (AT&T or Intel syntax, as asked), or no
// text yet when unformatted (formatExt formats it).
type extInsn struct {
	size        int
	text        string
	unformatted bool
}

// lengthDecoder is an external decoder that can decode instructions
// without formatting them (Zydis): most rows' text is x86asm's, so the
// external text is formatted only for the rows that use it.
type lengthDecoder interface {
	// decodeLengths decodes up to count instructions of code as
	// decodeX86 does, stopping where it stops, their lengths only.
	decodeLengths(mode int, code []byte, count int) []extInsn
}

// decodeBatch decodes up to count instructions of code at pc with lib:
// their lengths only when lib can (lengthDecoder), else with their text.
func decodeBatch(lib extDecoder, mode int, intel bool, code []byte, pc uint64, count int) []extInsn {
	if l, ok := lib.(lengthDecoder); ok {
		return l.decodeLengths(mode, code, count)
	}
	in, _ := lib.decodeX86(mode, intel, code, pc, count)
	return in
}

// formatExt returns e, the instruction at the start of code (address
// pc), with its text: decoded and formatted again when e is unformatted.
// It reports false when the decoder does not format the instruction it
// decoded as one of the same length.
func formatExt(lib extDecoder, e extInsn, mode int, intel bool, code []byte, pc uint64) (extInsn, bool) {
	if !e.unformatted {
		return e, true
	}
	in, _ := lib.decodeX86(mode, intel, code[:e.size], pc, 1)
	if len(in) != 1 || in[0].size != e.size {
		return e, false
	}
	return in[0], true
}

// target returns the absolute destination of a direct jump, call or loop
// ("jne 0x1234", "call 0x1234"): the decoder prints it as the operand.
func (e extInsn) target() (uint64, bool) {
	f := strings.Fields(e.text) // "bnd jmp 0x1234", "call 0x1234"
	if len(f) < 2 {
		return 0, false
	}
	m, op := f[len(f)-2], f[len(f)-1]
	if !(strings.HasPrefix(m, "j") || strings.HasPrefix(m, "call") || strings.HasPrefix(m, "loop") || m == "xbegin") {
		return 0, false
	}
	op = strings.TrimPrefix(op, "$") // AT&T immediates
	if !strings.HasPrefix(op, "0x") {
		return 0, false
	}
	v, err := strconv.ParseUint(op[2:], 16, 64)
	return v, err == nil
}

// ripDisp returns the displacement of a RIP-relative memory operand in an
// external decoder's text: AT&T "0x10(%rip)" / "-0x10(%rip)", Intel
// "[rip+0x10]" / "[rip-0x10]".
func ripDisp(text string) (int64, bool) {
	parse := func(sign int64, h string) (int64, bool) {
		h = strings.TrimPrefix(h, "0x")
		v, err := strconv.ParseUint(h, 16, 63)
		return sign * int64(v), err == nil
	}
	if i := strings.Index(text, "(%rip)"); i > 0 {
		j := strings.LastIndexAny(text[:i], " ,:$") + 1
		d := text[j:i]
		if strings.HasPrefix(d, "-") {
			return parse(-1, d[1:])
		}
		return parse(1, d)
	}
	if i := strings.Index(text, "[rip"); i >= 0 {
		rest := text[i+4:]
		k := strings.IndexByte(rest, ']')
		if k < 1 {
			return 0, false
		}
		switch rest[0] {
		case '+':
			return parse(1, rest[1:k])
		case '-':
			return parse(-1, rest[1:k])
		}
	}
	return 0, false
}

// extDecoder is an external x86 decoder loaded at run time.
type extDecoder interface {
	// decodeX86 decodes up to count instructions of code at address pc in
	// mode 32 or 64, in Intel or AT&T syntax; it stops early at the first
	// position it cannot decode.
	decodeX86(mode int, intel bool, code []byte, pc uint64, count int) ([]extInsn, error)
	version() string
}

// x86Decoder is the x86 decoder a disassembly uses: an external library
// (Zydis 4.0, else Capstone 4/5) when one could be loaded (lib non-nil),
// else x86asm alone, which decodes neither VEX/EVEX (AVX, AVX2, AVX-512)
// nor CET (endbr64) instructions and so loses instruction boundaries
// after one.
type x86Decoder struct {
	lib extDecoder
	// Name says which decoder produced the boundaries, e.g.
	// "zydis 4.0.0 (libZydis.so.4.0)" or "x86asm".
	Name string
	// Missing is why no external decoder is used ("" when one is).
	Missing string
	// Lacks says what the external decoder cannot decode that objdump
	// (and Zydis) decode ("" for Zydis, which decodes what objdump does):
	// rows it leaves undecodable make the result partial.
	Lacks string
}

// x86DecoderFor returns the x86 decoder of a disassemble call
// (newX86Decoder); tests replace it to run a call with one decoder.
var x86DecoderFor = newX86Decoder

// capstoneLacks says what a Capstone release lacks that objdump decodes,
// by its major version: Capstone 4.0 has no AVX-512 mask-register
// instructions (kmovq, kortestd, kandw, vptestnmb's k forms: all over
// glibc's AVX-512 string functions), nor PKU or GFNI; for Capstone 5 no
// gap was measured, but it is not the reference decoder either.
func capstoneLacks(major int) string {
	if major == 4 {
		return "Capstone 4 lacks AVX-512 mask-register instructions (kmovq, kortestd, vptestnmb and others, common in glibc's string functions), PKU and GFNI, which objdump decodes"
	}
	return "Capstone does not decode every instruction objdump decodes"
}

// vexLen returns the length in bytes of the VEX (c4, c5) or EVEX (62)
// encoded instruction at the start of code in mode 32 or 64, 0 when code
// does not start with one or is too short for it (Intel SDM vol. 2,
// 2.3 VEX and 2.7 EVEX: prefix, opcode, ModRM, SIB, displacement, and an
// imm8 for every map 0F3A opcode and the map 0F opcodes 70-73, c2, c4-c6;
// VEX 0F 77, vzeroupper/vzeroall, has no ModRM).
// In 32-bit mode c4, c5 and 62 are VEX/EVEX only when the next byte's top
// two bits are set (else LES, LDS, BOUND).
func vexLen(code []byte, mode int) int {
	if len(code) < 2 || mode == 32 && code[1]&0xc0 != 0xc0 {
		return 0
	}
	var pre, m int
	switch code[0] {
	case 0xc5:
		pre, m = 2, 1
	case 0xc4:
		if len(code) < 3 {
			return 0
		}
		pre, m = 3, int(code[1]&0x1f)
	case 0x62:
		if len(code) < 4 {
			return 0
		}
		pre, m = 4, int(code[1]&0x07)
	default:
		return 0
	}
	if len(code) > pre && m == 1 && code[pre] == 0x77 && code[0] != 0x62 {
		return pre + 1 // vzeroupper, vzeroall: no ModRM
	}
	if len(code) < pre+2 {
		return 0
	}
	op := code[pre]
	r := modrmLen(code[pre+1:])
	if r == 0 {
		return 0
	}
	n := pre + 1 + r
	if m == 3 || m == 1 && (op >= 0x70 && op <= 0x73 || op == 0xc2 || op >= 0xc4 && op <= 0xc6) {
		n++
	}
	if n > len(code) || n > maxInsnLen {
		return 0
	}
	return n
}

// modrmLen returns the bytes a ModRM byte at code[0] takes with its SIB
// byte and displacement (32/64-bit addressing), 0 when code is too short.
func modrmLen(code []byte) int {
	if len(code) == 0 {
		return 0
	}
	mod, rm := code[0]>>6, code[0]&7
	n := 1
	if mod != 3 && rm == 4 {
		if len(code) < 2 {
			return 0
		}
		if mod == 0 && code[1]&7 == 5 {
			n += 4
		}
		n++
	}
	switch {
	case mod == 1:
		n++
	case mod == 2, mod == 0 && rm == 5:
		n += 4
	}
	if n > len(code) {
		return 0
	}
	return n
}

// capstoneGapLen returns the length of the instruction at the start of
// code when it is one Capstone 4 cannot decode but objdump does: a VEX or
// EVEX one (vexLen: the AVX-512 mask-register instructions), rdpkru and
// wrpkru (0f 01 ee/ef), or a legacy-encoded GFNI one (66 [REX] 0f 38 cf /r,
// 66 [REX] 0f 3a ce/cf /r ib); 0 otherwise.
func capstoneGapLen(code []byte, mode int) int {
	if n := vexLen(code, mode); n > 0 {
		return n
	}
	if len(code) >= 3 && code[0] == 0x0f && code[1] == 0x01 && (code[2] == 0xee || code[2] == 0xef) {
		return 3
	}
	if len(code) < 5 || code[0] != 0x66 {
		return 0
	}
	i := 1
	if mode == 64 && code[1]&0xf0 == 0x40 {
		i++
	}
	if len(code) < i+4 || code[i] != 0x0f {
		return 0
	}
	imm := 0
	switch {
	case code[i+1] == 0x38 && code[i+2] == 0xcf:
	case code[i+1] == 0x3a && (code[i+2] == 0xce || code[i+2] == 0xcf):
		imm = 1
	default:
		return 0
	}
	r := modrmLen(code[i+3:])
	n := i + 3 + r + imm
	if r == 0 || n > len(code) || n > maxInsnLen {
		return 0
	}
	return n
}

// newX86Decoder loads the external decoder once per process: Zydis, the
// one whose boundaries equal objdump's on the system C library and on Go's
// AVX-512 runtime code, else Capstone (whose 4.0 release lacks AVX-512
// mask-register, PKU and GFNI instructions: Lacks says so).
func newX86Decoder() x86Decoder {
	z, zerr := loadZydis()
	if zerr == nil {
		return x86Decoder{lib: z, Name: z.version()}
	}
	c, cerr := loadCapstone()
	if cerr == nil {
		return x86Decoder{lib: c, Name: c.version(), Lacks: capstoneLacks(c.major)}
	}
	return x86Decoder{Name: "x86asm", Missing: zerr.Error() + "; " + cerr.Error()}
}

// codeRange is the bytes to disassemble and their address.
type codeRange struct {
	base    uint64
	code    []byte
	section string
	sect    int // index into the inspection's Sections
	symbol  string
	// limit says how the requested range was cut to the section's
	// bytes ("" when it was not).
	limit string
}

// resolveSymbol finds the defined symbol named name with an extent and
// returns its bytes. name is a symbol name, or name@version /
// name@@version (readelf's and nm's spelling of an ELF versioned symbol:
// @@ selects the default version, @ any symbol of that version) when no
// symbol is named so literally (name@plt is a literal PLT name). It fails
// with INVALID_ARGUMENT (field /symbol) when no such symbol exists in
// completely read symbol tables, or when the name is ambiguous: then
// details.candidates lists each symbol (name, address, size, version,
// default_version, section) and ambiguousSymbol's candidates are returned
// for the caller's next_action. It fails with an unknownAnswer when the
// tables or the symbol's bytes are unresolved.
func resolveSymbol(in *Inspection, ss *symbolSet, name string) (*codeRange, error) {
	match := func(s Symbol) bool { return s.Name == name }
	if !symbolNamed(ss, name) {
		if base, ver, def, ok := splitVersion(name); ok {
			match = func(s Symbol) bool {
				return s.Name == base && s.Version == ver && (!def || s.DefaultVersion != nil && *s.DefaultVersion)
			}
		}
	}
	var found []Symbol
	for _, s := range ss.syms {
		if match(s) && s.Defined && s.sect >= 0 && s.size > 0 {
			dup := false
			for _, f := range found {
				if f.value == s.value {
					dup = true
				}
			}
			if !dup {
				found = append(found, s)
			}
		}
	}
	if len(found) == 0 {
		if len(ss.unresolved) > 0 {
			return nil, &unknownAnswer{Field: "/symbol", Reason: fmt.Sprintf("%d symbol table(s) could not be read (%s: %s): whether a symbol named %q exists is unknown", len(ss.unresolved), ss.unresolved[0].Structure, ss.unresolved[0].Reason, name), Unresolved: ss.unresolved}
		}
		if u := sectionsUnknown(in, "/symbol", "a symbol table naming "+strconv.Quote(name)); u != nil {
			return nil, u
		}
		e := contract.Errorf(contract.CodeInvalidArgument, "no defined symbol with that name and a known size in the binary's symbol tables; list_symbols shows the names")
		e.Field = "/symbol"
		return nil, e
	}
	if len(found) > 1 {
		e := contract.Errorf(contract.CodeInvalidArgument, "%d symbols share that name at different addresses (details.candidates); select one by name@version or name@@version, or by start and end", len(found))
		e.Field = "/symbol"
		cands := make([]map[string]any, 0, len(found))
		for _, f := range found {
			c := map[string]any{"name": f.Name, "address": f.Address, "size": f.Size, "section": f.Section, "table": f.Table}
			if f.Version != "" {
				c["version"], c["default_version"] = f.Version, *f.DefaultVersion
			}
			cands = append(cands, c)
		}
		e.WithDetail("candidates", cands)
		return nil, &ambiguousSymbol{err: e, candidates: found}
	}
	s := found[0]
	if s.sect >= 0 && s.sect < len(in.Sections) && in.Sections[s.sect].Content == "unresolved" {
		return nil, contentsUnknown(in, &in.Sections[s.sect], "/symbol")
	}
	// The symbol's own section holds its bytes (in a relocatable object
	// every section starts at address 0, so the address alone is
	// ambiguous).
	if s.sect >= 0 && s.sect < len(in.Sections) && in.Sections[s.sect].Content == "file_bytes" {
		sec := in.Sections[s.sect]
		a, err := parseHex(sec.Address)
		if err == nil && s.value >= a && s.value-a < uint64(len(sec.data)) {
			end := s.value - a + s.size
			if end > uint64(len(sec.data)) {
				end = uint64(len(sec.data))
			}
			return &codeRange{base: s.value, code: sec.data[s.value-a : end], section: sec.Name, sect: s.sect, symbol: name}, nil
		}
	}
	cr, err := resolveRange(in, s.value, s.value+s.size, "/symbol")
	if err != nil {
		return nil, err
	}
	cr.symbol = name
	return cr, nil
}

// ambiguousSymbol is resolveSymbol's error when several symbols match:
// the contract error and the matching symbols.
type ambiguousSymbol struct {
	err        *contract.Error
	candidates []Symbol
}

// Error implements error as the contract error's text.
func (a *ambiguousSymbol) Error() string { return a.err.Error() }

// Unwrap returns the contract error, so contract.AsError finds it.
func (a *ambiguousSymbol) Unwrap() error { return a.err }

// symbolNamed reports whether a defined symbol of ss is named name exactly.
func symbolNamed(ss *symbolSet, name string) bool {
	for _, s := range ss.syms {
		if s.Name == name && s.Defined {
			return true
		}
	}
	return false
}

// splitVersion splits readelf's name@version / name@@version spelling:
// def is true for @@. ok is false when name has no @ or an empty part.
func splitVersion(name string) (base, version string, def, ok bool) {
	i := strings.Index(name, "@")
	if i <= 0 {
		return "", "", false, false
	}
	base, version = name[:i], name[i+1:]
	if strings.HasPrefix(version, "@") {
		version, def = version[1:], true
	}
	if version == "" || strings.Contains(version, "@") {
		return "", "", false, false
	}
	return base, version, def, true
}

// symbolSelector is the symbol argument that selects c alone among
// candidates: name@@version for the default version, name@version for a
// version no other candidate has; "" when versions do not tell them apart.
func symbolSelector(c Symbol, candidates []Symbol) string {
	if c.Version == "" {
		return ""
	}
	if c.DefaultVersion != nil && *c.DefaultVersion {
		return c.Name + "@@" + c.Version
	}
	for _, o := range candidates {
		if o.value != c.value && o.Version == c.Version {
			return ""
		}
	}
	return c.Name + "@" + c.Version
}

// relocatable reports whether the file is a relocatable object (ELF
// ET_REL, Mach-O MH_OBJECT, a COFF object): its sections are not placed,
// so addresses are relative to each section.
func relocatable(in *Inspection) bool {
	if in.Header.Type == nil {
		return false
	}
	switch in.Header.Type.Name {
	case "ET_REL", "Obj":
		return true
	}
	return in.Header.Format == FormatPE && in.Header.Type.Source == coffObjectSource
}

// coffObjectSource is Header.Type's source for a COFF object file, which
// has no optional header.
const coffObjectSource = "IMAGE_FILE_HEADER.Characteristics (COFF object)"

// resolveSection returns the bytes of the section named name ("" selects
// the first executable one named .text or __text) from start (its own
// address when zero) to end (its end when zero). In a relocatable object
// a section's addresses start at 0, so start and end are offsets in it.
func resolveSection(in *Inspection, name string, start, end uint64, hasStart bool) (*codeRange, error) {
	var sec *Section
	idx := -1
	matches := 0
	for i := range in.Sections {
		s := &in.Sections[i]
		n := s.Name
		if s.Segment != "" && strings.Contains(name, ",") {
			n = s.Segment + "," + s.Name
		}
		if name == "" {
			if (s.Name == ".text" || s.Name == "__text") && s.Content == "file_bytes" {
				if sec == nil {
					sec, idx = s, i
				}
				matches++
			}
			continue
		}
		if n == name {
			if sec == nil {
				sec, idx = s, i
			}
			matches++
		}
	}
	field := "/section"
	if name == "" {
		field = "/start"
	}
	if sec == nil {
		if u := sectionsUnknown(in, field, "a section named "+strconv.Quote(name)); u != nil {
			return nil, u
		}
		if name == "" {
			e := contract.Errorf(contract.CodeInvalidArgument, "a relocatable object's addresses are relative to each section and it has no .text section: name the section")
			e.Field = field
			return nil, &sectionNotFound{e}
		}
		e := contract.Errorf(contract.CodeInvalidArgument, "no section of that name; inspect_binary lists the sections")
		e.Field = field
		return nil, &sectionNotFound{e}
	}
	if matches > 1 {
		e := contract.Errorf(contract.CodeInvalidArgument, "%d sections share that name; disassemble by symbol instead", matches)
		e.Field = field
		return nil, e
	}
	if sec.Content == "unresolved" {
		return nil, contentsUnknown(in, sec, field)
	}
	if sec.Content != "file_bytes" {
		e := contract.Errorf(contract.CodeInvalidArgument, "the section has no file bytes (content %s)", sec.Content)
		e.Field = field
		return nil, e
	}
	a, err := parseHex(sec.Address)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInternalError, "section address %q", sec.Address)
	}
	n := uint64(len(sec.data))
	if !hasStart {
		start = a
	}
	if start < a || start >= a+n {
		e := contract.Errorf(contract.CodeInvalidArgument, "start is outside section %s [%s, %s)", sec.Name, hexU(a), hexU(a+n))
		e.Field = "/start"
		return nil, e
	}
	limit := ""
	if end > a+n {
		limit = fmt.Sprintf("end %s is beyond section %s, which ends at %s: the range was cut at the section end", hexU(end), sec.Name, hexU(a+n))
	}
	if end == 0 || end > a+n {
		end = a + n
	}
	return &codeRange{base: start, code: sec.data[start-a : end-a], section: sec.Name, sect: idx, limit: limit}, nil
}

// resolveRange returns the file bytes backing [start, end) when they lie in
// one section with file bytes; end is clipped to the section end (and
// codeRange.limit says so). An address in a section whose bytes are past
// the end of the file, or outside every section of a partly read section
// table, is an unknownAnswer.
func resolveRange(in *Inspection, start, end uint64, fieldName string) (*codeRange, error) {
	for i, s := range in.Sections {
		if s.Content != "file_bytes" {
			continue
		}
		a, err := parseHex(s.Address)
		if err != nil || a == 0 {
			continue
		}
		n := uint64(len(s.data))
		if start >= a && start < a+n {
			limit := ""
			if end > a+n {
				limit = fmt.Sprintf("end %s is beyond section %s, which ends at %s: the range was cut at the section end", hexU(end), s.Name, hexU(a+n))
			}
			if end > a+n || end <= start {
				end = a + n
			}
			return &codeRange{base: start, code: s.data[start-a : end-a], section: s.Name, sect: i, limit: limit}, nil
		}
	}
	for i := range in.Sections {
		s := &in.Sections[i]
		a, err1 := parseHex(s.Address)
		n, err2 := parseDec(s.Size)
		if s.Content == "unresolved" && err1 == nil && err2 == nil && a != 0 && start >= a && start-a < n {
			return nil, contentsUnknown(in, s, fieldName)
		}
	}
	if u := sectionsUnknown(in, fieldName, "a section holding that address"); u != nil {
		return nil, u
	}
	e := contract.Errorf(contract.CodeInvalidArgument, "the address is not inside any section with file bytes")
	e.Field = fieldName
	return nil, e
}

// zeroDispMarker stands in for a zero displacement while x86asm renders an
// instruction: x86asm.GNUSyntax prints an absolute memory operand with
// displacement 0 (no base, no index) as nothing at all ("%gs:" for
// "mov %gs:0x0,%ecx", the TLS load at the top of every Go 386 function),
// where GNU objdump prints "0x0". The marker is a displacement no real
// instruction carries (it does not fit in 32 bits, and 64-bit absolute
// moffs operands are rendered before this) and is replaced by "0x0".
const zeroDispMarker = 0x7a3c_0000_0000_0d15

// gnuSyntax is x86asm.GNUSyntax made to match GNU objdump (binutils 2.40):
// absolute zero displacements print as "0x0" (i386-dis.c OP_E_memory) and
// call/jmp/ret carry no "q" suffix. One known difference remains: an
// explicit zero 8-bit displacement with a base register ("nopl 0x0(%rax)")
// prints without it ("nopl (%rax)"), as x86asm does not keep the
// displacement's encoded size.
func gnuSyntax(inst x86asm.Inst, pc uint64, symname x86asm.SymLookup) string {
	marked := false
	for i, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Index == 0 && m.Disp == 0 {
			m.Disp = zeroDispMarker
			inst.Args[i] = m
			marked = true
		}
	}
	text := x86asm.GNUSyntax(inst, pc, symname)
	if marked {
		text = strings.ReplaceAll(text, fmt.Sprintf("%#x", int64(zeroDispMarker)), "0x0")
	}
	// binutils 2.37 and later print near call, jmp and ret without the
	// operand-size suffix in 64-bit mode ("call", not "callq"); x86asm
	// keeps the older spelling.
	for _, op := range [...]string{"callq", "jmpq", "retq"} {
		if rest, ok := strings.CutPrefix(text, op); ok && (rest == "" || rest[0] == ' ') {
			return op[:len(op)-1] + rest
		}
	}
	return text
}

// textMemo keeps the rows of instructions already decoded, by their
// bytes: an instruction that names no target (no branch, no RIP-relative
// operand) has the same hex and objdump text wherever it is (for one
// decoder, mode and syntax), so a repeated one (most of a C library's
// .text) is neither re-decoded by x86asm, formatted by the external
// decoder, nor re-spelled.
// A memo belongs to one symbol index, decoder, architecture and syntax
// (memoOwner); it is used by one disassembly at a time.
type textMemo struct {
	owner memoOwner
	rows  map[memoKey]memoRow
}

// memoKey is an instruction's bytes as a memo key: its length, then the
// bytes (at most maxInsnLen), the rest zero. A fixed-size key hashes and
// compares without a string's indirection.
type memoKey [16]byte

// keyOf returns code's memoKey; ok is false when code is too long to be one
// instruction.
func keyOf(code []byte) (k memoKey, ok bool) {
	if len(code) > maxInsnLen {
		return k, false
	}
	k[0] = byte(len(code))
	copy(k[1:], code)
	return k, true
}

// memoOwner is what a row's text depends on besides its bytes.
type memoOwner struct {
	idx    *symIndex
	lib    extDecoder
	arch   string
	syntax string
}

// memoRow is a remembered row: its hex bytes and text.
type memoRow struct {
	hex, text string
}

// maxMemoRows bounds a memo (about 100 bytes a row): past it the memo is
// emptied and refilled.
const maxMemoRows = 1 << 16

// lastMemo is the memo of the disassembly that ended last, so the pages of
// one listing share it; nil while a disassembly holds it.
var lastMemo struct {
	sync.Mutex
	m *textMemo
}

// noTextMemo turns the memo off (tests compare rows with and without it).
var noTextMemo bool

// takeTextMemo returns the kept memo when it belongs to owner (and holds
// it until putTextMemo), else a new one.
func takeTextMemo(owner memoOwner) *textMemo {
	if noTextMemo {
		return nil
	}
	lastMemo.Lock()
	defer lastMemo.Unlock()
	if m := lastMemo.m; m != nil && m.owner == owner {
		lastMemo.m = nil
		return m
	}
	return &textMemo{owner: owner, rows: make(map[memoKey]memoRow)}
}

// putTextMemo keeps m for the next disassembly.
func putTextMemo(m *textMemo) {
	lastMemo.Lock()
	defer lastMemo.Unlock()
	lastMemo.m = m
}

// get returns the row remembered for the instruction bytes code.
func (m *textMemo) get(code []byte) (memoRow, bool) {
	if m == nil {
		return memoRow{}, false
	}
	k, ok := keyOf(code)
	if !ok {
		return memoRow{}, false
	}
	r, ok := m.rows[k]
	return r, ok
}

// put remembers the row of the instruction bytes code.
func (m *textMemo) put(code []byte, r memoRow) {
	if m == nil {
		return
	}
	k, ok := keyOf(code)
	if !ok {
		return
	}
	if len(m.rows) >= maxMemoRows {
		clear(m.rows)
	}
	m.rows[k] = r
}

// appendJSON appends r encoded as encoding/json encodes it (the same
// bytes: field order, omitempty, HTML-safe escaping), without reflection:
// a page holds up to 5,000 rows.
func (r *Instruction) appendJSON(b []byte) []byte {
	if len(r.Relocations) > 0 {
		j, _ := json.Marshal(r)
		return append(b, j...)
	}
	b = append(b, `{"address":`...)
	b = appendJSONString(b, r.Address)
	b = append(b, `,"bytes":`...)
	b = appendJSONString(b, r.Bytes)
	for _, f := range [...]struct{ key, v string }{{`,"text":`, r.Text}, {`,"target":`, r.Target}, {`,"target_symbol":`, r.TargetSymbol}, {`,"source":`, r.Source}, {`,"error":`, r.Error}} {
		if f.v != "" {
			b = append(b, f.key...)
			b = appendJSONString(b, f.v)
		}
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string as encoding/json writes it:
// printable ASCII other than the quote, the backslash and <, >, & is
// copied, any other string is encoding/json's own encoding.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s)
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// encodeInstructions is the rowFunc of the disassembly's page function:
// encodeRows' result without reflection, the page's rows in one buffer.
func encodeInstructions(page func(pos evidence.Position, limit int) ([]Instruction, *evidence.Position, error)) rowFunc {
	return func(pos evidence.Position, limit int) ([]json.RawMessage, *evidence.Position, error) {
		rows, next, err := page(pos, limit)
		defer putInstructions(rows)
		out := make([]json.RawMessage, len(rows))
		buf := make([]byte, 0, 96*len(rows))
		ends := make([]int, len(rows))
		for i := range rows {
			buf = rows[i].appendJSON(buf)
			ends[i] = len(buf)
		}
		start := 0
		for i, e := range ends {
			out[i] = json.RawMessage(buf[start:e:e])
			start = e
		}
		return out, next, err
	}
}

// instructionBufs holds row slices of pages already encoded
// (putInstructions) for the next page's rows: a page of 5,000 rows is
// over a megabyte of Instruction values.
var instructionBufs sync.Pool

// takeInstructions returns an empty row slice with room for n rows.
func takeInstructions(n int) []Instruction {
	n = max(n, 0)
	if b, _ := instructionBufs.Get().(*[]Instruction); b != nil && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]Instruction, 0, n)
}

// putInstructions gives rows, which nothing uses any more (the page was
// encoded), to a later page; their strings are dropped first.
func putInstructions(rows []Instruction) {
	if cap(rows) == 0 {
		return
	}
	clear(rows)
	rows = rows[:0]
	instructionBufs.Put(&rows)
}
