package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Operation declares one analysis operation: its tool name, accepted source
// cardinality and formats, operation-specific fields (JSON Schema property
// definitions, in order) and its runner.
type Operation struct {
	Name        string
	Title       string
	Description string
	MinSources  int
	MaxSources  int
	Formats     []string
	Fields      []Field
	Required    []string
	// Replay normalizes operation fields for next_page (e.g. exact decimal
	// strings for large integers); optional.
	Replay func(fields map[string]any)
	Run    func(ctx context.Context, req *Request) (*Output, error)
}

// Field is one operation-specific top-level argument.
type Field struct {
	Name   string
	Schema map[string]any
}

// Limits are the effective analysis limits of one call.
type Limits struct {
	MaxRows        int
	MaxInputBytes  int64
	TimeoutSeconds int
	MaxMemoryBytes int64
}

func (l Limits) toMap() map[string]any {
	return map[string]any{"max_rows": l.MaxRows, "max_input_bytes": l.MaxInputBytes, "timeout_seconds": l.TimeoutSeconds, "max_memory_bytes": l.MaxMemoryBytes}
}

// Request is what an operation's runner receives.
type Request struct {
	Inputs []*input
	// Fields are the decoded arguments (numbers as json.Number).
	Fields map[string]any
	Limits Limits
	// Start is the position of the first row of this page: the zero
	// Position (or the offset argument) on a first call, the continuation's
	// position when resuming.
	Start    evidence.Position
	Resuming bool
}

// Output is one page of an operation's result.
type Output struct {
	// Summary holds page-independent facts (totals, sample types...).
	Summary map[string]any
	Rows    []any
	// Next is the position of the next row, nil when this page ends the
	// result.
	Next *evidence.Position
	// Total is the number of rows of the whole result, or -1 when unknown
	// without reading to the end.
	Total    int64
	Coverage map[string]any
	Warnings []string
}

func (op *Operation) inputSchema(c Ceilings) json.RawMessage {
	props := map[string]any{
		"sources":      sourcesSchema(op),
		"continuation": map[string]any{"type": "string", "minLength": 1, "maxLength": contract.MaxCursorLen, "description": "Opaque token from a previous result's next_page.arguments.continuation; submit next_page.arguments unchanged rather than copying it into new arguments."},
		"limits":       limitsSchema(c),
		"page_size":    map[string]any{"type": "integer", "minimum": 1, "maximum": c.MaxRows, "description": "Rows per page; shorthand for limits.max_rows (they must agree when both are given). Default " + itoa(c.DefaultRows) + "."},
	}
	for _, f := range op.Fields {
		props[f.Name] = f.Schema
	}
	req := append([]string{"sources"}, op.Required...)
	b, _ := json.Marshal(map[string]any{"type": "object", "additionalProperties": false, "required": req, "properties": props})
	return b
}

func sourcesSchema(op *Operation) map[string]any {
	path := map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"kind", "path"},
		"properties": map[string]any{
			"kind":            map[string]any{"const": "path"},
			"path":            map[string]any{"type": "string", "minLength": 1, "maxLength": 4096, "description": "Absolute path of a local artifact."},
			"format":          map[string]any{"enum": op.Formats, "description": "Artifact format; detected when omitted and unambiguous."},
			"producer":        map[string]any{"type": "string", "minLength": 1, "maxLength": 128, "description": "Tool that produced the artifact (e.g. go-test, runtime/pprof); bound into continuations."},
			"expected_sha256": map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "Fail with INPUT_CHANGED unless the file's SHA-256 is this."},
		},
	}
	ev := map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"kind", "evidence_id"},
		"properties": map[string]any{
			"kind":              map[string]any{"const": "evidence"},
			"evidence_id":       map[string]any{"type": "string", "pattern": "^ev-[a-z2-7]{26}$", "description": "Evidence ID: \"ev-\" followed by 26 base32 characters (a-z, 2-7)."},
			"artifact_selector": map[string]any{"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", "description": "Artifact name within the record; required when it has several analysis sources."},
		},
	}
	return map[string]any{
		"type": "array", "minItems": op.MinSources, "maxItems": op.MaxSources,
		"description": "Ordered artifacts to analyze: {kind:\"path\", path, format?, producer?, expected_sha256?} or {kind:\"evidence\", evidence_id, artifact_selector?}.",
		// Discriminated on kind (if/then/else rather than oneOf) so a
		// failure points at the offending field of the selected branch,
		// e.g. /sources/0/evidence_id and its pattern, not at kind.
		// The branches are the closed object schemas; items itself only
		// requires kind and selects a branch.
		"items": map[string]any{
			"required":   []string{"kind"},
			"properties": map[string]any{"kind": map[string]any{"enum": []string{"path", "evidence"}, "description": "Source kind: path (a local artifact) or evidence (a preserved record)."}},
			"if":         map[string]any{"properties": map[string]any{"kind": map[string]any{"const": "path"}}},
			"then":       path,
			"else":       ev,
		},
	}
}

func limitsSchema(c Ceilings) map[string]any {
	return map[string]any{
		"type": "object", "additionalProperties": false,
		"description": "Lower the server's analysis ceilings for this call; omitted fields inherit them. Values above a ceiling are rejected.",
		"properties": map[string]any{
			"max_rows":         map[string]any{"type": "integer", "minimum": 1, "maximum": c.MaxRows},
			"max_input_bytes":  map[string]any{"type": "integer", "minimum": 1, "maximum": c.MaxInputBytes},
			"timeout_seconds":  map[string]any{"type": "integer", "minimum": 1, "maximum": c.TimeoutSeconds},
			"max_memory_bytes": map[string]any{"type": "integer", "minimum": 1 << 20, "maximum": c.MaxMemoryBytes},
		},
	}
}

// decodeArgs decodes a JSON object keeping numbers exact.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "arguments must be a JSON object")
	}
	return m, nil
}

// intField returns an integral number argument (2.0 counts as 2).
func intField(m map[string]any, key string) (int64, bool, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, true, contract.Errorf(contract.CodeInvalidArgument, "%s must be an integer", key)
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, true, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, true, contract.Errorf(contract.CodeInvalidArgument, "%s must be an integer", key)
	}
	return int64(f), true, nil
}

func strField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func (rt *Runtime) effectiveLimits(fields map[string]any) (Limits, error) {
	c := rt.cfg.Ceilings
	l := Limits{MaxRows: c.DefaultRows, MaxInputBytes: c.MaxInputBytes, TimeoutSeconds: c.TimeoutSeconds, MaxMemoryBytes: c.MaxMemoryBytes}
	var maxRows int64
	var haveMaxRows bool
	if lm, ok := fields["limits"].(map[string]any); ok {
		check := func(key string, ceiling int64) (int64, bool, error) {
			v, ok, err := intField(lm, key)
			if err != nil {
				return 0, ok, err
			}
			if ok && (v < 1 || v > ceiling) {
				return 0, ok, fieldErr(contract.CodeInvalidArgument, "/limits/"+key, "limits.%s may only lower the server ceiling %d", key, ceiling).WithDetail("maximum", ceiling)
			}
			return v, ok, nil
		}
		v, ok, err := check("max_rows", int64(c.MaxRows))
		if err != nil {
			return l, err
		}
		maxRows, haveMaxRows = v, ok
		if v, ok, err := check("max_input_bytes", c.MaxInputBytes); err != nil {
			return l, err
		} else if ok {
			l.MaxInputBytes = v
		}
		if v, ok, err := check("timeout_seconds", int64(c.TimeoutSeconds)); err != nil {
			return l, err
		} else if ok {
			l.TimeoutSeconds = int(v)
		}
		if v, ok, err := check("max_memory_bytes", c.MaxMemoryBytes); err != nil {
			return l, err
		} else if ok {
			l.MaxMemoryBytes = v
		}
	}
	ps, havePS, err := intField(fields, "page_size")
	if err != nil {
		return l, err
	}
	if havePS && (ps < 1 || ps > int64(c.MaxRows)) {
		return l, fieldErr(contract.CodeInvalidArgument, "/page_size", "page_size must be 1..%d", c.MaxRows)
	}
	if havePS && haveMaxRows && ps != maxRows {
		return l, fieldErr(contract.CodeInvalidArgument, "/page_size", "page_size and limits.max_rows disagree; give one or make them equal")
	}
	switch {
	case havePS:
		l.MaxRows = int(ps)
	case haveMaxRows:
		l.MaxRows = int(maxRows)
	}
	return l, nil
}

// analysisTool builds the tool of one operation.
func (rt *Runtime) analysisTool(op *Operation) tool.Tool {
	return tool.Tool{
		Name: op.Name, Toolset: tool.Perf, Title: op.Title, Description: op.Description,
		Input:       op.inputSchema(rt.cfg.Ceilings),
		OutputData:  analysisOutputSchema,
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			return rt.Analyze(ctx, op, args)
		},
	}
}

var analysisOutputSchema = json.RawMessage(`{"type":"object","required":["operation","sources","summary","rows","page","next_page"],"properties":{
"operation":{"type":"string"},"analysis_id":{"type":"string"},
"sources":{"type":"array","items":{"type":"object"}},
"summary":{"type":"object"},"rows":{"type":"array"},
"page":{"type":"object"},
"next_page":{"oneOf":[{"type":"null"},{"type":"object","required":["tool","arguments"]}]}}}`)

// Analyze runs op on args (already validated against the tool schema).
func (rt *Runtime) Analyze(ctx context.Context, op *Operation, args json.RawMessage) (*contract.Result, error) {
	fields, err := decodeArgs(args)
	if err != nil {
		return nil, err
	}
	var top struct {
		Sources json.RawMessage `json:"sources"`
	}
	_ = json.Unmarshal(args, &top)
	srcs, err := decodeSources(top.Sources)
	if err != nil {
		return nil, err
	}
	lim, err := rt.effectiveLimits(fields)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(lim.TimeoutSeconds)*time.Second)
	defer cancel()
	token := strField(fields, "continuation")
	inputs, err := rt.resolve(ctx, op, srcs, lim, token != "")
	if err != nil {
		return nil, err
	}
	ids := make([]evidence.InputIdentity, len(inputs))
	for i, in := range inputs {
		ids[i] = in.identity()
	}
	req := &Request{Inputs: inputs, Fields: fields, Limits: lim}
	// The replay arguments: every operation field, the effective limits
	// and page size (replay sources are added to next_page below).
	next := map[string]any{}
	for k, v := range fields {
		if k != "sources" && k != "continuation" && k != "limits" && k != "page_size" {
			next[k] = v
		}
	}
	next["page_size"] = lim.MaxRows
	next["limits"] = lim.toMap()
	if op.Replay != nil {
		op.Replay(next)
	}
	nb, _ := json.Marshal(next)
	if token != "" {
		// The token binds the effective arguments, so a call that
		// spells them out (next_page.arguments) and one that leaves
		// page_size or limits at their defaults (the original command
		// re-run with --continuation) resume alike.
		pos, err := rt.continuations().Resume(token, op.Name, ids, nb)
		if err != nil {
			if ce := contract.AsError(err); ce.Field == "" {
				ce.Field = "/continuation"
			}
			return nil, err
		}
		req.Start, req.Resuming = pos, true
	}
	if ctx.Err() != nil {
		return nil, contract.AsError(ctx.Err())
	}
	out, err := op.Run(ctx, req)
	// A cancelled or timed-out call never returns a partial page as if it
	// were a result.
	if ctx.Err() != nil {
		return nil, contract.AsError(ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	replay := make([]any, len(inputs))
	descr := make([]any, len(inputs))
	for i, in := range inputs {
		replay[i] = in.replay()
		descr[i] = in.describe()
	}
	var nextPage *contract.Action
	if out.Next != nil {
		codec, err := rt.durableContinuations()
		if err != nil {
			return nil, err
		}
		tok := codec.Issue(op.Name, ids, nb, *out.Next)
		withSources := map[string]any{}
		for k, v := range next {
			withSources[k] = v
		}
		withSources["sources"] = replay
		nextPage = evidence.NextPage(op.Name, withSources, tok)
	}
	rows := out.Rows
	if rows == nil {
		rows = []any{}
	}
	// The first row's logical index: the continuation's position when
	// resuming, else the offset argument of operations that take one.
	first := req.Start.Row
	if !req.Resuming {
		if off, ok, _ := intField(fields, "offset"); ok && off > 0 {
			first = off
		}
	}
	// complete means every row was returned AND nothing was dropped or
	// approximated; out.Warnings (mirrored in coverage.incomplete) say
	// what is incomplete when no next_page can recover it.
	cov := map[string]any{"complete": out.Next == nil && len(out.Warnings) == 0, "offset": contract.Int(first), "rows_returned": len(rows), "more_pages": out.Next != nil}
	if len(out.Warnings) > 0 {
		cov["incomplete"] = append([]string(nil), out.Warnings...)
	}
	if out.Total >= 0 {
		cov["rows_total"] = contract.Int(out.Total)
	}
	for k, v := range out.Coverage {
		cov[k] = v
	}
	summary := out.Summary
	if summary == nil {
		summary = map[string]any{}
	}
	data := map[string]any{
		"operation": op.Name, "sources": descr, "summary": summary, "rows": rows,
		"page":      map[string]any{"offset": contract.Int(first), "returned": len(rows), "page_size": lim.MaxRows, "more": out.Next != nil},
		"next_page": nextPage,
	}
	// A result that cannot be encoded is a typed error here, never a
	// malformed reply from the transport.
	if _, err := json.Marshal(data); err != nil {
		return nil, contract.Errorf(contract.CodeResultTooLarge, "the %s result cannot be encoded as JSON; narrow the request", op.Name)
	}
	status := evidence.StatusComplete
	sess := &session{id: newSessionID(), tool: op.Name, inputs: inputs, args: next, limits: lim.toMap(), coverage: cov, created: time.Now()}
	if nextPage != nil {
		sess.nextPage = nextPage.Arguments
	}
	if rt.cfg.Sessions {
		data["analysis_id"] = sess.id
	}
	res := contract.NewResult("artifact", time.Now(), data)
	res.Coverage = cov
	for _, w := range out.Warnings {
		res.Warn(w)
	}
	if nextPage != nil {
		res.Warn("more rows remain: submit next_page (tool and arguments) unchanged for the next page")
		res.NextAction = nextPage
		status = evidence.StatusPartial
	}
	if len(out.Warnings) > 0 {
		status = evidence.StatusPartial
	}
	sess.status = status
	rt.remember(sess)
	return res, nil
}
