package bin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/inquest-dev/inquest/internal/bin/har"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// MaxGroupEntries bounds the entries listed inline per request group by
// inspect_http_capture; counts and summaries always cover every entry.
const MaxGroupEntries = 100

const captureSideSchema = `{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":` + pathSchema + `,"completeness":{"enum":["complete","partial"],"default":"partial","description":"whether this capture recorded every request of the activity; HAR cannot prove it, so unknown is partial"}}}`

// HTTPTools returns inspect_http_capture and compare_http_captures.
func HTTPTools(env Env) []tool.Tool {
	rw := tool.Annotations{ReadOnly: false, Idempotent: false}
	return []tool.Tool{
		{
			Name: "inspect_http_capture", Toolset: tool.Bin, Title: "Inspect a HAR capture",
			Description: "Summarize the HAR 1.2 capture named by path as repeated-request groups (same method, URL and resource type), each with count, statuses, MIME types, content sizes, timings and per-entry body sha256 when the body was retained. Groups are ordered by URL, paged with cursor.",
			Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":` + pathSchema + `,"limit":` + limitSchema + `,"cursor":` + cursorSchema + `,"preserve":` + preserveSchema + `}}`),
			Annotations: rw,
			Handler:     env.inspectHTTPCapture,
		},
		{
			Name: "compare_http_captures", Toolset: tool.Bin, Title: "Compare two HAR captures",
			Description: "Compare the HAR 1.2 captures left and right (each {path, completeness}) group by group (same method, URL and resource type). A partial side whose response multiset is contained in a complete peer is omissions_can_explain; a retained sample absent from a complete peer group is an independent_difference; both partial and not contained is undetermined; equal needs both complete and every body digest matched. Paged with cursor.",
			Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["left","right"],"properties":{"left":` + captureSideSchema + `,"right":` + captureSideSchema + `,"verdicts":{"type":"array","minItems":1,"maxItems":4,"uniqueItems":true,"items":{"enum":["equal","omissions_can_explain","independent_difference","undetermined"]}},"limit":` + limitSchema + `,"cursor":` + cursorSchema + `,"preserve":` + preserveSchema + `}}`),
			Annotations: rw,
			Handler:     env.compareHTTPCaptures,
		},
	}
}

func readCapture(ctx context.Context, path, fieldName string) (*File, *har.Capture, error) {
	f, err := ReadFile(ctx, path, fieldName, MaxInputBytes)
	if err != nil {
		return nil, nil, err
	}
	c, err := har.Parse(f.Data)
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, contract.AsError(err)
	}
	return f, c, nil
}

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

func (e Env) inspectHTTPCapture(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	a, err := decode[struct {
		Path     string `json:"path"`
		Limit    int    `json:"limit"`
		Cursor   string `json:"cursor"`
		Preserve bool   `json:"preserve"`
	}](args)
	if err != nil {
		return nil, err
	}
	if a.Limit == 0 {
		a.Limit = DefaultLimit
	}
	f, c, err := readCapture(ctx, a.Path, "/path")
	if err != nil {
		return nil, err
	}
	p := e.pager(ctx, "inspect_http_capture", args, f)
	pos, err := p.resume(a.Cursor)
	if err != nil {
		return nil, err
	}
	groups := har.Groups(c)
	res := contract.NewResult(Source, e.now(), nil)
	clipped := 0
	for i := range groups {
		if n := len(groups[i].Entries); n > MaxGroupEntries {
			groups[i].Entries = groups[i].Entries[:MaxGroupEntries]
			clipped++
		}
	}
	page := sliceRows(groups)
	rows, next, err := page(pos, a.Limit)
	if err != nil {
		return nil, err
	}
	id := f.Identity()
	d := &paged{File: &id, Rows: nonNilSlice(rows), Summary: map[string]any{"har_version": c.Version, "creator": c.Creator, "entries": len(c.Entries), "groups": len(groups), "unresolved_entries": len(c.Unresolved)}, Coverage: pageCoverage{Returned: len(rows), Offset: pos.Row}}
	if len(c.Unresolved) > 0 {
		d.Extra = map[string]any{"unresolved_entries": c.Unresolved}
		d.Coverage.Upstream = map[string]string{"entries": FacetPartial}
		res.Warn(fmt.Sprintf("%d entr(ies) could not be decoded; their requests are unknown, not absent", len(c.Unresolved)))
	}
	if clipped > 0 {
		res.Warn(fmt.Sprintf("%d group(s) list only their first %d entries inline; counts, statuses, sizes and timings cover every entry", clipped, MaxGroupEntries))
	}
	if a.Preserve {
		all, n, complete, err := allRows(ctx, page)
		if err != nil {
			return nil, err
		}
		if d.Evidence, err = e.preserve(ctx, "inspect_http_capture", args, []*File{f}, "har", all, n, complete && clipped == 0 && len(c.Unresolved) == 0); err != nil {
			return nil, err
		}
	}
	finishPage(res, p, d, next)
	return res, nil
}

type captureSide struct {
	Path         string `json:"path"`
	Completeness string `json:"completeness"`
}

func (e Env) compareHTTPCaptures(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	a, err := decode[struct {
		Left     captureSide `json:"left"`
		Right    captureSide `json:"right"`
		Verdicts []string    `json:"verdicts"`
		Limit    int         `json:"limit"`
		Cursor   string      `json:"cursor"`
		Preserve bool        `json:"preserve"`
	}](args)
	if err != nil {
		return nil, err
	}
	if a.Limit == 0 {
		a.Limit = DefaultLimit
	}
	for _, s := range []*captureSide{&a.Left, &a.Right} {
		if s.Completeness == "" {
			s.Completeness = har.Partial
		}
	}
	lf, lc, err := readCapture(ctx, a.Left.Path, "/left/path")
	if err != nil {
		return nil, err
	}
	rf, rc, err := readCapture(ctx, a.Right.Path, "/right/path")
	if err != nil {
		return nil, err
	}
	p := e.pager(ctx, "compare_http_captures", args, lf, rf)
	pos, err := p.resume(a.Cursor)
	if err != nil {
		return nil, err
	}
	// An undecodable entry makes its capture partial whatever the caller
	// declared: its request is unknown.
	lcomp, rcomp := a.Left.Completeness, a.Right.Completeness
	res := contract.NewResult(Source, e.now(), nil)
	if len(lc.Unresolved) > 0 && lcomp == har.Complete {
		lcomp = har.Partial
		res.Warn("the left capture has undecodable entries; it is compared as partial")
	}
	if len(rc.Unresolved) > 0 && rcomp == har.Complete {
		rcomp = har.Partial
		res.Warn("the right capture has undecodable entries; it is compared as partial")
	}
	all := har.Compare(lc, rc, lcomp, rcomp)
	counts := map[string]int{}
	var sel []har.GroupDelta
	for _, d := range all {
		counts[d.Verdict]++
		if len(a.Verdicts) == 0 || contains(a.Verdicts, d.Verdict) {
			sel = append(sel, d)
		}
	}
	page := sliceRows(sel)
	rows, next, err := page(pos, a.Limit)
	if err != nil {
		return nil, err
	}
	li, ri := lf.Identity(), rf.Identity()
	d := &paged{Left: &li, Right: &ri, Rows: nonNilSlice(rows), Summary: map[string]any{"by_verdict": counts, "groups": len(all), "selected": len(sel), "left_completeness": lcomp, "right_completeness": rcomp, "left_entries": len(lc.Entries), "right_entries": len(rc.Entries)}, Coverage: pageCoverage{Returned: len(rows), Offset: pos.Row}}
	if a.Preserve {
		allb, n, complete, err := allRows(ctx, page)
		if err != nil {
			return nil, err
		}
		if d.Evidence, err = e.preserve(ctx, "compare_http_captures", args, []*File{lf, rf}, "har", allb, n, complete); err != nil {
			return nil, err
		}
	}
	finishPage(res, p, d, next)
	return res, nil
}
