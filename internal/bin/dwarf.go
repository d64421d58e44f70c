package bin

import (
	"bytes"
	"compress/zlib"
	"context"
	"debug/dwarf"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
)

// MaxDWARFUnits bounds the compilation units inspect_binary walks; the
// facet is partial beyond it.
const MaxDWARFUnits = 100000

// DebugInfo summarizes the DWARF debugging information (debug/dwarf): the
// compilation units' count, their distinct producers and languages
// (DW_AT_producer, DW_AT_language), and whether line tables exist.
//
// Present is true when the file has DWARF sections. Units, Producers and
// Languages are null when they are unknown though DWARF is present (a
// compressed section claims more than MaxDecompressedBytes, or debug/dwarf
// cannot read the sections); Unknown then maps each of those fields to the
// reason. There is no DebugInfo when the section table was not read.
type DebugInfo struct {
	Present   bool     `json:"present"`
	Units     *int     `json:"units"`
	Producers []string `json:"producers"`
	Languages []string `json:"languages"`
	// SkeletonUnits is how many of Units are split-DWARF skeletons
	// (gcc -gsplit-dwarf: DWARF 5 DW_UT_skeleton units, whose entry is
	// DW_TAG_skeleton_unit, or DWARF 4 compile units with
	// DW_AT_GNU_dwo_name): their entries live in the .dwo files named
	// by DWONames (DW_AT_dwo_name, distinct, sorted), which inspect does
	// not read: when a skeleton carries no DW_AT_producer (or
	// DW_AT_language), as gcc's do, Producers (or Languages) is null,
	// Unknown gives the reason ("in_dwo: ...") and the debug_info facet
	// is partial. Both are absent when there is no skeleton.
	SkeletonUnits int               `json:"skeleton_units,omitempty"`
	DWONames      []string          `json:"dwo_names,omitempty"`
	Unknown       map[string]string `json:"unknown,omitempty"`
}

// attrGNUDWOName is DW_AT_GNU_dwo_name, the DWARF 4 split-DWARF
// extension naming a skeleton's .dwo file (DWARF 5 has DW_AT_dwo_name).
const attrGNUDWOName dwarf.Attr = 0x2130

// maxDWONames bounds the distinct .dwo names DebugInfo lists.
const maxDWONames = 1000

// dwarfLang names DW_LANG codes (DWARF 5, section 7.12).
var dwarfLang = map[int64]string{0x1: "C89", 0x2: "C", 0x4: "C_plus_plus", 0xc: "C99", 0x16: "Go", 0x1a: "C_plus_plus_11", 0x1c: "Rust", 0x1d: "C11", 0x21: "C_plus_plus_14", 0x2c: "C17", 0x8001: "Mips_Assembler"}

// openDWARF returns debug/dwarf's reader for data in its format, or nil
// with the reason.
func openDWARF(format string, data []byte) (d *dwarf.Data, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("the DWARF reader stopped on inconsistent structure")
		}
	}()
	r := bytes.NewReader(data)
	switch format {
	case FormatELF:
		f, err := elf.NewFile(r)
		if err != nil {
			return nil, err
		}
		return f.DWARF()
	case FormatPE:
		f, err := pe.NewFile(r)
		if err != nil {
			return nil, err
		}
		return f.DWARF()
	case FormatMachO:
		f, err := macho.NewFile(r)
		if err != nil {
			return nil, err
		}
		return f.DWARF()
	}
	return nil, fmt.Errorf("no DWARF for this format")
}

// unitSections are the DWARF sections (names after .debug_ or .zdebug_)
// that reading the compilation units' entries can touch: the entries and
// their abbreviations, the string tables and offsets, the address table
// (addrx forms), the range lists (rnglistx forms) and DWARF 4 type units.
// The line tables, location lists, call frames and the rest are not read
// to summarize units.
var unitSections = map[string]bool{"abbrev": true, "info": true, "str": true, "addr": true, "line_str": true, "str_offsets": true, "rnglists": true, "types": true}

// openDWARFUnits is openDWARF for reading compilation unit entries only
// (inspectDWARF). For an ELF file it decompresses and loads only
// unitSections, as debug/elf's File.DWARF would load them (Section.Data,
// in section order), instead of every DWARF section: a Go binary's
// compressed line tables and location lists are most of its DWARF bytes.
// An ELF file with relocation sections that apply to a DWARF section
// (debug/elf applies them, for files other than ET_EXEC) is read by
// File.DWARF.
func openDWARFUnits(format string, data []byte) (d *dwarf.Data, err error) {
	if format != FormatELF {
		return openDWARF(format, data)
	}
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("the DWARF reader stopped on inconsistent structure")
		}
	}()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	suffix := func(s *elf.Section) string {
		switch {
		case strings.HasPrefix(s.Name, ".debug_"):
			return s.Name[7:]
		case strings.HasPrefix(s.Name, ".zdebug_"):
			return s.Name[8:]
		}
		return ""
	}
	if f.Type != elf.ET_EXEC {
		for _, r := range f.Sections {
			if (r.Type == elf.SHT_RELA || r.Type == elf.SHT_REL) && int(r.Info) < len(f.Sections) && int(r.Info) > 0 && suffix(f.Sections[r.Info]) != "" {
				return f.DWARF()
			}
		}
	}
	load := func(s *elf.Section) ([]byte, error) {
		b, err := s.Data()
		if err != nil && uint64(len(b)) < s.Size {
			return nil, err
		}
		if strings.HasPrefix(s.Name, ".zdebug_") && len(b) >= 12 && string(b[:4]) == "ZLIB" {
			// GNU-style compression, as File.DWARF reads it; inspect
			// checked the claimed size against MaxDecompressedBytes.
			n := binary.BigEndian.Uint64(b[4:12])
			if n > MaxDecompressedBytes {
				return nil, fmt.Errorf("section %s claims %d decompressed bytes, over the limit of %d", s.Name, n, MaxDecompressedBytes)
			}
			z, err := zlib.NewReader(bytes.NewReader(b[12:]))
			if err != nil {
				return nil, fmt.Errorf("section %s: %v", s.Name, err)
			}
			out, err := io.ReadAll(io.LimitReader(z, int64(n)))
			if err != nil || uint64(len(out)) != n {
				return nil, fmt.Errorf("section %s: %d of %d decompressed bytes read (%v)", s.Name, len(out), n, err)
			}
			return out, nil
		}
		return b, nil
	}
	base := map[string][]byte{"abbrev": nil, "info": nil, "str": nil}
	for _, s := range f.Sections {
		if n := suffix(s); n != "" {
			if _, ok := base[n]; ok {
				b, err := load(s)
				if err != nil {
					return nil, err
				}
				base[n] = b
			}
		}
	}
	d, err = dwarf.New(base["abbrev"], nil, nil, base["info"], nil, nil, nil, base["str"])
	if err != nil {
		return nil, err
	}
	for i, s := range f.Sections {
		n := suffix(s)
		if _, done := base[n]; done || !unitSections[n] {
			continue
		}
		b, err := load(s)
		if err != nil {
			return nil, err
		}
		if n == "types" {
			if err := d.AddTypes(fmt.Sprintf("types-%d", i), b); err != nil {
				return nil, err
			}
		} else if err := d.AddSection(".debug_"+n, b); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// oversizedDebug names a DWARF section too large to decompress, or "".
func oversizedDebug(in *Inspection) string {
	for n := range in.oversized {
		if strings.HasPrefix(n, ".debug_") || strings.HasPrefix(n, ".zdebug_") {
			return n
		}
	}
	return ""
}

func hasDebugSections(in *Inspection) bool {
	for _, s := range in.Sections {
		switch {
		case len(s.Name) > 7 && (s.Name[:7] == ".debug_" || s.Name[:7] == "__debug"), len(s.Name) > 8 && s.Name[:8] == ".zdebug_":
			return true
		}
	}
	return false
}

// dwarfNotRequested is the reason the DWARF units are unknown when an
// inspection reads only whether DWARF is present (dwarfPresence).
const dwarfNotRequested = "the DWARF compilation units were not read: facets including dwarf_producers reads them (it decompresses and walks .debug_info)"

// inspectDWARF fills in.Debug and the debug_info facet; units false reads
// only whether DWARF sections are present (dwarfPresence).
func inspectDWARF(ctx context.Context, in *Inspection, data []byte, units bool) {
	if _, decided := in.Facets["debug_info"]; decided || in.Header.Format == FormatMachOFat {
		return
	}
	if !in.Admitted {
		in.facet("debug_info", FacetUnresolved, "the section table was not admitted: the DWARF sections are not located")
		return
	}
	if st := in.Facets["sections"].State; st == FacetUnresolved || st == "" {
		// Whether there is DWARF is unknown: no summary, as when
		// the section table was not admitted.
		in.facet("debug_info", FacetUnresolved, "the section table is unresolved: the DWARF sections are not located")
		return
	}
	nunits := 0
	di := &DebugInfo{Units: &nunits, Producers: []string{}, Languages: []string{}}
	in.Debug = di
	if !hasDebugSections(in) {
		in.facet("debug_info", FacetComplete, "no DWARF sections")
		return
	}
	if n := oversizedDebug(in); n != "" {
		// The DWARF is there; what it says is not read.
		why := fmt.Sprintf("section %s claims more decompressed bytes than the limit of %d (MaxDecompressedBytes), so it is not decompressed", n, MaxDecompressedBytes)
		in.Debug = &DebugInfo{Present: true, Unknown: map[string]string{"units": why, "producers": why, "languages": why}}
		in.facet("debug_info", FacetUnresolved, why+"; see unresolved")
		return
	}
	if !units {
		in.Debug = &DebugInfo{Present: true, Unknown: map[string]string{"units": dwarfNotRequested, "producers": dwarfNotRequested, "languages": dwarfNotRequested}}
		in.facet("debug_info", FacetNotRequested, dwarfNotRequested)
		return
	}
	d, err := openDWARFUnits(in.Header.Format, data)
	if err != nil {
		// The DWARF sections are there; what they say is unknown.
		why := "debug/dwarf could not read it: " + err.Error()
		in.Debug = &DebugInfo{Present: true, Unknown: map[string]string{"units": why, "producers": why, "languages": why}}
		in.unresolved("DWARF debugging information", 0, 0, why)
		in.facet("debug_info", FacetUnresolved, "DWARF unresolved")
		return
	}
	di.Present = true
	state := FacetComplete
	prod, lang, dwos := map[string]bool{}, map[string]bool{}, map[string]bool{}
	// Skeleton units without DW_AT_producer / DW_AT_language: theirs are
	// in the .dwo, so the lists are unknown, not what the rest name.
	skelNoProd, skelNoLang := 0, 0
	func() {
		defer func() {
			if recover() != nil {
				state = FacetPartial
			}
		}()
		r := d.Reader()
		for nunits < MaxDWARFUnits {
			if ctx.Err() != nil {
				state = FacetPartial
				return
			}
			e, err := r.Next()
			if err != nil {
				state = FacetPartial
				in.unresolved("DWARF compilation unit", 0, 0, "debug/dwarf stopped reading units: "+err.Error())
				return
			}
			if e == nil {
				return
			}
			if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit || e.Tag == dwarf.TagSkeletonUnit {
				nunits++
				dwo, _ := e.Val(dwarf.AttrDwoName).(string)
				if dwo == "" {
					dwo, _ = e.Val(attrGNUDWOName).(string)
				}
				if e.Tag == dwarf.TagSkeletonUnit || dwo != "" {
					di.SkeletonUnits++
					if dwo != "" && len(dwos) < maxDWONames {
						dwos[dwo] = true
					}
				}
				skel := e.Tag == dwarf.TagSkeletonUnit || dwo != ""
				if p, ok := e.Val(dwarf.AttrProducer).(string); ok {
					prod[p] = true
				} else if skel {
					skelNoProd++
				}
				if l, ok := e.Val(dwarf.AttrLanguage).(int64); ok {
					n := dwarfLang[l]
					if n == "" {
						n = fmt.Sprintf("0x%x", l)
					}
					lang[n] = true
				} else if skel {
					skelNoLang++
				}
			}
			r.SkipChildren()
		}
		state = FacetPartial
	}()
	for p := range prod {
		di.Producers = append(di.Producers, p)
	}
	for l := range lang {
		di.Languages = append(di.Languages, l)
	}
	for n := range dwos {
		di.DWONames = append(di.DWONames, n)
	}
	sort.Strings(di.Producers)
	sort.Strings(di.Languages)
	sort.Strings(di.DWONames)
	reason := ""
	for _, u := range []struct {
		field, attr string
		n           int
		list        *[]string
	}{{"producers", "DW_AT_producer", skelNoProd, &di.Producers}, {"languages", "DW_AT_language", skelNoLang, &di.Languages}} {
		if u.n == 0 {
			continue
		}
		*u.list = nil
		if di.Unknown == nil {
			di.Unknown = map[string]string{}
		}
		di.Unknown[u.field] = fmt.Sprintf("%s: %d split-DWARF skeleton unit(s) carry no %s: theirs is in the .dwo file(s) named by dwo_names, which inspect does not read", dwarfInDWO, u.n, u.attr)
		reason = dwarfInDWO + ": the producers and languages of split-DWARF units are in their .dwo files, which inspect does not read (see debug_info.unknown)"
		if state == FacetComplete {
			state = FacetPartial
		}
	}
	in.facet("debug_info", state, reason)
}

// dwarfInDWO starts the reason DebugInfo's producers and languages are
// unknown when split-DWARF skeleton units leave them to .dwo files.
const dwarfInDWO = "in_dwo"

// lineTable maps addresses to source positions from DWARF line programs.
type lineTable struct {
	rows []lineRow
}

type lineRow struct {
	addr uint64
	file string
	line int
	end  bool
}

// MaxLineRows bounds the line-table rows disassemble loads.
const MaxLineRows = 4 << 20

// newLineTable loads the line rows of the compilation units whose ranges
// overlap [lo, hi), or returns nil when there is no DWARF.
func newLineTable(in *Inspection, data []byte, lo, hi uint64) *lineTable {
	if oversizedDebug(in) != "" {
		return nil
	}
	d, err := openDWARF(in.Header.Format, data)
	if err != nil || d == nil {
		return nil
	}
	lt := &lineTable{}
	func() {
		defer func() { _ = recover() }()
		r := d.Reader()
		for {
			e, err := r.Next()
			if err != nil || e == nil {
				return
			}
			if e.Tag != dwarf.TagCompileUnit {
				r.SkipChildren()
				continue
			}
			ranges, err := d.Ranges(e)
			overlap := false
			for _, rg := range ranges {
				if rg[0] < hi && lo < rg[1] {
					overlap = true
				}
			}
			if err == nil && overlap {
				lr, err := d.LineReader(e)
				if err == nil && lr != nil {
					var le dwarf.LineEntry
					for lr.Next(&le) == nil && len(lt.rows) < MaxLineRows {
						name := ""
						if le.File != nil {
							name = le.File.Name
						}
						lt.rows = append(lt.rows, lineRow{addr: le.Address, file: name, line: le.Line, end: le.EndSequence})
					}
				}
			}
			r.SkipChildren()
		}
	}()
	if len(lt.rows) == 0 {
		return nil
	}
	sort.SliceStable(lt.rows, func(i, j int) bool { return lt.rows[i].addr < lt.rows[j].addr })
	return lt
}

// at returns "file:line" for pc, or "".
func (lt *lineTable) at(pc uint64) string {
	if lt == nil {
		return ""
	}
	i := sort.Search(len(lt.rows), func(i int) bool { return lt.rows[i].addr > pc }) - 1
	if i < 0 || lt.rows[i].end || lt.rows[i].file == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", lt.rows[i].file, lt.rows[i].line)
}
