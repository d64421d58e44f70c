package bin

import (
	"debug/gosym"
	"encoding/binary"
)

// TableGoPCLN names the function symbols read from a Go binary's
// .gopclntab (__gopclntab in Mach-O): the runtime's own function table,
// which survives stripping. They symbolize disassembly only, and only when
// the binary has no symbol table.
const TableGoPCLN = "Go pclntab"

// goPCLNSymbols returns one STT_FUNC-like symbol per function of the Go
// function table (debug/gosym: entry PC, end PC, package-qualified name),
// placed in the section holding its entry. A binary without the table, or
// one debug/gosym cannot parse, yields none: symbolization is best effort.
func goPCLNSymbols(in *Inspection) (out []Symbol) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	var pcln []byte
	var text uint64
	found := false
	for _, s := range in.Sections {
		switch s.Name {
		case ".gopclntab", "__gopclntab":
			if s.Content == "file_bytes" {
				pcln = s.data
			}
		case ".text", "__text":
			if a, err := parseHex(s.Address); err == nil && !found {
				text, found = a, true
			}
		}
	}
	if !pclnPlausible(pcln) || !found {
		return nil
	}
	t, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, text))
	if err != nil {
		return nil
	}
	for _, fn := range t.Funcs {
		if fn.Entry >= fn.End || fn.Name == "" {
			continue
		}
		sect := -1
		for i := range in.Sections {
			if lo, hi, ok := sectionSpan(in, i); ok && fn.Entry >= lo && fn.Entry < hi {
				sect = i
				break
			}
		}
		out = append(out, Symbol{Name: fn.Name, Table: TableGoPCLN, Address: hexU(fn.Entry), Size: decU(fn.End - fn.Entry), SizeSource: "pclntab", Type: "STT_FUNC", Defined: true, value: fn.Entry, size: fn.End - fn.Entry, sect: sect, isFunc: true})
	}
	return out
}

// pclnPlausible reports whether b starts with a pclntab header (runtime
// symtab.go: magic 0xfffffffb go1.2, 0xfffffffa go1.16, 0xfffffff0 go1.18,
// 0xfffffff1 go1.20, in either byte order; pad; quantum; pointer size 4 or
// 8; nfunctab) whose function count fits in b (every functab entry is at
// least 8 bytes). debug/gosym allocates nfunctab entries before it checks
// them, so a damaged count would exhaust memory.
func pclnPlausible(b []byte) bool {
	if len(b) < 16 {
		return false
	}
	known := func(m uint32) bool { return m == 0xfffffffb || m == 0xfffffffa || m == 0xfffffff0 || m == 0xfffffff1 }
	var bo binary.ByteOrder = binary.LittleEndian
	if !known(bo.Uint32(b)) {
		bo = binary.BigEndian
		if !known(bo.Uint32(b)) {
			return false
		}
	}
	var n uint64
	switch b[7] {
	case 4:
		n = uint64(bo.Uint32(b[8:]))
	case 8:
		n = bo.Uint64(b[8:])
	default:
		return false
	}
	return n <= uint64(len(b))/8
}
