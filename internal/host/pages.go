package host

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Page budget constants (seed 000 section 8).
const (
	// MaxPageRows is the largest page and the default in normal mode.
	MaxPageRows = 5000
	// RawPageRows is the default page in raw mode.
	RawPageRows = 100
	// PageByteBudget keeps one page's encoded rows under the 4 MiB message
	// limit with room for the envelope (structuredContent and text both
	// carry it, so the budget is a bit under half).
	PageByteBudget = 1800 << 10
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

// page slices rows [off, off+limit) under the byte budget. It returns the
// page and the next offset (-1 at the end). A single row larger than the
// budget is RESULT_TOO_LARGE.
func page(rows []json.RawMessage, off, limit int) ([]json.RawMessage, int, error) {
	if off > len(rows) {
		return nil, -1, contract.Errorf(contract.CodeCursorInvalid, "the cursor points past the end of the listing")
	}
	end := off
	size := 0
	for end < len(rows) && end-off < limit {
		n := len(rows[end]) + 1
		if size+n > PageByteBudget {
			if end == off {
				return nil, -1, contract.Errorf(contract.CodeResultTooLarge, "one row is larger than the page budget")
			}
			break
		}
		size += n
		end++
	}
	next := end
	if end >= len(rows) {
		next = -1
	}
	return rows[off:end], next, nil
}

// pagedArgs are the paging arguments every paged proc tool shares.
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
	return l, int(cur.Offset), nil
}

// listPage builds the paged data object for a frozen listing, and the
// next_action that fetches the next page with the same arguments.
func (h *Host) listPage(tool string, l *frozenList, args json.RawMessage, off, limit int) (map[string]any, *contract.Action, error) {
	rows, next, err := page(l.rows, off, limit)
	if err != nil {
		return nil, nil, err
	}
	cov := map[string]any{}
	for k, v := range l.coverage {
		cov[k] = v
	}
	cov["total"] = len(l.rows)
	cov["offset"] = off
	cov["returned"] = len(rows)
	data := map[string]any{"capture_id": l.id, "rows": rows, "next_cursor": nil, "coverage": cov}
	for k, v := range l.meta {
		data[k] = v
	}
	var action *contract.Action
	if next >= 0 {
		x, _ := json.Marshal(cursorExtra{List: l.id})
		tok := h.cursors.Encode(contract.Cursor{Scope: tool + "/" + l.id, Query: contract.HashQuery(args, "cursor"), Offset: int64(next), Extra: x})
		data["next_cursor"] = tok
		var a map[string]any
		_ = json.Unmarshal(args, &a)
		if a == nil {
			a = map[string]any{}
		}
		a["cursor"] = tok
		action = &contract.Action{Tool: tool, Arguments: a}
	}
	return data, action, nil
}
