package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Operation declares one analysis operation: its tool name, accepted source
// cardinality and formats, operation-specific fields (JSON Schema property
// definitions, in order) and its runner, bound to the operation's typed
// arguments by bindOperation.
type Operation struct {
	Name        string
	Title       string
	Description string
	MinSources  int
	MaxSources  int
	Formats     []string
	Fields      []Field
	Required    []string

	// decode decodes schema-valid arguments once into the operation's
	// arguments struct and returns the call (set by bindOperation).
	decode func(raw json.RawMessage) (*opCall, error)
	// define declares the tool with tool.Define over the arguments
	// struct, handing every call to h (set by bindOperation).
	define func(t tool.Tool, h func(context.Context, *opCall) (*contract.Result, error)) tool.Tool
}

// Field is one operation-specific top-level argument: its name and JSON
// Schema.
type Field struct {
	Name   string
	Schema js
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

// operationArgs are the arguments every analysis tool takes; each
// operation's arguments struct embeds them beside its own fields.
type operationArgs struct {
	Sources      []sourceArg `json:"sources"`
	Continuation string      `json:"continuation,omitempty"`
	Limits       *limitsArg  `json:"limits,omitempty"`
	PageSize     *integer    `json:"page_size,omitempty"`
}

func (a *operationArgs) common() *operationArgs { return a }

// limitsArg is the limits argument: each field may only lower the
// server's ceiling of the same name.
type limitsArg struct {
	MaxRows        *integer `json:"max_rows,omitempty"`
	MaxInputBytes  *integer `json:"max_input_bytes,omitempty"`
	TimeoutSeconds *integer `json:"timeout_seconds,omitempty"`
	MaxMemoryBytes *integer `json:"max_memory_bytes,omitempty"`
}

// integer is a JSON Schema integer argument: any integral JSON number (2,
// 2.0, 2e0) within ±2^53, decoded once into an int64.
type integer int64

// UnmarshalJSON accepts an integral JSON number.
func (n *integer) UnmarshalJSON(b []byte) error {
	s := string(b)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = integer(i)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return fmt.Errorf("%s is not an integer", s)
	}
	*n = integer(f)
	return nil
}

// opCall is one decoded call of an operation: the shared arguments, the
// whole arguments struct (replayed into next_page), the first row the
// offset argument asks for, and the runner bound to the arguments.
type opCall struct {
	args   *operationArgs
	fields any
	offset int64
	run    func(ctx context.Context, req *Request) (*Output, error)
}

// opArgs is the constraint of an operation's arguments struct A: *A
// embeds operationArgs.
type opArgs[A any] interface {
	*A
	common() *operationArgs
}

// offsetArgs is implemented by arguments structs with an offset argument
// (the first row of a first page).
type offsetArgs interface{ firstRow() int64 }

// bindOperation binds op to its arguments struct A and its runner, which
// receives the decoded arguments: the one way an operation is declared.
func bindOperation[A any, P opArgs[A]](op *Operation, run func(ctx context.Context, req *Request, a *A) (*Output, error)) *Operation {
	mk := func(a *A) *opCall {
		c := &opCall{args: P(a).common(), fields: a}
		if o, ok := any(a).(offsetArgs); ok {
			c.offset = o.firstRow()
		}
		c.run = func(ctx context.Context, req *Request) (*Output, error) { return run(ctx, req, a) }
		return c
	}
	op.decode = func(raw json.RawMessage) (*opCall, error) {
		a, err := tool.Decode[A](raw)
		if err != nil {
			return nil, err
		}
		return mk(&a), nil
	}
	op.define = func(t tool.Tool, h func(context.Context, *opCall) (*contract.Result, error)) tool.Tool {
		return tool.Define(t, func(ctx context.Context, a A) (*contract.Result, error) { return h(ctx, mk(&a)) })
	}
	return op
}

// Request is what an operation's runner receives beside its arguments.
type Request struct {
	Inputs []*input
	Limits Limits
	// Start is the position of the first row of this page: the zero
	// Position (or the offset argument) on a first call, the continuation's
	// position when resuming.
	Start    evidence.Position
	Resuming bool
	// RowBudget is the byte budget of this page's encoded rows
	// (tool.RowBudget of the call): the pager ends a page early, partial
	// and resumable, when the next row would pass it.
	RowBudget int
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
	// ByBytes reports that the byte budget, not page_size, ended the
	// page; the result then carries tool.BudgetWarning.
	ByBytes bool
	// Notes are warnings that mark nothing incomplete (a record delivered
	// as fragments that next_page completes); unlike Warnings they are
	// not listed in coverage.incomplete.
	Notes []string
}

func (op *Operation) inputSchema(c Ceilings) json.RawMessage {
	props := js{
		"sources":      sourcesSchema(op),
		"continuation": continuationSchema,
		"limits":       limitsSchema(c),
		"page_size":    pageSizeSchema(c),
	}
	for _, f := range op.Fields {
		props[f.Name] = f.Schema
	}
	return object(props, append([]string{"sources"}, op.Required...)...).json()
}

func (rt *Runtime) effectiveLimits(a *operationArgs) (Limits, error) {
	c := rt.cfg.Ceilings
	l := Limits{MaxRows: c.DefaultRows, MaxInputBytes: c.MaxInputBytes, TimeoutSeconds: c.TimeoutSeconds, MaxMemoryBytes: c.defaultMemory()}
	check := func(key string, v *integer, ceiling int64) (int64, bool, error) {
		if v == nil {
			return 0, false, nil
		}
		if *v < 1 || int64(*v) > ceiling {
			return 0, true, fieldErr(contract.CodeInvalidArgument, "/limits/"+key, "limits.%s may only lower the server ceiling %d", key, ceiling).WithDetail("maximum", ceiling)
		}
		return int64(*v), true, nil
	}
	var maxRows int64
	var haveMaxRows bool
	if lm := a.Limits; lm != nil {
		v, ok, err := check("max_rows", lm.MaxRows, int64(c.MaxRows))
		if err != nil {
			return l, err
		}
		maxRows, haveMaxRows = v, ok
		if v, ok, err := check("max_input_bytes", lm.MaxInputBytes, c.MaxInputBytes); err != nil {
			return l, err
		} else if ok {
			l.MaxInputBytes = v
		}
		if v, ok, err := check("timeout_seconds", lm.TimeoutSeconds, int64(c.TimeoutSeconds)); err != nil {
			return l, err
		} else if ok {
			l.TimeoutSeconds = int(v)
		}
		if v, ok, err := check("max_memory_bytes", lm.MaxMemoryBytes, c.MaxMemoryBytes); err != nil {
			return l, err
		} else if ok {
			l.MaxMemoryBytes = v
		}
	}
	if a.PageSize != nil {
		ps := int64(*a.PageSize)
		if ps < 1 || ps > int64(c.MaxRows) {
			return l, fieldErr(contract.CodeInvalidArgument, "/page_size", "page_size must be 1..%d", c.MaxRows)
		}
		if haveMaxRows && ps != maxRows {
			return l, fieldErr(contract.CodeInvalidArgument, "/page_size", "page_size and limits.max_rows disagree; give one or make them equal")
		}
		l.MaxRows = int(ps)
	} else if haveMaxRows {
		l.MaxRows = int(maxRows)
	}
	return l, nil
}

// replayArgs are the operation fields of a call as a JSON object (numbers
// exact), without sources, continuation, limits and page_size: what
// next_page replays and the continuation binds.
func replayArgs(fields any) map[string]any {
	b, _ := json.Marshal(fields)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	m := map[string]any{}
	_ = dec.Decode(&m)
	for _, k := range []string{"sources", "continuation", "limits", "page_size"} {
		delete(m, k)
	}
	return m
}

// analysisTool declares the tool of one operation.
func (rt *Runtime) analysisTool(op *Operation) tool.Tool {
	return op.define(tool.Tool{
		Name: op.Name, Toolset: tool.Perf, Title: op.Title, Description: op.Description,
		Input:       op.inputSchema(rt.cfg.Ceilings),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
		Paging:      tool.ContinuationPaging,
	}, func(ctx context.Context, c *opCall) (*contract.Result, error) {
		res, err := rt.analyze(ctx, op, c)
		if ce, ok := err.(*contract.Error); ok && ce.Code == contract.CodeTimeout && !ce.Retryable && ce.NextAction == nil {
			ce.NextAction = rt.raiseTimeout(op, c)
		}
		return res, err
	})
}

// timeoutUnit is the length of one unit of limits.timeout_seconds; a
// test sets it to 0 so that every analysis deadline has passed when the
// call starts (an expired time limit without a race against the clock).
var timeoutUnit = time.Second

// errAnalysisDeadline is the cause of the context of an analysis whose
// limits.timeout_seconds passed (context.Cause), told apart from the
// client's own deadline or cancellation.
var errAnalysisDeadline = errors.New("limits.timeout_seconds passed")

// timeoutError is the TIMEOUT of an analysis that did not finish within
// lim.TimeoutSeconds. When the caller chose that limit (a
// limits.timeout_seconds below the server ceiling), the unchanged call
// times out again: retryable false, details naming the limit and the
// most it may be raised to. The server's own ceiling is a deadline the
// caller cannot change; a less loaded server may finish: retryable.
func (rt *Runtime) timeoutError(a *operationArgs, lim Limits) *contract.Error {
	ceiling := rt.cfg.Ceilings.TimeoutSeconds
	e := contract.Errorf(contract.CodeTimeout, "the analysis did not finish within limits.timeout_seconds (%d s)", lim.TimeoutSeconds).
		WithDetail("limit", "timeout_seconds").WithDetail("timeout_seconds", lim.TimeoutSeconds).WithDetail("maximum", ceiling)
	if a.Limits != nil && a.Limits.TimeoutSeconds != nil && lim.TimeoutSeconds < ceiling {
		e.Message += fmt.Sprintf(", the limit this call set, so the unchanged call is expected to time out again: raise limits.timeout_seconds (at most %d) or narrow the call", ceiling)
		e.Retryable = false
	}
	return e
}

// raiseTimeout is the call c of op again with limits.timeout_seconds at
// the server ceiling: the next_action of a TIMEOUT the caller's own
// limit caused.
func (rt *Runtime) raiseTimeout(op *Operation, c *opCall) *contract.Action {
	b, err := json.Marshal(c.fields)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	args := map[string]any{}
	if err := dec.Decode(&args); err != nil {
		return nil
	}
	lm, _ := args["limits"].(map[string]any)
	if lm == nil {
		lm = map[string]any{}
	}
	lm["timeout_seconds"] = rt.cfg.Ceilings.TimeoutSeconds
	args["limits"] = lm
	return &contract.Action{Tool: op.Name, Arguments: args}
}

// Analyze runs op on args (already validated against the tool schema;
// decoded here once): the capture tools' analysis step.
func (rt *Runtime) Analyze(ctx context.Context, op *Operation, args json.RawMessage) (*contract.Result, error) {
	c, err := op.decode(args)
	if err != nil {
		return nil, err
	}
	return rt.analyze(ctx, op, c)
}

// analyze runs one decoded call of op and builds its page.
func (rt *Runtime) analyze(ctx context.Context, op *Operation, c *opCall) (*contract.Result, error) {
	lim, err := rt.effectiveLimits(c.args)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, time.Duration(lim.TimeoutSeconds)*timeoutUnit, errAnalysisDeadline)
	defer cancel()
	res, err := rt.analyzeWithin(ctx, op, c, lim)
	if err != nil && errors.Is(context.Cause(ctx), errAnalysisDeadline) {
		// Whatever a decoder made of the expired context (a read
		// error, DECODE_FAILED), the cause is the call's time limit.
		return nil, rt.timeoutError(c.args, lim)
	}
	return res, err
}

// analyzeWithin is analyze under the call's time limit (ctx).
func (rt *Runtime) analyzeWithin(ctx context.Context, op *Operation, c *opCall, lim Limits) (*contract.Result, error) {
	srcs := c.args.Sources
	token := c.args.Continuation
	inputs, err := rt.resolve(ctx, op, srcs, lim, token != "")
	if err != nil {
		return nil, err
	}
	ids := make([]evidence.InputIdentity, len(inputs))
	for i, in := range inputs {
		ids[i] = in.identity()
	}
	req := &Request{Inputs: inputs, Limits: lim, RowBudget: tool.RowBudget(ctx)}
	// The replay arguments: every operation field, the effective limits
	// and page size (replay sources are added to next_page below).
	next := replayArgs(c.fields)
	next["page_size"] = lim.MaxRows
	next["limits"] = lim.toMap()
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
	// The page must fit the call's result budget as delivered: rows are
	// sized by req.RowBudget, but the rest of the result (summary,
	// coverage, sources, warnings) can pass the envelope reserve; then the
	// page is run again with the row budget lowered by the overshoot, so
	// it ends early (partial, resumable, page_ended_by byte_budget).
	budget := tool.ResultBudget(ctx)
	for attempt := 0; ; attempt++ {
		out, err := c.run(ctx, req)
		// A cancelled or timed-out call never returns a partial page as
		// if it were a result.
		if ctx.Err() != nil {
			return nil, contract.AsError(ctx.Err())
		}
		if err != nil {
			if len(inputs) == 1 {
				// One source: what its content or file caused points at it.
				err = sourceError(err, 0)
			}
			return nil, err
		}
		res, sess, err := rt.buildPage(op, c, req, lim, inputs, ids, next, nb, out)
		if err != nil {
			return nil, err
		}
		if len(out.Rows) > 1 && attempt < 4 {
			body, _ := contract.Marshal(res, nil)
			if size := tool.DeliveredBytes(body); size > budget {
				rowBytes := 0
				for _, r := range out.Rows {
					if n, err := rowCost(r); err == nil {
						rowBytes += int(n)
					}
				}
				b := rowBytes - (size-budget+1)/2 - 64
				if b < 1 {
					b = 1
				}
				req.RowBudget = b
				continue
			}
		}
		rt.remember(sess)
		return res, nil
	}
}

// buildPage builds the result of one page out of op (and the session that
// remembers it, not yet remembered).
func (rt *Runtime) buildPage(op *Operation, c *opCall, req *Request, lim Limits, inputs []*input, ids []evidence.InputIdentity, next map[string]any, nb []byte, out *Output) (*contract.Result, *session, error) {
	replay := make([]any, len(inputs))
	descr := make([]any, len(inputs))
	for i, in := range inputs {
		replay[i] = in.replay()
		descr[i] = in.describe()
	}
	var nextPage *contract.Action
	var nextCursor any // null when the listing ended
	if out.Next != nil {
		codec, err := rt.durableContinuations()
		if err != nil {
			return nil, nil, err
		}
		tok := codec.Issue(op.Name, ids, nb, *out.Next)
		withSources := map[string]any{}
		for k, v := range next {
			withSources[k] = v
		}
		withSources["sources"] = replay
		wb, _ := json.Marshal(withSources)
		nextPage = tool.ContinuationPaging.NextCall(op.Name, wb, tok)
		nextCursor = tok
	}
	rows := out.Rows
	if rows == nil {
		rows = []any{}
	}
	// The first row's logical index: the continuation's position when
	// resuming, else the offset argument of operations that take one.
	first := req.Start.Row
	if !req.Resuming && c.offset > 0 {
		first = c.offset
	}
	pg := tool.Page{Offset: first, Returned: len(rows), Size: lim.MaxRows, More: out.Next != nil}
	if out.Total >= 0 {
		total := out.Total
		pg.Total = &total
	}
	// complete means nothing the page covers was dropped, unread or
	// approximated: a page followed by more pages is complete (page.more,
	// coverage.more_pages and next_action say so and name the next call);
	// out.Warnings (mirrored in coverage.incomplete) say what is
	// incomplete when it is not.
	cov := map[string]any{"complete": len(out.Warnings) == 0, "offset": first, "rows_returned": len(rows), "more_pages": out.Next != nil}
	if len(out.Warnings) > 0 {
		cov["incomplete"] = append([]string(nil), out.Warnings...)
	}
	if out.Total >= 0 {
		cov["rows_total"] = out.Total
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
		"page": pg, "next_cursor": nextCursor,
	}
	// A result that cannot be encoded is a typed error here, never a
	// malformed reply from the transport.
	if _, err := json.Marshal(data); err != nil {
		return nil, nil, contract.Errorf(contract.CodeResultTooLarge, "the %s result cannot be encoded as JSON; narrow the request", op.Name)
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
	for _, w := range out.Notes {
		res.Warn(w)
	}
	if out.ByBytes {
		res.Warn(tool.BudgetWarning)
	}
	if nextPage != nil {
		res.Warn("more rows remain: submit next_action (tool and arguments) unchanged for the next page")
		res.NextAction = nextPage
	}
	// partial only when something could not be read (out.Warnings, with
	// coverage saying what); paging notes and the byte budget ending a
	// page leave a page complete.
	res.Status = contract.StatusComplete
	if len(out.Warnings) > 0 {
		status = evidence.StatusPartial
		res.Status = contract.StatusPartial
	}
	sess.status = status
	return res, sess, nil
}
