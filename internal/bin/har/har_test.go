package har

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

type fx struct {
	method, url, typ, mime, body string
	status                       int
	b64, noBody                  bool
}

// write writes a HAR 1.2 document holding entries to dir/name.
func write(t testing.TB, dir, name string, entries []fx) string {
	t.Helper()
	var es []map[string]any
	for i, e := range entries {
		content := map[string]any{"size": len(e.body), "mimeType": e.mime}
		if !e.noBody {
			if e.b64 {
				content["text"] = base64.StdEncoding.EncodeToString([]byte(e.body))
				content["encoding"] = "base64"
			} else {
				content["text"] = e.body
			}
		}
		es = append(es, map[string]any{
			"startedDateTime": "2026-11-29T18:00:0" + string(rune('0'+i%10)) + "Z",
			"time":            12.5 + float64(i),
			"request":         map[string]any{"method": e.method, "url": e.url, "httpVersion": "HTTP/1.1", "headers": []any{}, "queryString": []any{}, "cookies": []any{}, "headersSize": -1, "bodySize": 0},
			"response":        map[string]any{"status": e.status, "statusText": "", "httpVersion": "HTTP/1.1", "headers": []any{}, "cookies": []any{}, "content": content, "redirectURL": "", "headersSize": -1, "bodySize": len(e.body)},
			"cache":           map[string]any{},
			"timings":         map[string]any{"blocked": -1, "dns": -1, "connect": -1, "send": 0.5, "wait": 10, "receive": 2},
			"_resourceType":   e.typ,
		})
	}
	doc := map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "inquest-test", "version": "1"}, "entries": es}}
	b, _ := json.MarshalIndent(doc, "", " ")
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustCompare(t testing.TB, l, r *Capture, lc, rc string) []GroupDelta {
	t.Helper()
	ds, err := Compare(context.Background(), l, r, lc, rc)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func parseFile(t testing.TB, p string) *Capture {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var complete = []fx{
	{"GET", "https://example.test/app.js", "script", "text/javascript", "console.log(1)", 200, false, false},
	{"GET", "https://example.test/api/items", "fetch", "application/json", `{"items":[1]}`, 200, false, false},
	{"GET", "https://example.test/api/items", "fetch", "application/json", `{"items":[1,2]}`, 200, true, false},
	{"POST", "https://example.test/api/items", "fetch", "application/json", `{"ok":true}`, 201, false, false},
	{"GET", "https://example.test/logo.png", "image", "image/png", "\x89PNG", 200, true, false},
}

func verdicts(ds []GroupDelta) map[string]GroupDelta {
	m := map[string]GroupDelta{}
	for _, d := range ds {
		m[d.Method+" "+d.URL] = d
	}
	return m
}

func TestCompareRules(t *testing.T) {
	dir := t.TempDir()
	full := parseFile(t, write(t, dir, "complete.har", complete))
	// A partial capture holding a sub-multiset of the complete one.
	partial := parseFile(t, write(t, dir, "partial.har", []fx{complete[1], complete[3]}))
	// The same partial capture with one response changed.
	changedEntry := complete[1]
	changedEntry.body = `{"items":[9]}`
	changed := parseFile(t, write(t, dir, "changed.har", []fx{changedEntry, complete[3]}))
	// A body that was not retained.
	noBody := complete[2]
	noBody.noBody = true
	unretained := parseFile(t, write(t, dir, "unretained.har", []fx{noBody}))

	tests := []struct {
		name        string
		left, right *Capture
		lc, rc      string
		want        map[string]string
	}{
		{"partial contained in complete", partial, full, Partial, Complete, map[string]string{
			"GET https://example.test/api/items":  VerdictOmissions,
			"POST https://example.test/api/items": VerdictOmissions,
			"GET https://example.test/app.js":     VerdictOmissions,
			"GET https://example.test/logo.png":   VerdictOmissions,
		}},
		{"changed response is independent", changed, full, Partial, Complete, map[string]string{
			"GET https://example.test/api/items":  VerdictIndependent,
			"POST https://example.test/api/items": VerdictOmissions,
			"GET https://example.test/app.js":     VerdictOmissions,
		}},
		{"complete against itself", full, full, Complete, Complete, map[string]string{
			"GET https://example.test/api/items": VerdictEqual,
			"GET https://example.test/logo.png":  VerdictEqual,
		}},
		{"complete left lacks nothing but right partial", full, partial, Complete, Partial, map[string]string{
			"GET https://example.test/api/items": VerdictOmissions,
			"GET https://example.test/app.js":    VerdictOmissions,
		}},
		{"both partial", changed, partial, Partial, Partial, map[string]string{
			"GET https://example.test/api/items":  VerdictUndetermined,
			"POST https://example.test/api/items": VerdictUndetermined,
		}},
		{"complete left, group absent on the complete right", full, changed, Complete, Complete, map[string]string{
			"GET https://example.test/app.js":    VerdictIndependent,
			"GET https://example.test/api/items": VerdictIndependent,
		}},
		{"unretained body is contained, not equal", unretained, full, Partial, Complete, map[string]string{
			"GET https://example.test/api/items": VerdictOmissions,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := verdicts(mustCompare(t, tt.left, tt.right, tt.lc, tt.rc))
			for k, v := range tt.want {
				d, ok := got[k]
				if !ok {
					t.Fatalf("no group %s", k)
				}
				if d.Verdict != v {
					t.Errorf("%s: %s (%s), want %s", k, d.Verdict, d.Content, v)
				}
				if d.Correspond == "" || d.Content == "" || d.Unknown == "" {
					t.Errorf("%s: proof parts missing: %+v", k, d)
				}
			}
		})
	}
	// The independent difference names the retained sample.
	d := verdicts(mustCompare(t, changed, full, Partial, Complete))["GET https://example.test/api/items"]
	if len(d.LeftAbsent) != 1 || d.LeftAbsent[0].Index != 0 {
		t.Errorf("absent samples %+v", d.LeftAbsent)
	}
}

func TestGroupsAndDigests(t *testing.T) {
	dir := t.TempDir()
	c := parseFile(t, write(t, dir, "c.har", complete))
	gs, _ := Groups(context.Background(), c, 100)
	if len(gs) != 4 {
		t.Fatalf("%d groups", len(gs))
	}
	var items Group
	for _, g := range gs {
		if g.Method == "GET" && g.URL == "https://example.test/api/items" {
			items = g
		}
	}
	if items.Count != 2 || items.Statuses["200"] != 2 || items.BodiesKept != 2 || items.ResourceTypes["fetch"] != 2 || *items.TimeTotalMS != 13.5+14.5 || items.TimeUnknown != 0 || items.SizeTotal != "28" {
		t.Errorf("group %+v", items)
	}
	// base64 bodies are digested as decoded bytes: same digest as text.
	a := parseFile(t, write(t, dir, "a.har", []fx{{"GET", "u", "x", "m", "same", 200, false, false}}))
	b := parseFile(t, write(t, dir, "b.har", []fx{{"GET", "u", "x", "m", "same", 200, true, false}}))
	if a.Entries[0].BodySHA256 == "" || a.Entries[0].BodySHA256 != b.Entries[0].BodySHA256 {
		t.Errorf("digests %q %q", a.Entries[0].BodySHA256, b.Entries[0].BodySHA256)
	}
	for _, bad := range []string{"", "{", `{"log":{}}`, `[]`, `{"log":{"entries":5}}`, `{"log":{"entries":[]}} x`, `{"log":{"entries":[]},"log":{"entries":[]}}`, `{"log":{"entries":[{"request":`} {
		if _, err := Parse([]byte(bad)); contract.CodeOf(err) != contract.CodeDecodeFailed {
			t.Errorf("%q: %v", bad, err)
		}
	}
	c2, err := Parse([]byte(`{"log":{"version":"1.2","entries":[{"request":{"method":"GET","url":"u"},"response":{"status":200,"content":{"mimeType":"x"}}},{"request":5},{}]}}`))
	if err != nil || len(c2.Entries) != 1 || len(c2.Unresolved) != 2 {
		t.Errorf("partial decode %+v %v", c2, err)
	}
}

func FuzzParse(f *testing.F) {
	dir := f.TempDir()
	b, _ := os.ReadFile(write(f, dir, "seed.har", complete))
	f.Add(b)
	if ents, err := os.ReadDir("testdata"); err == nil {
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join("testdata", e.Name())); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"log":{"entries":[{"request":{},"response":{"content":{"text":"!!","encoding":"base64"}}}]}}`))
	// Encodings and cuts the diagnosis names: a UTF-8 BOM, UTF-16, empty,
	// truncated.
	f.Add(append([]byte("\xef\xbb\xbf"), b...))
	f.Add([]byte("\xff\xfe{\x00}\x00"))
	f.Add([]byte{})
	f.Add(b[:len(b)/2])
	f.Add([]byte(`{"log":{"entries":[{"time":-1,"request":{"method":null,"url":"u"},"response":{"status":null,"content":{}}}]}}`))
	f.Add([]byte(`{"log":{"entries":[{"time":-1,"request":{"method":"GET","url":"u"},"response":{"status":-1,"content":{"size":-1}}}]}}`))
	// WebSocket fields: frames of every opcode, undecodable base64, error
	// records, unknown types, absent and null frame arrays.
	f.Add([]byte(`{"log":{"entries":[{"request":{"method":"GET","url":"ws://h/s"},"response":{"status":101,"content":{}},"_resourceType":"websocket","_webSocketMessages":[{"type":"send","time":1.5,"opcode":1,"data":"hi"},{"type":"receive","time":2,"opcode":2,"data":"AAEC"},{"type":"receive","opcode":2,"data":"!!"},{"type":"error","opcode":-1,"data":"x"},{"type":"x"},5,{"type":"send","opcode":9}]}]}}`))
	f.Add([]byte(`{"log":{"entries":[{"request":{"method":"GET","url":"wss://h/s"},"response":{"status":101,"content":{}}},{"request":{"method":"GET","url":"ws://h/s"},"response":{"status":101,"content":{}},"_webSocketMessages":null},{"request":{"method":"GET","url":"ws://h/s"},"response":{"status":101,"content":{}},"_webSocketMessages":{}}]}}`))
	f.Add(func() []byte {
		b, _ := os.ReadFile(writeWS(f, dir, "ws.har", []wsConn{{url: wsURL, frames: fifty()}}))
		return b
	}())
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if code := contract.CodeOf(err); code != contract.CodeDecodeFailed && code != contract.CodeLimitExceeded {
				t.Fatalf("code %v", err)
			}
			return
		}
		gs, err := Groups(context.Background(), c, 1)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, g := range gs {
			n += g.Count
		}
		if n != len(c.Entries) {
			t.Fatalf("groups hold %d entries of %d", n, len(c.Entries))
		}
		ds, err := Compare(context.Background(), c, c, Complete, Complete)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			// Undetermined only through a connection whose inventory is
			// partial (undecodable frame records) on both sides.
			wsUndetermined := false
			for _, w := range d.WebSocket {
				wsUndetermined = wsUndetermined || w.Verdict == VerdictUndetermined && w.LeftInventory == InventoryPartial
			}
			if d.Verdict == VerdictIndependent || d.Verdict == VerdictUndetermined && !wsUndetermined {
				t.Fatalf("a capture differs from itself: %+v", d)
			}
			for _, w := range d.WebSocket {
				if w.Verdict != VerdictEqual && w.Verdict != VerdictUnavailable && w.Verdict != VerdictUndetermined {
					t.Fatalf("a connection differs from itself: %+v", w)
				}
				if w.Verdict == VerdictEqual && (w.LeftFrames == nil || w.FirstDifference != nil) {
					t.Fatalf("equal without frames: %+v", w)
				}
			}
		}
		// A partial copy of a capture is contained in it.
		ds, err = Compare(context.Background(), c, c, Partial, Complete)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Verdict == VerdictIndependent {
				t.Fatalf("a partial copy differs: %+v", d)
			}
		}
		for _, e := range c.Entries {
			if ws := e.WebSocket; ws != nil {
				if ws.Frames == "recorded" && (ws.FrameCount == nil || *ws.FrameCount != len(ws.List())) {
					t.Fatalf("frame count %v of %d frames", ws.FrameCount, len(ws.List()))
				}
				if ws.Frames != "recorded" && (ws.FrameCount != nil || ws.Counts != nil) {
					t.Fatalf("unavailable frames counted: %+v", ws)
				}
				for _, f := range ws.List() {
					if f.TextPreview != nil && len(*f.TextPreview) > MaxPreviewBytes {
						t.Fatalf("preview %d bytes", len(*f.TextPreview))
					}
				}
			}
		}
	})
}

// TestOmissionsNameTheSides: an omissions_can_explain verdict names which
// capture is partial and which complete, whichever side that is.
func TestOmissionsNameTheSides(t *testing.T) {
	one := `{"log":{"entries":[{"request":{"method":"GET","url":"u"},"response":{"status":200,"content":{"size":1,"mimeType":"m","text":"a"}}}]}}`
	two := `{"log":{"entries":[{"request":{"method":"GET","url":"u"},"response":{"status":200,"content":{"size":1,"mimeType":"m","text":"a"}}},{"request":{"method":"GET","url":"u"},"response":{"status":200,"content":{"size":1,"mimeType":"m","text":"a"}}}]}}`
	a, _ := Parse([]byte(one))
	b, _ := Parse([]byte(two))
	for _, tc := range []struct {
		l, r           *Capture
		lc, rc, phrase string
	}{
		{a, b, Partial, Complete, "the left capture is partial and its response multiset is contained in the complete right group"},
		{b, a, Complete, Partial, "the right capture is partial and its response multiset is contained in the complete left group"},
	} {
		ds, err := Compare(context.Background(), tc.l, tc.r, tc.lc, tc.rc)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].Verdict != VerdictOmissions || !strings.Contains(ds[0].Content, tc.phrase) {
			t.Errorf("%s/%s: %+v", tc.lc, tc.rc, ds)
		}
	}
}
