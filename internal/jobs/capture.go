package jobs

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
)

// Capture is a frozen, retained capture: the collector's rows encoded once,
// its coverage and collection interval. It is never modified after it is
// stored (derived maps aside, guarded by the session lock).
type Capture struct {
	ID   string
	Kind string
	// Parent is the source capture of a derived capture ("" for a source).
	Parent string
	JobID  string
	// Created is the completion time; Expires = Created + CaptureLifetime.
	// Derived captures inherit the source's times.
	Created, Expires time.Time
	Rows             []capture.Row
	// Enc holds each row's JSON; Bytes is the sum of len+1 over Enc, the
	// amount charged to the session budget.
	Enc      []json.RawMessage
	Bytes    int64
	Coverage map[string]any
	Warnings []string
	Partial  bool
	Started  time.Time
	Finished time.Time
	// Query is the selection that produced a derived capture.
	Query Query

	key     string
	derived map[string]*Capture
}

func newCapture(c *capture.Capture) *Capture {
	out := &Capture{Kind: c.Kind, Rows: c.Rows, Coverage: c.Coverage, Warnings: c.Warnings, Partial: c.Partial,
		Started: c.Started, Finished: c.Finished, Enc: make([]json.RawMessage, len(c.Rows))}
	if out.Coverage == nil {
		out.Coverage = map[string]any{}
	}
	var buf []byte
	for i := range c.Rows {
		buf = c.Rows[i].AppendJSON(buf[:0], nil)
		out.Enc[i] = append(json.RawMessage(nil), buf...)
		out.Bytes += int64(len(buf) + 1)
	}
	return out
}

// Query is a read_capture selection (docs/captures.md, "Selectors per kind"). Selectors run
// before projection.
type Query struct {
	// Path: all-term case-insensitive substring match on the row path.
	Path string `json:"path,omitempty"`
	// PathBytes: base64 of a path query that is not valid UTF-8
	// (capture.Filter.PathBytes).
	PathBytes string `json:"path_bytes,omitempty"`
	// OwnerName: exact case-insensitive owner (executable) name; it also
	// matches a row's kernel command name (Row.Comm).
	OwnerName string `json:"owner_name,omitempty"`
	// Extension: file-name extension including the leading dot.
	Extension string `json:"extension,omitempty"`
	// DistinctPaths keeps one row per exact path in first-observed order;
	// it requires Projection == ["path"].
	DistinctPaths bool `json:"distinct_paths,omitempty"`
	// Projection selects row fields in order (nil = all).
	Projection []string `json:"projection,omitempty"`
}

// IsZero reports an unmodified read (no selector, no projection).
func (q Query) IsZero() bool {
	return q.Path == "" && q.PathBytes == "" && q.OwnerName == "" && q.Extension == "" && !q.DistinctPaths && len(q.Projection) == 0
}

// Filter returns the row selectors of q.
func (q Query) Filter() capture.Filter {
	return capture.Filter{Path: q.Path, PathBytes: q.PathBytes, Extension: q.Extension, OwnerName: q.OwnerName}
}

// Validate checks semantic rules for a capture of kind (INVALID_ARGUMENT
// with field): distinct_paths requires projection ["path"]; a path must
// hold a non-space term; path/extension only on kinds with paths and
// owner_name only on kinds with owners (capture.Filter.Validate), so a
// selector that could never match is an error, not a silent empty page.
func (q Query) Validate(kind string) error {
	if q.DistinctPaths && (len(q.Projection) != 1 || q.Projection[0] != "path") {
		e := contract.Errorf(contract.CodeInvalidArgument, "distinct_paths requires projection [\"path\"]")
		e.Field = "/distinct_paths"
		return e
	}
	return q.Filter().Validate(kind, "")
}

func (q Query) key() string {
	b, _ := json.Marshal(q)
	return string(b)
}

func (q Query) match(r *capture.Row) bool { return q.Filter().Match(r) }

// View returns the capture to page for query q on capture id: the capture
// itself for an unmodified query (nothing allocated), otherwise a derived
// capture built once from the frozen rows (no rescan), cached per query,
// charged to the session budget and expiring with its source. Errors:
// REFERENCE_INVALID (unknown/expired id), INVALID_ARGUMENT (q invalid),
// RESULT_TOO_LARGE (derived rows over the remaining budget; existing
// captures are kept). A projected field a row lacks is written as
// capture.Missing (null, or {unavailable: not_requested} for process_info
// fields that were not collected). A view with no rows has an empty,
// non-nil Enc.
func (s *Session) View(id string, q Query) (*Capture, error) {
	src, err := s.Capture(id)
	if err != nil {
		return nil, err
	}
	if err := q.Validate(src.Kind); err != nil {
		return nil, err
	}
	if q.IsZero() {
		return src, nil
	}
	k := q.key()
	s.mu.Lock()
	if d, ok := src.derived[k]; ok {
		s.mu.Unlock()
		return d, nil
	}
	s.mu.Unlock()

	d := &Capture{Kind: src.Kind, Parent: src.ID, JobID: src.JobID, Created: src.Created, Expires: src.Expires,
		Coverage: src.Coverage, Warnings: src.Warnings, Partial: src.Partial, Started: src.Started, Finished: src.Finished, Query: q, key: k,
		Enc: []json.RawMessage{}}
	seen := map[string]bool{}
	var buf []byte
	for i := range src.Rows {
		r := &src.Rows[i]
		if !q.match(r) {
			continue
		}
		if q.DistinctPaths {
			if seen[r.Path] {
				continue
			}
			seen[r.Path] = true
		}
		nr := *r
		enc := src.Enc[i]
		if len(q.Projection) > 0 {
			nr.Fields = make([]capture.Field, 0, len(q.Projection)+1)
			for _, key := range q.Projection {
				v, ok := r.Get(key)
				if !ok {
					v = capture.Missing(src.Kind, key)
				}
				nr.Fields = append(nr.Fields, capture.Field{Key: key, Value: v})
				// a lossy name or path brings its exact bytes along
				if b, ok := r.Get(key + "_bytes"); ok && !slices.Contains(q.Projection, key+"_bytes") {
					nr.Fields = append(nr.Fields, capture.Field{Key: key + "_bytes", Value: b})
				}
			}
			buf = nr.AppendJSON(buf[:0], nil)
			enc = append(json.RawMessage(nil), buf...)
		}
		d.Rows = append(d.Rows, nr)
		d.Enc = append(d.Enc, enc)
		d.Bytes += int64(len(enc) + 1)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	if _, ok := s.caps[src.ID]; !ok {
		return nil, contract.Errorf(contract.CodeReferenceInvalid, "capture_id expired or was released while the query ran")
	}
	if e, ok := src.derived[k]; ok {
		return e, nil
	}
	if s.bytes+d.Bytes > s.m.limits.RetainedBytes {
		return nil, tooLarge(d.Bytes, s.bytes, s.m.limits.RetainedBytes)
	}
	s.next++
	d.ID = fmt.Sprintf("cap-%d-%d", s.id, s.next)
	if src.derived == nil {
		src.derived = map[string]*Capture{}
	}
	src.derived[k] = d
	s.caps[d.ID] = d
	s.bytes += d.Bytes
	return d, nil
}

// Page slices rows [off, off+limit) of c under byteBudget encoded bytes.
// It returns the rows and the next offset (-1 at the end). An offset past
// the end is CURSOR_INVALID; a single row over the budget is
// RESULT_TOO_LARGE (never a truncated row). The returned slice is never
// nil.
func Page(c *Capture, off, limit, byteBudget int) ([]json.RawMessage, int, error) {
	if off < 0 || off > len(c.Enc) {
		return nil, -1, contract.Errorf(contract.CodeCursorInvalid, "the cursor points outside the capture")
	}
	end, size := off, 0
	for end < len(c.Enc) && end-off < limit {
		n := len(c.Enc[end]) + 1
		if size+n > byteBudget {
			if end == off {
				return nil, -1, contract.Errorf(contract.CodeResultTooLarge, "one row is larger than the page budget")
			}
			break
		}
		size += n
		end++
	}
	next := end
	if end >= len(c.Enc) {
		next = -1
	}
	if off == end {
		return []json.RawMessage{}, next, nil // an empty page is [], never null
	}
	return c.Enc[off:end], next, nil
}
