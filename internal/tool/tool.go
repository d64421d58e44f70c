// Package tool is the registry every inquest toolset (proc, perf, bin) adds
// its tools to. A tool is a fixed definition (name, description, strict input
// schema, output schema, annotations) plus a handler. The registry validates
// arguments against the published input schema before any handler runs and
// projects schema failures into INVALID_ARGUMENT errors with JSON Pointers
// (docs/errors.md). The MCP server and the CLI both call tools through
// Registry.Call, so both get the same validation and the same envelopes.
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/inquest-dev/inquest/internal/contract"
)

// Toolset names, as docs/tools.md groups the tools.
const (
	Proc = "proc"
	Perf = "perf"
	Bin  = "bin"
)

// Toolsets lists every toolset in catalog order.
var Toolsets = []string{Proc, Perf, Bin}

// Annotations are the MCP tool hints. They describe behaviour truthfully:
// reads are ReadOnly; tools that run a target are OpenWorld and not ReadOnly.
type Annotations struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// Handler runs a tool on arguments already validated against the tool's
// input schema. It returns a success envelope, or an error that becomes the
// error envelope (a *contract.Error keeps its code; anything else is
// INTERNAL_ERROR).
type Handler func(ctx context.Context, args json.RawMessage) (*contract.Result, error)

// Tool is one tool's fixed definition plus its handler.
type Tool struct {
	// Name is the action and object, without a product prefix ("list_processes").
	Name string
	// Toolset is Proc, Perf or Bin.
	Toolset string
	// Title is a short human label.
	Title string
	// Description says what the tool is for in about two sentences and
	// names every top-level required argument; it is what tools/list
	// publishes, read by every agent before its first call.
	Description string
	// Details is the longer guidance a caller may need beyond Description
	// and the input schema: examples, edge cases, what each mode returns.
	// It is not published in tools/list (every byte there is read by every
	// agent); `inquest mcp inspect --tool NAME` and docs/tools.md show it.
	Details string
	// Input is the strict JSON Schema of the arguments: type object,
	// additionalProperties false, enums and bounds.
	Input json.RawMessage
	// OutputData is the JSON Schema of data in the success envelope: the
	// tool's fields, row fields and their types. When empty, the
	// registry's built-in table of data schemas (dataschemas.json, kept in
	// step with real results by the result check) supplies it.
	OutputData json.RawMessage
	// Annotations are the MCP behaviour hints.
	Annotations Annotations
	// Handler runs the tool. Define sets it from a typed handler.
	Handler Handler
	// Args is the arguments struct type the handler decodes into (set by
	// Define); the catalog test checks it against Input.
	Args reflect.Type
	// Paging is the paging descriptor of a paged tool (CursorPaging or
	// ContinuationPaging); nil for a tool that returns one result. A paged
	// tool's data carries `page` (Page) and `next_cursor`, and its
	// next_action is the exact next call.
	Paging *Paging
	// Job marks a proc tool that starts a host job (a capture, a wait):
	// the bridge's job-delivery middleware waits up to wait_ms for it and
	// delivers its terminal outcome or first page in the same call.
	Job bool
}

// ErrUnknownTool is returned by Call for a name the registry does not hold;
// the MCP server turns it into a JSON-RPC error, not a tool result.
var ErrUnknownTool = errors.New("unknown tool")

// Registry holds tools in registration order. Each tool's input schema is
// checked for the strict object shape when it is added and compiled on its
// first validation, so a command that calls one tool (or none, like --help)
// pays for no other tool's schema.
type Registry struct {
	tools  []*entry
	byName map[string]*entry
}

type entry struct {
	Tool
	// portOnce makes the portable form of Tool.Input (in).
	portOnce sync.Once
	once     sync.Once
	schema   *jsonschema.Resolved
	// doc is the decoded input schema and patterns its compiled regular
	// expressions, for locating a rejection and copying "expected"
	// values: decoded on the first rejection only (docOnce).
	docOnce   sync.Once
	doc       any
	patterns  map[string]*regexp.Regexp
	schemaErr error
	outOnce   sync.Once
	output    json.RawMessage
	leanOnce  sync.Once
	lean      json.RawMessage
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]*entry{}} }

// Add registers tools. Each input schema is published (Tools, Lookup) and
// validated (Call) in its portable form (Portable), made on first use so
// a command that calls one tool pays for no other's. A duplicate name, a missing handler, or a schema that
// is not a strict object schema is a programming error and is returned as an
// error naming the tool. The schema is compiled on first use; Check compiles
// every schema at once (tests and the catalog do).
func (r *Registry) Add(tools ...Tool) error {
	for _, t := range tools {
		if t.Name == "" || t.Handler == nil {
			return fmt.Errorf("tool %q: name and handler are required", t.Name)
		}
		if _, dup := r.byName[t.Name]; dup {
			return fmt.Errorf("tool %q: registered twice", t.Name)
		}
		if err := strictShape(t.Input); err != nil {
			return fmt.Errorf("tool %q: %w", t.Name, err)
		}
		e := &entry{Tool: t}
		r.tools = append(r.tools, e)
		r.byName[t.Name] = e
	}
	return nil
}

// MustAdd is Add for static registrations; it panics on a programming error.
func (r *Registry) MustAdd(tools ...Tool) {
	if err := r.Add(tools...); err != nil {
		panic(err)
	}
}

// Check compiles every registered tool's input and output schema and
// returns the first failure, naming the tool.
func (r *Registry) Check() error {
	for _, e := range r.tools {
		if err := e.compiled(); err != nil {
			return fmt.Errorf("tool %q: %w", e.Name, err)
		}
		if len(e.outputSchema()) == 0 {
			return fmt.Errorf("tool %q: output data schema is not JSON", e.Name)
		}
	}
	return nil
}

// strictShape checks the top of an input schema without compiling it:
// {"type":"object","additionalProperties":false,...}.
func strictShape(input json.RawMessage) error {
	var top struct {
		Type                 any `json:"type"`
		AdditionalProperties any `json:"additionalProperties"`
	}
	if err := json.Unmarshal(input, &top); err != nil {
		return fmt.Errorf("input schema is not JSON: %w", err)
	}
	if top.Type != "object" || top.AdditionalProperties != false {
		return errors.New(`input schema must be {"type":"object","additionalProperties":false,...}`)
	}
	return nil
}

// in returns the portable form of the tool's input schema (Portable),
// made once; the declared schema when it cannot be rewritten (not JSON:
// Add already refused that).
func (e *entry) in() json.RawMessage {
	e.portOnce.Do(func() {
		if p, err := Portable(e.Tool.Input); err == nil {
			e.Tool.Input = p
		}
	})
	return e.Tool.Input
}

// tool returns the tool as published: its input schema in portable form.
func (e *entry) tool() Tool {
	e.in()
	return e.Tool
}

// compiled compiles the input schema once; a failure is kept and returned
// on every call.
func (e *entry) compiled() error {
	e.once.Do(func() {
		var js jsonschema.Schema
		if err := json.Unmarshal(e.in(), &js); err != nil {
			e.schemaErr = fmt.Errorf("input schema does not compile: %w", err)
			return
		}
		s, err := js.Resolve(nil)
		if err != nil {
			e.schemaErr = fmt.Errorf("input schema does not compile: %w", err)
			return
		}
		e.schema = s
	})
	return e.schemaErr
}

// outputSchema builds the published output schema once; nil when the
// tool's OutputData is not JSON (Check reports that).
func (e *entry) outputSchema() json.RawMessage {
	e.outOnce.Do(func() {
		if out, err := OutputSchema(e.dataSchema()); err == nil {
			e.output = out
		}
	})
	return e.output
}

// Tools returns the registered tools in registration order, filtered to the
// named toolsets (all when none are named).
func (r *Registry) Tools(toolsets ...string) []Tool {
	var out []Tool
	for _, e := range r.tools {
		if len(toolsets) == 0 || contains(toolsets, e.Toolset) {
			out = append(out, e.tool())
		}
	}
	return out
}

// Names returns the sorted tool names.
func (r *Registry) Names() []string {
	var n []string
	for _, e := range r.tools {
		n = append(n, e.Name)
	}
	sort.Strings(n)
	return n
}

// Wrap replaces the named tool's handler with wrap(handler), so a server
// can add to one tool's results (e.g. get_status data it alone knows)
// without a second tool; it reports whether the tool is registered. It
// must be called before the registry serves calls.
func (r *Registry) Wrap(name string, wrap func(Handler) Handler) bool {
	e, ok := r.byName[name]
	if ok {
		e.Handler = wrap(e.Handler)
	}
	return ok
}

// Lookup returns the named tool.
func (r *Registry) Lookup(name string) (Tool, bool) {
	e, ok := r.byName[name]
	if !ok {
		return Tool{}, false
	}
	return e.tool(), true
}

// OutputSchemaOf returns the tool's published output schema.
func (r *Registry) OutputSchemaOf(name string) json.RawMessage {
	if e, ok := r.byName[name]; ok {
		return e.outputSchema()
	}
	return nil
}

// LeanInputOf returns the input schema tools/list publishes for the
// named tool: Lean of its portable input schema, made once (the portable
// schema itself if Lean fails, which it does only for a schema that is
// not JSON, refused by Add). Calls are validated against the full
// schema, not this one. It returns nil for an unknown tool or a nil
// registry.
func (r *Registry) LeanInputOf(name string) json.RawMessage {
	if r == nil {
		return nil
	}
	e, ok := r.byName[name]
	if !ok {
		return nil
	}
	e.leanOnce.Do(func() {
		e.lean = e.in()
		if l, err := Lean(e.lean); err == nil {
			e.lean = l
		}
	})
	return e.lean
}

// Validate checks args against the named tool's input schema. It returns
// ErrUnknownTool, or an INVALID_ARGUMENT *contract.Error with field,
// constraint and expected set, or nil.
func (r *Registry) Validate(name string, args json.RawMessage) error {
	e, ok := r.byName[name]
	if !ok {
		return ErrUnknownTool
	}
	return e.validate(args)
}

// Call validates args and runs the named tool. Absent or null arguments are
// treated as {}. It returns ErrUnknownTool for an unknown name; every other
// failure is a *contract.Error.
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage) (*contract.Result, error) {
	e, ok := r.byName[name]
	if !ok {
		return nil, ErrUnknownTool
	}
	args = normalize(args)
	if err := e.validate(args); err != nil {
		return nil, err
	}
	res, err := e.safeHandle(ctx, integralNumbers(args))
	if err != nil {
		return nil, e.typed(err)
	}
	logResult(name, res)
	return res, nil
}

// CallPrechecked runs the named tool like Call on arguments its caller
// built and already knows to be schema-valid, without the input schema
// validation (and so without compiling the schema, the larger part of a
// short CLI command's own work). It is for a CLI command whose arguments
// are its own constants plus flag values it checked against the same
// bounds, with a test that every arguments object it sends here passes
// Validate; a command that cannot vouch for its arguments calls Call,
// and the MCP server always does. It returns ErrUnknownTool for an
// unknown name and typed errors as Call does.
func (r *Registry) CallPrechecked(ctx context.Context, name string, args json.RawMessage) (*contract.Result, error) {
	e, ok := r.byName[name]
	if !ok {
		return nil, ErrUnknownTool
	}
	res, err := e.safeHandle(ctx, integralNumbers(normalize(args)))
	if err != nil {
		return nil, e.typed(err)
	}
	logResult(name, res)
	return res, nil
}

func normalize(args json.RawMessage) json.RawMessage {
	s := strings.TrimSpace(string(args))
	if s == "" || s == "null" {
		return json.RawMessage("{}")
	}
	return args
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// safeHandle runs the handler and turns a panic into INTERNAL_ERROR, so one
// faulty handler cannot take the MCP server down with every session.
func (e *entry) safeHandle(ctx context.Context, args json.RawMessage) (res *contract.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("tool panicked", "tool", e.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, err = nil, contract.Errorf(contract.CodeInternalError, "the tool failed unexpectedly; the failure was logged").Permanent()
		}
	}()
	return e.Handler(ctx, args)
}

// typed returns err as a *contract.Error. A plain error (not a
// *contract.Error, not a context error) is a defect that becomes
// INTERNAL_ERROR: it is logged once, with the tool name, through log/slog
// (stderr, or the host log where the host set the default logger; never
// stdout).
func (e *entry) typed(err error) *contract.Error {
	var ce *contract.Error
	if !errors.As(err, &ce) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		slog.Error("tool failed with an untyped error", "tool", e.Name, "err", err.Error())
	}
	return contract.AsError(err)
}
