package bin

import (
	"context"
	"encoding/json"
	"regexp"
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
	// Analyses retains every result under an analysis_id that the perf
	// toolset's preserve_evidence accepts. Nil leaves analysis_id out.
	Analyses Analyses
	// Now is the clock for captured_at (time.Now when nil).
	Now func() time.Time
	// MappedBy, when set, says which live processes map the regular file
	// at an absolute path: inspect_binary's first page carries its answer
	// as data.mapped_by (a JSON object; see MappedBy in the CLI runtime,
	// which asks an already running proc host). Nil leaves mapped_by out.
	// A preserved record never carries it: it describes the moment of the
	// call, not the file.
	MappedBy func(ctx context.Context, path string) any
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
	// MaxPreserveRows bounds the rows one preservation writes.
	MaxPreserveRows = 1 << 20
)

// Source is the envelope source of every bin result: facts read from a
// caller-supplied file.
const Source = "file"

// Tools returns the bin toolset bound to env, in catalog order: the binary
// tools (inspect_binary, list_symbols, search_strings, disassemble,
// compare_binaries) and the HAR tools (inspect_http_capture,
// compare_http_captures). Every one is declared here, with its arguments
// type beside its schema, and runs through the one skeleton (skeleton.go).
func Tools(env Env) []tool.Tool {
	return []tool.Tool{
		define(env, tool.Tool{
			Name: "inspect_binary", Title: "Inspect an ELF, PE or Mach-O binary",
			Description: "Report one local binary's header, dynamic and build facts, hardening verdicts each naming its basis, and counts of its lists; the lists are facets asked for by name and paged with cursor. Required: path.",
			Details:     "Header facts: format, class, machine, type, entry. Dynamic facts: interpreter, needed, rpath/runpath, soname. Also build ids, Go build info and whether DWARF is present (its units, producers and languages with facets [dwarf_producers]).\n\nFacets: sections, segments, imports, exports, libraries, members, go_deps, dwarf_producers, each returned as rows naming their facet and paged with cursor.\n\ndigests true adds the file's and each section's sha256 and entropy (reads every byte). Unresolved structure is listed with its offset and makes the result partial. mapped_by names the live processes that map the file when an inquest host already runs.",
			Input: json.RawMessage(`{
				"type": "object",
				"additionalProperties": false,
				"required": ["path"],
				"properties": {
					"path": {"type": "string", "minLength": 1, "maxLength": 4096},
					"arch": {"enum": ["x86_64", "arm64", "i386", "arm", "ppc", "ppc64"], "description": "slice of a universal Mach-O file (default: every slice)"},
					"digests": {"type": "boolean", "default": false},
					"facets": {"type": "array", "minItems": 1, "maxItems": 8, "uniqueItems": true, "items": {"enum": ["sections", "segments", "imports", "exports", "libraries", "members", "go_deps", "dwarf_producers"]}, "description": "lists to return as rows, each row naming its facet"},
					"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 200},
					"cursor": {"type": "string", "minLength": 1, "maxLength": 4096}
				}
			}`),
		}, true, env.inspectBinary),
		define(env, tool.Tool{
			Name: "list_symbols", Title: "List a binary's symbols",
			Description: "List the static and dynamic symbols of the local binary at path with address, size, type, binding, section, library and version, filtered by table, definedness or name, paged with cursor. Required: path.",
			Details:     "Tables: ELF .symtab and .dynsym, PE COFF symbols and import tables, Mach-O LC_SYMTAB. Names match by substring or RE2 regex; rows stay in table order.",
			Input: json.RawMessage(`{
				"type": "object",
				"additionalProperties": false,
				"required": ["path"],
				"properties": {
					"path": {"type": "string", "minLength": 1, "maxLength": 4096},
					"arch": {"enum": ["x86_64", "arm64", "i386", "arm", "ppc", "ppc64"], "description": "slice of a universal Mach-O file (default: the host's)"},
					"table": {"enum": ["all", "static", "dynamic"], "default": "all", "description": "static: .symtab, COFF or LC_SYMTAB; dynamic: .dynsym or PE imports"},
					"defined": {"enum": ["all", "defined", "undefined"], "default": "all"},
					"name_contains": {"type": "string", "minLength": 1, "maxLength": 512},
					"name_regex": {"type": "string", "minLength": 1, "maxLength": 512},
					"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 200},
					"cursor": {"type": "string", "minLength": 1, "maxLength": 4096}
				}
			}`),
		}, true, env.listSymbols),
		define(env, tool.Tool{
			Name: "search_strings", Title: "Search a file for printable strings",
			Description: "Find printable ASCII and UTF-16LE strings of at least min_length characters in the local file at path (whole file or one section), optionally matching an RE2 regex. Rows give file offset, section and address in offset order, paged with cursor. Required: path.",
			Details:     "The regex is matched against each whole string, up to 1,048,576 characters; a longer string not matched there makes the result partial.\n\nCancelled mid-scan, the result is partial with the matches of the scanned range (coverage.scanned; pass it as range to redo exactly that range).",
			Input: json.RawMessage(`{
				"type": "object",
				"additionalProperties": false,
				"required": ["path"],
				"properties": {
					"path": {"type": "string", "minLength": 1, "maxLength": 4096},
					"encodings": {"type": "array", "minItems": 1, "maxItems": 2, "uniqueItems": true, "items": {"enum": ["ascii", "utf16le"]}, "default": ["ascii", "utf16le"]},
					"min_length": {"type": "integer", "minimum": 2, "maximum": 1024, "default": 4},
					"section": {"type": "string", "minLength": 1, "maxLength": 256, "description": "ELF/PE section name, or segment,section for Mach-O"},
					"regex": {"type": "string", "minLength": 1, "maxLength": 512},
					"range": {"type": "object", "additionalProperties": false, "required": ["from", "to"], "description": "only strings starting at file offsets [from, to) (decimal), as a cancelled result's coverage.scanned gives", "properties": {"from": {"type": "string", "pattern": "^[0-9]{1,20}$"}, "to": {"type": "string", "pattern": "^[0-9]{1,20}$"}}},
					"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 200},
					"cursor": {"type": "string", "minLength": 1, "maxLength": 4096}
				}
			}`),
		}, true, env.searchStrings),
		disassembleTool(env),
		define(env, tool.Tool{
			Name: "compare_binaries", Title: "Compare two binaries",
			Description: "Compare the local binaries left and right: sections, symbols and imports, each entry equal, changed, added, removed or not_comparable with the reason it corresponds. Summary counts cover every entry; rows are paged with cursor. Required: left, right.",
			Details:     "Sections correspond by unique name, symbols by unique defined name, imports by name and library. Each entry carries its correspondence (why the two are the same object) and content (sha256 of their bytes), with what stays unknown kept apart; a digest alone never establishes correspondence.",
			Input: json.RawMessage(`{
				"type": "object",
				"additionalProperties": false,
				"required": ["left", "right"],
				"properties": {
					"left": {"type": "string", "minLength": 1, "maxLength": 4096},
					"right": {"type": "string", "minLength": 1, "maxLength": 4096},
					"arch": {"enum": ["x86_64", "arm64", "i386", "arm", "ppc", "ppc64"], "description": "slice of universal Mach-O files (default: the host's)"},
					"kinds": {"type": "array", "minItems": 1, "maxItems": 3, "uniqueItems": true, "items": {"enum": ["section", "symbol", "import"]}},
					"verdicts": {"type": "array", "minItems": 1, "maxItems": 5, "uniqueItems": true, "items": {"enum": ["equal", "changed", "added", "removed", "not_comparable"]}},
					"name_contains": {"type": "string", "minLength": 1, "maxLength": 512},
					"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 200},
					"cursor": {"type": "string", "minLength": 1, "maxLength": 4096}
				}
			}`),
		}, true, env.compareBinaries),
		inspectHTTPCaptureTool(env),
		compareHTTPCapturesTool(env),
	}
}

// disassembleTool declares disassemble, whose page size is
// max_instructions.
func disassembleTool(env Env) tool.Tool {
	t := define(env, tool.Tool{
		Name: "disassemble", Title: "Disassemble x86-64 or arm64 code",
		Description: "Disassemble code of the local binary at path, selected by symbol, section or hex address range start/end, as objdump -d does: symbolized targets, DWARF lines and, in relocatable objects, relocations. Paged with cursor. Required: path and one of symbol, section, start.",
		Details:     "symbol: a defined symbol with a size; name@plt is accepted, and name@version or name@@version for an ELF versioned symbol. Or a section, or a hex address range start and end.\n\nx86 instruction boundaries come from Zydis loaded at run time (else Capstone: rows Capstone 4 cannot decode, such as AVX-512 mask instructions, make the result partial), the text from golang.org/x/arch; arm64 through golang.org/x/arch. Targets are symbolized (PLT entries as name@plt, as objdump does), each instruction carries its DWARF line, and in relocatable objects (section-relative addresses) the relocations applied to it, as objdump -dr.",
		Input: json.RawMessage(`{
			"type": "object",
			"additionalProperties": false,
			"required": ["path"],
			"anyOf": [{"required": ["symbol"]}, {"required": ["start"]}, {"required": ["section"]}],
			"dependentRequired": {"end": ["start"]},
			"properties": {
				"path": {"type": "string", "minLength": 1, "maxLength": 4096},
				"arch": {"enum": ["x86_64", "arm64", "i386", "arm", "ppc", "ppc64"], "description": "slice of a universal Mach-O file (default: the host's)"},
				"symbol": {"type": "string", "minLength": 1, "maxLength": 4096},
				"section": {"type": "string", "minLength": 1, "maxLength": 256, "description": "ELF/PE section name, or segment,section for Mach-O; from start when given"},
				"start": {"type": "string", "pattern": "^0[xX][0-9a-fA-F]{1,16}$"},
				"end": {"type": "string", "pattern": "^0[xX][0-9a-fA-F]{1,16}$", "description": "exclusive; default: the end of the containing section"},
				"max_instructions": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 200},
				"syntax": {"enum": ["gnu", "intel", "go"], "default": "gnu", "description": "x86: AT&T (gnu), Intel or Go; arm64: gnu or go"},
				"cursor": {"type": "string", "minLength": 1, "maxLength": 4096}
			}
		}`),
	}, true, env.disassemble)
	t.Paging = &tool.Paging{Token: "cursor", Limit: "max_instructions"}
	return t
}

// pager binds page cursors to one tool, its input digests and its
// arguments (less cursor), through the evidence store's continuations.
// The input digests (each file's whole-file SHA-256) are computed only
// when a cursor is resumed or issued: a call that returns its only page
// never reads every page of its inputs.
type pager struct {
	env    Env
	ctx    context.Context
	cont   *evidence.Continuations
	tool   string
	files  []*File
	inputs []evidence.InputIdentity
	args   json.RawMessage
}

func (e Env) pager(ctx context.Context, name string, args json.RawMessage, files ...*File) *pager {
	var m map[string]any
	_ = json.Unmarshal(args, &m)
	delete(m, "cursor")
	if name == "disassemble" {
		// A disassembly cursor holds the byte offset to decode from,
		// whatever the page size: a page of any max_instructions (and
		// `bin disasm --all`, whose batch size is its own) resumes it.
		delete(m, "max_instructions")
	}
	b, _ := json.Marshal(m)
	return &pager{env: e, ctx: ctx, tool: name, args: b, files: files}
}

// identities returns the inputs' identities (whole-file SHA-256 each),
// computing them on first use.
func (p *pager) identities() []evidence.InputIdentity {
	if p.inputs == nil {
		p.inputs = make([]evidence.InputIdentity, 0, len(p.files))
		for _, f := range p.files {
			p.inputs = append(p.inputs, evidence.InputIdentity{SHA256: f.SHA256(), Format: "file"})
		}
	}
	return p.inputs
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
	pos, err := p.codec().Resume(cursor, p.tool, p.identities(), p.args)
	if err != nil {
		if e, ok := err.(*contract.Error); ok && e.Code == contract.CodeCursorInvalid {
			if e.Field == "" {
				e.Field = "/cursor"
			}
			// Bin pages name their next call in next_action, with a
			// cursor (the codec speaks of perf's next_page).
			switch e.Details["reason"] {
			case evidence.ReasonOtherTool:
				e.Message = "the cursor was issued by another tool; follow the next_action that issued it unchanged, or start without a cursor"
			case evidence.ReasonArgumentsChanged:
				e.Message = "the arguments changed since the cursor was issued; follow next_action unchanged (it repeats the other arguments with the cursor), or start without a cursor"
			case evidence.ReasonMalformed:
				e.Message = "the cursor is malformed; start without a cursor"
			}
		}
		return pos, err
	}
	return pos, nil
}

// next returns the cursor for pos.
func (p *pager) next(pos evidence.Position) string {
	return p.codec().Issue(p.tool, p.identities(), p.args, pos)
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

// pageCoverage is the envelope's coverage of a bin result (kept beside
// the data while the result is built, never delivered under data). Upstream names the facets of the input whose partial
// coverage limits the selection itself; Examined names the region read.
type pageCoverage struct {
	Upstream map[string]string `json:"upstream,omitempty"`
	Tables   []string          `json:"tables,omitempty"`
	Examined string            `json:"examined,omitempty"`
	// Scanned is the byte range a scan examined [from, to) when the call
	// was cancelled mid-scan (Cancelled true).
	Scanned   *Range `json:"scanned,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
	// RegexPartlySearched counts the strings of this page's scan longer
	// than MaxRegexChars that a regex examined only in part.
	RegexPartlySearched int `json:"regex_partly_searched,omitempty"`
	// Selection is compare_binaries' coverage of the selected kinds
	// when Upstream names a partial inventory: "complete" when none of
	// them rests on it (the parent inventory is still partial), else
	// "partial".
	Selection string `json:"selection,omitempty"`
	// Decoder names the x86 decoder that set instruction boundaries
	// (disassemble only): "zydis M.m.p (library)", "capstone M.m
	// (library)" or "x86asm".
	Decoder string `json:"decoder,omitempty"`
	// Facets is inspect_binary's coverage per facet; Unresolved counts
	// its unresolved structures.
	Facets     map[string]FacetCoverage `json:"facets,omitempty"`
	Unresolved *int                     `json:"unresolved,omitempty"`
}

// paged is the data object of every bin tool: the inputs' identities, a
// summary, this page's rows with the page object and next_cursor, and
// the analysis_id preserve_evidence accepts. Coverage is the envelope's
// (the skeleton copies it there); data never repeats it.
type paged struct {
	File  *Identity `json:"file,omitempty"`
	Left  *Identity `json:"left,omitempty"`
	Right *Identity `json:"right,omitempty"`
	// Slice names the universal Mach-O file's slice the rows come from
	// (the arch argument's, else the host's); absent for other files.
	Slice *Slice `json:"slice,omitempty"`
	// LeftSlice and RightSlice are compare_binaries' slices of universal
	// inputs, as Slice.
	LeftSlice  *Slice       `json:"left_slice,omitempty"`
	RightSlice *Slice       `json:"right_slice,omitempty"`
	Inspection any          `json:"inspection,omitempty"`
	Counts     any          `json:"counts,omitempty"`
	Summary    any          `json:"summary,omitempty"`
	Rows       any          `json:"rows"`
	Page       tool.Page    `json:"page"`
	NextCursor *string      `json:"next_cursor"`
	Coverage   pageCoverage `json:"-"`
	Unresolved []Unresolved `json:"unresolved,omitempty"`
	Extra      any          `json:"context,omitempty"`
	AnalysisID string       `json:"analysis_id,omitempty"`
	// MappedBy is inspect_binary's live mapped_by (Env.MappedBy).
	MappedBy any `json:"mapped_by,omitempty"`
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

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func orRaw(format string) string {
	if format == "" {
		return "raw"
	}
	return format
}
