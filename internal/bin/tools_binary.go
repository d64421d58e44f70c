package bin

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// The handlers of the binary tools, each run inside the skeleton
// (skeleton.go): check what needs no file, open the inputs, compute, set
// the data and the rows.

// readBinaryMode maps the file (ReadFileMapped) and inspects it; the
// caller must Close the returned File once the result no longer uses its
// bytes. digests turns on section digests and entropy; dwarf turns on the
// DWARF summary.
func readBinaryMode(c *invocation, path, fieldName string, digests bool, dwarf dwarfMode, arch string, hostDefault bool) (*File, *Inspection, error) {
	f, err := ReadFileMapped(c.ctx, path, fieldName, MaxInputBytes)
	if err != nil {
		return nil, nil, err
	}
	// A disassembly's inspection is kept for the next page of the same
	// file state (keptinspect.go); no other tool's, which may add to it.
	kept := c.tool == "disassemble" && !digests && dwarf == dwarfOff
	in, reused := (*Inspection)(nil), false
	if kept {
		in, reused = reuseInspection(f)
	}
	if !reused {
		in, err = inspectMode(c.ctx, f.Data, digests, dwarf)
		if err == nil && kept && in.Header.Format != FormatMachOFat {
			keepInspection(f, in)
		}
	}
	if err != nil {
		f.Close()
		if e, ok := err.(*contract.Error); ok && e.Field == "" && e.Code == contract.CodeUnsupportedFormat {
			// The file the argument names is not a binary: the argument
			// is what the caller must change.
			e.Field = fieldName
		}
		return nil, nil, err
	}
	sf, sin, err := selectSlice(c.ctx, f, in, arch, hostDefault, digests)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return sf, sin, nil
}

// binary opens one binary input of the call, named name in a preserved
// record ("binary", "left", "right").
func (c *invocation) binary(name, path, field string, digests bool, dwarf dwarfMode, arch string, hostDefault bool) (*File, *Inspection, error) {
	f, in, err := readBinaryMode(c, path, field, digests, dwarf, arch, hostDefault)
	if err != nil {
		return nil, nil, err
	}
	c.keep(name, f)
	if in.Slice != nil {
		if c.slices == nil {
			c.slices = map[string]*Slice{}
		}
		c.slices[name] = in.Slice
	}
	if c.format == "" {
		c.format = in.Header.Format
	}
	return f, in, nil
}

// inspectArgs are inspect_binary's arguments.
type inspectArgs struct {
	Path    string   `json:"path"`
	Arch    string   `json:"arch,omitempty"`
	Digests bool     `json:"digests,omitempty"`
	Facets  []string `json:"facets,omitempty"`
	Limit   int      `json:"limit,omitempty"`
	Cursor  string   `json:"cursor,omitempty"`
}

// ListFacets are inspect_binary's list facets, in the order they are
// named: each is returned as rows only when the call asks for it.
// go_deps are the Go build info's dependency modules, dwarf_producers the
// DWARF compilation units' distinct producers: both grow with the program.
var ListFacets = []string{"sections", "segments", "imports", "exports", "libraries", "members", "go_deps", "dwarf_producers"}

// listFacetCoverage names the coverage facet (coverage.facets) each
// list facet's entries rest on.
var listFacetCoverage = map[string]string{"sections": "sections", "segments": "segments", "imports": "imports", "exports": "exports", "libraries": "dynamic", "go_deps": "go_build_info", "dwarf_producers": "debug_info"}

// facetRows returns the rows of one list facet of in, each a JSON object
// whose "facet" member names the facet (a library row is {facet, name}).
func facetRows(in *Inspection, facet string) []json.RawMessage {
	var items []any
	switch facet {
	case "sections":
		for _, s := range in.Sections {
			items = append(items, s)
		}
	case "segments":
		for _, s := range in.Segments {
			items = append(items, s)
		}
	case "imports":
		for _, s := range in.Imports {
			items = append(items, s)
		}
	case "exports":
		for _, s := range in.Exports {
			items = append(items, s)
		}
	case "libraries":
		for _, s := range in.Libraries {
			items = append(items, map[string]string{"name": s})
		}
	case "members":
		for _, s := range in.Members {
			items = append(items, s)
		}
	case "go_deps":
		if in.GoBuildInfo != nil {
			for _, s := range in.GoBuildInfo.Deps {
				items = append(items, s)
			}
		}
	case "dwarf_producers":
		if in.Debug != nil {
			for _, s := range in.Debug.Producers {
				items = append(items, map[string]string{"producer": s})
			}
		}
	}
	out := make([]json.RawMessage, 0, len(items))
	head := []byte(`{"facet":` + fmt.Sprintf("%q", facet))
	for _, it := range items {
		b, _ := json.Marshal(it)
		row := append([]byte(nil), head...)
		if len(b) > 2 {
			row = append(row, ',')
		}
		out = append(out, append(row, b[1:]...))
	}
	return out
}

// listUnknown reports whether the list behind facet is null: the
// structure that holds it was not read (unknownNotEmpty, or a reader that
// left it null), so its count is unknown, not 0.
func listUnknown(in *Inspection, facet string) bool {
	switch facet {
	case "sections":
		return in.Sections == nil
	case "segments":
		return in.Segments == nil
	case "imports":
		return in.Imports == nil
	case "exports":
		return in.Exports == nil
	case "libraries":
		return in.Libraries == nil
	case "dwarf_producers":
		// Present DWARF whose units were not read (or could not be).
		return in.Debug != nil && in.Debug.Present && in.Debug.Producers == nil
	}
	return false
}

// facetCount is the number of rows facetRows(in, facet) returns, counted
// without encoding them.
func facetCount(in *Inspection, facet string) int {
	switch facet {
	case "sections":
		return len(in.Sections)
	case "segments":
		return len(in.Segments)
	case "imports":
		return len(in.Imports)
	case "exports":
		return len(in.Exports)
	case "libraries":
		return len(in.Libraries)
	case "members":
		return len(in.Members)
	case "go_deps":
		if in.GoBuildInfo != nil {
			return len(in.GoBuildInfo.Deps)
		}
	case "dwarf_producers":
		if in.Debug != nil {
			return len(in.Debug.Producers)
		}
	}
	return 0
}

// inspectionSummary is inspect_binary's data.inspection: the Inspection
// without its lists (sections, segments, imports, exports, libraries,
// members, go_build_info.deps, debug_info.producers: those are facets).
// Its members are in the order of their names, as are those of
// goBuildInfoSummary and debugInfoSummary: the object it encodes to is
// the one the summary has always had (an Inspection's JSON less those
// members, with keys sorted).
type inspectionSummary struct {
	Admitted    bool                     `json:"admitted"`
	BuildID     *BuildID                 `json:"build_id,omitempty"`
	Debug       *debugInfoSummary        `json:"debug_info,omitempty"`
	Digests     string                   `json:"digests"`
	Dynamic     *Dynamic                 `json:"dynamic,omitempty"`
	Facets      map[string]FacetCoverage `json:"facets"`
	GoBuildInfo *goBuildInfoSummary      `json:"go_build_info,omitempty"`
	Hardening   []Check                  `json:"hardening"`
	Header      Header                   `json:"header"`
	Slice       *Slice                   `json:"slice,omitempty"`
	Unresolved  []Unresolved             `json:"unresolved"`
}

// goBuildInfoSummary is GoBuildInfo without Deps (the go_deps facet).
type goBuildInfoSummary struct {
	GoVersion string      `json:"go_version"`
	Main      *GoModule   `json:"main,omitempty"`
	Path      string      `json:"path"`
	Settings  []GoSetting `json:"settings"`
}

// debugInfoSummary is DebugInfo without Producers (the dwarf_producers
// facet).
type debugInfoSummary struct {
	Languages []string `json:"languages"`
	Present   bool     `json:"present"`
	Units     *int     `json:"units"`
	// SkeletonUnits and DWONames are DebugInfo's.
	SkeletonUnits int               `json:"skeleton_units,omitempty"`
	DWONames      []string          `json:"dwo_names,omitempty"`
	Unknown       map[string]string `json:"unknown,omitempty"`
}

// summarize returns in's summary (inspectionSummary).
func summarize(in *Inspection) *inspectionSummary {
	s := &inspectionSummary{Admitted: in.Admitted, BuildID: in.BuildID, Digests: in.Digests, Dynamic: in.Dynamic, Facets: in.Facets, Hardening: in.Hardening, Header: in.Header, Slice: in.Slice, Unresolved: in.Unresolved}
	if g := in.GoBuildInfo; g != nil {
		s.GoBuildInfo = &goBuildInfoSummary{GoVersion: g.GoVersion, Main: g.Main, Path: g.Path, Settings: g.Settings}
	}
	if d := in.Debug; d != nil {
		s.Debug = &debugInfoSummary{Languages: d.Languages, Present: d.Present, Units: d.Units, SkeletonUnits: d.SkeletonUnits, DWONames: d.DWONames, Unknown: d.Unknown}
	}
	return s
}

func (e Env) inspectBinary(c *invocation, a inspectArgs) error {
	// The DWARF units are read only for the dwarf_producers facet: for a
	// binary with (compressed) DWARF, reading them costs more than the
	// rest of the inspection; otherwise only their presence is reported.
	dwarf := dwarfPresence
	if slices.Contains(a.Facets, "dwarf_producers") {
		dwarf = dwarfUnits
	}
	f, in, err := c.binary("binary", a.Path, "/path", a.Digests, dwarf, a.Arch, false)
	if err != nil {
		return err
	}
	id := f.identityNoDigest()
	if a.Digests {
		id = f.Identity()
	}
	// A list whose facet is unresolved has an unknown count (null), never
	// 0, which would read as "none".
	counts := map[string]any{"unresolved": len(in.Unresolved)}
	for _, k := range ListFacets {
		if cov, ok := listFacetCoverage[k]; ok && (in.Facets[cov].State == FacetUnresolved && facetCount(in, k) == 0 || listUnknown(in, k)) {
			counts[k] = nil
			continue
		}
		counts[k] = facetCount(in, k)
	}
	summary := summarize(in)
	var rows []json.RawMessage
	for _, fc := range a.Facets {
		rows = append(rows, facetRows(in, fc)...)
	}
	unresolved := len(in.Unresolved)
	c.data = &paged{File: &id, Inspection: summary, Counts: counts, Coverage: pageCoverage{Facets: in.Facets, Unresolved: &unresolved}}
	c.total = ptr(int64(len(rows)))
	if !in.Complete() {
		if len(in.Unresolved) > 0 {
			c.limitation(fmt.Sprintf("%d structure(s) could not be resolved; facts resting on them are unknown, not absent (see data.inspection.unresolved and coverage.facets)", len(in.Unresolved)))
		} else {
			c.limitation(incompleteFacets(in.Facets))
		}
	}
	c.page(a.Cursor, a.Limit, encodeRows(sliceRows(rows)))
	if e.MappedBy != nil && !c.preserving && a.Cursor == "" {
		if abs, err := filepath.Abs(a.Path); err == nil {
			c.data.MappedBy = e.MappedBy(c.ctx, abs)
		}
	}
	if len(a.Facets) == 0 {
		var want []string
		for _, k := range ListFacets {
			if n, _ := counts[k].(int); n > 0 || k == "dwarf_producers" && in.Facets["debug_info"].State == FacetNotRequested {
				want = append(want, k)
			}
		}
		if len(want) > 0 {
			next := map[string]any{"path": a.Path, "facets": want}
			if a.Arch != "" {
				next["arch"] = a.Arch
			}
			c.res.NextAction = &contract.Action{Tool: "inspect_binary", Arguments: next}
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// symbolsArgs are list_symbols' arguments.
type symbolsArgs struct {
	Path         string `json:"path"`
	Arch         string `json:"arch,omitempty"`
	Table        string `json:"table,omitempty"`
	Defined      string `json:"defined,omitempty"`
	NameContains string `json:"name_contains,omitempty"`
	NameRegex    string `json:"name_regex,omitempty"`
	Limit        int    `json:"limit,omitempty"`
	Cursor       string `json:"cursor,omitempty"`
}

func (e Env) listSymbols(c *invocation, a symbolsArgs) error {
	re, err := compileRegex(a.NameRegex, "/name_regex")
	if err != nil {
		return err
	}
	f, in, err := c.binary("binary", a.Path, "/path", false, dwarfOff, a.Arch, true)
	if err != nil {
		return err
	}
	ss := loadSymbols(in, f.Data)
	var sel []Symbol
	for _, s := range ss.syms {
		static := s.Table == TableSymtab || s.Table == TableCOFF || s.Table == TableMachO
		switch {
		case a.Table == "static" && !static, a.Table == "dynamic" && static:
			continue
		case a.Defined == "defined" && !s.Defined, a.Defined == "undefined" && s.Defined:
			continue
		case a.NameContains != "" && !strings.Contains(s.Name, a.NameContains):
			continue
		case re != nil && !re.MatchString(s.Name):
			continue
		}
		sel = append(sel, s)
	}
	id := f.Identity()
	c.data = &paged{File: &id, Coverage: pageCoverage{Tables: ss.tables}, Unresolved: ss.unresolved, Summary: map[string]any{"selected": len(sel), "symbols": len(ss.syms)}}
	c.total = ptr(int64(len(sel)))
	if len(ss.unresolved) > 0 {
		c.data.Coverage.Upstream = map[string]string{"symbols": FacetPartial}
		reasons := make([]string, 0, len(ss.unresolved))
		for _, u := range ss.unresolved {
			reasons = append(reasons, u.Structure+": "+u.Reason)
		}
		c.limitation("some symbol tables, names or versions could not be read (" + strings.Join(reasons, "; ") + "); a null name or version is unknown, and a symbol missing from these rows is unknown, not absent")
	} else if len(ss.tables) == 0 {
		c.limitation("the binary has no symbol table (stripped): no symbol rows does not mean no functions")
		c.data.Coverage.Upstream = map[string]string{"symbols": "no symbol table"}
	}
	c.page(a.Cursor, a.Limit, encodeRows(sliceRows(sel)))
	return nil
}

// stringsArgs are search_strings' arguments.
type stringsArgs struct {
	Path      string   `json:"path"`
	Encodings []string `json:"encodings,omitempty"`
	MinLength int      `json:"min_length,omitempty"`
	Section   string   `json:"section,omitempty"`
	Regex     string   `json:"regex,omitempty"`
	Range     *Range   `json:"range,omitempty"`
	Limit     int      `json:"limit,omitempty"`
	Cursor    string   `json:"cursor,omitempty"`
}

func (e Env) searchStrings(c *invocation, a stringsArgs) error {
	if a.MinLength == 0 {
		a.MinLength = 4
	}
	if len(a.Encodings) == 0 {
		a.Encodings = []string{EncASCII, EncUTF16LE}
	}
	re, err := compileRegex(a.Regex, "/regex")
	if err != nil {
		return err
	}
	f, err := ReadFileMapped(c.ctx, a.Path, "/path", MaxInputBytes)
	if err != nil {
		return err
	}
	c.keep("binary", f)
	// Strings need no admitted format: an unrecognized file is searched as
	// plain bytes, but a section scope needs the section table.
	in, ierr := inspect(c.ctx, f.Data, false)
	if ierr != nil {
		if contract.CodeOf(ierr) != contract.CodeUnsupportedFormat || a.Section != "" {
			return ierr
		}
		in = newInspection()
	}
	c.format = orRaw(in.Header.Format)
	q := StringQuery{Encodings: a.Encodings, MinLength: a.MinLength, Regex: re, Lo: 0, Hi: len(f.Data)}
	region, limit := "whole file", ""
	if a.Section != "" {
		if q.Lo, q.Hi, region, limit, err = stringSection(in, len(f.Data), a.Section); err != nil {
			if u := asUnknown(err); u != nil {
				u.answer(c, f)
				return nil
			}
			if nf, ok := err.(*sectionNotFound); ok {
				return nf.withSectionsCall(a.Path, "")
			}
			return err
		}
	}
	base := region
	if a.Range != nil {
		// Strings starting in [from, to), within the section if one is
		// named: the range a cancelled scan reported in coverage.scanned.
		from, ferr := parseDec(a.Range.From)
		to, terr := parseDec(a.Range.To)
		switch {
		case ferr != nil || terr != nil:
			e := contract.Errorf(contract.CodeInvalidArgument, "range.from and range.to are decimal file offsets")
			e.Field = "/range"
			return e
		case from >= to || from < uint64(q.Lo) || to > uint64(q.Hi):
			e := contract.Errorf(contract.CodeInvalidArgument, "range must satisfy from < to within the searched region [%d, %d)", q.Lo, q.Hi)
			e.Field = "/range"
			return e
		}
		q.Lo, q.StartHi = int(from), int(to)
		region = fmt.Sprintf("strings starting at file offsets [%d, %d) of the %s", from, to, region)
	}
	id := f.Identity()
	c.data = &paged{File: &id, Coverage: pageCoverage{Examined: region}}
	partly := 0 // strings the last scan searched only partly
	page := func(pos evidence.Position, limit int) ([]StringMatch, *evidence.Position, error) {
		var st struct {
			Offset int `json:"offset"`
		}
		if err := posState(pos, &st); err != nil {
			return nil, nil, err
		}
		if st.Offset < 0 || st.Offset > len(f.Data) {
			return nil, nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor is malformed; restart without a cursor")
		}
		rows, nextOff, n, err := searchStrings(c.ctx, in, f.Data, q, st.Offset, limit)
		partly = n
		if err != nil {
			if nextOff < 0 || !cancelled(err) {
				return nil, nil, contract.AsError(err)
			}
			// Cancelled mid-scan: the rows found before nextOff are
			// complete for [start, nextOff).
			c.scanned = &Range{From: decU(uint64(max(st.Offset, q.Lo))), To: decU(uint64(nextOff))}
			return rows, &evidence.Position{Row: pos.Row + int64(len(rows)), State: state(map[string]int{"offset": nextOff})}, err
		}
		if nextOff < 0 {
			return rows, nil, nil
		}
		return rows, &evidence.Position{Row: pos.Row + int64(len(rows)), State: state(map[string]int{"offset": nextOff})}, nil
	}
	c.page(a.Cursor, a.Limit, func(pos evidence.Position, limit int) ([]json.RawMessage, *evidence.Position, error) {
		rows, next, err := encodeRows(page)(pos, limit)
		if partly > 0 {
			c.data.Coverage.RegexPartlySearched = partly
		}
		return rows, next, err
	})
	if limit != "" {
		c.limitation(limit)
	}
	c.onFinish = func() {
		if c.scanned != nil {
			// Cancelled: what was examined is the scanned range only.
			c.data.Coverage.Examined = fmt.Sprintf("strings starting at file offsets [%s, %s) of the %s (the scan was cancelled there)", c.scanned.From, c.scanned.To, base)
		}
		if partly > 0 {
			c.limitation(fmt.Sprintf("%d string(s) longer than %d characters did not match the regex in their first %d characters and were not searched further; a match beyond that is unknown, not absent (coverage.regex_partly_searched)", partly, MaxRegexChars, MaxRegexChars))
		}
	}
	return nil
}

// disasmArgs are disassemble's arguments.
type disasmArgs struct {
	Path            string `json:"path"`
	Arch            string `json:"arch,omitempty"`
	Symbol          string `json:"symbol,omitempty"`
	Section         string `json:"section,omitempty"`
	Start           string `json:"start,omitempty"`
	End             string `json:"end,omitempty"`
	MaxInstructions int    `json:"max_instructions,omitempty"`
	Syntax          string `json:"syntax,omitempty"`
	Cursor          string `json:"cursor,omitempty"`
}

func (e Env) disassemble(c *invocation, a disasmArgs) error {
	// Arguments that need no file are checked before it is opened.
	if a.Symbol != "" && (a.Start != "" || a.Section != "") {
		e := contract.Errorf(contract.CodeInvalidArgument, "symbol selects the code by itself; pass start (and section) without it")
		e.Field = "/symbol"
		return e
	}
	start, _ := parseHex(a.Start)
	var end uint64
	if a.End != "" {
		end, _ = parseHex(a.End)
		if end <= start {
			e := contract.Errorf(contract.CodeInvalidArgument, "end must be greater than start")
			e.Field = "/end"
			return e
		}
	}
	f, in, err := c.binary("binary", a.Path, "/path", false, dwarfOff, a.Arch, true)
	if err != nil {
		return err
	}
	arch := archOf(in)
	if arch == "" {
		name := ""
		if in.Header.Machine != nil {
			name = in.Header.Machine.Name
		}
		return contract.Errorf(contract.CodeUnsupported, "the binary's machine is not x86, x86-64 or arm64; disassembly is unavailable").WithDetail("machine", name).WithDetail("accepted_machines", []string{ArchAMD64, Arch386, ArchARM64})
	}
	// The symbols (and, below, their index) of the file disassembled last
	// are kept (disasmSymbols), so paging through a section reads the
	// symbol tables once, not once per page.
	key := f.SHA256() + "\x00" + in.Header.Format + "\x00" + arch + "\x00" + a.Arch
	ss, idx, gopcln := disasmSymbols.get(key)
	if ss == nil {
		ss = loadSymbols(in, f.Data)
		// PLT entries are symbolized as name@plt (as objdump does) for the
		// disassembly only; list_symbols lists the binary's own tables.
		ss.syms = append(ss.syms, pltSymbols(in, f.Data, arch)...)
		// A stripped Go binary still names its functions in its pclntab.
		if len(ss.tables) == 0 && len(ss.unresolved) == 0 {
			g := goPCLNSymbols(in)
			ss.syms, gopcln = append(ss.syms, g...), len(g) > 0
		}
	}
	var cr *codeRange
	switch {
	case a.Symbol != "":
		cr, err = resolveSymbol(in, ss, a.Symbol)
		if amb, ok := err.(*ambiguousSymbol); ok {
			return amb.withNextAction(a)
		}
	case a.Section != "" || relocatable(in):
		cr, err = resolveSection(in, a.Section, start, end, a.Start != "")
		if nf, ok := err.(*sectionNotFound); ok {
			return nf.withSectionsCall(a.Path, a.Arch)
		}
	default:
		cr, err = resolveRange(in, start, end, "/start")
	}
	if u := asUnknown(err); u != nil {
		if a.Cursor != "" {
			// The code was located when the cursor was issued: a file
			// whose structures can no longer be read (truncated, say)
			// changed since, and the cursor's place in it is gone.
			e := contract.Errorf(contract.CodeInputChanged, "the file named by /path changed since the cursor was issued (the code it pages can no longer be located); start a fresh analysis without a cursor")
			e.Field = "/path"
			return e
		}
		u.answer(c, f)
		return nil
	}
	if err != nil {
		return err
	}
	var relocs []Relocation
	relocsRead := true
	if relocatable(in) {
		// Section-relative addresses overlap across sections: symbolize
		// from the disassembled section's own symbols.
		var own []Symbol
		for _, s := range ss.syms {
			if s.sect == cr.sect {
				own = append(own, s)
			}
		}
		ss = &symbolSet{syms: own, tables: ss.tables, unresolved: ss.unresolved}
		switch in.Header.Format {
		case FormatELF:
			relocs, relocsRead = elfRelocations(in, f.Data, cr.sect)
		case FormatPE:
			relocs, relocsRead = coffRelocations(in, f.Data, cr.sect)
		}
	}
	if relocatable(in) {
		idx = newSymIndex(ss) // of the section's own symbols
	} else if idx == nil {
		idx = newSymIndex(ss)
		idx.dynRelocs, idx.relLo, idx.relHi = dynRelocNames(in, f.Data)
		disasmSymbols.put(key, ss, idx, gopcln)
	}
	lines := newLineTable(in, f.Data, cr.base, cr.base+uint64(len(cr.code)))
	var dec x86Decoder
	if arch == ArchAMD64 || arch == Arch386 {
		dec = x86DecoderFor()
	}
	// undecodable counts the ranges of consecutive undecodable rows on
	// the page last read (the page function may run twice).
	var undecodable, undecodableRows, undecodableBytes int
	// first is the key of the page function's first run on this call
	// (the row limit asked for), lastOff the offset its last run ended
	// at: where the next page starts.
	var first *aheadKey
	lastOff := -1
	page := func(pos evidence.Position, limit int) ([]Instruction, *evidence.Position, error) {
		var st struct {
			Offset int `json:"offset"`
		}
		if err := posState(pos, &st); err != nil {
			return nil, nil, err
		}
		if st.Offset < 0 || st.Offset > len(cr.code) {
			return nil, nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor is malformed; restart without a cursor")
		}
		key := aheadKey{arch: arch, syntax: a.Syntax, base: cr.base, size: len(cr.code), sect: cr.sect, off: st.Offset, limit: limit}
		rows, off, ok := takeAhead(f.kept, key)
		if !ok {
			rows, off = disassemble(dec, arch, a.Syntax, cr.code, cr.base, st.Offset, limit, idx, lines)
		}
		if first == nil {
			first = &key
		}
		lastOff = off
		undecodable, undecodableRows, undecodableBytes = 0, 0, 0
		for i, r := range rows {
			if r.Error == "" {
				continue
			}
			undecodableRows++
			undecodableBytes += len(r.Bytes) / 2
			if i == 0 || rows[i-1].Error == "" {
				undecodable++
			}
		}
		attachRelocations(rows, relocs)
		if off >= len(cr.code) {
			return rows, nil, nil
		}
		return rows, &evidence.Position{Row: pos.Row + int64(len(rows)), State: state(map[string]int{"offset": off})}, nil
	}
	id := f.Identity()
	c.data = &paged{File: &id, Coverage: pageCoverage{Examined: fmt.Sprintf("[%s, %s) in section %s", hexU(cr.base), hexU(cr.base+uint64(len(cr.code))), cr.section)}, Extra: map[string]any{"architecture": arch, "symbol": cr.symbol, "section": cr.section, "start": hexU(cr.base), "end": hexU(cr.base + uint64(len(cr.code)))}}
	if cr.limit != "" {
		c.limitation(cr.limit)
	}
	if len(ss.tables) == 0 && gopcln {
		c.limitation("the binary has no symbol table: targets are symbolized from the Go function table (.gopclntab)")
	} else if len(ss.tables) == 0 {
		c.limitation("the binary has no symbol table: targets are not symbolized")
	}
	if relocatable(in) {
		switch {
		case in.Header.Format != FormatELF && in.Header.Format != FormatPE:
			c.limitation("relocatable object: addresses are relative to the section; its relocation entries are not read for " + in.Header.Format + " files, so call and data targets are unresolved")
		case !relocsRead:
			c.limitation("relocatable object: a relocation section that applies to " + cr.section + " could not be read; rows lack some relocations")
		}
	}
	if dec.Name != "" {
		c.data.Coverage.Decoder = dec.Name
		if dec.Missing != "" {
			c.limitation("x86 instructions were decoded by x86asm alone, which decodes neither VEX/EVEX (AVX, AVX2, AVX-512) nor CET (endbr64): after such an instruction the boundaries and text may be wrong. Install the Zydis library (Debian: libzydis4.0) for objdump's boundaries: " + dec.Missing)
		}
		if dec.Lacks != "" {
			c.onFinish = func() {
				if undecodable > 0 {
					c.limitation(fmt.Sprintf("%s could not decode %d row(s) of this page in %d range(s) (%d bytes, rows with error \"undecodable\"; a VEX/EVEX, PKU or GFNI instruction is one row of its whole length): %s. Their text is unknown, and after an undecodable row of one byte the boundaries may be wrong. Install the Zydis library (Debian: libzydis4.0) for objdump's decoding", dec.Name, undecodableRows, undecodable, undecodableBytes, dec.Lacks))
				}
			}
		}
	}
	if arch == ArchARM64 {
		c.data.Coverage.Decoder = arm64DecoderName
		c.onFinish = func() {
			if undecodable > 0 {
				c.limitation(arm64Undecodable(undecodableRows, undecodable))
			}
		}
	}
	limit := a.MaxInstructions
	if limit == 0 {
		limit = 200
	}
	// An explicit max_instructions is the page size asked for: honoured
	// up to the hard result limit (5,000 rows fit it), where the default
	// page keeps to the session's result budget.
	c.limitGiven = a.MaxInstructions > 0
	c.insns, c.symIdx, c.symSect = page, idx, cr.sect
	if cr.sect >= 0 && cr.sect < len(in.Sections) {
		c.symSectName = in.Sections[cr.sect].Name
		c.symSectAddr, _ = parseHex(in.Sections[cr.sect].Address)
	}
	c.page(a.Cursor, limit, encodeInstructions(page))
	// A page served with a next cursor has its next page decoded ahead
	// (prefetch.go) while this one is delivered. The closer runs before
	// f's, which releases f's hold on the kept bytes.
	c.closers = append(c.closers, func() {
		if first == nil || c.preserving || c.data == nil || c.data.NextCursor == nil || lastOff < 0 || lastOff >= len(cr.code) || c.ctx.Err() != nil {
			return
		}
		key := *first
		key.off = lastOff
		decodeAhead(f.kept, key, func() ([]Instruction, int) {
			return disassemble(dec, arch, a.Syntax, cr.code, cr.base, key.off, key.limit, idx, lines)
		})
	})
	return nil
}

// disasmSymbols keeps the symbol set and symbol index of the last
// executable or shared object disassembled (not relocatable objects,
// whose index is per section), keyed by its content digest, format,
// architecture and slice: every page of a listing that follows its cursor
// reuses them. Both are read-only once built, and hold no memory of the
// mapped file (their strings are copies).
var disasmSymbols symbolCache

type symbolCache struct {
	mu     sync.Mutex
	key    string
	ss     *symbolSet
	idx    *symIndex
	gopcln bool
}

func (c *symbolCache) get(key string) (*symbolSet, *symIndex, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != key || c.ss == nil {
		return nil, nil, false
	}
	return c.ss, c.idx, c.gopcln
}

func (c *symbolCache) put(key string, ss *symbolSet, idx *symIndex, gopcln bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key, c.ss, c.idx, c.gopcln = key, ss, idx, gopcln
}

// compareArgs are compare_binaries' arguments.
type compareArgs struct {
	Left         string   `json:"left"`
	Right        string   `json:"right"`
	Arch         string   `json:"arch,omitempty"`
	Kinds        []string `json:"kinds,omitempty"`
	Verdicts     []string `json:"verdicts,omitempty"`
	NameContains string   `json:"name_contains,omitempty"`
	Limit        int      `json:"limit,omitempty"`
	Cursor       string   `json:"cursor,omitempty"`
}

func (e Env) compareBinaries(c *invocation, a compareArgs) error {
	lf, lin, err := c.binary("left", a.Left, "/left", true, dwarfUnits, a.Arch, true)
	if err != nil {
		return err
	}
	rf, rin, err := c.binary("right", a.Right, "/right", true, dwarfUnits, a.Arch, true)
	if err != nil {
		return err
	}
	l := compareSide{in: lin, ss: loadSymbols(lin, lf.Data)}
	r := compareSide{in: rin, ss: loadSymbols(rin, rf.Data)}
	all := compareBinaries(l, r)
	summary := map[string]map[string]int{}
	var sel []Delta
	for _, d := range all {
		if summary[d.Kind] == nil {
			summary[d.Kind] = map[string]int{}
		}
		summary[d.Kind][d.Verdict]++
		if (len(a.Kinds) > 0 && !contains(a.Kinds, d.Kind)) || (len(a.Verdicts) > 0 && !contains(a.Verdicts, d.Verdict)) || (a.NameContains != "" && !strings.Contains(d.Name, a.NameContains)) {
			continue
		}
		sel = append(sel, d)
	}
	li, ri := lf.Identity(), rf.Identity()
	upstream := map[string]string{}
	for side, cs := range map[string]compareSide{"left": l, "right": r} {
		if cs.in.Facets["sections"].State != FacetComplete {
			upstream[side+".sections"] = cs.in.Facets["sections"].State
		}
		if len(cs.ss.unresolved) > 0 {
			upstream[side+".symbols"] = FacetPartial
		} else if len(cs.ss.tables) == 0 {
			upstream[side+".symbols"] = "no symbol table"
		}
		if cs.in.Facets["imports"].State != FacetComplete && cs.in.Facets["imports"].State != FacetNotApplicable {
			upstream[side+".imports"] = cs.in.Facets["imports"].State
		}
	}
	c.data = &paged{Left: &li, Right: &ri, Summary: map[string]any{"by_kind": summary, "selected": len(sel), "entries": len(all), "formats": []string{lin.Header.Format, rin.Header.Format}, "identical_files": lf.SHA256() == rf.SHA256()}}
	c.total = ptr(int64(len(sel)))
	// That the parent inventory is partial (coverage.upstream) and that
	// this selection is complete (coverage.selection) are separate facts.
	limits := selectionLimits(upstream, a.Kinds)
	if len(upstream) > 0 {
		c.data.Coverage.Upstream = upstream
		c.data.Coverage.Selection = FacetComplete
	}
	if len(limits) > 0 {
		c.data.Coverage.Selection = FacetPartial
		c.limitation("part of an inventory the selection rests on could not be read (" + strings.Join(limits, ", ") + "); entries it would decide are not_comparable, and unlisted differences may exist")
	}
	c.page(a.Cursor, a.Limit, encodeRows(sliceRows(sel)))
	return nil
}

// withNextAction returns the ambiguous-symbol error of a disassemble call
// with a next_action that disassembles one candidate: the default version
// (name@@version) when one is, else the first candidate (by name@version
// when its version is its own, else by its start and end addresses). The
// call's other arguments (path, arch, syntax, max_instructions) are kept.
func (amb *ambiguousSymbol) withNextAction(a disasmArgs) *contract.Error {
	pick := amb.candidates[0]
	for _, c := range amb.candidates {
		if c.DefaultVersion != nil && *c.DefaultVersion {
			pick = c
			break
		}
	}
	args := map[string]any{"path": a.Path}
	if a.Arch != "" {
		args["arch"] = a.Arch
	}
	if a.Syntax != "" {
		args["syntax"] = a.Syntax
	}
	if a.MaxInstructions != 0 {
		args["max_instructions"] = a.MaxInstructions
	}
	if sel := symbolSelector(pick, amb.candidates); sel != "" {
		args["symbol"] = sel
	} else {
		args["start"], args["end"] = hexU(pick.value), hexU(pick.value+pick.size)
	}
	amb.err.NextAction = &contract.Action{Tool: "disassemble", Arguments: args}
	return amb.err
}

// incompleteFacets is the limitation of an inspection that is not
// complete though no structure is unresolved: its partial or unresolved
// facets, sorted, each with its state and reason.
func incompleteFacets(facets map[string]FacetCoverage) string {
	var parts []string
	for name, f := range facets {
		if f.State != FacetPartial && f.State != FacetUnresolved {
			continue
		}
		p := name + " " + f.State
		if f.Reason != "" {
			p += " (" + f.Reason + ")"
		}
		parts = append(parts, p)
	}
	sort.Strings(parts)
	return "facet(s) " + strings.Join(parts, "; ") + ": facts resting on them are unknown, not absent (see coverage.facets)"
}
