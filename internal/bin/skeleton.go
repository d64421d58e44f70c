package bin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// This file is the one handler skeleton every bin tool runs through:
// arguments decoded once (tool.Define), checks that need no file, the
// inputs opened and closed, the tool's own work, one page of rows fitted
// to the row limit and the result byte budget, the envelope (page object,
// next_cursor, exact next_action, warnings, coverage) and the analysis_id
// preserve_evidence accepts.

// Analyses retains live bin results so the perf toolset's
// preserve_evidence (and rescue_evidence) can publish them by analysis_id.
// The perf runtime (perf.Runtime.Adopt) implements it.
type Analyses interface {
	// Adopt retains publish under a new analysis_id and returns it.
	Adopt(tool string, publish func(ctx context.Context, st *evidence.Store) (*evidence.Manifest, error)) string
}

// rowFunc returns up to limit encoded rows of a listing starting at pos,
// the position after the last row returned (nil when the listing ended)
// and an error. A scanning listing whose context ends mid-scan returns the
// rows it completed, the position to resume from and the context's error:
// the skeleton then delivers them as partial evidence.
type rowFunc func(pos evidence.Position, limit int) ([]json.RawMessage, *evidence.Position, error)

// invocation is one bin tool call as the skeleton runs it. A tool's run
// function opens its inputs (binary, capture or keep), fills data and sets
// its rows through page.
type invocation struct {
	env  Env
	ctx  context.Context
	tool string
	// raw is the arguments as the caller sent them (validated).
	raw json.RawMessage
	res *contract.Result
	// files are the analysed inputs, in artifact order, named by names.
	files  []*File
	names  []string
	format string
	// slices are the universal files' slices the inputs were narrowed
	// to, by input name ("binary": data.slice, "left", "right").
	slices map[string]*Slice
	data   *paged
	// limits are the result's limitations other than paging: each is a
	// warning of the live result and is kept by its preserved record.
	limits []string

	rows rowFunc
	// insns is the typed page function of disassemble (its rows before
	// encoding), which DisassembleAll follows page after page.
	insns func(pos evidence.Position, limit int) ([]Instruction, *evidence.Position, error)
	// symIdx is the symbol index disassemble symbolizes with, which
	// DisassembleAll labels rows from (Instruction.Label).
	symIdx *symIndex
	// symSect is the index of the section disassembled, symSectName its
	// name and symSectAddr its address (a listing's first label when no
	// symbol of the section precedes it).
	symSect     int
	symSectName string
	symSectAddr uint64
	cursor      string
	limit       int
	// limitGiven says the caller set the row limit itself: its page is
	// then bounded by that limit within the hard result limit
	// (tool.HardResultBytes), not by the default result budget.
	limitGiven bool
	// total is the row count of the whole listing when known.
	total *int64
	// scanned is the byte range a scanning listing examined on this page
	// ([from, to) file offsets), set by its row function.
	scanned *Range
	// onFinish runs after the page was read (limitations the scan found).
	onFinish func()
	// preserving marks a re-run for preservation: no analysis is adopted.
	preserving bool
	closers    []func()
}

// Range is a half-open range of file offsets [From, To), decimal strings.
type Range struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// rawKey carries the caller's raw arguments into the typed handler.
type rawKey struct{}

// define declares one bin tool: t with the bin toolset, read-only and
// idempotent annotations, cursor paging when paged, and run as its handler
// inside the skeleton.
func define[A any](e Env, t tool.Tool, paged bool, run func(c *invocation, a A) error) tool.Tool {
	t.Toolset = tool.Bin
	t.Annotations = tool.Annotations{ReadOnly: true, Idempotent: true}
	if paged {
		t.Paging = tool.CursorPaging
	}
	name := t.Name
	t = tool.Define(t, func(ctx context.Context, a A) (*contract.Result, error) {
		raw, _ := ctx.Value(rawKey{}).(json.RawMessage)
		return e.serve(ctx, name, raw, func(c *invocation) error { return run(c, a) })
	})
	typed := t.Handler
	t.Handler = func(ctx context.Context, raw json.RawMessage) (*contract.Result, error) {
		return typed(context.WithValue(ctx, rawKey{}, raw), raw)
	}
	return t
}

// serve runs one call through the skeleton.
func (e Env) serve(ctx context.Context, name string, raw json.RawMessage, run func(c *invocation) error) (_ *contract.Result, err error) {
	c := &invocation{env: e, ctx: ctx, tool: name, raw: raw, res: contract.NewResult(Source, e.now(), nil), limit: DefaultLimit}
	defer c.close()
	defer mappedFault(&err)
	if err := run(c); err != nil {
		var a struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(raw, &a)
		return nil, vanished(err, a.Cursor != "")
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	if !c.preserving && e.Analyses != nil {
		id := e.Analyses.Adopt(name, c.publisher(run))
		c.data.AnalysisID = id
	}
	return c.res, nil
}

// mappedFault, deferred, turns a fault on a mapped page (the file shrank
// while it was read) into INPUT_CHANGED in *err instead of a crash; any
// other panic propagates (the registry logs it).
func mappedFault(err *error) {
	if r := recover(); r != nil {
		if _, ok := r.(interface{ Addr() uintptr }); !ok {
			panic(r)
		}
		*err = contract.Errorf(contract.CodeInputChanged, "the file changed (shrank) while it was read; retry when it is stable")
	}
}

func (c *invocation) close() {
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
}

// keep records f as an input named name (closed when the call ends).
func (c *invocation) keep(name string, f *File) {
	c.files = append(c.files, f)
	c.names = append(c.names, name)
	c.closers = append(c.closers, f.Close)
}

// limitation records a limitation of the result: a warning that makes it
// partial, kept by a preserved record.
func (c *invocation) limitation(msg string) {
	c.limits = append(c.limits, msg)
	c.res.Warn(msg)
}

// page makes the call a paged listing of rows resumed from cursor, at
// most limit rows per page (DefaultLimit when 0).
func (c *invocation) page(cursor string, limit int, rows rowFunc) {
	c.cursor, c.rows = cursor, rows
	if limit > 0 {
		c.limit = limit
	}
}

// encodeRows is the rowFunc of a typed page function.
func encodeRows[T any](page func(pos evidence.Position, limit int) ([]T, *evidence.Position, error)) rowFunc {
	return func(pos evidence.Position, limit int) ([]json.RawMessage, *evidence.Position, error) {
		rows, next, err := page(pos, limit)
		out := make([]json.RawMessage, len(rows))
		for i := range rows {
			out[i], _ = json.Marshal(rows[i])
		}
		return out, next, err
	}
}

// sliceRows pages a listing held whole in memory.
func sliceRows[T any](sel []T) func(pos evidence.Position, limit int) ([]T, *evidence.Position, error) {
	return func(pos evidence.Position, limit int) ([]T, *evidence.Position, error) {
		if pos.Row > int64(len(sel)) {
			return nil, nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor points past the selection; restart without a cursor")
		}
		end := min(int(pos.Row)+limit, len(sel))
		if end < len(sel) {
			return sel[pos.Row:end], &evidence.Position{Row: int64(end)}, nil
		}
		return sel[pos.Row:end], nil, nil
	}
}

// cancelled reports whether err is the call's context ending.
func cancelled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// finish pages the listing and fills the envelope.
func (c *invocation) finish() error {
	if c.rows == nil {
		return contract.Errorf(contract.CodeInternalError, "the tool set no rows")
	}
	p := c.env.pager(c.ctx, c.tool, c.raw, c.files...)
	pos, err := p.resume(c.cursor)
	if err != nil {
		return err
	}
	rows, next, err := c.rows(pos, c.limit)
	stopped := false
	if err != nil {
		if !cancelled(err) || next == nil {
			return contract.AsError(err)
		}
		stopped = true
	}
	clipBudget := tool.RowBudget(c.ctx)
	if c.limitGiven {
		clipBudget = tool.RowBudget(tool.WithResultBudget(c.ctx, tool.HardResultBytes))
	}
	if selfClipped[c.tool] {
		clipBudget = 0
	}
	if keys := clipData(c.data, clipBudget); keys != nil {
		c.res.Warn(clipDataWarning(keys))
	}
	budget := c.rowBudget()
	if !selfClipped[c.tool] {
		clipBudget = budget
	}
	rows, clipped, clipKeys := clipRows(rows, clipBudget)
	if clipped > 0 {
		budget = max(budget-clipReserve, 1)
	}
	n, byBytes := tool.FitRows(rows, c.limit, budget)
	if n < len(rows) {
		// Bytes ended the page: the next position is the one after the
		// n rows kept, which the listing computes deterministically.
		// A cancelled scan re-reads only the n rows it already found,
		// so that re-read runs without the ended context; it then
		// examined up to the next row, not beyond.
		ctx := c.ctx
		if stopped {
			c.ctx = context.WithoutCancel(ctx)
		}
		rows, next, err = c.rows(pos, n)
		c.ctx = ctx
		if err != nil {
			return contract.AsError(err)
		}
		rows, clipped, clipKeys = clipRows(rows, clipBudget)
		if stopped && next != nil && c.scanned != nil {
			var st struct {
				Offset int `json:"offset"`
			}
			if json.Unmarshal(next.State, &st) == nil {
				c.scanned.To = decU(uint64(st.Offset))
			}
		}
	}
	if c.onFinish != nil {
		c.onFinish()
	}
	d := c.data
	if d == nil {
		d = &paged{}
		c.data = d
	}
	if d.Slice == nil {
		d.Slice = c.slices["binary"]
	}
	if d.LeftSlice == nil {
		d.LeftSlice = c.slices["left"]
	}
	if d.RightSlice == nil {
		d.RightSlice = c.slices["right"]
	}
	d.Rows = rows
	if d.Rows == nil {
		d.Rows = []json.RawMessage{}
	}
	d.Page = tool.Page{Offset: pos.Row, Returned: len(rows), Size: c.limit, More: next != nil, Total: c.total}
	if c.scanned != nil {
		d.Coverage.Scanned = c.scanned
	}
	if next != nil {
		tok := p.next(*next)
		d.NextCursor = &tok
		c.res.NextAction = tool.CursorPaging.NextCall(c.tool, c.raw, tok)
	}
	switch {
	case stopped:
		msg := "the call was cancelled: rows cover only the examined range (coverage.scanned); a string beyond it is unknown, not absent; follow next_action to resume"
		c.limits = append(c.limits, msg)
		c.res.Warn(msg)
		d.Coverage.Cancelled = true
	case byBytes:
		// Paging is not missing evidence: the page stays complete.
		c.res.Warnings = append(c.res.Warnings, tool.BudgetWarning)
	case next != nil:
		first := pos.Row + 1
		if len(rows) == 0 {
			first = pos.Row
		}
		c.res.Warnings = append(c.res.Warnings, fmt.Sprintf("page of rows %d-%d; more rows remain: follow next_action (or pass data.next_cursor as cursor)", first, pos.Row+int64(len(rows))))
	}
	if clipped > 0 {
		// The rows hold the clipped strings' first bytes and facts; a
		// preserved record keeps them whole.
		c.res.Warn(clipWarning(clipped, clipKeys))
	}
	c.res.Coverage = d.Coverage
	c.res.Data = d
	return nil
}

// rowBudget is the byte budget of this page's rows: tool.RowBudget, less
// what the rest of this result takes beyond the envelope reserve that
// RowBudget keeps (a large summary, such as inspect_binary's), less the
// next_action and warnings a page may add. It is at least 1.
func (c *invocation) rowBudget() int {
	ctx := c.ctx
	if c.limitGiven {
		ctx = tool.WithResultBudget(ctx, tool.HardResultBytes)
	}
	b := tool.RowBudget(ctx)
	d := paged{}
	if c.data != nil {
		d = *c.data
	}
	d.Rows = []json.RawMessage{}
	res := *c.res
	res.Data = &d
	base, _ := json.Marshal(&res)
	const reserve = 4 << 10 // RowBudget's envelope reserve
	// The rest of the result is delivered twice like the rows (the text
	// copy escaped): its per-copy share is half its delivered size. The
	// next_action repeats the arguments (twice as many bytes in the text
	// copy when escaped), and a page may add the budget warning.
	rest := (tool.DeliveredBytes(base) + 1) / 2
	args := (tool.DeliveredBytes(c.raw) + 1) / 2
	extra := rest + 2*args + 1280 - reserve // 1280: warning, next_action token, the JSON-RPC wrapper
	if extra > 0 {
		b -= extra
	}
	return max(b, 1)
}

// maxPreserveRows is MaxPreserveRows (a variable so tests can lower it).
var maxPreserveRows = MaxPreserveRows

// publisher returns the preservation of this call for preserve_evidence:
// it runs the tool again on the same arguments (without cursor), checks
// the inputs are the files this call read (size, modification time, and
// sha256 where this call computed it; else INPUT_CHANGED), and publishes
// the inputs and every row of the selection (at most MaxPreserveRows). A
// cancelled call preserves the rows it delivered and its examined range,
// not a new scan. The record keeps this call's limitations (warnings),
// coverage and unresolved structures.
func (c *invocation) publisher(run func(c *invocation) error) func(ctx context.Context, st *evidence.Store) (*evidence.Manifest, error) {
	type ident struct {
		size int64
		mod  time.Time
		sum  string
	}
	live := make([]ident, len(c.files))
	for i, f := range c.files {
		live[i] = ident{f.Size, f.ModTime, f.sum}
	}
	var args map[string]any
	_ = json.Unmarshal(c.raw, &args)
	delete(args, "cursor")
	limits := append([]string(nil), c.limits...)
	var coverage any = c.res.Coverage
	var unresolved []Unresolved
	var cancelledRows []json.RawMessage
	var scanned *Range
	if c.data != nil {
		unresolved = c.data.Unresolved
		if c.data.Coverage.Cancelled {
			cancelledRows, _ = c.data.Rows.([]json.RawMessage)
			scanned = c.data.Coverage.Scanned
			if scanned != nil {
				// The record's arguments are the call that redoes
				// exactly the range these rows cover (its replay).
				args["range"] = scanned
			}
		}
	}
	raw, _ := json.Marshal(args)
	env, name := c.env, c.tool
	return func(ctx context.Context, st *evidence.Store) (_ *evidence.Manifest, err error) {
		defer mappedFault(&err)
		rc := &invocation{env: env, ctx: ctx, tool: name, raw: raw, res: contract.NewResult(Source, env.now(), nil), limit: DefaultLimit, preserving: true}
		defer rc.close()
		if err := run(rc); err != nil {
			return nil, err
		}
		if len(rc.files) != len(live) {
			return nil, contract.Errorf(contract.CodeInputChanged, "the inputs changed since the analysis; rerun it")
		}
		for i, f := range rc.files {
			if f.Size != live[i].size || !f.ModTime.Equal(live[i].mod) || (live[i].sum != "" && f.SHA256() != live[i].sum) {
				return nil, contract.Errorf(contract.CodeInputChanged, "the file named by %s changed since the analysis; rerun it", rc.names[i])
			}
		}
		output := map[string]any{}
		complete := len(limits) == 0
		rows := 0
		switch {
		case cancelledRows != nil:
			output["rows"] = cancelledRows
			output["scanned"] = scanned
			rows, complete = len(cancelledRows), false
		default:
			var all []json.RawMessage
			pos := evidence.Position{}
			for {
				// Never ask for more rows than the limit leaves, so the
				// record holds at most maxPreserveRows and says so when
				// more remain.
				r, next, err := rc.rows(pos, min(MaxLimit*10, maxPreserveRows-len(all)))
				if err != nil {
					return nil, contract.AsError(err)
				}
				if len(r) > maxPreserveRows-len(all) {
					r = r[:maxPreserveRows-len(all)]
				}
				all = append(all, r...)
				if next == nil {
					break
				}
				if len(all) >= maxPreserveRows {
					complete = false
					limits = append(limits, fmt.Sprintf("only the first %d rows were preserved (max_preserve_rows); the selection has more", len(all)))
					break
				}
				pos = *next
			}
			if all == nil {
				all = []json.RawMessage{}
			}
			output["rows"] = all
			rows = len(all)
			if rc.data != nil {
				output["data"] = rc.data
			}
		}
		out, _ := json.Marshal(output)
		cov := map[string]any{"complete": complete, "rows": rows, "live": coverage}
		if len(limits) > 0 {
			cov["limitations"] = limits
		}
		if len(unresolved) > 0 {
			cov["unresolved"] = unresolved
		}
		rec := evidence.Record{Toolset: tool.Bin, Operation: name, Arguments: args, Limits: map[string]any{"max_input_bytes": MaxInputBytes, "max_preserve_rows": maxPreserveRows}, Coverage: cov, Status: evidence.StatusComplete, Producers: evidence.ProducerVersions("golang.org/x/arch")}
		if !complete {
			rec.Status = evidence.StatusPartial
		}
		format := rc.format
		if format == "" {
			format = "raw"
		}
		for i, f := range rc.files {
			rec.Artifacts = append(rec.Artifacts, evidence.ArtifactInput{Name: rc.names[i], Role: evidence.RoleAnalysisSource, Format: format, Data: f.bytes(), ExpectedSHA256: f.SHA256()})
		}
		rec.Artifacts = append(rec.Artifacts, evidence.ArtifactInput{Name: "result", Role: evidence.RoleOutput, Format: "json", Data: out})
		return st.Publish(ctx, rec)
	}
}

// Replay is the exact call that replays a preserved bin record on its
// stored artifacts (perf.Replayer, for inspect_evidence's next_action):
// the record's arguments with each input path argument (path, left, right,
// left.path, right.path) replaced by the store path of its artifact.
func Replay(m *evidence.Manifest, artifactPath func(name string) string) *contract.Action {
	args := map[string]any{}
	for k, v := range m.Arguments {
		args[k] = v
	}
	set := func(name string, put func(p string)) bool {
		p := artifactPath(name)
		if p == "" {
			return false
		}
		put(p)
		return true
	}
	ok := true
	switch m.Operation {
	case "compare_binaries":
		ok = set("left", func(p string) { args["left"] = p }) && set("right", func(p string) { args["right"] = p })
	case "compare_http_captures":
		for _, side := range []string{"left", "right"} {
			s, _ := args[side].(map[string]any)
			cp := map[string]any{}
			for k, v := range s {
				cp[k] = v
			}
			ok = ok && set(side, func(p string) { cp["path"] = p })
			args[side] = cp
		}
	case "inspect_http_capture":
		ok = set("capture", func(p string) { args["path"] = p })
	default:
		ok = set("binary", func(p string) { args["path"] = p })
	}
	if !ok {
		return nil
	}
	return &contract.Action{Tool: m.Operation, Arguments: args}
}
