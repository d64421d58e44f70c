package bin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// wsHAR writes a HAR holding one plain GET and one WebSocket connection of
// n alternating text frames; payload i is "frame i" except at changed.
func wsHAR(t *testing.T, path string, n, changed int, withFrames bool) {
	t.Helper()
	var ms []any
	for i := 1; i <= n; i++ {
		typ, data := "send", fmt.Sprintf("frame %d", i)
		if i%2 == 0 {
			typ = "receive"
		}
		if i == changed {
			data = "changed"
		}
		ms = append(ms, map[string]any{"type": typ, "time": 1764439200 + float64(i)/100, "opcode": 1, "data": data})
	}
	ws := map[string]any{"time": 2, "_resourceType": "websocket", "request": map[string]any{"method": "GET", "url": "wss://x.test/live"}, "response": map[string]any{"status": 101, "content": map[string]any{"size": 0, "mimeType": "x-unknown"}}}
	if withFrames {
		ws["_webSocketMessages"] = ms
	}
	get := map[string]any{"time": -1, "_resourceType": "document", "request": map[string]any{"method": "GET", "url": "https://x.test/"}, "response": map[string]any{"status": 200, "content": map[string]any{"size": 5, "mimeType": "text/html", "text": "hello"}}}
	b, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "t"}, "entries": []any{get, ws}}})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPCaptureWebSocketTools drives both tools through the registry:
// inspect lists the connection's inventory and pages its frames; compare
// names the first differing frame; frames unavailable is not equal.
func TestHTTPCaptureWebSocketTools(t *testing.T) {
	r := registry(t, "")
	dir := t.TempDir()
	a, b, none := filepath.Join(dir, "a.har"), filepath.Join(dir, "b.har"), filepath.Join(dir, "none.har")
	wsHAR(t, a, 50, 0, true)
	wsHAR(t, b, 50, 37, true)
	wsHAR(t, none, 0, 0, false)

	m := mustCall(t, r, "inspect_http_capture", map[string]any{"path": a, "completeness": "complete"})
	d := data(m)
	conns := d["context"].(map[string]any)["websocket_connections"].([]any)
	c := conns[0].(map[string]any)
	inv := c["websocket"].(map[string]any)
	if len(conns) != 1 || c["entry"] != 1.0 || c["url"] != nil || c["group"] != 1.0 || inv["inventory"] != "complete" || inv["frame_count"] != 50.0 || fmt.Sprint(inv["counts"]) != "map[receive:map[1:25] send:map[1:25]]" {
		t.Fatalf("connections %v", conns)
	}
	if na := m["next_action"].(map[string]any); na["tool"] != "inspect_http_capture" || na["arguments"].(map[string]any)["websocket_frames"] != 1.0 {
		t.Errorf("next_action %v", na)
	}
	if w := fmt.Sprint(m["warnings"]); !strings.Contains(w, "unknown time") {
		t.Errorf("warnings %s", w)
	}
	m = mustCall(t, r, "inspect_http_capture", map[string]any{"path": a, "websocket_frames": 1, "limit": 20})
	fr := rows(m)
	if len(fr) != 20 || data(m)["next_cursor"] == nil || m["coverage"].(map[string]any)["upstream"].(map[string]any)["frames"] != "partial" {
		t.Fatalf("frames page %d %v", len(fr), m["coverage"])
	}
	f := fr[2].(map[string]any)
	if f["direction"] != "send" || f["position"] != 2.0 || f["connection_position"] != 3.0 || f["text_preview"] != "frame 3" || f["payload_size"] != "7" || len(f["payload_sha256"].(string)) != 64 {
		t.Errorf("frame %v", f)
	}
	m = mustCall(t, r, "inspect_http_capture", map[string]any{"path": none, "websocket_frames": 1})
	if len(rows(m)) != 0 || !strings.Contains(fmt.Sprint(m["warnings"]), "frames: unavailable") {
		t.Errorf("unavailable frames: %v", m)
	}
	if _, err := call(t, r, "inspect_http_capture", map[string]any{"path": a, "websocket_frames": 0}); err == nil || !strings.Contains(err.Error(), "not a WebSocket connection") {
		t.Errorf("entry 0 is not a connection: %v", err)
	}

	side := func(p string) map[string]any { return map[string]any{"path": p, "completeness": "complete"} }
	m = mustCall(t, r, "compare_http_captures", map[string]any{"left": side(a), "right": side(b)})
	var ws map[string]any
	for _, row := range rows(m) {
		if g := row.(map[string]any); g["url"] == "wss://x.test/live" {
			if g["verdict"] != "independent_difference" {
				t.Errorf("group %v", g)
			}
			ws = g["websocket"].([]any)[0].(map[string]any)
		}
	}
	fd := ws["first_difference"].(map[string]any)
	if fd["direction"] != "send" || fd["position"] != 19.0 || fd["left"].(map[string]any)["connection_position"] != 37.0 || fd["right"].(map[string]any)["text_preview"] != "changed" {
		t.Errorf("first difference %v", fd)
	}
	m = mustCall(t, r, "compare_http_captures", map[string]any{"left": side(a), "right": side(none), "verdicts": []string{"unavailable"}})
	if rs := rows(m); len(rs) != 1 || rs[0].(map[string]any)["websocket"].([]any)[0].(map[string]any)["verdict"] != "unavailable" {
		t.Errorf("frames unavailable: %v", rs)
	}
}

// TestHTTPCaptureUndecodableFrames: a connection whose _webSocketMessages
// holds 6 records, 5 of them malformed, makes inspect_http_capture and
// compare_http_captures partial with a warning naming the entry and the
// count, even for a capture declared complete with nothing else unknown.
func TestHTTPCaptureUndecodableFrames(t *testing.T) {
	r := registry(t, "")
	dir := t.TempDir()
	bad, good := filepath.Join(dir, "bad.har"), filepath.Join(dir, "good.har")
	ms := []any{
		map[string]any{"type": "send", "time": 1764439200.5, "opcode": 1, "data": "ok"},
		"not an object", 7, map[string]any{"type": "bogus", "time": 1, "opcode": 1, "data": "x"}, []any{1}, nil,
	}
	ws := func(msgs []any) map[string]any {
		return map[string]any{"time": 2, "_resourceType": "websocket", "request": map[string]any{"method": "GET", "url": "wss://x.test/live"}, "response": map[string]any{"status": 101, "content": map[string]any{"size": 0, "mimeType": "x-unknown"}}, "_webSocketMessages": msgs}
	}
	for path, msgs := range map[string][]any{bad: ms, good: ms[:1]} {
		b, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "t"}, "entries": []any{ws(msgs)}}})
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := mustCall(t, r, "inspect_http_capture", map[string]any{"path": good, "completeness": "complete"})
	if m["status"] != "complete" {
		t.Fatalf("the well-formed capture is not complete: %v %v", m["status"], m["warnings"])
	}
	want := "entry 0 (wss://x.test/live): 5 of 6 _webSocketMessages record(s) could not be decoded"
	m = mustCall(t, r, "inspect_http_capture", map[string]any{"path": bad, "completeness": "complete"})
	if m["status"] != "partial" || !strings.Contains(fmt.Sprint(m["warnings"]), want) || m["coverage"].(map[string]any)["upstream"].(map[string]any)["websocket_frames"] != "partial" {
		t.Fatalf("inspect: %v %v %v", m["status"], m["warnings"], m["coverage"])
	}
	m = mustCall(t, r, "inspect_http_capture", map[string]any{"path": bad, "completeness": "complete", "websocket_frames": 0})
	if m["status"] != "partial" || !strings.Contains(fmt.Sprint(m["warnings"]), want) {
		t.Fatalf("inspect frames: %v %v", m["status"], m["warnings"])
	}
	side := func(p string) map[string]any { return map[string]any{"path": p, "completeness": "complete"} }
	m = mustCall(t, r, "compare_http_captures", map[string]any{"left": side(good), "right": side(bad)})
	if m["status"] != "partial" || !strings.Contains(fmt.Sprint(m["warnings"]), "right: "+want) {
		t.Fatalf("compare: %v %v", m["status"], m["warnings"])
	}
}

// writeGETCapture writes a HAR 1.2 capture of n GET entries whose URL is url(i).
func writeGETCapture(t *testing.T, path string, n int, url func(i int) string) {
	t.Helper()
	es := make([]any, n)
	for i := range es {
		es[i] = map[string]any{"startedDateTime": "2026-11-30T21:00:00.000Z", "time": 12.5, "_resourceType": "fetch",
			"request":  map[string]any{"method": "GET", "url": url(i)},
			"response": map[string]any{"status": 200, "content": map[string]any{"size": 5, "mimeType": "text/plain", "text": "hello"}},
			"timings":  map[string]any{"send": 1, "wait": 10, "receive": 1.5}}
	}
	b, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "t"}, "entries": es}})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInspectHTTPCaptureFitsBudget: one group of 30,000 identical requests,
// one group of 150 entries with an 8,000-character URL, and 150 groups of
// such URLs each fit the default 64 KiB result budget as delivered; a
// group's inline entries do not repeat its URL and end within their byte
// share (entries_listed, with a warning, counts still cover every entry);
// pages ended by bytes name next_action, and following it reaches every
// group exactly once.
func TestInspectHTTPCaptureFitsBudget(t *testing.T) {
	r := registry(t, "")
	dir := t.TempDir()
	long := "https://x.test/" + strings.Repeat("p", 8000)
	cases := []struct {
		name   string
		n      int
		url    func(int) string
		groups int
	}{
		{"30000 identical", 30000, func(int) string { return "https://x.test/api" }, 1},
		{"150 long identical", 150, func(int) string { return long }, 1},
		{"150 long distinct", 150, func(i int) string { return fmt.Sprintf("%s/%03d", long, i) }, 150},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".har")
			writeGETCapture(t, path, tc.n, tc.url)
			seen := map[string]int{}
			args := map[string]any{"path": path, "limit": 200}
			for page := 0; ; page++ {
				if page > tc.groups {
					t.Fatalf("more pages than groups")
				}
				raw, _ := json.Marshal(args)
				res, err := r.Call(context.Background(), "inspect_http_capture", raw)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := contract.Marshal(res, nil)
				if n := tool.DeliveredBytes(body); n > tool.DefaultResultBytes {
					t.Fatalf("page %d is %d bytes as delivered, over %d", page, n, tool.DefaultResultBytes)
				}
				var m map[string]any
				json.Unmarshal(body, &m)
				for _, row := range rows(m) {
					g := row.(map[string]any)
					seen[g["url"].(string)]++
					if g["entries"] != nil || g["entries_listed"] != nil {
						t.Fatalf("a group row lists entries: %v", g)
					}
					if g["count"] != float64(tc.n/tc.groups) {
						t.Fatalf("count %v", g["count"])
					}
					if g["group"] == float64(0) {
						groupEntries(t, r, path, tc.n/tc.groups)
					}
				}
				na, _ := m["next_action"].(map[string]any)
				if data(m)["page"].(map[string]any)["more"] != true {
					break
				}
				if na == nil || na["tool"] != "inspect_http_capture" {
					t.Fatalf("a page with more rows names no next_action: %v", m["next_action"])
				}
				args = na["arguments"].(map[string]any)
			}
			if len(seen) != tc.groups {
				t.Fatalf("%d groups seen, want %d", len(seen), tc.groups)
			}
			for u, n := range seen {
				if n != 1 {
					t.Fatalf("group %.40s… seen %d times", u, n)
				}
			}
		})
	}
}

// groupEntries pages group 0's entries of the capture at path with
// group_entries, following next_action, and checks there are want of
// them (the first three pages of a larger group), each without the
// group's method and URL and with its digest, and every page within the
// default budget.
func groupEntries(t *testing.T, r *tool.Registry, path string, want int) {
	t.Helper()
	args := map[string]any{"path": path, "group_entries": 0, "limit": 1000}
	got := 0
	for page := 0; ; page++ {
		if page > want {
			t.Fatal("more entry pages than entries")
		}
		if page == 3 && want > 3000 {
			// The first pages and their handoff are checked; the rest
			// of a 30,000-entry group pages alike.
			return
		}
		raw, _ := json.Marshal(args)
		res, err := r.Call(context.Background(), "inspect_http_capture", raw)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := contract.Marshal(res, nil)
		if n := tool.DeliveredBytes(body); n > tool.DefaultResultBytes {
			t.Fatalf("entries page %d is %d bytes as delivered, over %d", page, n, tool.DefaultResultBytes)
		}
		var m map[string]any
		json.Unmarshal(body, &m)
		if g, _ := data(m)["summary"].(map[string]any)["group"].(map[string]any); g == nil || g["count"] != float64(want) {
			t.Fatalf("summary.group %v", data(m)["summary"])
		}
		for _, e := range rows(m) {
			e := e.(map[string]any)
			if e["url"] != nil || e["method"] != nil || e["body_sha256"] == nil || e["index"] == nil {
				t.Fatalf("entry %v", e)
			}
			got++
		}
		if data(m)["page"].(map[string]any)["more"] != true {
			break
		}
		na, _ := m["next_action"].(map[string]any)
		if na == nil {
			t.Fatalf("an entries page with more rows names no next_action")
		}
		args = na["arguments"].(map[string]any)
	}
	if got != want {
		t.Fatalf("group_entries listed %d entries, want %d", got, want)
	}
}

// TestInspectHTTPCaptureManyGroupsPerPage: a capture of 600 groups of 5
// entries each lists at least 100 groups on its first page within the
// default 64 KiB budget (rows carry counts, not entries), not a handful;
// group_entries beyond the last group is a typed error.
func TestInspectHTTPCaptureManyGroupsPerPage(t *testing.T) {
	r := registry(t, "")
	path := filepath.Join(t.TempDir(), "many.har")
	writeGETCapture(t, path, 3000, func(i int) string { return fmt.Sprintf("https://x.test/api/%03d", i%600) })
	raw, _ := json.Marshal(map[string]any{"path": path})
	res, err := r.Call(context.Background(), "inspect_http_capture", raw)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := contract.Marshal(res, nil)
	var m map[string]any
	json.Unmarshal(body, &m)
	if n := len(rows(m)); n < 100 {
		t.Fatalf("first page lists %d groups, want at least 100", n)
	}
	groupEntries(t, r, path, 5)
	raw, _ = json.Marshal(map[string]any{"path": path, "group_entries": 600})
	if _, err := r.Call(context.Background(), "inspect_http_capture", raw); err == nil || contract.AsError(err).Field != "/group_entries" {
		t.Fatalf("group_entries past the last group: %v", err)
	}
}

// TestInspectHTTPCaptureManyLongConnections: 100 WebSocket connections
// with 8,000-character URLs are listed inline only as far as their byte
// share allows, with a warning naming how many, and the result fits the
// default budget.
func TestInspectHTTPCaptureManyLongConnections(t *testing.T) {
	r := registry(t, "")
	path := filepath.Join(t.TempDir(), "ws.har")
	es := make([]any, 100)
	for i := range es {
		es[i] = map[string]any{"time": 1, "_resourceType": "websocket", "request": map[string]any{"method": "GET", "url": fmt.Sprintf("wss://x.test/%03d/%s", i, strings.Repeat("w", 8000))}, "response": map[string]any{"status": 101, "content": map[string]any{"size": 0, "mimeType": "x-unknown"}}, "_webSocketMessages": []any{}}
	}
	b, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "t"}, "entries": es}})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"path": path, "limit": 1})
	res, err := r.Call(context.Background(), "inspect_http_capture", raw)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := contract.Marshal(res, nil)
	if n := tool.DeliveredBytes(body); n > tool.DefaultResultBytes {
		t.Fatalf("%d bytes as delivered, over %d", n, tool.DefaultResultBytes)
	}
	var m map[string]any
	json.Unmarshal(body, &m)
	conns := data(m)["context"].(map[string]any)["websocket_connections"].([]any)
	if len(conns) == 0 || len(conns) >= 100 || !strings.Contains(fmt.Sprint(m["warnings"]), fmt.Sprintf("the first %d of 100 connections are listed inline", len(conns))) {
		t.Fatalf("%d connections inline; warnings %v", len(conns), m["warnings"])
	}
}

// TestInspectHTTPCaptureManyUnresolved: 5,000 entries whose request.method
// is null (time -1, status null, base64 text that does not decode) and 7
// without a response fit the budget at 16 KiB and by default: the listed
// unresolved entries end within their byte share with a warning, while
// summary.unresolved_by_reason and summary.unknowns count every entry.
func TestInspectHTTPCaptureManyUnresolved(t *testing.T) {
	r := registry(t, "")
	path := filepath.Join(t.TempDir(), "null.har")
	const nullMethod, noResponse = 5000, 7
	var es []any
	for i := 0; i < nullMethod; i++ {
		es = append(es, map[string]any{"startedDateTime": "2026-11-30T21:00:00.000Z", "time": -1, "request": map[string]any{"method": nil, "url": "https://x.test/a"}, "response": map[string]any{"status": nil, "content": map[string]any{"size": 3, "mimeType": "text/plain", "text": "!!!", "encoding": "base64"}}})
	}
	for i := 0; i < noResponse; i++ {
		es = append(es, map[string]any{"time": 1, "request": map[string]any{"method": "GET", "url": "https://x.test/b"}})
	}
	b, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "t"}, "entries": es}})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{16384, tool.DefaultResultBytes} {
		raw, _ := json.Marshal(map[string]any{"path": path})
		res, err := r.Call(tool.WithResultBudget(context.Background(), budget), "inspect_http_capture", raw)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := contract.Marshal(res, nil)
		n := tool.DeliveredBytes(body)
		if n > budget {
			t.Fatalf("budget %d: %d bytes as delivered", budget, n)
		}
		t.Logf("budget %d: %d bytes as delivered", budget, n)
		var m map[string]any
		json.Unmarshal(body, &m)
		d := data(m)
		s := d["summary"].(map[string]any)
		u := s["unknowns"].(map[string]any)
		if s["unresolved_entries"] != float64(nullMethod+noResponse) || s["entries"] != 0.0 || u["method_unknown"] != float64(nullMethod) || u["time_unknown"] != float64(nullMethod) || u["status_unknown"] != float64(nullMethod) || u["bodies_undecodable"] != float64(nullMethod) {
			t.Fatalf("budget %d: summary %v", budget, s)
		}
		by := s["unresolved_by_reason"].(map[string]any)
		if by["request.method is null or absent: the entry's repeated-request group is unknown"] != float64(nullMethod) || by["the entry lacks request or response"] != float64(noResponse) {
			t.Fatalf("by reason %v", by)
		}
		listed := d["context"].(map[string]any)["unresolved_entries"].([]any)
		w := fmt.Sprint(m["warnings"])
		if len(listed) == 0 || !strings.Contains(w, fmt.Sprintf("the first %d of %d unresolved entries are listed", len(listed), nullMethod+noResponse)) || !strings.Contains(w, fmt.Sprintf("%d entr(ies) have an unknown time", nullMethod)) || !strings.Contains(w, fmt.Sprintf("%d response bod(ies) are not valid base64", nullMethod)) {
			t.Fatalf("budget %d: %d listed, warnings %s", budget, len(listed), w)
		}
		if m["status"] != "partial" {
			t.Fatalf("status %v", m["status"])
		}
	}
}

// TestHTTPCaptureLongWebSocketURLs: WebSocket entries whose wss:// URLs
// are 3,000 or 40,000 characters fit the result budget at 16 KiB and by
// default in inspect_http_capture (groups, connections and one
// connection's frames) and compare_http_captures (the file against
// itself): a group's URL is stated once, clipped with url_bytes and
// url_sha256 when it passes its share, connections name their group
// instead of repeating it, counts cover every entry, and following
// next_action reaches every group exactly once.
func TestHTTPCaptureLongWebSocketURLs(t *testing.T) {
	r := registry(t, "")
	dir := t.TempDir()
	cases := []struct {
		name          string
		urlLen, n     int
		groups        int
		wantTruncated bool
	}{
		{"3 same 40000", 40000, 3, 1, true},
		{"3 same 3000", 3000, 3, 1, false},
		{"6 distinct 40000", 40000, 6, 6, true},
	}
	for _, tc := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".har")
		es := make([]any, tc.n)
		for i := range es {
			u := "wss://x.test/" + strings.Repeat("w", tc.urlLen)
			if tc.groups > 1 {
				u = fmt.Sprintf("%s/%03d", u, i)
			}
			es[i] = map[string]any{"time": 1, "_resourceType": "websocket", "request": map[string]any{"method": "GET", "url": u}, "response": map[string]any{"status": 101, "content": map[string]any{"size": 0, "mimeType": "x-unknown"}}, "_webSocketMessages": []any{map[string]any{"type": "send", "time": 1, "opcode": 1, "data": "hi"}}}
		}
		b, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "t"}, "entries": es}})
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, budget := range []int{16384, tool.DefaultResultBytes} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, budget), func(t *testing.T) {
				ctx := tool.WithResultBudget(context.Background(), budget)
				get := func(name string, args map[string]any) map[string]any {
					t.Helper()
					raw, _ := json.Marshal(args)
					res, err := r.Call(ctx, name, raw)
					if err != nil {
						t.Fatal(err)
					}
					body, _ := contract.Marshal(res, nil)
					n := tool.DeliveredBytes(body)
					if n > budget {
						t.Fatalf("%s %v: %d bytes as delivered, over %d", name, args["cursor"], n, budget)
					}
					t.Logf("%s cursor %v: %d bytes as delivered", name, args["cursor"] != nil, n)
					var m map[string]any
					json.Unmarshal(body, &m)
					return m
				}
				// groupID is the group's URL, or its digest when clipped.
				groupID := func(g map[string]any) string {
					if g["url_truncated"] == true {
						if g["url_bytes"] != float64(len("wss://x.test/")+tc.urlLen+map[bool]int{true: 4}[tc.groups > 1]) || len(g["url_sha256"].(string)) != 64 {
							t.Fatalf("clipped group %v %v", g["url_bytes"], g["url_sha256"])
						}
						return g["url_sha256"].(string)
					}
					if tc.wantTruncated && budget == 16384 {
						t.Fatalf("a %d-byte URL is not clipped at budget %d", tc.urlLen, budget)
					}
					return g["url"].(string)
				}
				for _, name := range []string{"inspect_http_capture", "compare_http_captures"} {
					args := map[string]any{"path": path}
					if name == "compare_http_captures" {
						args = map[string]any{"left": map[string]any{"path": path}, "right": map[string]any{"path": path}}
					}
					seen, entries, conns := map[string]int{}, 0, 0
					for page := 0; ; page++ {
						if page > tc.groups {
							t.Fatalf("%s: more pages than groups", name)
						}
						m := get(name, args)
						for _, row := range rows(m) {
							g := row.(map[string]any)
							seen[groupID(g)]++
							if name == "inspect_http_capture" {
								entries += int(g["count"].(float64))
							} else {
								entries += int(g["left_count"].(float64))
								for _, c := range g["websocket"].([]any) {
									if c.(map[string]any)["url"] != nil {
										t.Fatalf("connection delta repeats the URL")
									}
								}
							}
						}
						if page == 0 && name == "inspect_http_capture" {
							cs := data(m)["context"].(map[string]any)["websocket_connections"].([]any)
							conns = len(cs)
							for _, c := range cs {
								if c := c.(map[string]any); c["url"] != nil || c["group"] == nil {
									t.Fatalf("connection %v repeats its URL or names no group", c["entry"])
								}
							}
							if data(m)["summary"].(map[string]any)["websocket_connections"] != float64(tc.n) || (conns < tc.n && !strings.Contains(fmt.Sprint(m["warnings"]), fmt.Sprintf("the first %d of %d connections", conns, tc.n))) {
								t.Fatalf("%d connections listed: %v", conns, m["warnings"])
							}
						}
						if data(m)["page"].(map[string]any)["more"] != true {
							break
						}
						na, _ := m["next_action"].(map[string]any)
						if na == nil || na["tool"] != name {
							t.Fatalf("%s: a page with more rows names no next_action: %v", name, m["next_action"])
						}
						args = na["arguments"].(map[string]any)
					}
					if entries != tc.n || len(seen) != tc.groups {
						t.Fatalf("%s: %d entries in %d groups, want %d in %d", name, entries, len(seen), tc.n, tc.groups)
					}
					for id, k := range seen {
						if k != 1 {
							t.Fatalf("%s: group %.40s seen %d times", name, id, k)
						}
					}
				}
				m := get("inspect_http_capture", map[string]any{"path": path, "websocket_frames": 0})
				if len(rows(m)) != 1 {
					t.Fatalf("frames %v", rows(m))
				}
			})
		}
	}
}
