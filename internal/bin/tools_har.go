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

// MaxSamplesListed bounds the absent samples listed per side and the
// WebSocket connection deltas listed per group row by
// compare_http_captures; the rows' counts cover them all.
const MaxSamplesListed = 20

// firstDifferent returns at most n of ds, those whose verdict is not
// equal first, each kept in its original order.
func firstDifferent(ds []har.ConnectionDelta, n int) []har.ConnectionDelta {
	if len(ds) <= n {
		return ds
	}
	out := make([]har.ConnectionDelta, 0, n)
	for _, d := range ds {
		if len(out) < n && d.Verdict != har.VerdictEqual {
			out = append(out, d)
		}
	}
	for _, d := range ds {
		if len(out) < n && d.Verdict == har.VerdictEqual {
			out = append(out, d)
		}
	}
	return out
}

// MaxInlineConnections bounds the WebSocket connections listed inline by
// inspect_http_capture (data.context.websocket_connections); frames of any
// connection are paged with websocket_frames.
const MaxInlineConnections = 100

const completenessSchema = `{"enum":["complete","partial"],"default":"partial","description":"whether this capture recorded every request and WebSocket frame of the activity; HAR cannot prove it, so unknown is partial"}`
const captureSideSchema = `{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":` + pathSchema + `,"completeness":` + completenessSchema + `}}`

// HTTPTools returns inspect_http_capture and compare_http_captures.
func HTTPTools(env Env) []tool.Tool {
	rw := tool.Annotations{ReadOnly: false, Idempotent: false}
	verdicts, _ := json.Marshal(har.Verdicts)
	return []tool.Tool{
		{
			Name: "inspect_http_capture", Toolset: tool.Bin, Title: "Inspect a HAR capture",
			Description: "Summarize the HAR 1.2 capture named by path as repeated-request groups (same method, URL and resource type), each with count, statuses, MIME types, content sizes, timings and per-entry body sha256 when the body was retained; unknown values (time -1, status null, absent sizes) are counted, never summed as zero. WebSocket connections (context.websocket_connections) each give their capture-local entry, URL and frame inventory: frames per direction and opcode, payload bytes, first/last time, and complete, partial or unavailable (no frames kept by the producer). With websocket_frames set to a connection's entry index, rows are that connection's frames (direction, position, opcode, time, payload size, payload sha256, bounded text preview). Groups are ordered by URL, paged with cursor.",
			Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":` + pathSchema + `,"completeness":` + completenessSchema + `,"websocket_frames":{"type":"integer","minimum":0,"maximum":999999,"description":"capture-local entry index of a WebSocket connection: page its frames as rows instead of the groups"},"limit":` + limitSchema + `,"cursor":` + cursorSchema + `,"preserve":` + preserveSchema + `}}`),
			Annotations: rw,
			Handler:     env.inspectHTTPCapture,
		},
		{
			Name: "compare_http_captures", Toolset: tool.Bin, Title: "Compare two HAR captures",
			Description: "Compare the HAR 1.2 captures left and right (each {path, completeness}) group by group (same method, URL and resource type). Responses match on status, MIME type, content size and body sha256 where both sides know them. A partial side whose response multiset is contained in a complete peer is omissions_can_explain; a retained sample absent from a complete peer group is an independent_difference; both partial and not contained is undetermined; equal needs both complete and every fact known and matched. WebSocket connections correspond by method, URL and order among same-URL connections (not identity); with both frame inventories complete, frames compare by ordered position within direction and the row's websocket item names the first differing frame (direction, position, both digests, text previews) and any extra frames; a side without recorded frames is unavailable, never equal. Paged with cursor.",
			Input:       json.RawMessage(`{"type":"object","additionalProperties":false,"required":["left","right"],"properties":{"left":` + captureSideSchema + `,"right":` + captureSideSchema + `,"verdicts":{"type":"array","minItems":1,"maxItems":5,"uniqueItems":true,"items":{"enum":` + string(verdicts) + `}},"limit":` + limitSchema + `,"cursor":` + cursorSchema + `,"preserve":` + preserveSchema + `}}`),
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
	c, err := har.ParseContext(ctx, f.Data)
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

// connectionSummary is one WebSocket connection of inspect_http_capture.
type connectionSummary struct {
	Entry     int            `json:"entry"`
	Method    string         `json:"method"`
	URL       string         `json:"url"`
	Status    *int           `json:"status"`
	WebSocket *har.Inventory `json:"websocket"`
}

// unknownWarnings turns a capture's unknown-value counts into warnings.
func unknownWarnings(res *contract.Result, side string, c *har.Capture) {
	u := c.Unknowns
	if len(c.Unresolved) > 0 {
		res.Warn(fmt.Sprintf("%s%d entr(ies) could not be decoded or grouped (see unresolved_entries); their requests are unknown, not absent", side, len(c.Unresolved)))
	}
	if u.Time > 0 {
		res.Warn(fmt.Sprintf("%s%d entr(ies) have an unknown time (-1 or absent); time totals, minima and maxima cover the others", side, u.Time))
	}
	if u.Status > 0 {
		res.Warn(fmt.Sprintf("%s%d entr(ies) have a null or absent response.status; it is counted as unknown, not 0", side, u.Status))
	}
	if u.BodiesUndecodable > 0 {
		res.Warn(fmt.Sprintf("%s%d response bod(ies) are not valid base64 although content.encoding is base64; those entries are listed with body undecodable and no digest", side, u.BodiesUndecodable))
	}
}

// frameWarnings warns once per WebSocket connection entry of a capture
// whose _webSocketMessages holds records that could not be decoded as
// frames (Inventory.UndecodableRecords), naming the entry index, its URL
// and the count, and reports whether it warned. Such
// frames are unknown, not absent, so the result is partial.
func frameWarnings(res *contract.Result, side string, entry int, url string, inv *har.Inventory) bool {
	if inv == nil || inv.UndecodableRecords == 0 {
		return false
	}
	total := inv.UndecodableRecords + inv.ErrorRecords
	if inv.FrameCount != nil {
		total += *inv.FrameCount
	}
	res.Warn(fmt.Sprintf("%sentry %d (%s): %d of %d _webSocketMessages record(s) could not be decoded as frames; that connection's frame inventory is partial and its undecoded frames are unknown, not absent", side, entry, url, inv.UndecodableRecords, total))
	return true
}

func (e Env) inspectHTTPCapture(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	a, err := decode[struct {
		Path         string `json:"path"`
		Completeness string `json:"completeness"`
		Frames       *int   `json:"websocket_frames"`
		Limit        int    `json:"limit"`
		Cursor       string `json:"cursor"`
		Preserve     bool   `json:"preserve"`
	}](args)
	if err != nil {
		return nil, err
	}
	if a.Limit == 0 {
		a.Limit = DefaultLimit
	}
	if a.Completeness == "" {
		a.Completeness = har.Partial
	}
	f, err := ReadFile(ctx, a.Path, "/path", MaxInputBytes)
	if err != nil {
		return nil, err
	}
	// Stream the entries into group summaries: memory is bounded by the
	// groups (and the listed entries), not by the entries.
	var grouper *har.Grouper
	if a.Frames == nil {
		grouper = har.NewGrouper(MaxGroupEntries)
	}
	var conns []connectionSummary
	c, err := har.Stream(ctx, f.Data, func(en *har.Entry) error {
		if grouper != nil {
			grouper.Add(en)
		}
		if en.WebSocket != nil {
			conns = append(conns, connectionSummary{Entry: en.Index, Method: en.Method, URL: en.URL, Status: en.Status, WebSocket: en.WebSocket})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p := e.pager(ctx, "inspect_http_capture", args, f)
	pos, err := p.resume(a.Cursor)
	if err != nil {
		return nil, err
	}
	// An undecodable entry makes the capture partial whatever the caller
	// declared: its request is unknown.
	comp := a.Completeness
	res := contract.NewResult(Source, e.now(), nil)
	if len(c.Unresolved) > 0 && comp == har.Complete {
		comp = har.Partial
		res.Warn("the capture has undecodable entries; its WebSocket inventories are treated as partial")
	}
	for i := range conns {
		conns[i].WebSocket.SetCompleteness(comp)
	}
	id := f.Identity()
	summary := map[string]any{"har_version": c.Version, "creator": c.Creator, "entries": c.Count - len(c.Unresolved), "unresolved_entries": len(c.Unresolved), "unknowns": c.Unknowns, "websocket_connections": len(conns), "completeness": comp}
	extra := map[string]any{}
	if len(c.Unresolved) > 0 {
		extra["unresolved_entries"] = c.Unresolved
	}
	unknownWarnings(res, "", c)
	framesUndecodable := 0
	for i := range conns {
		if frameWarnings(res, "", conns[i].Entry, conns[i].URL, conns[i].WebSocket) {
			framesUndecodable++
		}
	}
	if a.Frames != nil {
		var conn *connectionSummary
		for i := range conns {
			if conns[i].Entry == *a.Frames {
				conn = &conns[i]
			}
		}
		if conn == nil {
			e := contract.Errorf(contract.CodeInvalidArgument, "entry %d is not a WebSocket connection of this capture (%d connection(s); data.context.websocket_connections of a call without websocket_frames lists them)", *a.Frames, len(conns))
			e.Field = "/websocket_frames"
			return nil, e
		}
		summary["connection"] = conn
		frames := conn.WebSocket.List()
		if conn.WebSocket.Frames != "recorded" {
			res.Warn("frames: unavailable: the producer kept no frames for this connection; the frame count is unknown, not zero")
		}
		page := sliceRows(frames)
		rows, next, err := page(pos, a.Limit)
		if err != nil {
			return nil, err
		}
		d := &paged{File: &id, Rows: nonNilSlice(rows), Summary: summary, Coverage: pageCoverage{Returned: len(rows), Offset: pos.Row}}
		if conn.WebSocket.Inventory != har.InventoryComplete {
			d.Coverage.Upstream = map[string]string{"frames": conn.WebSocket.Inventory}
		}
		if len(extra) > 0 {
			d.Extra = extra
		}
		if a.Preserve {
			all, n, complete, err := allRows(ctx, page)
			if err != nil {
				return nil, err
			}
			if d.Evidence, err = e.preserve(ctx, "inspect_http_capture", args, []*File{f}, "har", all, n, complete && conn.WebSocket.Inventory == har.InventoryComplete); err != nil {
				return nil, err
			}
		}
		finishPage(res, p, d, next)
		return res, nil
	}
	groups := grouper.Groups()
	summary["groups"] = len(groups)
	clipped := 0
	for i := range groups {
		if groups[i].Count > groups[i].EntriesListed {
			clipped++
		}
	}
	if len(conns) > 0 {
		listed := conns
		if len(listed) > MaxInlineConnections {
			listed = listed[:MaxInlineConnections]
			res.Warn(fmt.Sprintf("websocket_connections: the first %d of %d connections are listed inline", MaxInlineConnections, len(conns)))
		}
		extra["websocket_connections"] = listed
		if res.NextAction == nil {
			res.NextAction = &contract.Action{Tool: "inspect_http_capture", Arguments: map[string]any{"path": a.Path, "completeness": a.Completeness, "websocket_frames": conns[0].Entry}}
		}
	}
	page := sliceRows(groups)
	rows, next, err := page(pos, a.Limit)
	if err != nil {
		return nil, err
	}
	d := &paged{File: &id, Rows: nonNilSlice(rows), Summary: summary, Coverage: pageCoverage{Returned: len(rows), Offset: pos.Row}}
	if len(extra) > 0 {
		d.Extra = extra
	}
	if len(c.Unresolved) > 0 {
		d.Coverage.Upstream = map[string]string{"entries": FacetPartial}
	}
	if framesUndecodable > 0 {
		if d.Coverage.Upstream == nil {
			d.Coverage.Upstream = map[string]string{}
		}
		d.Coverage.Upstream["websocket_frames"] = FacetPartial
	}
	if clipped > 0 {
		res.Warn(fmt.Sprintf("%d group(s) list only their first %d entries inline; counts, statuses, sizes and timings cover every entry", clipped, MaxGroupEntries))
	}
	if a.Preserve {
		all, n, complete, err := allRows(ctx, page)
		if err != nil {
			return nil, err
		}
		if d.Evidence, err = e.preserve(ctx, "inspect_http_capture", args, []*File{f}, "har", all, n, complete && clipped == 0 && len(c.Unresolved) == 0 && framesUndecodable == 0); err != nil {
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
	unknownWarnings(res, "left: ", lc)
	unknownWarnings(res, "right: ", rc)
	for i := range lc.Entries {
		frameWarnings(res, "left: ", lc.Entries[i].Index, lc.Entries[i].URL, lc.Entries[i].WebSocket)
	}
	for i := range rc.Entries {
		frameWarnings(res, "right: ", rc.Entries[i].Index, rc.Entries[i].URL, rc.Entries[i].WebSocket)
	}
	all, err := har.Compare(ctx, lc, rc, lcomp, rcomp)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	wsCounts := map[string]int{}
	cut := 0
	for i := range all {
		d := &all[i]
		for _, w := range d.WebSocket {
			wsCounts[w.Verdict]++
		}
		if len(d.LeftAbsent) > MaxSamplesListed || len(d.RightAbsent) > MaxSamplesListed || len(d.WebSocket) > MaxSamplesListed {
			cut++
			d.LeftAbsent = d.LeftAbsent[:min(len(d.LeftAbsent), MaxSamplesListed)]
			d.RightAbsent = d.RightAbsent[:min(len(d.RightAbsent), MaxSamplesListed)]
			d.WebSocket = firstDifferent(d.WebSocket, MaxSamplesListed)
		}
	}
	if cut > 0 {
		res.Warn(fmt.Sprintf("%d group(s) list only %d absent samples per side and %d WebSocket connections (differing ones first); left_absent_count, right_absent_count and websocket_connections count them all", cut, MaxSamplesListed, MaxSamplesListed))
	}
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
	d := &paged{Left: &li, Right: &ri, Rows: nonNilSlice(rows), Summary: map[string]any{"by_verdict": counts, "groups": len(all), "selected": len(sel), "left_completeness": lcomp, "right_completeness": rcomp, "left_entries": len(lc.Entries), "right_entries": len(rc.Entries), "websocket_by_verdict": wsCounts, "left_unresolved_entries": len(lc.Unresolved), "right_unresolved_entries": len(rc.Unresolved)}, Coverage: pageCoverage{Returned: len(rows), Offset: pos.Row}}
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
