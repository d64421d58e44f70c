package bin

import (
	"encoding/json"
	"slices"

	"github.com/inquest-dev/inquest/internal/tool"
)

// pagedHead and pagedTail are paged's JSON members before and after rows,
// in paged's order and with its tags (TestPagedHalvesMatchPaged checks
// they stay so).
type pagedHead struct {
	File       *Identity `json:"file,omitempty"`
	Left       *Identity `json:"left,omitempty"`
	Right      *Identity `json:"right,omitempty"`
	Slice      *Slice    `json:"slice,omitempty"`
	LeftSlice  *Slice    `json:"left_slice,omitempty"`
	RightSlice *Slice    `json:"right_slice,omitempty"`
	Inspection any       `json:"inspection,omitempty"`
	Counts     any       `json:"counts,omitempty"`
	Summary    any       `json:"summary,omitempty"`
}

type pagedTail struct {
	Page       tool.Page    `json:"page"`
	NextCursor *string      `json:"next_cursor"`
	Unresolved []Unresolved `json:"unresolved,omitempty"`
	Extra      any          `json:"context,omitempty"`
	AnalysisID string       `json:"analysis_id,omitempty"`
	MappedBy   any          `json:"mapped_by,omitempty"`
}

// AppendJSON appends p as json.Marshal encodes it (contract.DataAppender).
// Rows held as encoded rows are copied as they are: every row function of
// the skeleton encodes its rows as encoding/json does (json.Marshal, or
// Instruction.appendJSON, which writes the same bytes), so they are
// already compact and HTML-safe, and encoding/json's compaction of each
// row would leave it unchanged at the cost of a pass over a page's bytes.
func (p *paged) AppendJSON(b []byte) ([]byte, error) {
	var rows []json.RawMessage
	if p != nil {
		rows, _ = p.Rows.([]json.RawMessage)
	}
	if rows == nil {
		j, err := json.Marshal(p)
		return append(b, j...), err
	}
	head, err := json.Marshal(pagedHead{p.File, p.Left, p.Right, p.Slice, p.LeftSlice, p.RightSlice, p.Inspection, p.Counts, p.Summary})
	if err != nil {
		return b, err
	}
	tail, err := json.Marshal(pagedTail{p.Page, p.NextCursor, p.Unresolved, p.Extra, p.AnalysisID, p.MappedBy})
	if err != nil {
		return b, err
	}
	n := len(head) + len(tail) + len(rows) + 16
	for _, r := range rows {
		n += len(r)
	}
	b = slices.Grow(b, n)
	b = append(b, head[:len(head)-1]...)
	if len(head) > 2 {
		b = append(b, ',')
	}
	b = append(b, `"rows":[`...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		if r == nil {
			r = json.RawMessage("null")
		}
		b = append(b, r...)
	}
	b = append(b, "],"...)
	return append(b, tail[1:]...), nil
}
