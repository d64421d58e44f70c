package har

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wsFrame is one frame a test writes: direction, opcode and payload bytes.
type wsFrame struct {
	dir     string
	opcode  int
	payload string
}

// wsConn is one WebSocket connection entry; noFrames leaves out
// _webSocketMessages as producers without frame support do.
type wsConn struct {
	url      string
	frames   []wsFrame
	noFrames bool
}

// writeWS writes a HAR whose entries are the given connections, shaped as
// Chrome's HAR export shapes them (status 101, _resourceType websocket,
// _webSocketMessages with text data for opcode 1 and base64 otherwise).
func writeWS(t testing.TB, dir, name string, conns []wsConn) string {
	t.Helper()
	var es []map[string]any
	for _, c := range conns {
		e := map[string]any{
			"startedDateTime": "2026-11-29T18:00:00Z",
			"time":            0.5,
			"request":         map[string]any{"method": "GET", "url": c.url, "httpVersion": "HTTP/1.1", "headers": []any{}, "queryString": []any{}, "cookies": []any{}, "headersSize": -1, "bodySize": 0},
			"response":        map[string]any{"status": 101, "statusText": "Switching Protocols", "httpVersion": "HTTP/1.1", "headers": []any{}, "cookies": []any{}, "content": map[string]any{"size": 0, "mimeType": "x-unknown"}, "redirectURL": "", "headersSize": -1, "bodySize": 0},
			"cache":           map[string]any{},
			"timings":         map[string]any{"blocked": -1, "dns": -1, "connect": -1, "send": 0, "wait": 0.5, "receive": 0},
			"_resourceType":   "websocket",
		}
		if !c.noFrames {
			ms := []map[string]any{}
			for i, f := range c.frames {
				data := f.payload
				if f.opcode != 1 {
					data = base64.StdEncoding.EncodeToString([]byte(f.payload))
				}
				ms = append(ms, map[string]any{"type": f.dir, "time": 1764439200.0 + float64(i)/10, "opcode": f.opcode, "data": data})
			}
			e["_webSocketMessages"] = ms
		}
		es = append(es, e)
	}
	doc := map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "WebInspector", "version": "537.36"}, "pages": []any{}, "entries": es}}
	b, _ := json.Marshal(doc)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fifty returns 50 alternating text frames (odd connection positions are
// sent, even ones received).
func fifty() []wsFrame {
	var fs []wsFrame
	for i := 1; i <= 50; i++ {
		d := Send
		if i%2 == 0 {
			d = Receive
		}
		fs = append(fs, wsFrame{d, 1, fmt.Sprintf(`{"seq":%d,"body":"message number %d"}`, i, i)})
	}
	return fs
}

func sha(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

const wsURL = "ws://127.0.0.1:8080/socket"

func onlyConn(t *testing.T, ds []GroupDelta) (GroupDelta, ConnectionDelta) {
	t.Helper()
	if len(ds) != 1 || len(ds[0].WebSocket) != 1 {
		t.Fatalf("want one group with one connection, got %+v", ds)
	}
	return ds[0], ds[0].WebSocket[0]
}

func TestWebSocketCompare(t *testing.T) {
	dir := t.TempDir()
	base := fifty()
	changed := fifty()
	changed[36].payload = `{"seq":37,"body":"MESSAGE NUMBER 37"}`
	extra := append(fifty(), wsFrame{Send, 1, "one more"})
	left := parseFile(t, writeWS(t, dir, "left.har", []wsConn{{url: wsURL, frames: base}}))

	t.Run("frame 37 differs", func(t *testing.T) {
		right := parseFile(t, writeWS(t, dir, "changed.har", []wsConn{{url: wsURL, frames: changed}}))
		g, c := onlyConn(t, mustCompare(t, left, right, Complete, Complete))
		fd := c.FirstDifference
		if c.Verdict != VerdictIndependent || g.Verdict != VerdictIndependent || fd == nil {
			t.Fatalf("verdicts %s/%s, difference %+v", g.Verdict, c.Verdict, fd)
		}
		if fd.Left.ConnectionPosition != 37 || fd.Right.ConnectionPosition != 37 || fd.Direction != Send || fd.Position != 19 || fd.Kind != "payload_sha256" && fd.Kind != "payload_size" || fd.Proof != ProofDigest {
			t.Errorf("difference %+v", fd)
		}
		if fd.Left.PayloadSHA256 != sha(base[36].payload) || fd.Right.PayloadSHA256 != sha(changed[36].payload) {
			t.Errorf("digests %s %s", fd.Left.PayloadSHA256, fd.Right.PayloadSHA256)
		}
		if fd.Left.TextPreview == nil || *fd.Left.TextPreview != base[36].payload || *fd.Right.TextPreview != changed[36].payload {
			t.Errorf("previews %v %v", fd.Left.TextPreview, fd.Right.TextPreview)
		}
		if c.DifferingPositions[Send] != 1 || c.DifferingPositions[Receive] != 0 || c.ComparedPositions[Send] != 25 || c.ComparedPositions[Receive] != 25 || len(c.Extra) != 0 {
			t.Errorf("positions %v of %v, extra %v", c.DifferingPositions, c.ComparedPositions, c.Extra)
		}
		if !strings.Contains(c.Content, "send frame 19 (left connection position 37)") {
			t.Errorf("content %q", c.Content)
		}
	})
	t.Run("one extra frame on the right", func(t *testing.T) {
		right := parseFile(t, writeWS(t, dir, "extra.har", []wsConn{{url: wsURL, frames: extra}}))
		_, c := onlyConn(t, mustCompare(t, left, right, Complete, Complete))
		if c.Verdict != VerdictIndependent || c.FirstDifference != nil || len(c.Extra) != 1 {
			t.Fatalf("%+v", c)
		}
		x := c.Extra[0]
		if x.Side != "right" || x.Count != 1 || x.AfterConnectionPosition != 50 || x.Direction != Send || x.AfterPosition != 25 {
			t.Errorf("extra %+v", x)
		}
		if !strings.HasPrefix(x.Summary, "right has 1 more frame after position 50") || !strings.Contains(c.Content, x.Summary) {
			t.Errorf("summary %q content %q", x.Summary, c.Content)
		}
		if c.LeftFrames[Send] != 25 || c.RightFrames[Send] != 26 {
			t.Errorf("counts %v %v", c.LeftFrames, c.RightFrames)
		}
	})
	t.Run("identical complete inventories are equal", func(t *testing.T) {
		g, c := onlyConn(t, mustCompare(t, left, left, Complete, Complete))
		if c.Verdict != VerdictEqual || g.Verdict != VerdictEqual || c.Proof != ProofDigest {
			t.Errorf("%s %s %s %s", g.Verdict, c.Verdict, c.Proof, c.Content)
		}
	})
	t.Run("a producer without frames is unavailable, not equal", func(t *testing.T) {
		right := parseFile(t, writeWS(t, dir, "noframes.har", []wsConn{{url: wsURL, noFrames: true}}))
		inv := right.Entries[0].WebSocket
		if inv == nil || inv.Frames != "unavailable" || inv.FrameCount != nil || inv.Counts != nil || len(inv.List()) != 0 {
			t.Fatalf("inventory %+v", inv)
		}
		for _, order := range [][2]*Capture{{left, right}, {right, left}} {
			g, c := onlyConn(t, mustCompare(t, order[0], order[1], Complete, Complete))
			if c.Verdict != VerdictUnavailable || g.Verdict != VerdictUnavailable || c.Proof != ProofUnavailable {
				t.Errorf("%s %s %s", g.Verdict, c.Verdict, c.Content)
			}
			if (c.LeftFrames == nil) == (c.RightFrames == nil) {
				t.Errorf("frames %v %v: the side without frames has none, never zero", c.LeftFrames, c.RightFrames)
			}
		}
	})
	t.Run("binary frames compare by digest", func(t *testing.T) {
		bin := []wsFrame{{Send, 2, "\x00\x01\x02\xff"}, {Receive, 2, "\x00\x01\x02\xff"}}
		bin2 := []wsFrame{{Send, 2, "\x00\x01\x02\xff"}, {Receive, 2, "\x00\x01\x02\xfe"}}
		a := parseFile(t, writeWS(t, dir, "bin-a.har", []wsConn{{url: wsURL, frames: bin}}))
		b := parseFile(t, writeWS(t, dir, "bin-b.har", []wsConn{{url: wsURL, frames: bin2}}))
		f := a.Entries[0].WebSocket.List()[0]
		if f.PayloadSHA256 != sha("\x00\x01\x02\xff") || f.PayloadSize != "4" || f.TextPreview != nil {
			t.Errorf("binary frame %+v", f)
		}
		if _, c := onlyConn(t, mustCompare(t, a, a, Complete, Complete)); c.Verdict != VerdictEqual {
			t.Errorf("same binary frames: %+v", c)
		}
		_, c := onlyConn(t, mustCompare(t, a, b, Complete, Complete))
		fd := c.FirstDifference
		if c.Verdict != VerdictIndependent || fd == nil || fd.Direction != Receive || fd.Position != 1 || fd.Kind != "payload_sha256" || fd.Left.TextPreview != nil {
			t.Errorf("binary difference %+v %+v", c, fd)
		}
		// An opcode change with equal bytes is a difference too.
		c3 := parseFile(t, writeWS(t, dir, "bin-c.har", []wsConn{{url: wsURL, frames: []wsFrame{{Send, 1, "\x00\x01\x02\xff"}, {Receive, 2, "\x00\x01\x02\xff"}}}}))
		if _, c := onlyConn(t, mustCompare(t, a, c3, Complete, Complete)); c.FirstDifference == nil || c.FirstDifference.Kind != "opcode" {
			t.Errorf("opcode difference %+v", c)
		}
	})
	t.Run("partial side: only differences omissions cannot explain", func(t *testing.T) {
		sub := []wsFrame{base[0], base[3], base[10], base[49]}
		p := parseFile(t, writeWS(t, dir, "sub.har", []wsConn{{url: wsURL, frames: sub}}))
		if _, c := onlyConn(t, mustCompare(t, p, left, Partial, Complete)); c.Verdict != VerdictOmissions || c.FirstDifference != nil {
			t.Errorf("subsequence: %+v", c)
		}
		// Out of order: base[10] before base[2] (both sent) cannot be an omission.
		swapped := parseFile(t, writeWS(t, dir, "swapped.har", []wsConn{{url: wsURL, frames: []wsFrame{base[0], base[10], base[2]}}}))
		_, c := onlyConn(t, mustCompare(t, left, swapped, Complete, Partial))
		if c.Verdict != VerdictIndependent || c.FirstDifference == nil || c.FirstDifference.Kind != "absent_in_order" || c.FirstDifference.Right == nil || c.FirstDifference.Right.ConnectionPosition != 3 {
			t.Errorf("out of order: %+v %+v", c, c.FirstDifference)
		}
		if _, c := onlyConn(t, mustCompare(t, p, swapped, Partial, Partial)); c.Verdict != VerdictUndetermined {
			t.Errorf("both partial: %+v", c)
		}
	})
	t.Run("connections correspond by order among same-URL connections", func(t *testing.T) {
		two := parseFile(t, writeWS(t, dir, "two.har", []wsConn{{url: wsURL, frames: base}, {url: wsURL, frames: changed}}))
		ds := mustCompare(t, two, left, Complete, Complete)
		if len(ds) != 1 || len(ds[0].WebSocket) != 2 {
			t.Fatalf("%+v", ds)
		}
		first, second := ds[0].WebSocket[0], ds[0].WebSocket[1]
		if first.Position != 1 || first.Verdict != VerdictEqual || second.Position != 2 || second.Presence != "left_only" || second.Verdict != VerdictIndependent || *second.LeftEntry != 1 || second.RightEntry != nil {
			t.Errorf("%+v\n%+v", first, second)
		}
		if !strings.Contains(first.Correspond, "order, not identity") {
			t.Errorf("correspondence %q", first.Correspond)
		}
	})
}

func TestWebSocketInventory(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("é", 100) // 200 bytes
	c := parseFile(t, writeWS(t, dir, "inv.har", []wsConn{{url: wsURL, frames: []wsFrame{{Send, 1, "hello"}, {Receive, 1, long}, {Receive, 2, "\x01\x02"}, {Send, 9, ""}}}}))
	inv := c.Entries[0].WebSocket
	if inv.Inventory != InventoryPartial {
		t.Errorf("before a completeness declaration the inventory is partial: %s", inv.Inventory)
	}
	inv.SetCompleteness(Complete)
	want := map[string]map[string]int{Send: {"1": 1, "9": 1}, Receive: {"1": 1, "2": 1}}
	if fmt.Sprint(inv.Counts) != fmt.Sprint(want) || *inv.FrameCount != 4 || inv.PayloadBytes[Send] != "5" || inv.PayloadBytes[Receive] != "202" || inv.Inventory != InventoryComplete {
		t.Errorf("inventory %+v", inv)
	}
	if *inv.FirstTimeS != 1764439200.0 || *inv.LastTimeS != 1764439200.3 {
		t.Errorf("times %v %v", *inv.FirstTimeS, *inv.LastTimeS)
	}
	f := inv.List()[1]
	if f.Position != 1 || f.ConnectionPosition != 2 || !f.TextPreviewTruncated || len(*f.TextPreview) != MaxPreviewBytes || f.PayloadSize != "200" {
		t.Errorf("frame %+v", f)
	}
	// Records the producer could not describe: an undecodable base64
	// payload, an unknown type and Chrome's error records.
	raw := `{"log":{"entries":[{"request":{"method":"GET","url":"wss://x.test/s"},"response":{"status":101,"content":{}},"_webSocketMessages":[{"type":"receive","opcode":2,"data":"!!","time":1},{"type":"bogus"},{"type":"error","opcode":-1,"data":"closed","time":2},{"type":"send","time":3}]}]}}`
	c2, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	inv = c2.Entries[0].WebSocket
	inv.SetCompleteness(Complete)
	if inv.Inventory != InventoryPartial || inv.UndecodableRecords != 1 || inv.ErrorRecords != 1 || *inv.FrameCount != 2 || inv.PayloadUnknown != 2 {
		t.Errorf("inventory %+v", inv)
	}
	if fs := inv.List(); fs[0].Payload != PayloadUndecodable || fs[1].Payload != PayloadUnavailable || fs[1].Opcode != nil || inv.Counts[Send]["unknown"] != 1 {
		t.Errorf("frames %+v", fs)
	}
	// A ws: URL without _webSocketMessages is a connection whose frames
	// are unavailable; an empty array is zero recorded frames.
	c3, _ := Parse([]byte(`{"log":{"entries":[{"request":{"method":"GET","url":"ws://x.test/a"},"response":{"status":101,"content":{}}},{"request":{"method":"GET","url":"ws://x.test/b"},"response":{"status":101,"content":{}},"_webSocketMessages":[]},{"request":{"method":"GET","url":"ws://x.test/c"},"response":{"status":101,"content":{}},"_webSocketMessages":null}]}}`))
	if a, b, n := c3.Entries[0].WebSocket, c3.Entries[1].WebSocket, c3.Entries[2].WebSocket; a.Frames != "unavailable" || b.Frames != "recorded" || *b.FrameCount != 0 || n.Frames != "unavailable" {
		t.Errorf("%+v %+v %+v", a, b, n)
	}
}

// TestUnknownsStayUnknown: time -1, status null or -1, a null method and an
// undecodable base64 body are counted as unknown, never 0 or "".
func TestUnknownsStayUnknown(t *testing.T) {
	raw := `{"log":{"entries":[
 {"time":-1,"request":{"method":"GET","url":"u"},"response":{"status":200,"content":{"size":3,"mimeType":"m","text":"abc"}}},
 {"time":4,"request":{"method":"GET","url":"u"},"response":{"status":null,"content":{"mimeType":"m"}}},
 {"time":6,"request":{"method":null,"url":"u"},"response":{"status":200,"content":{"mimeType":"m"}}},
 {"time":8,"request":{"url":"u"},"response":{"status":200,"content":{"mimeType":"m"}}},
 {"time":2,"request":{"method":"GET","url":"u"},"response":{"status":200,"content":{"size":2,"mimeType":"m","text":"!!","encoding":"base64"}}},
 {"time":1,"request":{"method":"GET","url":"u"},"response":{"status":-1,"content":{"size":0,"mimeType":"m","text":""}}}
]}}`
	c, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	// status -1 is HAR's "not available": unknown like null. The two
	// entries without a method count as method_unknown and their absent
	// sizes and bodies count too: every entry read is counted.
	want := Unknowns{Method: 2, Time: 1, Status: 2, Size: 3, BodiesAbsent: 3, BodiesUndecodable: 1}
	if c.Unknowns != want {
		t.Errorf("unknowns %+v, want %+v", c.Unknowns, want)
	}
	if len(c.Unresolved) != 2 || c.Unresolved[0].Index != 2 || c.Unresolved[1].Index != 3 || !strings.Contains(c.Unresolved[0].Reason, "request.method") {
		t.Errorf("unresolved %+v", c.Unresolved)
	}
	if len(c.Entries) != 4 || c.Entries[3].Status != nil || c.Entries[2].Body != BodyUndecodable || c.Entries[2].BodySHA256 != "" || c.Entries[0].TimeMS != nil || c.Entries[1].Status != nil {
		t.Errorf("entries %+v", c.Entries)
	}
	gs, _ := Groups(context.Background(), c, 10)
	if len(gs) != 1 {
		t.Fatalf("%d groups", len(gs))
	}
	g := gs[0]
	if *g.TimeMinMS != 1 || *g.TimeMaxMS != 4 || *g.TimeTotalMS != 7 || g.TimeUnknown != 1 || g.Statuses["unknown"] != 2 || g.Statuses["-1"] != 0 || g.Statuses["0"] != 0 || g.StatusUnknown != 2 || g.BodiesUndecodable != 1 || g.SizeTotal != "5" || g.SizeUnknown != 1 {
		t.Errorf("group %+v", g)
	}
	b0, _ := json.Marshal(c.Entries[0])
	b1, _ := json.Marshal(c.Entries[1])
	if strings.Contains(string(b0), "time_ms") || !strings.Contains(string(b1), `"status":null`) {
		t.Errorf("rows %s %s", b0, b1)
	}
	// An unknown status never proves equality or difference.
	ds := mustCompare(t, c, c, Complete, Complete)
	if ds[0].Verdict != VerdictOmissions {
		t.Errorf("self comparison with unknowns: %+v", ds[0])
	}
}

// TestSizesAreEvidence: in two complete captures the same URL with content
// sizes 5,000 and 9,000 and no retained bodies is a difference, and the
// rows carry the sizes.
func TestSizesAreEvidence(t *testing.T) {
	doc := func(sizes ...int) *Capture {
		var es []string
		for _, s := range sizes {
			es = append(es, fmt.Sprintf(`{"time":1,"request":{"method":"GET","url":"https://x.test/big"},"response":{"status":200,"content":{"size":%d,"mimeType":"application/octet-stream"}}}`, s))
		}
		c, err := Parse([]byte(`{"log":{"entries":[` + strings.Join(es, ",") + `]}}`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ds := mustCompare(t, doc(5000), doc(9000), Complete, Complete)
	if ds[0].Verdict != VerdictIndependent || len(ds[0].LeftAbsent) != 1 || ds[0].LeftAbsent[0].Size != "5000" || ds[0].RightAbsent[0].Size != "9000" {
		t.Errorf("%+v", ds[0])
	}
	if ds := mustCompare(t, doc(5000), doc(5000), Complete, Complete); ds[0].Verdict != VerdictOmissions {
		t.Errorf("same sizes, no bodies: %+v", ds[0])
	}
	// Partial left: 9,000 is not among the complete right's sizes.
	if ds := mustCompare(t, doc(9000), doc(5000, 5000), Partial, Complete); ds[0].Verdict != VerdictIndependent {
		t.Errorf("partial: %+v", ds[0])
	}
	if ds := mustCompare(t, doc(5000), doc(5000, 9000), Partial, Complete); ds[0].Verdict != VerdictOmissions {
		t.Errorf("partial contained: %+v", ds[0])
	}
}

// TestLargeGroupAndCancellation: 32,000 identical GETs compare equal to
// themselves (the matcher is linear; speed is in BenchmarkCompare), and a
// cancelled context stops parsing and comparison with CANCELLED.
func TestLargeGroupAndCancellation(t *testing.T) {
	data := identicalGETs(32000)
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	ds := mustCompare(t, c, c, Complete, Complete)
	if len(ds) != 1 || ds[0].Verdict != VerdictEqual || ds[0].LeftCount != 32000 {
		t.Fatalf("%+v", ds[0].GroupKey)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ParseContext(ctx, data); err == nil || !strings.Contains(err.Error(), "cancel") {
		t.Errorf("parse: %v", err)
	}
	if _, err := Compare(ctx, c, c, Complete, Complete); err == nil || !strings.Contains(err.Error(), "cancel") {
		t.Errorf("compare: %v", err)
	}
	if _, err := Groups(ctx, c, 1); err == nil {
		t.Errorf("groups: %v", err)
	}
}
