package perf

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// The pager: one page of logical rows bounded by page_size and the
// call's row byte budget, shared by every operation.

// pager counts logical rows: rows before start are skipped, max are kept,
// and the page also stops before its rows' encoded bytes pass budget
// (tool.RowBudget of the call, lowered by limits.max_memory_bytes), the
// rule tool.FitRows applies to materialized rows: the first row of a page
// is always kept, so a listing always advances, unless it alone passes
// hardPageBytes (RESULT_TOO_LARGE).
type pager struct {
	max   int
	start int64
	seen  int64 // logical rows visited so far (absolute index of the next)
	rows  []any

	budget  int64
	bytes   int64
	stopped bool  // the byte budget ended the page before max rows
	err     error // RESULT_TOO_LARGE: one row alone passes hardPageBytes

	// clipped counts the rows of the page whose long strings were clipped
	// (clipRow) and clippedKeys names their keys; notes are the
	// warnings of records delivered as fragments (offerRecord).
	clipped     int
	clippedKeys map[string]bool
	notes       []string
}

func (p *pager) full() bool { return p.stopped || p.err != nil || len(p.rows) >= p.max }

// offer visits row index p.seen; it keeps it when in the page. It returns
// false when the row was not consumed because the page's byte budget
// ended the page before it: the caller must not advance past it (p.seen
// is not advanced), so next_page starts at that row.
func (p *pager) offer(row func() any) bool {
	if p.seen >= p.start && !p.full() {
		r := row()
		n, err := rowCost(r) // as tool.FitRows counts
		if err == nil && len(p.rows) == 0 && n > p.rowBudget() {
			// A row that alone passes the budget states its long
			// strings clipped (a record of preview_artifact was split
			// into fragments before it came here).
			if c, keys := clipRow(r, p.rowBudget()); keys != nil {
				r = c
				n, err = rowCost(r)
				p.clipped++
				if p.clippedKeys == nil {
					p.clippedKeys = map[string]bool{}
				}
				for _, k := range keys {
					p.clippedKeys[k] = true
				}
			}
		}
		if err == nil && len(p.rows) == 0 && n > hardPageBytes {
			err = contract.Errorf(contract.CodeResultTooLarge, "row %d alone encodes to %d bytes, more than the %d-byte result limit; narrow it (text_fragment_chars for long text lines)", p.seen, n, hardPageBytes).WithDetail("row", p.seen).WithDetail("row_bytes", n).WithDetail("budget_bytes", hardPageBytes)
		}
		budget := p.budget
		if budget <= 0 {
			budget = hardPageBytes
		}
		if err == nil && len(p.rows) > 0 && p.bytes+n > budget {
			p.stopped = true
			return false
		}
		if err != nil {
			p.err = err
			return false
		}
		p.bytes += n
		p.rows = append(p.rows, r)
	}
	p.seen++
	return true
}

// noteBudget records in out's coverage and warnings that the byte budget,
// not page_size, ended the page (tool.BudgetWarning).
func (p *pager) noteBudget(out *Output) {
	out.Notes = append(out.Notes, p.notes...)
	if p.clipped > 0 {
		keys := make([]string, 0, len(p.clippedKeys))
		for k := range p.clippedKeys {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d row(s) alone pass the page's byte budget: their long strings (%s) hold only their first bytes, with <field>_truncated true and <field>_bytes and <field>_sha256 identifying the whole string; a server started with a larger --max-result-bytes (inquest mcp) states more of them", p.clipped, strings.Join(keys, ", ")))
	}
	if !p.stopped {
		return
	}
	if out.Coverage == nil {
		out.Coverage = map[string]any{}
	}
	out.Coverage["page_ended_by"] = "byte_budget"
	out.ByBytes = true
}

// newPager returns the pager of one call: req.RowBudget bytes of rows
// (tool.RowBudget of the call), lowered by limits.max_memory_bytes.
func newPager(req *Request, start int64) *pager {
	b := int64(req.RowBudget)
	if b <= 0 {
		b = int64(tool.RowBudget(context.Background()))
	}
	if b > hardPageBytes {
		b = hardPageBytes
	}
	if req.Limits.MaxMemoryBytes > 0 && req.Limits.MaxMemoryBytes < b {
		b = req.Limits.MaxMemoryBytes
	}
	return &pager{max: req.Limits.MaxRows, start: start, budget: b}
}
