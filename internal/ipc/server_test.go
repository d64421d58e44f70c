package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// fakeService answers "echo" (data = arguments), "block" (waits for
// release or cancellation), "wait" (the same, answering a result either
// way), "big" (a result of size bytes) and counts
// sessions.
type fakeService struct {
	release   chan struct{}
	cancelled atomic.Int32
	started   atomic.Int32
	opened    atomic.Int32
	closed    atomic.Int32
}

func newFake() *fakeService { return &fakeService{release: make(chan struct{})} }

func (f *fakeService) InstanceID() string { return "inst-1" }
func (f *fakeService) Version() string    { return "test" }
func (f *fakeService) NewSession(p Peer) Session {
	f.opened.Add(1)
	return &fakeSession{f: f}
}

type fakeSession struct{ f *fakeService }

func (s *fakeSession) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	switch method {
	case "echo":
		return contract.NewResult("live", time.Time{}, args), nil
	case "block":
		s.f.started.Add(1)
		select {
		case <-s.f.release:
			return contract.NewResult("live", time.Time{}, map[string]any{"released": true}), nil
		case <-ctx.Done():
			s.f.cancelled.Add(1)
			return nil, ctx.Err()
		}
	case "wait":
		// a bounded wait that answers when its request is cancelled
		s.f.started.Add(1)
		select {
		case <-s.f.release:
			return contract.NewResult("live", time.Time{}, map[string]any{"ended": "released"}), nil
		case <-ctx.Done():
			s.f.cancelled.Add(1)
			return contract.NewResult("live", time.Time{}, map[string]any{"ended": "cancelled"}), nil
		}
	case "big":
		var a struct{ Size int }
		json.Unmarshal(args, &a)
		return contract.NewResult("live", time.Time{}, map[string]any{"blob": strings.Repeat("x", a.Size)}), nil
	}
	return nil, contract.Errorf(contract.CodeInvalidArgument, "unknown method")
}
func (s *fakeSession) Close() { s.f.closed.Add(1) }

// isolate points the endpoint at a fresh private directory.
func isolate(t *testing.T) string {
	t.Helper()
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("INQUEST_CONFIG", "")
	return Path()
}

func startServer(t *testing.T, svc Service) (*Server, string) {
	t.Helper()
	path := isolate(t)
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(svc, nil)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, path
}

func dialClient(t *testing.T, path string) *Client {
	t.Helper()
	c, err := Connect(context.Background(), ConnectOptions{Path: path, BridgeVersion: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestHandshakeAndCall(t *testing.T) {
	f := newFake()
	_, path := startServer(t, f)
	c := dialClient(t, path)
	if c.Welcome.BackendInstanceID != "inst-1" || c.Welcome.ApplicationVersion != "test" || c.Welcome.IPCMajor != 1 {
		t.Fatalf("welcome = %+v", c.Welcome)
	}
	if c.Peer.PID == 0 || c.Peer.UID < 0 {
		t.Fatalf("peer = %+v", c.Peer)
	}
	res, err := c.Call(context.Background(), "echo", json.RawMessage(`{"n":12345678901234567}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Data.(json.RawMessage)); got != `{"n":12345678901234567}` {
		t.Fatalf("data = %s (integers must pass through exactly)", got)
	}
	_, err = c.Call(context.Background(), "nope", nil)
	if contract.CodeOf(err) != contract.CodeInvalidArgument {
		t.Fatalf("unknown method: %v", err)
	}
}

func TestInFlightLimit(t *testing.T) {
	f := newFake()
	_, path := startServer(t, f)
	c := dialClient(t, path)
	var wg sync.WaitGroup
	errs := make(chan error, MaxInFlight)
	for i := 0; i < MaxInFlight; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Call(context.Background(), "block", nil)
			errs <- err
		}()
	}
	waitFor(t, func() bool { return f.started.Load() == MaxInFlight })
	_, err := c.Call(context.Background(), "echo", nil)
	if contract.CodeOf(err) != contract.CodeBusy {
		t.Fatalf("9th request: %v, want BUSY", err)
	}
	close(f.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Call(context.Background(), "echo", nil); err != nil {
		t.Fatalf("after the burst: %v", err)
	}
}

// TestConnectionLimit: 4 MCP bridges are served, a fifth bridge gets BUSY;
// local CLI connections have their own allowance of 2, so a local user can
// still confirm with 4 bridges connected; a third local one gets BUSY.
func TestConnectionLimit(t *testing.T) {
	f := newFake()
	srv, path := startServer(t, f)
	dial := func(client string) (*Client, error) {
		c, err := Connect(context.Background(), ConnectOptions{Path: path, BridgeVersion: "t", Client: client})
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}
	var cs []*Client
	for i := 0; i < MaxConns; i++ {
		c, err := dial(ClientMCPBridge)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	if n := srv.Conns(); n != MaxConns {
		t.Fatalf("Conns = %d", n)
	}
	_, err := dial(ClientMCPBridge)
	if contract.CodeOf(err) != contract.CodeBusy {
		t.Fatalf("5th bridge: %v, want BUSY", err)
	}
	var locals []*Client
	for i := 0; i < MaxLocalConns; i++ {
		c, err := dial("")
		if err != nil {
			t.Fatalf("local connection %d beside %d bridges: %v", i+1, MaxConns, err)
		}
		if _, err := c.Call(context.Background(), "echo", nil); err != nil {
			t.Fatal(err)
		}
		locals = append(locals, c)
	}
	if b, l, _ := srv.ConnsByClass(); b != MaxConns || l != MaxLocalConns {
		t.Fatalf("ConnsByClass = %d, %d", b, l)
	}
	if _, err := dial(""); contract.CodeOf(err) != contract.CodeBusy {
		t.Fatalf("3rd local connection: %v, want BUSY", err)
	}
	// Bridges and CLI commands at their limits: the reserved allowance of
	// local decision connections is still free.
	for i := 0; i < MaxConfirmConns; i++ {
		c, err := dial(ClientLocalConfirm)
		if err != nil {
			t.Fatalf("confirm connection %d beside full bridge and CLI allowances: %v", i+1, err)
		}
		if _, err := c.Call(context.Background(), "echo", nil); err != nil {
			t.Fatal(err)
		}
	}
	if b, l, c := srv.ConnsByClass(); b != MaxConns || l != MaxLocalConns || c != MaxConfirmConns {
		t.Fatalf("ConnsByClass = %d, %d, %d", b, l, c)
	}
	if _, err := dial(ClientLocalConfirm); contract.CodeOf(err) != contract.CodeBusy {
		t.Fatalf("3rd confirm connection: %v, want BUSY", err)
	}
	locals[0].Close()
	waitFor(t, func() bool { _, l, _ := srv.ConnsByClass(); return l == MaxLocalConns-1 })
	cs[0].Close()
	waitFor(t, func() bool { b, _ := srv.ConnsByKind(); return b == MaxConns-1 })
	c, err := dial(ClientMCPBridge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
}

func TestCancelAndLoss(t *testing.T) {
	f := newFake()
	srv, path := startServer(t, f)
	c := dialClient(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, func() bool { return f.started.Load() == 1 })
		cancel()
	}()
	_, err := c.Call(ctx, "block", nil)
	if contract.CodeOf(err) != contract.CodeOutcomeUnknown {
		t.Fatalf("cancelled call: %v", err)
	}
	waitFor(t, func() bool { return f.cancelled.Load() == 1 })
	if _, err := c.Call(context.Background(), "echo", nil); err != nil {
		t.Fatalf("the connection survives a cancel: %v", err)
	}

	dead, stop := context.WithCancel(context.Background())
	stop()
	if _, err := c.Call(dead, "echo", nil); contract.CodeOf(err) != contract.CodeCancelled {
		t.Fatalf("call with a cancelled context: %v, want CANCELLED (never sent)", err)
	}

	c.Timeout = 200 * time.Millisecond
	_, err = c.Call(context.Background(), "block", nil)
	if contract.CodeOf(err) != contract.CodeOutcomeUnknown {
		t.Fatalf("timed out call: %v", err)
	}
	c.Timeout = ResponseTimeout

	// The server goes away mid-call: OUTCOME_UNKNOWN, session closed.
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "block", nil)
		errc <- err
	}()
	waitFor(t, func() bool { return f.started.Load() == 3 })
	srv.Close()
	if err := <-errc; contract.CodeOf(err) != contract.CodeOutcomeUnknown {
		t.Fatalf("call during server close: %v", err)
	}
	if f.closed.Load() != 1 {
		t.Fatalf("sessions closed = %d", f.closed.Load())
	}
	// A call on the connection already lost is never written: a
	// retryable BACKEND_UNAVAILABLE that NotSent recognizes, not
	// OUTCOME_UNKNOWN (nothing can have taken effect).
	if _, err := c.Call(context.Background(), "echo", nil); contract.CodeOf(err) != contract.CodeBackendUnavailable || !NotSent(err) || !contract.AsError(err).Retryable {
		t.Fatalf("call on a lost connection: %v", err)
	}
}

// rawConn is a handshaken connection driven frame by frame (a local CLI
// client). Connections of earlier subtests may still count against the
// local allowance until the server notices their close: BUSY is retried.
func rawConn(t *testing.T, path string, hello bool) net.Conn {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // ends a hang only
	for {
		c, _, err := Dial(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		if !hello {
			t.Cleanup(func() { c.Close() })
			return c
		}
		WriteFrame(c, []byte(`{"kind":"hello","ipc_major":1,"ipc_minor":0,"bridge_version":"raw"}`))
		p, err := ReadFrame(c)
		if err == nil && bytes.Contains(p, []byte(`"welcome"`)) {
			t.Cleanup(func() { c.Close() })
			return c
		}
		c.Close()
		if err != nil || !bytes.Contains(p, []byte(`"BUSY"`)) || time.Now().After(deadline) {
			t.Fatalf("handshake: %s %v", p, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// expectClosed reads until the server closes the connection.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(2 * time.Minute)) // ends a hang only
	for {
		_, err := ReadFrame(c)
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "connection reset") {
			return
		}
		t.Fatalf("connection not closed by the server: %v", err)
	}
}

func TestProtocolViolationsClose(t *testing.T) {
	f := newFake()
	_, path := startServer(t, f)
	bad := []struct {
		name string
		raw  []byte
	}{
		{"zero length", rawFrame(0, nil)},
		{"oversized", rawFrame(MaxFrame+1, nil)},
		{"invalid utf8", rawFrame(4, []byte{'"', 0xff, 0xfe, '"'})},
		{"malformed json", frame(`{"kind":"request",`)},
		{"unknown envelope field", frame(`{"kind":"request","request_id":"1","method":"echo","arguments":{},"x":1}`)},
		{"empty id", frame(`{"kind":"request","request_id":"","method":"echo","arguments":{}}`)},
		{"unknown kind", frame(`{"kind":"subscribe"}`)},
		{"second hello", frame(`{"kind":"hello","ipc_major":1,"ipc_minor":0,"bridge_version":"x"}`)},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c := rawConn(t, path, true)
			c.Write(tc.raw)
			expectClosed(t, c)
		})
	}
	t.Run("duplicate pending id", func(t *testing.T) {
		c := rawConn(t, path, true)
		req := frame(`{"kind":"request","request_id":"d","method":"block","arguments":{}}`)
		c.Write(append(append([]byte{}, req...), req...))
		expectClosed(t, c)
	})
	t.Run("request before hello", func(t *testing.T) {
		c := rawConn(t, path, false)
		c.Write(frame(`{"kind":"request","request_id":"1","method":"echo","arguments":{}}`))
		expectClosed(t, c)
	})
	t.Run("major mismatch", func(t *testing.T) {
		c := rawConn(t, path, false)
		c.Write(frame(`{"kind":"hello","ipc_major":2,"ipc_minor":0,"bridge_version":"x"}`))
		p, err := ReadFrame(c)
		if err != nil || !bytes.Contains(p, []byte(`"reject"`)) || !bytes.Contains(p, []byte(`BACKEND_UNAVAILABLE`)) {
			t.Fatalf("got %s %v, want a reject", p, err)
		}
		expectClosed(t, c)
	})
	t.Run("cancel of unknown id is harmless", func(t *testing.T) {
		c := rawConn(t, path, true)
		c.Write(frame(`{"kind":"cancel","request_id":"never"}`))
		c.Write(frame(`{"kind":"request","request_id":"1","method":"echo","arguments":{"k":1}}`))
		p, err := ReadFrame(c)
		if err != nil || !bytes.Contains(p, []byte(`"request_id":"1"`)) {
			t.Fatalf("got %s %v", p, err)
		}
	})
	t.Run("fragmented and coalesced requests", func(t *testing.T) {
		c := rawConn(t, path, true)
		all := append(frame(`{"kind":"request","request_id":"a","method":"echo","arguments":{"i":1}}`), frame(`{"kind":"request","request_id":"b","method":"echo","arguments":{"i":2}}`)...)
		for _, b := range all { // one byte per write
			if _, err := c.Write([]byte{b}); err != nil {
				t.Fatal(err)
			}
		}
		got := map[string]bool{}
		for i := 0; i < 2; i++ {
			p, err := ReadFrame(c)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Decode(p)
			if err != nil {
				t.Fatal(err)
			}
			got[m.(*Response).RequestID] = true
		}
		if !got["a"] || !got["b"] {
			t.Fatalf("responses %v", got)
		}
	})
}

// TestPeerStopsReading: a client that sends requests for large results and
// never reads is dropped after WriteTimeout, while another client is served
// throughout; pending replies stay bounded by MaxInFlight.
func TestPeerStopsReading(t *testing.T) {
	old := WriteTimeout
	WriteTimeout = 500 * time.Millisecond
	t.Cleanup(func() { WriteTimeout = old })
	f := newFake()
	srv, path := startServer(t, f)
	stalled := rawConn(t, path, true)
	if uc, ok := stalled.(*net.UnixConn); ok {
		uc.SetReadBuffer(4096)
	}
	var buf bytes.Buffer
	for i := 0; i < 20; i++ {
		WriteFrame(&buf, encode(Request{Kind: KindRequest, RequestID: "r" + string(rune('a'+i)), Method: "big", Arguments: json.RawMessage(`{"Size":1048576}`)}))
	}
	go stalled.Write(buf.Bytes())
	other := dialClient(t, path)
	deadline := time.Now().Add(2 * time.Minute) // ends a hang only
	for srv.Conns() == 2 {
		if _, err := other.Call(context.Background(), "echo", json.RawMessage(`{"alive":true}`)); err != nil {
			t.Fatalf("the other connection was not served while a peer stalled: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the stalled peer was never dropped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if f.closed.Load() != 1 {
		t.Fatalf("the stalled connection's session was not closed (%d)", f.closed.Load())
	}
}

func TestListenRefusesLiveSocketAndReplacesStale(t *testing.T) {
	path := isolate(t)
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil {
		t.Fatal("a second listener replaced a live one")
	}
	// A stale socket (nobody listens) is replaced.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, _, err := Dial(context.Background(), path); !errors.Is(err, ErrNoHost) {
		t.Fatalf("dial of a stale socket: %v, want ErrNoHost", err)
	}
	ln2, err := Listen(path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln2.Close()
}

// waitFor polls cond until it holds; the 2-minute bound only ends a hang
// (a loaded machine running -race can stall the server for seconds).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 2 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCancellationRaces cancels calls at random points around their
// completion: every outcome is a result, CANCELLED, OUTCOME_UNKNOWN or BUSY
// (abandoned requests still count against the host's 8 until they finish),
// no reply reaches the wrong caller, and the connection stays usable.
func TestCancellationRaces(t *testing.T) {
	f := newFake()
	_, path := startServer(t, f)
	c := dialClient(t, path)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration((i*7+g)%300)*time.Microsecond)
				arg := json.RawMessage(`{"g":` + strconv.Itoa(g) + `,"i":` + strconv.Itoa(i) + `}`)
				res, err := c.Call(ctx, "echo", arg)
				cancel()
				switch {
				case err == nil:
					if string(res.Data.(json.RawMessage)) != string(arg) {
						t.Errorf("reply for %s was %s", arg, res.Data)
					}
				case contract.CodeOf(err) == contract.CodeCancelled, contract.CodeOf(err) == contract.CodeOutcomeUnknown, contract.CodeOf(err) == contract.CodeBusy:
				default:
					t.Errorf("unexpected error %v", err)
				}
			}
		}(g)
	}
	wg.Wait()
	var err error
	waitFor(t, func() bool {
		_, err = c.Call(context.Background(), "echo", nil)
		return contract.CodeOf(err) != contract.CodeBusy
	})
	if err != nil {
		t.Fatalf("connection after the races: %v", err)
	}
}

// TestReplyOnCancel: a call whose context carries WithReplyOnCancel and
// ends after dispatch sends cancel and returns the host's answer (the
// outcome is known), and the connection stays as it was; without the
// mark the same cancellation gives OUTCOME_UNKNOWN at once.
func TestReplyOnCancel(t *testing.T) {
	f := newFake()
	_, path := startServer(t, f)
	c := dialClient(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, func() bool { return f.started.Load() == 1 })
		cancel()
	}()
	res, err := c.Call(WithReplyOnCancel(ctx), "wait", nil)
	if err != nil {
		t.Fatalf("cancelled call with WithReplyOnCancel: %v", err)
	}
	var d struct{ Ended string }
	if json.Unmarshal(res.Data.(json.RawMessage), &d) != nil || d.Ended != "cancelled" {
		t.Fatalf("reply: %s", res.Data)
	}
	if f.cancelled.Load() != 1 || !c.Alive() {
		t.Fatalf("cancel reached the host %d times; connection alive %v", f.cancelled.Load(), c.Alive())
	}
	if _, err := c.Call(context.Background(), "echo", nil); err != nil {
		t.Fatalf("the connection after a replied cancel: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		waitFor(t, func() bool { return f.started.Load() == 2 })
		cancel()
	}()
	if _, err := c.Call(ctx, "wait", nil); contract.CodeOf(err) != contract.CodeOutcomeUnknown {
		t.Fatalf("cancelled call without the mark: %v", err)
	}
}
