package bin

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Env is what the bin tools need from the runtime that hosts them.
type Env struct {
	// Continuations returns the codec that seals page cursors (the evidence
	// store's persisted key when the store opens, else a process-local
	// key). Required.
	Continuations func(ctx context.Context) *evidence.Continuations
	// Store opens the evidence store for preserve: true. Nil, or an error
	// from it, makes preservation fail with PROVIDER_UNAVAILABLE while the
	// analysis itself still succeeds.
	Store func(ctx context.Context) (*evidence.Store, error)
	// Now is the clock for captured_at (time.Now when nil).
	Now func() time.Time
}

func (e Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Paging bounds shared by the paged tools.
const (
	DefaultLimit = 200
	MaxLimit     = 1000
	// InlineListLimit bounds imports and exports returned inline by
	// inspect_binary; list_symbols pages the rest.
	InlineListLimit = 1000
	// MaxPreserveRows bounds the rows one preserve call writes.
	MaxPreserveRows = 1 << 20
)

// Source is the envelope source of every bin result: facts read from a
// caller-supplied file.
const Source = "file"

const pathSchema = `{"type":"string","minLength":1,"maxLength":4096,"description":"local file path, as the caller spells it"}`
const cursorSchema = `{"type":"string","minLength":1,"maxLength":4096,"description":"opaque cursor from data.next_cursor; every other argument must be repeated unchanged"}`
const limitSchema = `{"type":"integer","minimum":1,"maximum":1000,"default":200,"description":"rows per page"}`
const archSchema = `{"enum":["x86_64","arm64","i386","arm","ppc","ppc64"],"description":"architecture slice of a Mach-O universal (fat) file; default: the host's architecture (inspect_binary: every slice). Any other file must be of this architecture when it is given"}`
const preserveSchema = `{"type":"boolean","default":false,"description":"also publish the analysed file and every row of the result (all pages) to the evidence store; data.evidence then names the record"}`

// Tools returns the bin toolset's tool definitions bound to env.
func Tools(env Env) []tool.Tool {
	// preserve writes to the evidence store, so the truthful hint is not
	// read-only; it is still idempotent (content-addressed, new record id).
	rw := tool.Annotations{ReadOnly: false, Idempotent: false}
	return []tool.Tool{
		{
			Name: "inspect_binary", Toolset: tool.Bin, Title: "Inspect an ELF, PE or Mach-O binary",
			Description: "Report facts about one local binary named by path: format, class, machine, endianness, OS/ABI, type and entry; sections and segments; needed libraries, rpath/runpath, soname, interpreter; imports and exports (PE import and delay-import tables, Mach-O dylibs); GNU/Go build id, Mach-O UUID or PE PDB path and GUID; Go build info; a DWARF summary (compilation units, producers, languages); hardening verdicts (yes/partial/no/not_applicable/unknown) each naming the tag, header field or symbol it rests on. Structure that cannot be resolved is listed under unresolved with its file offset and reflected in facets coverage. With digests true, also the whole file's sha256 and each section's sha256 and Shannon entropy (bits per byte), which reads every byte of the file; without it only the headers and tables are read and data.file.digests and data.inspection.digests are \"not_requested\". Read-only unless preserve is true.",
			Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":` + pathSchema + `,"arch":` + archSchema + `,"digests":{"type":"boolean","default":false,"description":"also compute the whole file's sha256 and each section's sha256 and entropy (reads the whole file)"},"preserve":` + preserveSchema + `}}`),
			Annotations: rw,
			Handler:     mappedFaults(env.inspectBinary),
		},
		{
			Name: "list_symbols", Toolset: tool.Bin, Title: "List a binary's symbols",
			Description: "List the static and dynamic symbols of the local binary named by path (ELF .symtab and .dynsym, PE COFF symbols and import tables, Mach-O LC_SYMTAB), with address, size, type, binding, section, library and version, filtered by table, definedness, name substring or regex, in table order, paged with cursor.",
			Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":` + pathSchema + `,"arch":` + archSchema + `,"table":{"enum":["all","static","dynamic"],"default":"all","description":"static: .symtab, COFF or LC_SYMTAB; dynamic: .dynsym or PE import tables"},"defined":{"enum":["all","defined","undefined"],"default":"all"},"name_contains":{"type":"string","minLength":1,"maxLength":512},"name_regex":{"type":"string","minLength":1,"maxLength":512,"description":"RE2 regular expression matched against the symbol name"},"limit":` + limitSchema + `,"cursor":` + cursorSchema + `,"preserve":` + preserveSchema + `}}`),
			Annotations: rw,
			Handler:     mappedFaults(env.listSymbols),
		},
		{
			Name: "search_strings", Toolset: tool.Bin, Title: "Search a file for printable strings",
			Description: "Find printable ASCII and UTF-16LE strings in the local file named by path, with a minimum length in characters, an optional section scope (the whole file otherwise) and an optional RE2 regex filter; each row has its file offset, and its section and virtual address when it lies in one. Rows are in file-offset order, paged with cursor.",
			Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":` + pathSchema + `,"encodings":{"type":"array","minItems":1,"maxItems":2,"uniqueItems":true,"items":{"enum":["ascii","utf16le"]},"default":["ascii","utf16le"]},"min_length":{"type":"integer","minimum":2,"maximum":1024,"default":4},"section":{"type":"string","minLength":1,"maxLength":256,"description":"search only this section's file bytes (ELF/PE name, or segment,section for Mach-O)"},"regex":{"type":"string","minLength":1,"maxLength":512,"description":"RE2 regular expression matched against each whole string, not only the 1024 characters returned as text; a string longer than 1,048,576 characters is matched in that prefix only, and one not matched there makes the result partial (counted in coverage.regex_partly_searched)"},"limit":` + limitSchema + `,"cursor":` + cursorSchema + `,"preserve":` + preserveSchema + `}}`),
			Annotations: rw,
			Handler:     env.searchStrings,
		},
		{
			Name: "disassemble", Toolset: tool.Bin, Title: "Disassemble x86-64 or arm64 code",
			Description: "Disassemble code of the local binary named by path, by symbol (a defined symbol with a known size), by section, or by address range start (and optional end, hex); relocatable objects (.o) use section-relative addresses and each instruction lists the relocations applied to it, as objdump -dr does. x86 boundaries come from Zydis (else Capstone) loaded at run time, with golang.org/x/arch text where it decodes the same instruction; arm64 through golang.org/x/arch. At most max_instructions are decoded per page; call and jump targets are given as addresses and symbolized from the binary's symbol tables (ELF x86 PLT entries as name@plt, from .rela.plt/.rela.dyn, as objdump does; such a name is also accepted as symbol), and each instruction carries its DWARF source line when the binary has one. Paged with cursor.",
			Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"anyOf":[{"required":["symbol"]},{"required":["start"]},{"required":["section"]}],"dependentRequired":{"end":["start"]},"properties":{"path":` + pathSchema + `,"arch":` + archSchema + `,"symbol":{"type":"string","minLength":1,"maxLength":4096},"section":{"type":"string","minLength":1,"maxLength":256,"description":"disassemble this section (ELF/PE name, or segment,section for Mach-O), from start when given; in a relocatable object addresses are relative to the section (.text by default)"},"start":{"type":"string","pattern":"^0[xX][0-9a-fA-F]{1,16}$"},"end":{"type":"string","pattern":"^0[xX][0-9a-fA-F]{1,16}$","description":"exclusive end address; defaults to the end of the containing section"},"max_instructions":{"type":"integer","minimum":1,"maximum":5000,"default":200},"syntax":{"enum":["gnu","intel","go"],"default":"gnu","description":"x86: AT&T (gnu), Intel or Go assembler syntax; arm64: gnu or go"},"cursor":` + cursorSchema + `,"preserve":` + preserveSchema + `}}`),
			Annotations: rw,
			Handler:     mappedFaults(env.disassemble),
		},
		{
			Name: "compare_binaries", Toolset: tool.Bin, Title: "Compare two binaries",
			Description: "Compare the local binaries named by left and right: sections correspond by unique name and symbols by unique defined name, imports by name and library; each entry is equal, changed, added, removed or not_comparable, with its proof kept separate: correspondence (why the entries are the same object), content (what the sha256 of their exact bytes shows) and what stays unknown. A digest alone never establishes correspondence. Paged with cursor; summary counts cover every entry.",
			Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["left","right"],"properties":{"arch":` + archSchema + `,"left":` + pathSchema + `,"right":` + pathSchema + `,"kinds":{"type":"array","minItems":1,"maxItems":3,"uniqueItems":true,"items":{"enum":["section","symbol","import"]}},"verdicts":{"type":"array","minItems":1,"maxItems":5,"uniqueItems":true,"items":{"enum":["equal","changed","added","removed","not_comparable"]}},"name_contains":{"type":"string","minLength":1,"maxLength":512},"limit":` + limitSchema + `,"cursor":` + cursorSchema + `,"preserve":` + preserveSchema + `}}`),
			Annotations: rw,
			Handler:     mappedFaults(env.compareBinaries),
		},
	}
}

// pager binds page cursors to one tool, its input digests and its
// arguments (less cursor), through the evidence store's continuations.
type pager struct {
	env    Env
	ctx    context.Context
	cont   *evidence.Continuations
	tool   string
	inputs []evidence.InputIdentity
	args   json.RawMessage
	raw    map[string]any
}

func (e Env) pager(ctx context.Context, name string, args json.RawMessage, files ...*File) *pager {
	var m map[string]any
	_ = json.Unmarshal(args, &m)
	delete(m, "cursor")
	b, _ := json.Marshal(m)
	p := &pager{env: e, ctx: ctx, tool: name, args: b, raw: m}
	for _, f := range files {
		p.inputs = append(p.inputs, evidence.InputIdentity{SHA256: f.SHA256(), Format: "file"})
	}
	return p
}

// codec fetches the continuation codec on first use, so a call that
// needs no cursor never touches the evidence store.
func (p *pager) codec() *evidence.Continuations {
	if p.cont == nil {
		p.cont = p.env.Continuations(p.ctx)
	}
	return p.cont
}

// resume returns the position a cursor encodes (zero without a cursor).
func (p *pager) resume(cursor string) (evidence.Position, error) {
	if cursor == "" {
		return evidence.Position{}, nil
	}
	pos, err := p.codec().Resume(cursor, p.tool, p.inputs, p.args)
	if err != nil {
		if e, ok := err.(*contract.Error); ok && e.Field == "" && e.Code == contract.CodeCursorInvalid {
			e.Field = "/cursor"
		}
		return pos, err
	}
	return pos, nil
}

// next returns the cursor for pos and the exact next call.
func (p *pager) next(pos evidence.Position) (string, *contract.Action) {
	tok := p.codec().Issue(p.tool, p.inputs, p.args, pos)
	args := map[string]any{}
	for k, v := range p.raw {
		args[k] = v
	}
	args["cursor"] = tok
	return tok, &contract.Action{Tool: p.tool, Arguments: args}
}

func posState[T any](pos evidence.Position, v *T) error {
	if len(pos.State) == 0 {
		return nil
	}
	if err := json.Unmarshal(pos.State, v); err != nil {
		return contract.Errorf(contract.CodeCursorInvalid, "the cursor is malformed; restart without a cursor")
	}
	return nil
}

func state(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

// pageCoverage is data.coverage of a paged result. Complete says whether
// the selection's rows were all examined (true on the last page);
// Returned counts this page's rows; Offset is the index of this page's
// first row in the selection. Upstream names the facets of the input whose
// partial coverage limits the selection itself.
type pageCoverage struct {
	Returned int               `json:"returned"`
	Offset   int64             `json:"offset"`
	More     bool              `json:"more"`
	Upstream map[string]string `json:"upstream,omitempty"`
	Tables   []string          `json:"tables,omitempty"`
	Examined string            `json:"examined,omitempty"`
	// RegexPartlySearched counts the strings of this page's scan longer
	// than MaxRegexChars that a regex examined only in part.
	RegexPartlySearched int `json:"regex_partly_searched,omitempty"`
	// Selection is compare_binaries' coverage of the selected kinds
	// when Upstream names a partial inventory: "complete" when none of
	// them rests on it (the parent inventory is still partial), else
	// "partial".
	Selection string `json:"selection,omitempty"`
	// Decoder names the x86 decoder that set instruction boundaries
	// (disassemble only): "capstone M.m (library)" or "x86asm".
	Decoder string `json:"decoder,omitempty"`
}

// paged is the data object of a paged tool.
type paged struct {
	File       *Identity    `json:"file,omitempty"`
	Left       *Identity    `json:"left,omitempty"`
	Right      *Identity    `json:"right,omitempty"`
	Summary    any          `json:"summary,omitempty"`
	Rows       any          `json:"rows"`
	NextCursor *string      `json:"next_cursor"`
	Coverage   pageCoverage `json:"coverage"`
	Unresolved []Unresolved `json:"unresolved,omitempty"`
	Evidence   *Preserved   `json:"evidence,omitempty"`
	Extra      any          `json:"context,omitempty"`
}

// Preserved names the evidence record a preserve call published.
type Preserved struct {
	EvidenceID string              `json:"evidence_id"`
	Artifacts  []evidence.Artifact `json:"artifacts"`
	Rows       int                 `json:"rows"`
	Complete   bool                `json:"complete"`
}

func decode[T any](args json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(args, &v); err != nil {
		return v, contract.Errorf(contract.CodeInvalidArgument, "arguments do not match the input schema")
	}
	return v, nil
}

func compileRegex(expr, field string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		e := contract.Errorf(contract.CodeInvalidArgument, "the regular expression does not compile as RE2")
		e.Field = field
		return nil, e
	}
	return re, nil
}

// readBinary maps the file (ReadFileMapped) and inspects it; the caller
// must Close the returned File once the result no longer uses its bytes.
// digests turns on section digests and entropy and the DWARF summary;
// dwarf alone turns on the DWARF summary.
func readBinary(ctx context.Context, path, fieldName string, digests bool, arch string, hostDefault bool) (*File, *Inspection, error) {
	return readBinaryMode(ctx, path, fieldName, digests, digests, arch, hostDefault)
}

func readBinaryMode(ctx context.Context, path, fieldName string, digests, dwarf bool, arch string, hostDefault bool) (*File, *Inspection, error) {
	f, err := ReadFileMapped(ctx, path, fieldName, MaxInputBytes)
	if err != nil {
		return nil, nil, err
	}
	in, err := inspectMode(ctx, f.Data, digests, dwarf)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	sf, sin, err := selectSlice(ctx, f, in, arch, hostDefault, digests)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return sf, sin, nil
}

func (e Env) inspectBinary(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	a, err := decode[struct {
		Path     string `json:"path"`
		Arch     string `json:"arch"`
		Digests  bool   `json:"digests"`
		Preserve bool   `json:"preserve"`
	}](args)
	if err != nil {
		return nil, err
	}
	f, in, err := readBinaryMode(ctx, a.Path, "/path", a.Digests, true, a.Arch, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	id := f.identityNoDigest()
	if a.Digests || a.Preserve {
		id = f.Identity()
	}
	res := contract.NewResult(Source, e.now(), nil)
	data := map[string]any{"file": id}
	var full []byte
	if a.Preserve {
		full, _ = json.Marshal(in)
	}
	cov := map[string]any{"facets": in.Facets, "unresolved": len(in.Unresolved)}
	if n := len(in.Imports); n > InlineListLimit {
		in.Imports = in.Imports[:InlineListLimit]
		cov["imports"] = map[string]any{"discovered": n, "returned": InlineListLimit}
		res.Warn(fmt.Sprintf("imports: %d returned inline of %d discovered; list_symbols with defined=undefined pages them all", InlineListLimit, n))
		res.NextAction = &contract.Action{Tool: "list_symbols", Arguments: map[string]any{"path": a.Path, "defined": "undefined"}}
	}
	if n := len(in.Exports); n > InlineListLimit {
		in.Exports = in.Exports[:InlineListLimit]
		cov["exports"] = map[string]any{"discovered": n, "returned": InlineListLimit}
		res.Warn(fmt.Sprintf("exports: %d returned inline of %d discovered; list_symbols with defined=defined pages them all", InlineListLimit, n))
		if res.NextAction == nil {
			res.NextAction = &contract.Action{Tool: "list_symbols", Arguments: map[string]any{"path": a.Path, "defined": "defined"}}
		}
	}
	if !in.Complete() {
		res.Warn(fmt.Sprintf("%d structure(s) could not be resolved; facts resting on them are unknown, not absent (see data.inspection.unresolved and coverage.facets)", len(in.Unresolved)))
	}
	data["inspection"] = in
	res.Coverage = cov
	if a.Preserve {
		p, err := e.preserve(ctx, "inspect_binary", args, []*File{f}, in.Header.Format, full, 1, in.Complete())
		if err != nil {
			return nil, err
		}
		data["evidence"] = p
	}
	res.Data = data
	return res, nil
}

// preserve publishes the analysed files and the complete output to the
// evidence store.
func (e Env) preserve(ctx context.Context, op string, args json.RawMessage, files []*File, format string, output []byte, rows int, complete bool) (*Preserved, error) {
	if e.Store == nil {
		return nil, contract.Errorf(contract.CodeProviderUnavailable, "the evidence store is not available in this runtime; repeat without preserve")
	}
	st, err := e.Store(ctx)
	if err != nil {
		return nil, contract.Errorf(contract.CodeProviderUnavailable, "the evidence store could not be opened; repeat without preserve").WithDetail("cause_code", string(contract.CodeOf(err)))
	}
	var m map[string]any
	_ = json.Unmarshal(args, &m)
	delete(m, "cursor")
	delete(m, "preserve")
	rec := evidence.Record{Toolset: tool.Bin, Operation: op, Arguments: m, Limits: map[string]any{"max_input_bytes": MaxInputBytes, "max_preserve_rows": MaxPreserveRows}, Coverage: map[string]any{"complete": complete, "rows": rows}, Status: evidence.StatusComplete, Producers: evidence.ProducerVersions("golang.org/x/arch")}
	if !complete {
		rec.Status = evidence.StatusPartial
	}
	names := []string{"binary"}
	if format == "har" {
		names = []string{"capture"}
	}
	if len(files) == 2 {
		names = []string{"left", "right"}
	}
	for i, f := range files {
		rec.Artifacts = append(rec.Artifacts, evidence.ArtifactInput{Name: names[i], Role: evidence.RoleAnalysisSource, Format: format, Data: f.bytes(), ExpectedSHA256: f.SHA256()})
	}
	rec.Artifacts = append(rec.Artifacts, evidence.ArtifactInput{Name: "result", Role: evidence.RoleOutput, Format: "json", Data: output})
	man, err := st.Publish(ctx, rec)
	if err != nil {
		return nil, err
	}
	return &Preserved{EvidenceID: man.EvidenceID, Artifacts: man.Artifacts, Rows: rows, Complete: complete}, nil
}

// finishPage fills the paging parts of a result. A page with more rows
// after it is partial (the README's contract: a partial result carries a
// warning and coverage saying what was returned): it gets a warning naming
// the rows returned, coverage.more, data.next_cursor and next_action.
func finishPage(res *contract.Result, p *pager, d *paged, nextPos *evidence.Position) {
	if nextPos != nil {
		tok, act := p.next(*nextPos)
		d.NextCursor = &tok
		d.Coverage.More = true
		res.NextAction = act
		first := d.Coverage.Offset + 1
		if d.Coverage.Returned == 0 {
			first = d.Coverage.Offset
		}
		res.Warn(fmt.Sprintf("page of rows %d-%d; more rows remain: follow next_action (or pass data.next_cursor as cursor)", first, d.Coverage.Offset+int64(d.Coverage.Returned)))
	}
	res.Coverage = d.Coverage
	res.Data = d
}

// allRows runs page repeatedly from the start and returns every row as a
// JSON array (at most MaxPreserveRows rows) and whether that is all.
func allRows[T any](ctx context.Context, page func(pos evidence.Position, limit int) ([]T, *evidence.Position, error)) ([]byte, int, bool, error) {
	var rows []T
	pos := evidence.Position{}
	for {
		r, next, err := page(pos, MaxLimit*10)
		if err != nil {
			return nil, 0, false, err
		}
		rows = append(rows, r...)
		if next == nil {
			break
		}
		if len(rows) >= MaxPreserveRows {
			b, _ := json.Marshal(rows)
			return b, len(rows), false, nil
		}
		pos = *next
	}
	b, _ := json.Marshal(rows)
	return b, len(rows), true, nil
}

func (e Env) listSymbols(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	a, err := decode[struct {
		Path         string `json:"path"`
		Arch         string `json:"arch"`
		Table        string `json:"table"`
		Defined      string `json:"defined"`
		NameContains string `json:"name_contains"`
		NameRegex    string `json:"name_regex"`
		Limit        int    `json:"limit"`
		Cursor       string `json:"cursor"`
		Preserve     bool   `json:"preserve"`
	}](args)
	if err != nil {
		return nil, err
	}
	if a.Limit == 0 {
		a.Limit = DefaultLimit
	}
	re, err := compileRegex(a.NameRegex, "/name_regex")
	if err != nil {
		return nil, err
	}
	f, in, err := readBinary(ctx, a.Path, "/path", false, a.Arch, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := e.pager(ctx, "list_symbols", args, f)
	pos, err := p.resume(a.Cursor)
	if err != nil {
		return nil, err
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
	page := func(pos evidence.Position, limit int) ([]Symbol, *evidence.Position, error) {
		if pos.Row > int64(len(sel)) {
			return nil, nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor points past the selection; restart without a cursor")
		}
		end := min(int(pos.Row)+limit, len(sel))
		rows := sel[pos.Row:end]
		if end < len(sel) {
			return rows, &evidence.Position{Row: int64(end)}, nil
		}
		return rows, nil, nil
	}
	rows, next, err := page(pos, a.Limit)
	if err != nil {
		return nil, err
	}
	id := f.Identity()
	res := contract.NewResult(Source, e.now(), nil)
	d := &paged{File: &id, Rows: nonNilSlice(rows), Coverage: pageCoverage{Returned: len(rows), Offset: pos.Row, Tables: ss.tables}, Unresolved: ss.unresolved, Summary: map[string]any{"selected": len(sel), "symbols": len(ss.syms)}}
	if len(ss.unresolved) > 0 {
		d.Coverage.Upstream = map[string]string{"symbols": FacetPartial}
		res.Warn("some symbol tables could not be read; a symbol missing from these rows is unknown, not absent")
	} else if len(ss.tables) == 0 {
		res.Warn("the binary has no symbol table (stripped): no symbol rows does not mean no functions")
		d.Coverage.Upstream = map[string]string{"symbols": "no symbol table"}
	}
	if a.Preserve {
		all, n, complete, err := allRows(ctx, page)
		if err != nil {
			return nil, err
		}
		if d.Evidence, err = e.preserve(ctx, "list_symbols", args, []*File{f}, in.Header.Format, all, n, complete && len(ss.unresolved) == 0); err != nil {
			return nil, err
		}
	}
	finishPage(res, p, d, next)
	return res, nil
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (e Env) searchStrings(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	a, err := decode[struct {
		Path      string   `json:"path"`
		Encodings []string `json:"encodings"`
		MinLength int      `json:"min_length"`
		Section   string   `json:"section"`
		Regex     string   `json:"regex"`
		Limit     int      `json:"limit"`
		Cursor    string   `json:"cursor"`
		Preserve  bool     `json:"preserve"`
	}](args)
	if err != nil {
		return nil, err
	}
	if a.Limit == 0 {
		a.Limit = DefaultLimit
	}
	if a.MinLength == 0 {
		a.MinLength = 4
	}
	if len(a.Encodings) == 0 {
		a.Encodings = []string{EncASCII, EncUTF16LE}
	}
	re, err := compileRegex(a.Regex, "/regex")
	if err != nil {
		return nil, err
	}
	f, err := ReadFile(ctx, a.Path, "/path", MaxInputBytes)
	if err != nil {
		return nil, err
	}
	// Strings need no admitted format: an unrecognized file is searched as
	// plain bytes, but a section scope needs the section table.
	in, ierr := inspect(ctx, f.Data, false)
	if ierr != nil {
		if contract.CodeOf(ierr) != contract.CodeUnsupportedFormat || a.Section != "" {
			return nil, ierr
		}
		in = newInspection()
	}
	p := e.pager(ctx, "search_strings", args, f)
	pos, err := p.resume(a.Cursor)
	if err != nil {
		return nil, err
	}
	q := StringQuery{Encodings: a.Encodings, MinLength: a.MinLength, Regex: re, Lo: 0, Hi: len(f.Data)}
	region, limit := "whole file", ""
	if a.Section != "" {
		if q.Lo, q.Hi, region, limit, err = stringSection(in, len(f.Data), a.Section); err != nil {
			if u := asUnknown(err); u != nil {
				id := f.Identity()
				return u.result(Source, e.now(), &id), nil
			}
			return nil, err
		}
	}
	partly, partlySum := 0, 0 // strings the last page call / all calls searched only partly
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
		rows, nextOff, n, err := searchStrings(ctx, in, f.Data, q, st.Offset, limit)
		if err != nil {
			return nil, nil, contract.AsError(err)
		}
		partly = n
		partlySum += n
		if nextOff < 0 {
			return rows, nil, nil
		}
		return rows, &evidence.Position{Row: pos.Row + int64(len(rows)), State: state(map[string]int{"offset": nextOff})}, nil
	}
	rows, next, err := page(pos, a.Limit)
	if err != nil {
		return nil, err
	}
	id := f.Identity()
	res := contract.NewResult(Source, e.now(), nil)
	d := &paged{File: &id, Rows: nonNilSlice(rows), Coverage: pageCoverage{Returned: len(rows), Offset: pos.Row, Examined: region}}
	if limit != "" {
		res.Warn(limit)
	}
	if partly > 0 {
		d.Coverage.RegexPartlySearched = partly
		res.Warn(fmt.Sprintf("%d string(s) longer than %d characters did not match the regex in their first %d characters and were not searched further; a match beyond that is unknown, not absent (coverage.regex_partly_searched)", partly, MaxRegexChars, MaxRegexChars))
	}
	if a.Preserve {
		partlySum = 0
		all, n, complete, err := allRows(ctx, page)
		if err != nil {
			return nil, err
		}
		if d.Evidence, err = e.preserve(ctx, "search_strings", args, []*File{f}, orRaw(in.Header.Format), all, n, complete && partlySum == 0 && limit == ""); err != nil {
			return nil, err
		}
	}
	finishPage(res, p, d, next)
	return res, nil
}

func orRaw(format string) string {
	if format == "" {
		return "raw"
	}
	return format
}

func (e Env) disassemble(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	a, err := decode[struct {
		Path     string `json:"path"`
		Symbol   string `json:"symbol"`
		Arch     string `json:"arch"`
		Section  string `json:"section"`
		Start    string `json:"start"`
		End      string `json:"end"`
		Max      int    `json:"max_instructions"`
		Syntax   string `json:"syntax"`
		Cursor   string `json:"cursor"`
		Preserve bool   `json:"preserve"`
	}](args)
	if err != nil {
		return nil, err
	}
	if a.Max == 0 {
		a.Max = 200
	}
	f, in, err := readBinary(ctx, a.Path, "/path", false, a.Arch, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	arch := archOf(in)
	if arch == "" {
		name := ""
		if in.Header.Machine != nil {
			name = in.Header.Machine.Name
		}
		return nil, contract.Errorf(contract.CodeUnsupported, "the binary's machine is not x86, x86-64 or arm64; disassembly is unavailable").WithDetail("machine", name).WithDetail("accepted_machines", []string{ArchAMD64, Arch386, ArchARM64})
	}
	p := e.pager(ctx, "disassemble", args, f)
	pos, err := p.resume(a.Cursor)
	if err != nil {
		return nil, err
	}
	ss := loadSymbols(in, f.Data)
	// PLT entries are symbolized as name@plt (as objdump does) for the
	// disassembly only; list_symbols lists the binary's own tables.
	ss.syms = append(ss.syms, pltSymbols(in, f.Data, arch)...)
	var cr *codeRange
	if a.Symbol != "" {
		if a.Start != "" || a.Section != "" {
			e := contract.Errorf(contract.CodeInvalidArgument, "symbol selects the code by itself; pass start (and section) without it")
			e.Field = "/symbol"
			return nil, e
		}
		cr, err = resolveSymbol(in, ss, a.Symbol)
	} else {
		start, _ := parseHex(a.Start)
		var end uint64
		if a.End != "" {
			end, _ = parseHex(a.End)
			if end <= start {
				e := contract.Errorf(contract.CodeInvalidArgument, "end must be greater than start")
				e.Field = "/end"
				return nil, e
			}
		}
		if a.Section != "" || relocatable(in) {
			cr, err = resolveSection(in, a.Section, start, end, a.Start != "")
		} else {
			cr, err = resolveRange(in, start, end, "/start")
		}
	}
	if err != nil {
		if u := asUnknown(err); u != nil {
			id := f.Identity()
			return u.result(Source, e.now(), &id), nil
		}
		return nil, err
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
	idx := newSymIndex(ss)
	lines := newLineTable(in, f.Data, cr.base, cr.base+uint64(len(cr.code)))
	var dec x86Decoder
	if arch == ArchAMD64 || arch == Arch386 {
		dec = newX86Decoder()
	}
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
		rows, off := disassemble(dec, arch, a.Syntax, cr.code, cr.base, st.Offset, limit, idx, lines)
		attachRelocations(rows, relocs)
		if off >= len(cr.code) {
			return rows, nil, nil
		}
		return rows, &evidence.Position{Row: pos.Row + int64(len(rows)), State: state(map[string]int{"offset": off})}, nil
	}
	rows, next, err := page(pos, a.Max)
	if err != nil {
		return nil, err
	}
	id := f.Identity()
	res := contract.NewResult(Source, e.now(), nil)
	d := &paged{File: &id, Rows: nonNilSlice(rows), Coverage: pageCoverage{Returned: len(rows), Offset: pos.Row, Examined: fmt.Sprintf("[%s, %s) in section %s", hexU(cr.base), hexU(cr.base+uint64(len(cr.code))), cr.section)}, Extra: map[string]any{"architecture": arch, "symbol": cr.symbol, "section": cr.section, "start": hexU(cr.base), "end": hexU(cr.base + uint64(len(cr.code)))}}
	if cr.limit != "" {
		res.Warn(cr.limit)
	}
	if len(ss.tables) == 0 {
		res.Warn("the binary has no symbol table: targets are not symbolized")
	}
	if relocatable(in) {
		switch {
		case in.Header.Format != FormatELF && in.Header.Format != FormatPE:
			res.Warn("relocatable object: addresses are relative to the section; its relocation entries are not read for " + in.Header.Format + " files, so call and data targets are unresolved")
		case !relocsRead:
			res.Warn("relocatable object: a relocation section that applies to " + cr.section + " could not be read; rows lack some relocations")
		}
	}
	if dec.Name != "" {
		d.Coverage.Decoder = dec.Name
		if dec.Missing != "" {
			res.Warn("x86 instructions were decoded by x86asm alone, which decodes neither VEX/EVEX (AVX, AVX2, AVX-512) nor CET (endbr64): after such an instruction the boundaries and text may be wrong. Install the Capstone library (Debian: libcapstone4 or libcapstone5) for exact boundaries: " + dec.Missing)
		}
	}
	if a.Preserve {
		all, n, complete, err := allRows(ctx, page)
		if err != nil {
			return nil, err
		}
		if d.Evidence, err = e.preserve(ctx, "disassemble", args, []*File{f}, in.Header.Format, all, n, complete && cr.limit == ""); err != nil {
			return nil, err
		}
	}
	finishPage(res, p, d, next)
	return res, nil
}

func (e Env) compareBinaries(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	a, err := decode[struct {
		Left         string   `json:"left"`
		Right        string   `json:"right"`
		Arch         string   `json:"arch"`
		Kinds        []string `json:"kinds"`
		Verdicts     []string `json:"verdicts"`
		NameContains string   `json:"name_contains"`
		Limit        int      `json:"limit"`
		Cursor       string   `json:"cursor"`
		Preserve     bool     `json:"preserve"`
	}](args)
	if err != nil {
		return nil, err
	}
	if a.Limit == 0 {
		a.Limit = DefaultLimit
	}
	lf, lin, err := readBinary(ctx, a.Left, "/left", true, a.Arch, true)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	rf, rin, err := readBinary(ctx, a.Right, "/right", true, a.Arch, true)
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	p := e.pager(ctx, "compare_binaries", args, lf, rf)
	pos, err := p.resume(a.Cursor)
	if err != nil {
		return nil, err
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
	page := func(pos evidence.Position, limit int) ([]Delta, *evidence.Position, error) {
		if pos.Row > int64(len(sel)) {
			return nil, nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor points past the selection; restart without a cursor")
		}
		end := min(int(pos.Row)+limit, len(sel))
		if end < len(sel) {
			return sel[pos.Row:end], &evidence.Position{Row: int64(end)}, nil
		}
		return sel[pos.Row:end], nil, nil
	}
	rows, next, err := page(pos, a.Limit)
	if err != nil {
		return nil, err
	}
	li, ri := lf.Identity(), rf.Identity()
	res := contract.NewResult(Source, e.now(), nil)
	upstream := map[string]string{}
	for side, c := range map[string]compareSide{"left": l, "right": r} {
		if c.in.Facets["sections"].State != FacetComplete {
			upstream[side+".sections"] = c.in.Facets["sections"].State
		}
		if len(c.ss.unresolved) > 0 {
			upstream[side+".symbols"] = FacetPartial
		} else if len(c.ss.tables) == 0 {
			upstream[side+".symbols"] = "no symbol table"
		}
		if c.in.Facets["imports"].State != FacetComplete && c.in.Facets["imports"].State != FacetNotApplicable {
			upstream[side+".imports"] = c.in.Facets["imports"].State
		}
	}
	d := &paged{Left: &li, Right: &ri, Rows: nonNilSlice(rows), Summary: map[string]any{"by_kind": summary, "selected": len(sel), "entries": len(all), "formats": []string{lin.Header.Format, rin.Header.Format}, "identical_files": lf.SHA256() == rf.SHA256()}, Coverage: pageCoverage{Returned: len(rows), Offset: pos.Row}}
	limits := selectionLimits(upstream, a.Kinds)
	if len(upstream) > 0 {
		d.Coverage.Upstream = upstream
		d.Coverage.Selection = FacetComplete
	}
	if len(limits) > 0 {
		d.Coverage.Selection = FacetPartial
		res.Warn("part of an inventory the selection rests on could not be read (" + strings.Join(limits, ", ") + "); entries it would decide are not_comparable, and unlisted differences may exist")
	}
	if a.Preserve {
		allb, n, complete, err := allRows(ctx, page)
		if err != nil {
			return nil, err
		}
		if d.Evidence, err = e.preserve(ctx, "compare_binaries", args, []*File{lf, rf}, lin.Header.Format, allb, n, complete && len(limits) == 0); err != nil {
			return nil, err
		}
	}
	finishPage(res, p, d, next)
	return res, nil
}

// mappedFaults wraps a handler that reads mapped files (ReadFileMapped): a
// fault on a mapped page (the file was truncated while the call read it)
// becomes INPUT_CHANGED instead of a panic; any other panic propagates.
func mappedFaults(h func(context.Context, json.RawMessage) (*contract.Result, error)) func(context.Context, json.RawMessage) (*contract.Result, error) {
	return func(ctx context.Context, args json.RawMessage) (res *contract.Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(interface{ Addr() uintptr }); !ok {
					panic(r)
				}
				res, err = nil, contract.Errorf(contract.CodeInputChanged, "the file changed (shrank) while it was read; retry when it is stable")
			}
		}()
		return h(ctx, args)
	}
}
