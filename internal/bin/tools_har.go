package bin

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/inquest-dev/inquest/internal/bin/har"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// GroupEntriesShare is the share of a page's row byte budget
// (tool.RowBudget) that a URL (MaxURLShares of them), the inline WebSocket
// connections and the unresolved entries of inspect_http_capture may each
// take, so a page always holds its rows.
const GroupEntriesShare = 4

// groupEntry is one entry of a group_entries page: the entry without the
// group's method and URL, which every entry of the group shares
// (summary.group states them once). The two empty fields hide
// har.Entry's (encoding/json: the shallower field wins; omitempty leaves
// them out).
type groupEntry struct {
	har.Entry
	Method string `json:"method,omitempty"`
	URL    string `json:"url,omitempty"`
}

// groupRow is one row of inspect_http_capture: a group's counts and
// summaries, without its entries, and Position, its 0-based place among
// the groups (ordered by URL), which group_entries takes to page the
// group's entries. The nil fields hide har.Group's entry listing.
type groupRow struct {
	har.Group
	longURL
	Position      int          `json:"group"`
	Entries       []groupEntry `json:"entries,omitempty"`
	EntriesListed *int         `json:"entries_listed,omitempty"`
}

// longURL identifies a URL too long to state whole in a row (see clipURL):
// URLBytes is its length in bytes, URLSHA256 the SHA-256 of those bytes,
// and the row's url holds its first bytes. All are absent when the url is
// whole.
type longURL struct {
	URLTruncated bool   `json:"url_truncated,omitempty"`
	URLBytes     int    `json:"url_bytes,omitempty"`
	URLSHA256    string `json:"url_sha256,omitempty"`
}

// clipURL returns u whole when its JSON string costs at most share bytes
// (tool.RowCost); otherwise its longest prefix (cut at a UTF-8 boundary)
// that does, with the longURL facts of the whole URL (tool.ClipString).
func clipURL(u string, share int) (string, longURL) {
	s, c := tool.ClipString(u, share)
	return s, longURL{URLTruncated: c.Truncated, URLBytes: c.Bytes, URLSHA256: c.SHA256}
}

// MaxURLShares is how many 1/GroupEntriesShare shares of the page's row
// byte budget a row's URL may take (clipURL) in inspect_http_capture and
// compare_http_captures, so a row with its entries always fits a page.
const MaxURLShares = 2

// groupRows returns gs as rows whose URL is clipped to MaxURLShares*share
// bytes (clipURL), and how many URLs are clipped.
func groupRows(gs []har.Group, share int) ([]groupRow, int) {
	rows := make([]groupRow, len(gs))
	long := 0
	for i := range gs {
		g := gs[i]
		var lu longURL
		if g.URL, lu = clipURL(g.URL, MaxURLShares*share); lu.URLTruncated {
			long++
		}
		g.Entries = nil
		rows[i] = groupRow{Group: g, longURL: lu, Position: i}
	}
	return rows, long
}

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

// MaxUnresolvedListed bounds the unresolved entries inspect_http_capture
// lists in data.context.unresolved_entries, as does a 1/GroupEntriesShare
// share of the page's row byte budget; summary.unresolved_entries and
// summary.unresolved_by_reason count them all.
const MaxUnresolvedListed = 100

// fitShare returns the first items of xs, at most max, whose encoded
// sizes (tool.RowCost) sum to at most share bytes; an item that alone
// passes share ends the list there.
func fitShare[T any](xs []T, max, share int) []T {
	used := 0
	for i := range xs {
		if i == max {
			return xs[:i]
		}
		b, _ := json.Marshal(xs[i])
		if used += tool.RowCost(b); used > share {
			return xs[:i]
		}
	}
	return xs
}

// MaxInlineConnections bounds the WebSocket connections listed inline by
// inspect_http_capture (data.context.websocket_connections), as does a
// 1/GroupEntriesShare share of the page's row byte budget (the first is
// always listed); frames of any connection are paged with websocket_frames.
const MaxInlineConnections = 100

func inspectHTTPCaptureTool(env Env) tool.Tool {
	return define(env, tool.Tool{
		Name: "inspect_http_capture", Title: "Inspect a HAR capture",
		Description: "Summarize the HAR 1.2 capture at path as request groups (method, URL): counts, statuses, types, sizes, timings, body sha256; and its WebSocket connections. Paged with cursor; group_entries pages a group's entries, websocket_frames a connection's frames. Required: path.",
		Details:     "Unknown values (time -1, status null or -1) are counted, never summed as zero. A group row sums all its entries; group_entries set to its group position pages them. A URL longer than half the page byte budget is clipped (url_truncated, url_bytes, url_sha256). WebSocket connections (context.websocket_connections, within a quarter of the page byte budget) give their entry, group (row position; the group states method and URL) and frame inventory (complete, partial or unavailable). Unresolved entries (context.unresolved_entries) list index and reason within a quarter of the budget; summary.unresolved_by_reason counts them all. With websocket_frames set to a connection's entry index, rows are its frames instead of groups. Groups are ordered by URL.",
		Input: json.RawMessage(`{
			"type": "object",
			"additionalProperties": false,
			"required": ["path"],
			"properties": {
				"path": {"type": "string", "minLength": 1, "maxLength": 4096},
				"completeness": {"enum": ["complete", "partial"], "default": "partial", "description": "whether the capture recorded every request and frame; HAR cannot prove it"},
				"websocket_frames": {"type": "integer", "minimum": 0, "maximum": 999999, "description": "entry index of a WebSocket connection: page its frames"},
				"group_entries": {"type": "integer", "minimum": 0, "maximum": 9999999, "description": "a group row's group: page its entries"},
				"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 200},
				"cursor": {"type": "string", "minLength": 1, "maxLength": 4096}
			}
		}`),
	}, true, env.inspectHTTPCapture)
}

func compareHTTPCapturesTool(env Env) tool.Tool {
	return define(env, tool.Tool{
		Name: "compare_http_captures", Title: "Compare two HAR captures",
		Description: "Compare the HAR 1.2 captures left and right ({path, completeness}) group by group and WebSocket connection by connection, with a verdict each: equal, omissions_can_explain, independent_difference or undetermined. Paged with cursor. Required: left, right.",
		Details:     "Groups are the same method and URL (optional producer fields such as _resourceType never group); responses match on status, MIME type, size and body sha256 where both sides know them (a body shorter or longer than content.size is unknown). Verdicts: equal (both complete, every fact known and matched), omissions_can_explain (a partial side contained in a complete peer), independent_difference, undetermined.\n\nWebSocket connections correspond by method, URL and order; with both frame inventories complete, frames compare by position within direction and the first differing frame is named; a side without frames is unavailable, never equal.",
		Input: json.RawMessage(`{
			"type": "object",
			"additionalProperties": false,
			"required": ["left", "right"],
			"properties": {
				"left": {"type": "object", "additionalProperties": false, "required": ["path"], "properties": {
					"path": {"type": "string", "minLength": 1, "maxLength": 4096},
					"completeness": {"enum": ["complete", "partial"], "default": "partial"}}},
				"right": {"type": "object", "additionalProperties": false, "required": ["path"], "properties": {
					"path": {"type": "string", "minLength": 1, "maxLength": 4096},
					"completeness": {"enum": ["complete", "partial"], "default": "partial"}}},
				"verdicts": {"type": "array", "minItems": 1, "maxItems": 5, "uniqueItems": true, "items": {"enum": ["equal", "omissions_can_explain", "independent_difference", "undetermined", "unavailable"]}},
				"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 200},
				"cursor": {"type": "string", "minLength": 1, "maxLength": 4096}
			}
		}`),
	}, true, env.compareHTTPCaptures)
}

// capture reads and parses one HAR input of the call, named name in a
// preserved record.
func (c *invocation) capture(name, path, fieldName string) (*File, *har.Capture, error) {
	f, err := ReadFile(c.ctx, path, fieldName, MaxInputBytes)
	if err != nil {
		return nil, nil, err
	}
	c.keep(name, f)
	c.format = "har"
	hc, err := har.ParseContext(c.ctx, f.Data)
	if err != nil {
		return nil, nil, withInputIdentity(err, f, fieldName)
	}
	if err := c.ctx.Err(); err != nil {
		return nil, nil, contract.AsError(err)
	}
	return f, hc, nil
}

// connectionSummary is one WebSocket connection of inspect_http_capture
// (summary.connection of a websocket_frames call, its URL clipped as a
// group row's is).
type connectionSummary struct {
	Entry  int    `json:"entry"`
	Method string `json:"method"`
	URL    string `json:"url"`
	longURL
	Status    *int           `json:"status"`
	WebSocket *har.Inventory `json:"websocket"`
	key       har.GroupKey
}

// connectionRef is one WebSocket connection listed in
// data.context.websocket_connections: its group is the 0-based position of
// its repeated-request group among the rows (ordered by URL), which states
// the method and URL once.
type connectionRef struct {
	Entry     int            `json:"entry"`
	Group     int            `json:"group"`
	Status    *int           `json:"status"`
	WebSocket *har.Inventory `json:"websocket"`
}

// warnURLBytes bounds the URL quoted in a warning.
const warnURLBytes = 200

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
		res.Warn(fmt.Sprintf("%s%d entr(ies) have a null, absent or negative (-1) response.status; it is counted as unknown, not as a status", side, u.Status))
	}
	if u.BodiesUndecodable > 0 {
		res.Warn(fmt.Sprintf("%s%d response bod(ies) are not valid base64 although content.encoding is base64; their bodies are unknown (grouped entries are listed with body undecodable and no digest)", side, u.BodiesUndecodable))
	}
	if u.BodiesTruncated > 0 {
		res.Warn(fmt.Sprintf("%s%d response bod(ies) are shorter than their content.size (cut by the producer): body truncated, the digest is of the partial text only, and comparisons treat the body as unknown", side, u.BodiesTruncated))
	}
	if u.BodiesSizeMismatch > 0 {
		res.Warn(fmt.Sprintf("%s%d response bod(ies) are longer than their content.size: body size_mismatch, and comparisons treat body and size as unknown", side, u.BodiesSizeMismatch))
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
	url, _ = clipURL(url, warnURLBytes)
	res.Warn(fmt.Sprintf("%sentry %d (%s): %d of %d _webSocketMessages record(s) could not be decoded as frames; that connection's frame inventory is partial and its undecoded frames are unknown, not absent", side, entry, url, inv.UndecodableRecords, total))
	return true
}

// captureArgs are inspect_http_capture's arguments.
type captureArgs struct {
	Path            string `json:"path"`
	Completeness    string `json:"completeness,omitempty"`
	WebSocketFrames *int   `json:"websocket_frames,omitempty"`
	GroupEntries    *int   `json:"group_entries,omitempty"`
	Limit           int    `json:"limit,omitempty"`
	Cursor          string `json:"cursor,omitempty"`
}

func (e Env) inspectHTTPCapture(c *invocation, a captureArgs) error {
	if a.Completeness == "" {
		a.Completeness = har.Partial
	}
	f, err := ReadFile(c.ctx, a.Path, "/path", MaxInputBytes)
	if err != nil {
		return err
	}
	c.keep("capture", f)
	c.format = "har"
	// Stream the entries into group summaries: memory is bounded by the
	// groups (and the listed entries), not by the entries.
	if a.WebSocketFrames != nil && a.GroupEntries != nil {
		e := contract.Errorf(contract.CodeInvalidArgument, "give websocket_frames or group_entries, not both")
		e.Field = "/group_entries"
		return e
	}
	// Group rows carry counts, not entries: a page holds hundreds of
	// groups whatever their size, and group_entries pages the entries.
	var grouper *har.Grouper
	if a.WebSocketFrames == nil {
		grouper = har.NewGrouper(0)
	}
	var conns []connectionSummary
	hc, err := har.Stream(c.ctx, f.Data, func(en *har.Entry) error {
		if grouper != nil {
			grouper.Add(en)
		}
		if en.WebSocket != nil {
			conns = append(conns, connectionSummary{Entry: en.Index, Method: en.Method, URL: en.URL, Status: en.Status, WebSocket: en.WebSocket, key: har.GroupKey{Method: en.Method, URL: en.URL}})
		}
		return nil
	})
	if err != nil {
		return withInputIdentity(err, f, "/path")
	}
	// An undecodable entry makes the capture partial whatever the caller
	// declared: its request is unknown.
	comp := a.Completeness
	res := c.res
	if len(hc.Unresolved) > 0 && comp == har.Complete {
		comp = har.Partial
		c.limitation("the capture has undecodable entries; its WebSocket inventories are treated as partial")
	}
	for i := range conns {
		conns[i].WebSocket.SetCompleteness(comp)
	}
	id := f.Identity()
	summary := map[string]any{"har_version": hc.Version, "creator": hc.Creator, "entries": hc.Count - len(hc.Unresolved), "unresolved_entries": len(hc.Unresolved), "unknowns": hc.Unknowns, "websocket_connections": len(conns), "completeness": comp}
	extra := map[string]any{}
	if len(hc.Unresolved) > 0 {
		byReason := map[string]int{}
		for _, u := range hc.Unresolved {
			byReason[u.Reason]++
		}
		summary["unresolved_by_reason"] = byReason
		listed := fitShare(hc.Unresolved, MaxUnresolvedListed, tool.RowBudget(c.ctx)/GroupEntriesShare)
		extra["unresolved_entries"] = listed
		if len(listed) < len(hc.Unresolved) {
			c.limitation(fmt.Sprintf("unresolved_entries: the first %d of %d unresolved entries are listed (at most %d, within a 1/%d share of the page's byte budget); summary.unresolved_by_reason counts every one by reason", len(listed), len(hc.Unresolved), MaxUnresolvedListed, GroupEntriesShare))
		}
	}
	n := len(res.Warnings)
	unknownWarnings(res, "", hc)
	framesUndecodable := 0
	for i := range conns {
		if frameWarnings(res, "", conns[i].Entry, conns[i].URL, conns[i].WebSocket) {
			framesUndecodable++
		}
	}
	c.limits = append(c.limits, res.Warnings[n:]...)
	c.data = &paged{File: &id, Summary: summary}
	if a.WebSocketFrames != nil {
		var conn *connectionSummary
		for i := range conns {
			if conns[i].Entry == *a.WebSocketFrames {
				conn = &conns[i]
			}
		}
		if conn == nil {
			e := contract.Errorf(contract.CodeInvalidArgument, "entry %d is not a WebSocket connection of this capture (%d connection(s); data.context.websocket_connections of a call without websocket_frames lists them)", *a.WebSocketFrames, len(conns))
			e.Field = "/websocket_frames"
			return e
		}
		conn.URL, conn.longURL = clipURL(conn.URL, MaxURLShares*tool.RowBudget(c.ctx)/GroupEntriesShare)
		if conn.URLTruncated {
			c.limitation(fmt.Sprintf("summary.connection.url: the URL is %d bytes; its first %d are given (url_sha256 identifies it whole; it is request.url of entry %d of the file)", conn.URLBytes, len(conn.URL), conn.Entry))
		}
		summary["connection"] = conn
		frames := conn.WebSocket.List()
		if conn.WebSocket.Frames != "recorded" {
			c.limitation("frames: unavailable: the producer kept no frames for this connection; the frame count is unknown, not zero")
		}
		if conn.WebSocket.Inventory != har.InventoryComplete {
			c.data.Coverage.Upstream = map[string]string{"frames": conn.WebSocket.Inventory}
		}
		if len(extra) > 0 {
			c.data.Extra = extra
		}
		c.total = ptr(int64(len(frames)))
		c.page(a.Cursor, a.Limit, encodeRows(sliceRows(frames)))
		return nil
	}
	share := tool.RowBudget(c.ctx) / GroupEntriesShare
	hgs := grouper.Groups()
	groups, long := groupRows(hgs, share)
	summary["groups"] = len(groups)
	if a.GroupEntries != nil {
		return e.pageGroupEntries(c, a, f, hgs, groups)
	}
	if long > 0 {
		c.limitation(fmt.Sprintf("%d group(s) have a URL longer than %d/%d of the page's byte budget: url holds its first bytes, url_truncated is true, url_bytes and url_sha256 identify it whole (request.url of the group's entries in the file)", long, MaxURLShares, GroupEntriesShare))
	}
	if len(conns) > 0 {
		pos := make(map[har.GroupKey]int, len(hgs))
		for i := range hgs {
			pos[hgs[i].GroupKey] = i
		}
		// At most MaxInlineConnections, within the same byte share of the
		// page budget as a group's entries; the method and URL are their
		// group row's.
		refs := make([]connectionRef, len(conns))
		for i, cs := range conns {
			refs[i] = connectionRef{Entry: cs.Entry, Group: pos[cs.key], Status: cs.Status, WebSocket: cs.WebSocket}
		}
		listed := fitShare(refs, MaxInlineConnections, share)
		if len(listed) < len(conns) {
			c.limitation(fmt.Sprintf("websocket_connections: the first %d of %d connections are listed inline (at most %d, within a 1/%d share of the page's byte budget); the rest are in their group rows' entries (entry index and frame inventory), and websocket_frames pages any connection's frames by its entry index", len(listed), len(conns), MaxInlineConnections, GroupEntriesShare))
		}
		extra["websocket_connections"] = listed
		if res.NextAction == nil {
			res.NextAction = &contract.Action{Tool: "inspect_http_capture", Arguments: map[string]any{"path": a.Path, "completeness": a.Completeness, "websocket_frames": conns[0].Entry}}
		}
	}
	if len(extra) > 0 {
		c.data.Extra = extra
	}
	if len(hc.Unresolved) > 0 {
		c.data.Coverage.Upstream = map[string]string{"entries": FacetPartial}
	}
	if framesUndecodable > 0 {
		if c.data.Coverage.Upstream == nil {
			c.data.Coverage.Upstream = map[string]string{}
		}
		c.data.Coverage.Upstream["websocket_frames"] = FacetPartial
	}
	c.total = ptr(int64(len(groups)))
	c.page(a.Cursor, a.Limit, encodeRows(sliceRows(groups)))
	return nil
}

// pageGroupEntries pages the entries of the group at position
// *a.GroupEntries among hgs (its row in groups) in capture order: a second
// pass over the file keeps that group's entries only, so memory is bounded
// by the group, not the capture. summary.group is the group's row.
func (e Env) pageGroupEntries(c *invocation, a captureArgs, f *File, hgs []har.Group, groups []groupRow) error {
	n := *a.GroupEntries
	if n >= len(hgs) {
		err := contract.Errorf(contract.CodeInvalidArgument, "group %d is not a group of this capture (it has %d; a group row's group field gives its position)", n, len(hgs))
		err.Field = "/group_entries"
		return err
	}
	key, count := hgs[n].GroupKey, hgs[n].Count
	if sm, ok := c.data.Summary.(map[string]any); ok {
		sm["group"] = groups[n]
	}
	c.total = ptr(int64(count))
	// A page needs the group's entries up to its end: the stream stops
	// there, so early pages of a large group cost less than the file.
	c.page(a.Cursor, a.Limit, encodeRows(func(pos evidence.Position, limit int) ([]groupEntry, *evidence.Position, error) {
		if pos.Row > int64(count) {
			return nil, nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor points past the group's entries; restart without a cursor")
		}
		end := min(pos.Row+int64(limit), int64(count))
		var es []groupEntry
		seen := int64(0)
		if _, err := har.Stream(c.ctx, f.Data, func(en *har.Entry) error {
			if en.Method != key.Method || en.URL != key.URL {
				return nil
			}
			if seen >= pos.Row {
				es = append(es, groupEntry{Entry: *en})
			}
			if seen++; seen >= end {
				return errEnoughEntries
			}
			return nil
		}); err != nil && err != errEnoughEntries {
			return nil, nil, withInputIdentity(err, f, "/path")
		}
		if end < int64(count) {
			return es, &evidence.Position{Row: end}, nil
		}
		return es, nil, nil
	}))
	return nil
}

// errEnoughEntries ends a group_entries stream once its page is read.
var errEnoughEntries = errors.New("enough entries for the page")

// deltaRow is one row of compare_http_captures: a group's comparison with
// its URL clipped to a share of the page's byte budget (clipURL).
type deltaRow struct {
	har.GroupDelta
	longURL
}

// captureSide is one side of compare_http_captures.
type captureSide struct {
	Path         string `json:"path"`
	Completeness string `json:"completeness,omitempty"`
}

// compareCapturesArgs are compare_http_captures' arguments.
type compareCapturesArgs struct {
	Left     captureSide `json:"left"`
	Right    captureSide `json:"right"`
	Verdicts []string    `json:"verdicts,omitempty"`
	Limit    int         `json:"limit,omitempty"`
	Cursor   string      `json:"cursor,omitempty"`
}

func (e Env) compareHTTPCaptures(c *invocation, a compareCapturesArgs) error {
	for _, s := range []*captureSide{&a.Left, &a.Right} {
		if s.Completeness == "" {
			s.Completeness = har.Partial
		}
	}
	lf, lc, err := c.capture("left", a.Left.Path, "/left/path")
	if err != nil {
		return err
	}
	rf, rc, err := c.capture("right", a.Right.Path, "/right/path")
	if err != nil {
		return err
	}
	// An undecodable entry makes its capture partial whatever the caller
	// declared: its request is unknown.
	lcomp, rcomp := a.Left.Completeness, a.Right.Completeness
	res := c.res
	if len(lc.Unresolved) > 0 && lcomp == har.Complete {
		lcomp = har.Partial
		c.limitation("the left capture has undecodable entries; it is compared as partial")
	}
	if len(rc.Unresolved) > 0 && rcomp == har.Complete {
		rcomp = har.Partial
		c.limitation("the right capture has undecodable entries; it is compared as partial")
	}
	n := len(res.Warnings)
	unknownWarnings(res, "left: ", lc)
	unknownWarnings(res, "right: ", rc)
	for i := range lc.Entries {
		frameWarnings(res, "left: ", lc.Entries[i].Index, lc.Entries[i].URL, lc.Entries[i].WebSocket)
	}
	for i := range rc.Entries {
		frameWarnings(res, "right: ", rc.Entries[i].Index, rc.Entries[i].URL, rc.Entries[i].WebSocket)
	}
	c.limits = append(c.limits, res.Warnings[n:]...)
	all, err := har.Compare(c.ctx, lc, rc, lcomp, rcomp)
	if err != nil {
		return err
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
		c.limitation(fmt.Sprintf("%d group(s) list only %d absent samples per side and %d WebSocket connections (differing ones first); left_absent_count, right_absent_count and websocket_connections count them all", cut, MaxSamplesListed, MaxSamplesListed))
	}
	var sel []deltaRow
	share, long := tool.RowBudget(c.ctx)/GroupEntriesShare, 0
	for _, d := range all {
		counts[d.Verdict]++
		if len(a.Verdicts) == 0 || contains(a.Verdicts, d.Verdict) {
			r := deltaRow{GroupDelta: d}
			if r.URL, r.longURL = clipURL(d.URL, MaxURLShares*share); r.URLTruncated {
				long++
			}
			sel = append(sel, r)
		}
	}
	if long > 0 {
		c.limitation(fmt.Sprintf("%d group(s) have a URL longer than %d/%d of the page's byte budget: url holds its first bytes, url_truncated is true, url_bytes and url_sha256 identify it whole", long, MaxURLShares, GroupEntriesShare))
	}
	li, ri := lf.Identity(), rf.Identity()
	c.data = &paged{Left: &li, Right: &ri, Summary: map[string]any{"by_verdict": counts, "groups": len(all), "selected": len(sel), "left_completeness": lcomp, "right_completeness": rcomp, "left_entries": len(lc.Entries), "right_entries": len(rc.Entries), "websocket_by_verdict": wsCounts, "left_unresolved_entries": len(lc.Unresolved), "right_unresolved_entries": len(rc.Unresolved)}}
	c.total = ptr(int64(len(sel)))
	c.page(a.Cursor, a.Limit, encodeRows(sliceRows(sel)))
	return nil
}
