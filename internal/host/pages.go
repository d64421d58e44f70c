package host

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Page budget constants: rows and bytes of one page.
const (
	// MaxPageRows is the largest page and the default in normal mode.
	MaxPageRows = 5000
	// RawPageRows is the default page in raw mode.
	RawPageRows = 100
	// FrozenLifetime is how long a frozen listing stays readable.
	FrozenLifetime = 5 * time.Minute
	// MaxFrozenLists bounds the frozen listings one session keeps.
	MaxFrozenLists = 16
)

// frozenList is an immutable, already filtered and sorted listing that a
// session pages through (list_processes, raw history). Rows are encoded once.
type frozenList struct {
	id       string
	created  time.Time
	rows     []json.RawMessage
	coverage map[string]any
	meta     map[string]any
}

type frozenKey struct{}

type frozenStore struct {
	mu sync.Mutex
	// sess is the owning session's id; it is part of every listing id so a
	// cursor issued on one connection never resolves on another.
	sess  string
	next  int
	lists map[string]*frozenList
	order []string
}

func frozenOf(s *Session) *frozenStore {
	return s.Value(frozenKey{}, func() any { return &frozenStore{sess: s.ID, lists: map[string]*frozenList{}} }).(*frozenStore)
}

func (fs *frozenStore) put(prefix string, rows []json.RawMessage, coverage, meta map[string]any) *frozenList {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.expire()
	for len(fs.order) >= MaxFrozenLists {
		delete(fs.lists, fs.order[0])
		fs.order = fs.order[1:]
	}
	fs.next++
	l := &frozenList{id: fmt.Sprintf("%s-%s-%d", prefix, fs.sess, fs.next), created: time.Now(), rows: rows, coverage: coverage, meta: meta}
	fs.lists[l.id] = l
	fs.order = append(fs.order, l.id)
	return l
}

func (fs *frozenStore) get(id string) *frozenList {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.expire()
	return fs.lists[id]
}

func (fs *frozenStore) expire() {
	now := time.Now()
	keep := fs.order[:0]
	for _, id := range fs.order {
		if now.Sub(fs.lists[id].created) > FrozenLifetime {
			delete(fs.lists, id)
			continue
		}
		keep = append(keep, id)
	}
	fs.order = keep
}

// cursorExtra is what a list cursor carries besides the offset: the frozen
// listing it pages.
type cursorExtra struct {
	List string `json:"l"`
}

// pageRows is the one paging of the proc toolset: the page of rows
// starting at offset off, at most limit rows whose encoded size fits the
// call's row byte budget (tool.RowBudget(ctx), from the caller's result
// budget). Pages never cut a row and always hold at least one row, so a
// listing advances. It returns the rows (never nil), the page object and
// the next offset (-1 at the end); byBytes reports that the budget, not
// limit, ended the page. An offset past the end is CURSOR_INVALID; one row
// larger than the hard result limit is RESULT_TOO_LARGE.
func pageRows(ctx context.Context, rows []json.RawMessage, off, limit int) (out []json.RawMessage, pg tool.Page, next int, byBytes bool, err error) {
	if off < 0 || off > len(rows) {
		return nil, pg, -1, false, contract.Errorf(contract.CodeCursorInvalid, "the cursor points past the end of the listing")
	}
	n, byBytes := tool.FitRows(rows[off:], limit, tool.RowBudget(ctx))
	if n == 1 && len(rows[off]) > tool.HardResultBytes/2 {
		return nil, pg, -1, false, contract.Errorf(contract.CodeResultTooLarge, "one row is larger than the result limit")
	}
	next = off + n
	if next >= len(rows) {
		next = -1
	}
	total := int64(len(rows))
	pg = tool.Page{Offset: int64(off), Returned: n, Size: limit, More: next >= 0, Total: &total}
	out = rows[off : off+n]
	if out == nil {
		out = []json.RawMessage{}
	}
	return out, pg, next, byBytes && next >= 0, nil
}

// pageEnvelope states a page on its result: data.page and next_cursor are
// set by the caller; a page that bytes ended early carries
// tool.BudgetWarning. Paging is not missing evidence, so the page's status
// is left as the caller set it: complete unless something could not be
// read (then the caller's own warning and coverage say what), with
// page.more and next_action naming the rest.
func pageEnvelope(res *contract.Result, byBytes bool) {
	if byBytes {
		res.Warnings = append(res.Warnings, tool.BudgetWarning)
	}
}

// pagedArgs are the arguments of a listing that takes only paging.
type pagedArgs struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
}

// resumeList finds the frozen listing and offset of a cursor for the query
// args (which must equal the first call's arguments except the cursor).
func (h *Host) resumeList(s *Session, tool string, args json.RawMessage, cursor string) (*frozenList, int, error) {
	l, off, err := h.resumeListAt(s, tool, args, cursor)
	if e, ok := err.(*contract.Error); ok && e.Field == "" {
		e.Field = "/cursor"
	}
	return l, off, err
}

func (h *Host) resumeListAt(s *Session, tool string, args json.RawMessage, cursor string) (*frozenList, int, error) {
	q := contract.HashQuery(args, "cursor")
	cur, err := h.cursors.Decode(cursor)
	if err != nil {
		return nil, 0, err
	}
	var x cursorExtra
	if json.Unmarshal(cur.Extra, &x) != nil || x.List == "" {
		return nil, 0, contract.Errorf(contract.CodeCursorInvalid, "the cursor is not a %s cursor", tool)
	}
	if _, err := h.cursors.Resume(cursor, tool+"/"+x.List, q); err != nil {
		return nil, 0, err
	}
	l := frozenOf(s).get(x.List)
	if l == nil {
		return nil, 0, contract.Errorf(contract.CodeCursorInvalid, "the listing behind this cursor expired or belongs to another connection; restart without a cursor")
	}
	if liveListing(l.id) && !l.created.After(h.liveCursorsBefore()) {
		return nil, 0, liveCursorErr()
	}
	return l, int(cur.Offset), nil
}

// liftCoverage moves data's coverage to the envelope: it removes
// data.coverage and returns it ({} when there is none). A page states its
// coverage once, as the envelope's coverage, beside data.rows, data.page
// and data.next_cursor.
func liftCoverage(data map[string]any) any {
	cov := data["coverage"]
	delete(data, "coverage")
	if cov == nil {
		cov = map[string]any{}
	}
	return cov
}

// listPage builds the paged data object for a frozen listing (rows,
// page, next_cursor, coverage {total, offset, returned}, which the caller
// moves to the envelope with liftCoverage, and the listing's metadata),
// the exact next call (tool.CursorPaging.NextCall with the same
// arguments) and whether bytes ended the page.
func (h *Host) listPage(ctx context.Context, name string, l *frozenList, args json.RawMessage, off, limit int) (map[string]any, *contract.Action, bool, error) {
	rows, pg, next, byBytes, err := pageRows(ctx, l.rows, off, limit)
	if err != nil {
		return nil, nil, false, err
	}
	cov := map[string]any{}
	for k, v := range l.coverage {
		cov[k] = v
	}
	cov["total"] = len(l.rows)
	cov["offset"] = off
	cov["returned"] = len(rows)
	data := map[string]any{"capture_id": l.id, "rows": rows, "page": pg, "next_cursor": nil, "coverage": cov}
	for k, v := range l.meta {
		data[k] = v
	}
	var action *contract.Action
	if next >= 0 {
		x, _ := json.Marshal(cursorExtra{List: l.id})
		tok := h.cursors.Encode(contract.Cursor{Scope: name + "/" + l.id, Query: contract.HashQuery(args, "cursor"), Offset: int64(next), Extra: x})
		data["next_cursor"] = tok
		action = tool.CursorPaging.NextCall(name, args, tok)
	}
	return data, action, byBytes, nil
}
