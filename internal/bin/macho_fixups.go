package bin

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Mach-O load commands that hold dyld's link-edit tables
// (mach-o/loader.h).
const (
	lcDyldInfo           = 0x22
	lcDyldInfoOnly       = 0x80000022
	lcDyldExportsTrie    = 0x80000033
	lcDyldChainedFixups  = 0x80000034
	chainedImportFormat1 = 1 // DYLD_CHAINED_IMPORT
	chainedImportAddend  = 2 // DYLD_CHAINED_IMPORT_ADDEND
	chainedImportAdd64   = 3 // DYLD_CHAINED_IMPORT_ADDEND64
)

// chainedImport is one entry of an LC_DYLD_CHAINED_FIXUPS imports table
// (mach-o/fixup-chains.h): the symbol dyld binds, the library ordinal it
// is looked up in (1-based index into the LC_LOAD_*DYLIB commands; 0 this
// image, -1 the main executable, -2 flat namespace, -3 weak lookup),
// whether a missing definition is tolerated, and the addend of the
// IMPORT_ADDEND and IMPORT_ADDEND64 formats (0 for DYLD_CHAINED_IMPORT).
type chainedImport struct {
	name    string
	ordinal int
	weak    bool
	addend  int64
}

// chainedFixups is what parseChainedFixups read of an
// LC_DYLD_CHAINED_FIXUPS blob: the imports table's entries in table order,
// the imports format, and, when the table could not be read whole, the
// reason (the entries before the fault are kept).
type chainedFixups struct {
	format  uint32
	imports []chainedImport
	partial string
}

// chainedImportFormatName spells dyld_chained_fixups_header.imports_format
// as llvm-objdump --chained-fixups does.
func chainedImportFormatName(f uint32) string {
	switch f {
	case chainedImportFormat1:
		return "DYLD_CHAINED_IMPORT"
	case chainedImportAddend:
		return "DYLD_CHAINED_IMPORT_ADDEND"
	case chainedImportAdd64:
		return "DYLD_CHAINED_IMPORT_ADDEND64"
	}
	return "imports_format " + strconv.FormatUint(uint64(f), 10)
}

// parseChainedFixups reads the dyld_chained_fixups_header and imports table
// of blob, the linkedit bytes LC_DYLD_CHAINED_FIXUPS points at. It never
// panics: a header it cannot read, an unknown fixups version, imports
// format or symbols format (zlib-compressed names), a table or a name past
// the blob's end are reported in partial with the imports read so far.
func parseChainedFixups(blob []byte, o binary.ByteOrder) chainedFixups {
	var r chainedFixups
	if len(blob) < 28 {
		r.partial = fmt.Sprintf("the chained fixups header needs 28 bytes, the blob has %d", len(blob))
		return r
	}
	version, importsOff, symbolsOff := o.Uint32(blob), uint64(o.Uint32(blob[8:])), uint64(o.Uint32(blob[12:]))
	count, format, symFormat := uint64(o.Uint32(blob[16:])), o.Uint32(blob[20:]), o.Uint32(blob[24:])
	r.format = format
	switch {
	case version != 0:
		r.partial = fmt.Sprintf("fixups_version %d is not one this reader knows (0)", version)
		return r
	case symFormat != 0:
		r.partial = fmt.Sprintf("symbols_format %d (compressed symbol names) is not read", symFormat)
		return r
	}
	var size uint64
	switch format {
	case chainedImportFormat1:
		size = 4
	case chainedImportAddend:
		size = 8
	case chainedImportAdd64:
		size = 16
	default:
		r.partial = fmt.Sprintf("imports_format %d is not DYLD_CHAINED_IMPORT, _ADDEND or _ADDEND64: its %d imports are not read", format, count)
		return r
	}
	if importsOff > uint64(len(blob)) || count > (uint64(len(blob))-importsOff)/size {
		r.partial = fmt.Sprintf("the imports table (%d entries of %d bytes at %d) extends past the chained fixups blob (%d bytes)", count, size, importsOff, len(blob))
		count = 0
		if importsOff <= uint64(len(blob)) {
			count = (uint64(len(blob)) - importsOff) / size
		}
	}
	for i := uint64(0); i < count; i++ {
		e := blob[importsOff+i*size:]
		var imp chainedImport
		var nameOff uint64
		switch format {
		case chainedImportFormat1, chainedImportAddend:
			v := o.Uint32(e)
			imp.ordinal, imp.weak, nameOff = int(v&0xff), v>>8&1 != 0, uint64(v>>9)
			if imp.ordinal > 0xf0 {
				imp.ordinal = int(int8(imp.ordinal))
			}
			if format == chainedImportAddend {
				imp.addend = int64(int32(o.Uint32(e[4:])))
			}
		default:
			v := o.Uint64(e)
			imp.ordinal, imp.weak, nameOff = int(v&0xffff), v>>16&1 != 0, v>>32
			if imp.ordinal > 0xfff0 {
				imp.ordinal = int(int16(imp.ordinal))
			}
			imp.addend = int64(o.Uint64(e[8:]))
		}
		name, ok := cString(blob, symbolsOff+nameOff)
		if !ok {
			if r.partial != "" {
				return r // the table's own overrun, found first
			}
			r.partial = fmt.Sprintf("import %d's name (offset %d in the symbol strings at %d) is not a NUL-terminated string inside the blob", i, nameOff, symbolsOff)
			return r
		}
		imp.name = name
		r.imports = append(r.imports, imp)
	}
	return r
}

// cString returns the NUL-terminated string at off in b, and false when
// off is outside b or no NUL follows it.
func cString(b []byte, off uint64) (string, bool) {
	if off >= uint64(len(b)) {
		return "", false
	}
	for i := off; i < uint64(len(b)); i++ {
		if b[i] == 0 {
			return string(b[off:i]), true
		}
	}
	return "", false
}

// Export trie flags (mach-o/loader.h EXPORT_SYMBOL_FLAGS_*).
const (
	exportKindMask     = 0x03
	exportKindAbsolute = 0x02
	exportReexport     = 0x08
	exportStubResolver = 0x10
)

// trieExport is one terminal of a dyld exports trie: the symbol name (the
// concatenated edge labels), its flags, its offset from the image's base
// (the absolute value for EXPORT_SYMBOL_FLAGS_KIND_ABSOLUTE), and for a
// re-export the library ordinal and the name it is imported under ("" for
// the same name).
type trieExport struct {
	name       string
	flags      uint64
	offset     uint64
	ordinal    uint64
	importName string
}

// maxTrieName bounds one exported name, so a trie whose edges loop
// through distinct offsets cannot build an unbounded string.
const maxTrieName = 1 << 16

// parseExportsTrie walks a dyld exports trie (the bytes LC_DYLD_EXPORTS_TRIE
// or LC_DYLD_INFO's export_off points at) and returns its exports in the
// order of a depth-first walk over the edges as stored (llvm-objdump
// --exports-trie's order). It never panics: a node offset out of range, a
// node reached twice (a cycle), a truncated ULEB128 or string, or a name
// over 64 KiB stops the walk with the reason, keeping what was read.
func parseExportsTrie(trie []byte) ([]trieExport, string) {
	var out []trieExport
	if len(trie) == 0 {
		return nil, ""
	}
	type frame struct {
		node uint64
		name string
	}
	seen := map[uint64]bool{}
	stack := []frame{{0, ""}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.node >= uint64(len(trie)) {
			return out, fmt.Sprintf("trie node offset %d is past the trie's %d bytes", f.node, len(trie))
		}
		if seen[f.node] {
			return out, fmt.Sprintf("trie node at %d is reached twice (a cycle)", f.node)
		}
		seen[f.node] = true
		p := f.node
		term, n := uleb(trie, p)
		if n == 0 {
			return out, fmt.Sprintf("trie node at %d: truncated terminal size", f.node)
		}
		p += n
		children := p + term
		if term > uint64(len(trie)) || children >= uint64(len(trie)) {
			return out, fmt.Sprintf("trie node at %d: terminal of %d bytes runs past the trie", f.node, term)
		}
		if term > 0 {
			e := trieExport{name: f.name}
			var ok bool
			if e.flags, p, ok = ulebAt(trie, p); !ok {
				return out, fmt.Sprintf("trie node at %d: truncated flags", f.node)
			}
			if e.flags&exportReexport != 0 {
				if e.ordinal, p, ok = ulebAt(trie, p); !ok {
					return out, fmt.Sprintf("trie node at %d: truncated re-export ordinal", f.node)
				}
				if e.importName, ok = cString(trie[:children], p); !ok {
					return out, fmt.Sprintf("trie node at %d: re-export name not terminated inside its terminal", f.node)
				}
			} else if e.offset, p, ok = ulebAt(trie, p); !ok {
				return out, fmt.Sprintf("trie node at %d: truncated address", f.node)
			} else if e.flags&exportStubResolver != 0 {
				if _, _, ok = ulebAt(trie, p); !ok {
					return out, fmt.Sprintf("trie node at %d: truncated resolver offset", f.node)
				}
			}
			out = append(out, e)
		}
		p = children
		nchild := uint64(trie[p])
		p++
		var kids []frame
		for i := uint64(0); i < nchild; i++ {
			label, ok := cString(trie, p)
			if !ok {
				return out, fmt.Sprintf("trie node at %d: edge %d's label is not terminated inside the trie", f.node, i)
			}
			p += uint64(len(label)) + 1
			var next uint64
			if next, p, ok = ulebAt(trie, p); !ok {
				return out, fmt.Sprintf("trie node at %d: edge %d's node offset is truncated", f.node, i)
			}
			if len(f.name)+len(label) > maxTrieName {
				return out, fmt.Sprintf("trie node at %d: a name over %d bytes", f.node, maxTrieName)
			}
			kids = append(kids, frame{next, f.name + label})
		}
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
	}
	return out, ""
}

// uleb decodes the ULEB128 at off in b: the value and its length in
// bytes, 0 when it is truncated or longer than 10 bytes.
func uleb(b []byte, off uint64) (uint64, uint64) {
	var v uint64
	for i := uint64(0); i < 10 && off+i < uint64(len(b)); i++ {
		c := b[off+i]
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// ulebAt is uleb returning the offset after the value and whether it was
// read.
func ulebAt(b []byte, off uint64) (uint64, uint64, bool) {
	v, n := uleb(b, off)
	return v, off + n, n > 0
}

// linkeditRange is the dataoff and datasize of a linkedit_data_command
// (or LC_DYLD_INFO's export_off and export_size), and whether the file
// has that command.
type linkeditRange struct {
	off, size uint64
	present   bool
	cmd       string
}

// machoDyldTables adds to in the imports of an LC_DYLD_CHAINED_FIXUPS
// imports table and the exports of the exports trie (LC_DYLD_EXPORTS_TRIE,
// else LC_DYLD_INFO's): what current Apple linkers record instead of, or
// beside, the symbol table. An import or export the symbol table already
// listed by name is not listed twice (an import gains its library
// ordinal). Export addresses are base (the vmaddr of the segment mapping
// file offset 0) plus the trie's offset, as llvm-objdump --exports-trie
// prints them; an absolute export's value is its address. A table that
// cannot be read whole makes its facet partial with the reason.
func machoDyldTables(in *Inspection, data []byte, o binary.ByteOrder, needed []string, base uint64, fixups, trie linkeditRange) {
	partial := func(facet, structure string, r linkeditRange, reason string) {
		in.unresolved(structure, r.off, r.size, reason)
		st := FacetPartial
		if in.Facets[facet].State == FacetUnresolved {
			st = FacetUnresolved
		}
		in.facet(facet, st, structure+": "+reason)
	}
	if fixups.present {
		if in.Facets["imports"].Reason == "no LC_SYMTAB" {
			in.facet("imports", FacetComplete, "")
		}
		blob, ok := sliceAt(data, fixups.off, fixups.size)
		if !ok {
			partial("imports", "LC_DYLD_CHAINED_FIXUPS", fixups, "extends past the end of the file")
		} else {
			cf := parseChainedFixups(blob, o)
			byName := map[string]int{}
			for i, imp := range in.Imports {
				byName[imp.Name] = i
			}
			for _, c := range cf.imports {
				imp := Import{Name: c.name, Ordinal: strconv.Itoa(c.ordinal), Source: "LC_DYLD_CHAINED_FIXUPS " + chainedImportFormatName(cf.format)}
				if c.weak {
					imp.Source += " (weak_import)"
				}
				if c.ordinal > 0 && c.ordinal <= len(needed) {
					imp.Library = needed[c.ordinal-1]
				} else if c.ordinal > 0 || c.ordinal < -3 {
					imp.Unknown = map[string]string{"library": fmt.Sprintf("library ordinal %d names no LC_LOAD_DYLIB command (%d)", c.ordinal, len(needed))}
				}
				if i, ok := byName[c.name]; ok {
					if in.Imports[i].Library == "" {
						in.Imports[i].Library = imp.Library
					}
					if in.Imports[i].Ordinal == "" {
						in.Imports[i].Ordinal = imp.Ordinal
					}
					continue
				}
				byName[c.name] = len(in.Imports)
				in.Imports = append(in.Imports, imp)
			}
			if cf.partial != "" {
				partial("imports", "LC_DYLD_CHAINED_FIXUPS imports", fixups, cf.partial)
			}
		}
	}
	if trie.present {
		if in.Facets["exports"].Reason == "no LC_SYMTAB" {
			in.facet("exports", FacetComplete, "")
		}
		blob, ok := sliceAt(data, trie.off, trie.size)
		if !ok {
			partial("exports", trie.cmd+" exports trie", trie, "extends past the end of the file")
			return
		}
		ex, reason := parseExportsTrie(blob)
		seen := map[string]bool{}
		for _, e := range in.Exports {
			seen[e.Name] = true
		}
		for _, e := range ex {
			if seen[e.name] {
				continue
			}
			seen[e.name] = true
			x := Export{Name: e.name, Source: trie.cmd + " exports trie"}
			switch {
			case e.flags&exportReexport != 0:
				x.Ordinal = strconv.FormatUint(e.ordinal, 10)
				x.Forwarder = e.importName
				if x.Forwarder == "" {
					x.Forwarder = e.name
				}
				if e.ordinal > 0 && e.ordinal <= uint64(len(needed)) {
					x.Forwarder = needed[e.ordinal-1] + ":" + x.Forwarder
				}
				x.Source += " (re-export)"
			case e.flags&exportKindMask == exportKindAbsolute:
				x.Address = hexU(e.offset)
				x.Source += " (absolute)"
			default:
				x.Address = hexU(base + e.offset)
			}
			in.Exports = append(in.Exports, x)
		}
		if reason != "" {
			partial("exports", trie.cmd+" exports trie", trie, reason)
		}
	}
}
