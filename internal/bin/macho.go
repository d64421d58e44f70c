package bin

import (
	"bytes"
	"context"
	"debug/macho"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// Mach-O load command numbers (mach-o/loader.h) this reader interprets.
const (
	lcIDDylib        = 0xd
	lcLoadDylinker   = 0xe
	lcLoadDylib      = 0xc
	lcUUID           = 0x1b
	lcCodeSignature  = 0x1d
	lcLoadWeakDylib  = 0x80000018
	lcRPath          = 0x8000001c
	lcReexportDylib  = 0x8000001f
	lcMain           = 0x80000028
	lcThread         = 0x4
	lcUnixThread     = 0x5
	mhPIE            = 0x200000
	mhAllowStackExec = 0x20000
	mhNoHeapExec     = 0x1000000
)

type machoHeader struct {
	order    binary.ByteOrder
	is64     bool
	cpu      macho.Cpu
	subcpu   uint32
	filetype macho.Type
	ncmds    uint32
	flags    uint32
}

func readMachOHeader(in *Inspection, data []byte) (*machoHeader, bool) {
	h := &machoHeader{}
	switch {
	case binary.LittleEndian.Uint32(data) == macho.Magic64:
		h.order, h.is64 = binary.LittleEndian, true
	case binary.LittleEndian.Uint32(data) == macho.Magic32:
		h.order = binary.LittleEndian
	case binary.BigEndian.Uint32(data) == macho.Magic64:
		h.order, h.is64 = binary.BigEndian, true
	default:
		h.order = binary.BigEndian
	}
	in.Header.Endianness = map[bool]string{true: "little", false: "big"}[h.order == binary.ByteOrder(binary.LittleEndian)]
	in.Header.Class = map[bool]string{true: "64-bit", false: "32-bit"}[h.is64]
	if len(data) < 28 {
		in.unresolved("Mach-O header", 0, 28, "the file ends inside the mach_header")
		return nil, false
	}
	o := h.order
	h.cpu, h.subcpu = macho.Cpu(o.Uint32(data[4:])), o.Uint32(data[8:])
	h.filetype, h.ncmds, h.flags = macho.Type(o.Uint32(data[12:])), o.Uint32(data[16:]), o.Uint32(data[24:])
	in.Header.Machine = field(uint64(h.cpu), h.cpu.String(), "mach_header.cputype")
	in.Header.Type = field(uint64(h.filetype), machoTypeName(h.filetype), "mach_header.filetype")
	in.Header.Flags = field(uint64(h.flags), machoFlagNames(h.flags), "mach_header.flags")
	return h, true
}

func machoFlagNames(f uint32) string {
	var n []string
	for _, x := range []struct {
		bit  uint32
		name string
	}{{macho.FlagNoUndefs, "MH_NOUNDEFS"}, {macho.FlagDyldLink, "MH_DYLDLINK"}, {macho.FlagTwoLevel, "MH_TWOLEVEL"}, {mhAllowStackExec, "MH_ALLOW_STACK_EXECUTION"}, {mhPIE, "MH_PIE"}, {mhNoHeapExec, "MH_NO_HEAP_EXECUTION"}} {
		if f&x.bit != 0 {
			n = append(n, x.name)
		}
	}
	return strings.Join(n, "|")
}

func inspectMachO(ctx context.Context, in *Inspection, data []byte) {
	h, ok := readMachOHeader(in, data)
	if !ok {
		in.facet("header", FacetPartial, "the Mach-O header is incomplete")
		for _, n := range []string{"sections", "segments", "dynamic", "imports", "exports", "build_id", "go_build_info", "hardening"} {
			in.facet(n, FacetUnresolved, "the Mach-O header is incomplete")
		}
		return
	}
	in.facet("header", FacetComplete, "")
	var f *macho.File
	var err error
	hdrSize := uint64(28)
	if h.is64 {
		hdrSize = 32
	}
	if !guard(in, "load commands", hdrSize, func() { f, err = macho.NewFile(bytes.NewReader(data)) }) || err != nil {
		f = openMachOWithoutSymtab(in, h, data, hdrSize, err)
	}
	if f == nil {
		for _, n := range []string{"sections", "segments", "dynamic", "imports", "exports", "build_id", "go_build_info"} {
			in.facet(n, FacetUnresolved, "the load commands were not admitted")
		}
		machoHardening(in, h, nil)
		return
	}
	in.Admitted = true
	o := h.order
	segState := FacetComplete
	d := &Dynamic{Needed: []string{}, RPath: []string{}, RunPath: []string{}}
	bid := &BuildID{}
	var codeSig []byte
	segIndex := 0
	entryUnknown := false
	var mainOff uint64 // LC_MAIN entryoff: a file offset
	haveMain := false
	var fixups, trie, infoTrie linkeditRange
	for _, l := range f.Loads {
		raw := l.Raw()
		if len(raw) < 8 {
			continue
		}
		cmd := o.Uint32(raw)
		str := func() string {
			if len(raw) < 12 {
				return ""
			}
			off := o.Uint32(raw[8:])
			if uint64(off) >= uint64(len(raw)) {
				return ""
			}
			s := raw[off:]
			if i := bytes.IndexByte(s, 0); i >= 0 {
				s = s[:i]
			}
			return string(s)
		}
		switch cmd {
		case lcLoadDylib, lcLoadWeakDylib, lcReexportDylib:
			d.Needed = append(d.Needed, str())
		case lcRPath:
			d.RPath = append(d.RPath, str())
		case lcIDDylib:
			d.SOName = str()
		case lcLoadDylinker:
			d.Interpreter = str()
		case lcUUID:
			if len(raw) >= 24 {
				bid.UUID = strings.ToUpper(hex.EncodeToString(raw[8:24]))
			}
		case lcCodeSignature:
			codeSig = raw
		case lcUnixThread, lcThread:
			if pc, flavor, ok := threadPC(h.cpu, o, raw); ok {
				in.Header.Entry = hexU(pc)
				in.Header.EntrySource = "LC_UNIXTHREAD " + flavor + " program counter (virtual address)"
				if cmd == lcThread {
					in.Header.EntrySource = "LC_THREAD " + flavor + " program counter (virtual address)"
				}
			} else if cmd == lcUnixThread {
				in.unresolved("LC_UNIXTHREAD", 0, uint64(len(raw)), "the thread state's flavor or size is not one this reader decodes: the entry point is unknown")
				entryUnknown = true
			}
		case lcMain:
			if len(raw) >= 16 {
				mainOff, haveMain = o.Uint64(raw[8:]), true
			}
		case lcDyldChainedFixups, lcDyldExportsTrie:
			if len(raw) >= 16 {
				r := linkeditRange{off: uint64(o.Uint32(raw[8:])), size: uint64(o.Uint32(raw[12:])), present: true, cmd: "LC_DYLD_EXPORTS_TRIE"}
				if cmd == lcDyldChainedFixups {
					fixups = r
				} else {
					trie = r
				}
			}
		case lcDyldInfo, lcDyldInfoOnly:
			if len(raw) >= 48 && o.Uint32(raw[44:]) > 0 {
				infoTrie = linkeditRange{off: uint64(o.Uint32(raw[40:])), size: uint64(o.Uint32(raw[44:])), present: true, cmd: "LC_DYLD_INFO"}
			}
		}
		if s, ok := l.(*macho.Segment); ok {
			if _, ok := sliceAt(data, s.Offset, s.Filesz); !ok {
				segState = FacetPartial
				in.unresolved("segment "+s.Name+" file range", s.Offset, s.Filesz, "extends past the end of the file")
			}
			in.Segments = append(in.Segments, Segment{Index: segIndex, Type: map[bool]string{true: "LC_SEGMENT_64", false: "LC_SEGMENT"}[h.is64], Name: s.Name, Offset: decU(s.Offset), Address: hexU(s.Addr), FileSize: decU(s.Filesz), MemSize: decU(s.Memsz), Flags: vmProt(s.Prot), FlagsRaw: hexU(uint64(s.Prot)), Align: ""})
			segIndex++
		}
	}
	in.facet("segments", segState, "")
	if haveMain {
		// entryoff is a file offset; the entry point is the address the
		// segment holding that offset maps it to (llvm-objdump's
		// start address: __TEXT's vmaddr + entryoff - fileoff).
		found := false
		for _, l := range f.Loads {
			if sg, ok := l.(*macho.Segment); ok && sg.Filesz > 0 && mainOff >= sg.Offset && mainOff-sg.Offset < sg.Filesz {
				in.Header.Entry = hexU(sg.Addr + mainOff - sg.Offset)
				in.Header.EntrySource = fmt.Sprintf("LC_MAIN entryoff 0x%x (file offset) in segment %s at 0x%x", mainOff, sg.Name, sg.Addr)
				found = true
				break
			}
		}
		if !found {
			in.unresolved("LC_MAIN entryoff", mainOff, 0, "the file offset lies in no segment's file range: the entry point's address is unknown")
			entryUnknown = true
		}
	}
	if entryUnknown {
		in.facet("header", FacetPartial, "the entry point's thread state is not decoded")
	}
	state := FacetComplete
	for i, s := range f.Sections {
		if ctx.Err() != nil {
			return
		}
		sec := Section{Index: i + 1, Name: s.Name, Segment: s.Seg, Type: hexU(uint64(s.Flags & 0xff)), Address: hexU(s.Addr), Offset: decU(uint64(s.Offset)), Size: decU(s.Size), Flags: hexU(uint64(s.Flags)), FlagsRaw: hexU(uint64(s.Flags))}
		switch s.Flags & 0xff {
		case 0x1, 0xc, 0x12: // S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL
			sec.FileSize, sec.Content = "0", "none"
		default:
			sec.FileSize = decU(s.Size)
			if b, ok := sliceAt(data, uint64(s.Offset), s.Size); ok {
				in.digest(&sec, b)
			} else {
				sec.Content = "unresolved"
				state = FacetPartial
				in.unresolved("section "+s.Seg+","+s.Name+" contents", uint64(s.Offset), s.Size, "extends past the end of the file")
			}
		}
		in.Sections = append(in.Sections, sec)
	}
	in.facet("sections", state, "")
	in.Dynamic = d
	in.Libraries = append(in.Libraries, d.Needed...)
	in.facet("dynamic", FacetComplete, "")
	in.BuildID = bid
	in.facet("build_id", FacetComplete, "")
	setGoBuildID(in, data, "__text")
	if in.Facets["imports"].State == FacetUnresolved {
		// symbol table unresolved: recorded by openMachOWithoutSymtab
	} else if f.Symtab == nil {
		in.facet("imports", FacetComplete, "no LC_SYMTAB")
		in.facet("exports", FacetComplete, "no LC_SYMTAB")
	} else {
		raw := machoRawNames(f, data)
		for i, s := range f.Symtab.Syms {
			if s.Type&0xe0 != 0 { // N_STAB debugging entries
				continue
			}
			if raw != nil {
				s.Name = raw[i]
			}
			ext := s.Type&0x01 != 0
			switch s.Type & 0x0e {
			case 0x0: // N_UNDF
				if ext && s.Name != "" && !machoCommon(s) {
					imp := Import{Name: s.Name, Source: "symtab (undefined external)"}
					if ord := int(s.Desc>>8) & 0xff; ord > 0 && ord <= len(d.Needed) {
						imp.Library = d.Needed[ord-1]
					}
					in.Imports = append(in.Imports, imp)
				}
			case 0xe: // N_SECT
				if ext && s.Type&0x10 == 0 {
					in.Exports = append(in.Exports, Export{Name: s.Name, Address: hexU(s.Value), Source: "symtab (defined external)"})
				}
			}
		}
		in.facet("imports", FacetComplete, "")
		in.facet("exports", FacetComplete, "")
	}
	if !trie.present {
		trie = infoTrie
	}
	var base uint64 // the image's base: the segment mapping file offset 0
	for _, l := range f.Loads {
		if sg, ok := l.(*macho.Segment); ok && sg.Offset == 0 && sg.Filesz > 0 {
			base = sg.Addr
			break
		}
	}
	machoDyldTables(in, data, o, d.Needed, base, fixups, trie)
	goBuildInfo(in, data)
	machoHardening(in, h, codeSig)
}

func vmProt(p uint32) string {
	b := []byte("---")
	if p&1 != 0 {
		b[0] = 'r'
	}
	if p&2 != 0 {
		b[1] = 'w'
	}
	if p&4 != 0 {
		b[2] = 'x'
	}
	return string(b)
}

func machoHardening(in *Inspection, h *machoHeader, codeSig []byte) {
	add := func(name, verdict string, basis ...string) {
		in.Hardening = append(in.Hardening, Check{Name: name, Verdict: verdict, Basis: basis})
	}
	switch {
	case h.filetype != macho.TypeExec:
		add("pie", VerdictNotApplicable, "mach_header.filetype "+machoTypeName(h.filetype)+": MH_PIE applies to MH_EXECUTE")
	case h.flags&mhPIE != 0:
		add("pie", VerdictYes, "mach_header.flags has MH_PIE")
	default:
		add("pie", VerdictNo, "mach_header.flags lacks MH_PIE")
	}
	if h.flags&mhAllowStackExec != 0 {
		add("nx_stack", VerdictNo, "mach_header.flags has MH_ALLOW_STACK_EXECUTION")
	} else {
		add("nx_stack", VerdictYes, "mach_header.flags lacks MH_ALLOW_STACK_EXECUTION")
	}
	switch {
	case !in.Admitted:
		add("code_signature", VerdictUnknown, "load commands not admitted")
	case codeSig != nil && len(codeSig) >= 16:
		add("code_signature", VerdictYes, fmt.Sprintf("LC_CODE_SIGNATURE dataoff %d datasize %d; presence only, the signature is not verified", h.order.Uint32(codeSig[8:]), h.order.Uint32(codeSig[12:])))
	default:
		add("code_signature", VerdictNo, "no LC_CODE_SIGNATURE load command")
	}
	if in.Admitted {
		in.facet("hardening", FacetComplete, "")
	} else {
		in.facet("hardening", FacetPartial, "code signature unknown: load commands not admitted")
	}
}

// inspectFat reads a universal (fat) header itself (mach-o/fat.h: big-endian
// fat_header and 20-byte fat_arch entries) and inspects each member slice.
func inspectFat(ctx context.Context, in *Inspection, data []byte) {
	be := binary.BigEndian
	n := uint64(be.Uint32(data[4:]))
	in.Header.Class = "universal"
	in.Header.Endianness = "big"
	state := FacetComplete
	for i := uint64(0); i < n; i++ {
		b, ok := sliceAt(data, 8+20*i, 20)
		if !ok {
			in.unresolved(fmt.Sprintf("fat_arch %d", i), 8+20*i, 20, "extends past the end of the file")
			state = FacetPartial
			break
		}
		cpu := macho.Cpu(be.Uint32(b))
		m := FatMember{CPU: field(uint64(cpu), cpu.String(), "fat_arch.cputype"), SubCPU: hexU(uint64(be.Uint32(b[4:]))), Offset: decU(uint64(be.Uint32(b[8:]))), Size: decU(uint64(be.Uint32(b[12:]))), Align: decU(uint64(be.Uint32(b[16:])))}
		m.Arch = archName(cpu.String())
		member, ok := sliceAt(data, uint64(be.Uint32(b[8:])), uint64(be.Uint32(b[12:])))
		if !ok {
			in.unresolved(fmt.Sprintf("fat member %d", i), uint64(be.Uint32(b[8:])), uint64(be.Uint32(b[12:])), "extends past the end of the file")
			state = FacetPartial
		} else if format, _ := Recognize(member); format != FormatMachO {
			in.unresolved(fmt.Sprintf("fat member %d", i), uint64(be.Uint32(b[8:])), uint64(len(member)), "the slice does not start with a Mach-O magic number")
			state = FacetPartial
		} else if sub, err := inspect(ctx, member, !in.noDigest); err == nil {
			m.Inspection = sub
			if !sub.Complete() {
				state = FacetPartial
			}
		} else {
			in.unresolved(fmt.Sprintf("fat member %d", i), uint64(be.Uint32(b[8:])), uint64(len(member)), "not a recognized Mach-O slice")
			state = FacetPartial
		}
		in.Members = append(in.Members, m)
	}
	in.Admitted = state == FacetComplete
	in.facet("header", FacetComplete, "")
	in.facet("members", state, "")
}

// openMachOWithoutSymtab retries admission with LC_SYMTAB and LC_DYSYMTAB
// emptied in a copy, so a file whose symbol tables are out of reach (a
// truncated __LINKEDIT) keeps its load commands, segments and sections.
// It records the symbol tables as unresolved; it returns nil and records
// the load commands as unresolved when even that fails.
func openMachOWithoutSymtab(in *Inspection, h *machoHeader, data []byte, hdrSize uint64, cause error) *macho.File {
	reason := "debug/macho did not admit the load commands"
	if cause != nil {
		reason += ": " + cause.Error()
	}
	patched := append([]byte(nil), data...)
	off := hdrSize
	var symOff, symSize uint64
	for i := uint32(0); i < h.ncmds; i++ {
		b, ok := sliceAt(patched, off, 8)
		if !ok {
			break
		}
		cmd, size := h.order.Uint32(b), uint64(h.order.Uint32(b[4:]))
		if size < 8 {
			break
		}
		body, ok := sliceAt(patched, off+8, size-8)
		if !ok {
			break
		}
		switch cmd {
		case 0x2: // LC_SYMTAB: symoff, nsyms, stroff, strsize
			if len(body) >= 16 {
				symOff = uint64(h.order.Uint32(body))
				symSize = uint64(h.order.Uint32(body[4:]))
			}
			clear(body)
		case 0xb: // LC_DYSYMTAB
			clear(body)
		}
		off += size
	}
	var f *macho.File
	var err error
	if symOff != 0 && guard(in, "load commands", hdrSize, func() { f, err = macho.NewFile(bytes.NewReader(patched)) }) && err == nil {
		in.unresolved("LC_SYMTAB symbol and string tables", symOff, symSize, reason)
		in.facet("imports", FacetUnresolved, "symbol tables unresolved")
		in.facet("exports", FacetUnresolved, "symbol tables unresolved")
		return f
	}
	in.unresolved("load commands", hdrSize, 0, reason)
	return nil
}

// threadPC returns the program counter of an LC_UNIXTHREAD/LC_THREAD
// command's first thread state (mach/*/thread_status.h): rip of
// x86_THREAD_STATE64 (flavor 4, 21 registers), eip of x86_THREAD_STATE32
// (flavor 1, 16 registers), pc of ARM_THREAD_STATE64 (flavor 6, x0-x28,
// fp, lr, sp, pc) and of ARM_THREAD_STATE (flavor 1, r0-r12, sp, lr, pc).
func threadPC(cpu macho.Cpu, o binary.ByteOrder, raw []byte) (uint64, string, bool) {
	if len(raw) < 16 {
		return 0, "", false
	}
	flavor, count := o.Uint32(raw[8:]), uint64(o.Uint32(raw[12:]))
	state := raw[16:]
	if count*4 > uint64(len(state)) {
		return 0, "", false
	}
	state = state[:count*4]
	reg64 := func(i int) (uint64, bool) {
		if len(state) < (i+1)*8 {
			return 0, false
		}
		return o.Uint64(state[i*8:]), true
	}
	reg32 := func(i int) (uint64, bool) {
		if len(state) < (i+1)*4 {
			return 0, false
		}
		return uint64(o.Uint32(state[i*4:])), true
	}
	switch {
	case cpu == macho.CpuAmd64 && flavor == 4:
		v, ok := reg64(16)
		return v, "x86_THREAD_STATE64 rip", ok
	case cpu == macho.Cpu386 && flavor == 1:
		v, ok := reg32(10)
		return v, "x86_THREAD_STATE32 eip", ok
	case cpu == macho.CpuArm64 && flavor == 6:
		v, ok := reg64(32)
		return v, "ARM_THREAD_STATE64 pc", ok
	case cpu == macho.CpuArm && flavor == 1:
		v, ok := reg32(15)
		return v, "ARM_THREAD_STATE pc", ok
	}
	return 0, "", false
}

// machoTypeName names mach_header.filetype: debug/macho's names for the
// four types it knows (Obj, Exec, Dylib, Bundle), and the other
// mach-o/loader.h MH_* types in the same style (MH_DSYM, 10, is "Dsym",
// llvm-objdump's DSYM); a value loader.h does not define stays a number.
func machoTypeName(t macho.Type) string {
	switch t {
	case macho.TypeObj, macho.TypeExec, macho.TypeDylib, macho.TypeBundle:
		return t.String()
	}
	names := [...]string{3: "Fvmlib", 4: "Core", 5: "Preload", 7: "Dylinker", 9: "DylibStub", 10: "Dsym", 11: "KextBundle", 12: "Fileset", 13: "GpuExecute", 14: "GpuDylib"}
	if int(t) < len(names) && names[t] != "" {
		return names[t]
	}
	return t.String()
}

// machoCommon reports whether s is a common symbol: undefined (N_UNDF)
// and external (N_EXT) with a nonzero n_value, which is then the size
// the link allocates (nlist(5)); llvm-nm lists it as C, not U.
func machoCommon(s macho.Symbol) bool {
	return s.Type&0x0e == 0 && s.Type&0x01 != 0 && s.Value != 0
}
