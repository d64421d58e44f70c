package bin

import (
	"debug/gosym"
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
	if len(pcln) == 0 || !found {
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
