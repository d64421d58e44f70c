//go:build unix

package har

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// serverFrame is one message the echo server read or wrote.
type serverFrame struct {
	opcode  int
	payload []byte
}

// echoServer serves a page whose script opens a WebSocket to /ws and sends
// text and binary messages; /ws echoes each one and records, in order,
// what it read (the browser's sent frames) and wrote (received frames).
type echoServer struct {
	mu        sync.Mutex
	read      []serverFrame
	wrote     []serverFrame
	done      chan struct{}
	doneOnce  sync.Once
	expect    int
	pageHTML  string
	serverURL string
}

const chromePage = `<!doctype html><title>ws</title><script>
const ws = new WebSocket("ws://" + location.host + "/ws");
ws.binaryType = "arraybuffer";
const msgs = [];
for (let i = 0; i < 20; i++) msgs.push("text message " + i + " " + "é€".repeat(i));
msgs.push("x".repeat(70000));
const bins = [new Uint8Array([0, 1, 2, 255]), new Uint8Array(4096).map((_, i) => (i * 7) & 255)];
let got = 0;
ws.onmessage = () => { got++; if (got === msgs.length + bins.length) document.title = "done"; };
ws.onopen = () => {
  msgs.forEach((m, i) => { ws.send(m); if (i < bins.length) ws.send(bins[i].buffer); });
};
</script>`

// chromeMessages is the number of messages chromePage sends.
const chromeMessages = 23

func (s *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ws" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, chromePage)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 24)
	ctx := r.Context()
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		op := 1
		if typ == websocket.MessageBinary {
			op = 2
		}
		s.mu.Lock()
		s.read = append(s.read, serverFrame{op, b})
		s.mu.Unlock()
		if err := c.Write(ctx, typ, b); err != nil {
			return
		}
		s.mu.Lock()
		s.wrote = append(s.wrote, serverFrame{op, b})
		n := len(s.wrote)
		s.mu.Unlock()
		if n == s.expect {
			s.doneOnce.Do(func() { close(s.done) })
		}
	}
}

// cdp is a minimal Chrome DevTools Protocol client over one WebSocket.
type cdp struct {
	c      *websocket.Conn
	mu     sync.Mutex
	nextID int
	wait   map[int]chan json.RawMessage
	events chan cdpEvent
}

type cdpEvent struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

func dialCDP(ctx context.Context, url string) (*cdp, error) {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(1 << 26)
	p := &cdp{c: c, wait: map[int]chan json.RawMessage{}, events: make(chan cdpEvent, 4096)}
	go func() {
		defer close(p.events)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
				cdpEvent
			}
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			if m.ID != 0 {
				p.mu.Lock()
				ch := p.wait[m.ID]
				delete(p.wait, m.ID)
				p.mu.Unlock()
				if ch != nil {
					if len(m.Error) > 0 {
						ch <- append(json.RawMessage(`{"error":`), append(m.Error, '}')...)
					} else {
						ch <- m.Result
					}
				}
				continue
			}
			p.events <- m.cdpEvent
		}
	}()
	return p, nil
}

func (p *cdp) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	ch := make(chan json.RawMessage, 1)
	p.wait[id] = ch
	p.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	if err := p.c.Write(ctx, websocket.MessageText, b); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if bytes.HasPrefix(r, []byte(`{"error":`)) {
			return nil, fmt.Errorf("%s: %s", method, r)
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startChromium starts Debian's Chromium headless with the DevTools
// protocol on an ephemeral port and returns the browser endpoint. The
// test skips only when no Chromium is installed or it cannot start.
func startChromium(t *testing.T) string {
	t.Helper()
	var bin string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("Chromium is not installed (apt-get install chromium); the real-browser capture check needs it")
	}
	args := []string{"--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--remote-debugging-port=0", "--user-data-dir=" + t.TempDir(), "about:blank"}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("Chromium cannot be started: %v", err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		// Chromium's helpers share its process group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	endpoint := make(chan string, 1)
	var tail []string
	go func() {
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				endpoint <- m[1]
				sent = true
			} else if !sent && len(tail) < 20 {
				tail = append(tail, sc.Text())
			}
		}
		_ = cmd.Wait()
		close(exited)
		if !sent {
			close(endpoint)
		}
	}()
	select {
	case ep, ok := <-endpoint:
		if !ok {
			t.Skipf("Chromium exited before listening for DevTools: %s", strings.Join(tail, "\n"))
		}
		return ep
	case <-time.After(90 * time.Second):
		t.Skipf("Chromium did not announce its DevTools endpoint within 90 s: %s", strings.Join(tail, "\n"))
	}
	return ""
}

// TestChromiumWebSocketCapture drives headless Chromium over the DevTools
// protocol against a local echo server, builds the HAR entry from the
// Network.webSocket* events as Chrome DevTools' HAR exporter does
// (front_end/models/har/Log.ts: _webSocketMessages {type, time, opcode,
// data} with time the request's pseudo wall time), and checks the parsed
// inventory equals what the server read and wrote, frame by frame.
func TestChromiumWebSocketCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	endpoint := startChromium(t)
	srv := &echoServer{done: make(chan struct{}), expect: chromeMessages}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	base := "http://" + ln.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := dialCDP(ctx, endpoint)
	if err != nil {
		t.Fatalf("DevTools connection: %v", err)
	}
	defer p.c.CloseNow()
	r, err := p.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	json.Unmarshal(r, &target)
	r, err = p.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(r, &att)
	if _, err := p.call(ctx, att.SessionID, "Network.enable", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.call(ctx, att.SessionID, "Page.navigate", map[string]any{"url": base + "/"}); err != nil {
		t.Fatal(err)
	}

	// Collect the WebSocket events until the browser has reported every
	// frame the server read and wrote.
	type frameEvent struct {
		RequestID string  `json:"requestId"`
		Timestamp float64 `json:"timestamp"`
		Response  struct {
			Opcode      int    `json:"opcode"`
			Mask        bool   `json:"mask"`
			PayloadData string `json:"payloadData"`
		} `json:"response"`
	}
	var (
		wsURL, reqID      string
		issueTime, wallTS float64
		status            int
		statusText        string
		messages          []map[string]any
		sent, received    int
		serverDone        = srv.done
	)
	for sent < chromeMessages || received < chromeMessages || serverDone != nil {
		select {
		case <-serverDone:
			serverDone = nil
			continue
		case ev, ok := <-p.events:
			if !ok {
				t.Fatal("the DevTools connection closed")
			}
			switch ev.Method {
			case "Network.webSocketCreated":
				var e struct {
					RequestID string `json:"requestId"`
					URL       string `json:"url"`
				}
				json.Unmarshal(ev.Params, &e)
				reqID, wsURL = e.RequestID, e.URL
			case "Network.webSocketWillSendHandshakeRequest":
				var e struct {
					Timestamp float64 `json:"timestamp"`
					WallTime  float64 `json:"wallTime"`
				}
				json.Unmarshal(ev.Params, &e)
				issueTime, wallTS = e.Timestamp, e.WallTime
			case "Network.webSocketHandshakeResponseReceived":
				var e struct {
					Response struct {
						Status     int    `json:"status"`
						StatusText string `json:"statusText"`
					} `json:"response"`
				}
				json.Unmarshal(ev.Params, &e)
				status, statusText = e.Response.Status, e.Response.StatusText
			case "Network.webSocketFrameSent", "Network.webSocketFrameReceived":
				var e frameEvent
				json.Unmarshal(ev.Params, &e)
				if e.RequestID != reqID {
					continue
				}
				typ := "send"
				if ev.Method == "Network.webSocketFrameReceived" {
					typ = "receive"
					received++
				} else {
					sent++
				}
				// NetworkRequest.pseudoWallTime.
				tm := e.Timestamp
				if wallTS != 0 {
					tm = wallTS - issueTime + e.Timestamp
				}
				messages = append(messages, map[string]any{"type": typ, "time": tm, "opcode": e.Response.Opcode, "data": e.Response.PayloadData})
			case "Network.webSocketFrameError":
				t.Fatalf("WebSocket frame error: %s", ev.Params)
			}
		case <-ctx.Done():
			t.Fatalf("the browser reported %d sent and %d received frames of %d before the deadline", sent, received, chromeMessages)
		}
	}
	entry := map[string]any{
		"startedDateTime":    time.Unix(0, int64(wallTS*1e9)).UTC().Format(time.RFC3339Nano),
		"time":               0,
		"request":            map[string]any{"method": "GET", "url": wsURL, "httpVersion": "HTTP/1.1", "headers": []any{}, "queryString": []any{}, "cookies": []any{}, "headersSize": -1, "bodySize": 0},
		"response":           map[string]any{"status": status, "statusText": statusText, "httpVersion": "HTTP/1.1", "headers": []any{}, "cookies": []any{}, "content": map[string]any{"size": 0, "mimeType": "x-unknown"}, "redirectURL": "", "headersSize": -1, "bodySize": 0},
		"cache":              map[string]any{},
		"timings":            map[string]any{"blocked": -1, "dns": -1, "ssl": -1, "connect": -1, "send": 0, "wait": 0, "receive": 0},
		"_resourceType":      "websocket",
		"_webSocketMessages": messages,
	}
	b, _ := json.MarshalIndent(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "WebInspector", "version": "537.36"}, "pages": []any{}, "entries": []any{entry}}}, "", " ")
	path := filepath.Join(t.TempDir(), "chromium.har")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	c := parseFile(t, path)
	if len(c.Entries) != 1 || c.Entries[0].WebSocket == nil {
		t.Fatalf("entries %+v", c.Entries)
	}
	e := c.Entries[0]
	inv := e.WebSocket
	inv.SetCompleteness(Complete)
	if e.URL != "ws://"+ln.Addr().String()+"/ws" || e.ResourceType != "websocket" || e.Status == nil || *e.Status != 101 || inv.Inventory != InventoryComplete {
		t.Fatalf("entry %+v inventory %+v", e, inv)
	}
	srv.mu.Lock()
	read, wrote := append([]serverFrame(nil), srv.read...), append([]serverFrame(nil), srv.wrote...)
	srv.mu.Unlock()
	check := func(dir string, want []serverFrame) {
		got := byDirection(inv, dir)
		if len(got) != len(want) {
			t.Fatalf("%s: inventory has %d frames, the server saw %d", dir, len(got), len(want))
		}
		var bytesTotal int64
		opcodes := map[string]int{}
		for i, f := range got {
			sum := sha256.Sum256(want[i].payload)
			if f.Opcode == nil || *f.Opcode != want[i].opcode || f.PayloadSHA256 != hex.EncodeToString(sum[:]) || f.PayloadSize != strconv.Itoa(len(want[i].payload)) || f.Position != i+1 {
				t.Errorf("%s frame %d: %+v, server saw opcode %d, %d bytes", dir, i+1, f, want[i].opcode, len(want[i].payload))
			}
			bytesTotal += int64(len(want[i].payload))
			opcodes[strconv.Itoa(want[i].opcode)]++
		}
		if inv.PayloadBytes[dir] != strconv.FormatInt(bytesTotal, 10) || fmt.Sprint(inv.Counts[dir]) != fmt.Sprint(opcodes) {
			t.Errorf("%s: bytes %s counts %v, server saw %d bytes, %v", dir, inv.PayloadBytes[dir], inv.Counts[dir], bytesTotal, opcodes)
		}
	}
	check(Send, read)
	check(Receive, wrote)
	if inv.FirstTimeS == nil || inv.LastTimeS == nil || *inv.FirstTimeS < wallTS-1 || *inv.LastTimeS < *inv.FirstTimeS {
		t.Errorf("times %v..%v, handshake wall time %v", inv.FirstTimeS, inv.LastTimeS, wallTS)
	}
	// The browser's binary payloads arrive base64-encoded.
	if bin := byDirection(inv, Send)[1]; bin.Opcode == nil || *bin.Opcode != 2 || bin.TextPreview != nil {
		t.Errorf("binary frame %+v", bin)
	}
	// The capture compares equal to itself and differs from a copy with
	// one received payload changed.
	ds := mustCompare(t, c, c, Complete, Complete)
	if len(ds) != 1 || ds[0].Verdict != VerdictEqual {
		t.Errorf("self comparison %+v", ds)
	}
	messages[5]["data"] = "changed"
	b2, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "entries": []any{entry}}})
	c2, err := Parse(b2)
	if err != nil {
		t.Fatal(err)
	}
	_, cd := onlyConn(t, mustCompare(t, c, c2, Complete, Complete))
	if cd.FirstDifference == nil || cd.FirstDifference.Left.ConnectionPosition != 6 {
		t.Errorf("changed frame 6: %+v", cd.FirstDifference)
	}
}
