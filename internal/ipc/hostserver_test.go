package ipc_test

import (
	"context"
	"encoding/json"
	"github.com/inquest-dev/inquest/internal/ipc"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
)

func startHost(t *testing.T) (*host.Host, *ipc.HostEndpoint) {
	t.Helper()
	ipc.Isolate(t)
	h, err := host.New(host.Options{Version: "test", Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ep := ipc.NewHostEndpoint(h.IPCService(), ipc.Path(), nil)
	if err := ep.Enable(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Disable(); h.Stop() })
	return h, ep
}

func statusMCP(t *testing.T, c *ipc.Client) map[string]any {
	t.Helper()
	res, err := c.Call(context.Background(), "get_status", nil)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		MCP      map[string]any `json:"mcp"`
		Sessions int            `json:"sessions"`
	}
	if err := json.Unmarshal(res.Data.(json.RawMessage), &d); err != nil {
		t.Fatal(err)
	}
	d.MCP["sessions"] = float64(d.Sessions)
	return d.MCP
}

func listPage(t *testing.T, c *ipc.Client, args string) (rows []json.RawMessage, cursor string) {
	t.Helper()
	res, err := c.Call(context.Background(), "list_processes", json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Rows []json.RawMessage `json:"rows"`
		Next *string           `json:"next_cursor"`
	}
	json.Unmarshal(res.Data.(json.RawMessage), &d)
	if d.Next != nil {
		cursor = *d.Next
	}
	return d.Rows, cursor
}

// TestHostSessionsAreIndependent: two connections to one host share the
// instance id but not their cursors; each connection is one host session,
// closed on disconnect; get_status counts them.
func TestHostSessionsAreIndependent(t *testing.T) {
	h, _ := startHost(t)
	a := ipc.DialClient(t, ipc.Path())
	b := ipc.DialClient(t, ipc.Path())
	if a.Welcome.BackendInstanceID != h.InstanceID || b.Welcome.BackendInstanceID != h.InstanceID {
		t.Fatalf("instance ids %q %q, host %q", a.Welcome.BackendInstanceID, b.Welcome.BackendInstanceID, h.InstanceID)
	}
	if m := statusMCP(t, a); m["connections"] != float64(2) || m["sessions"] != float64(2) || m["listener"] != ipc.StateListening {
		t.Fatalf("status mcp = %v", m)
	}
	const args = `{"limit":1}`
	_, curA := listPage(t, a, args)
	_, curB := listPage(t, b, args)
	if curA == "" || curB == "" {
		t.Fatal("need more than one process for paging")
	}
	// B's own cursor works on B; A's cursor must not page B's listing.
	if _, err := b.Call(context.Background(), "list_processes", json.RawMessage(`{"limit":1,"cursor":"`+curB+`"}`)); err != nil {
		t.Fatalf("own cursor: %v", err)
	}
	_, err := b.Call(context.Background(), "list_processes", json.RawMessage(`{"limit":1,"cursor":"`+curA+`"}`))
	if contract.CodeOf(err) != contract.CodeCursorInvalid {
		t.Fatalf("another connection's cursor: %v, want CURSOR_INVALID", err)
	}
	a.Close()
	ipc.WaitFor(t, func() bool { return h.Sessions() == 1 })
}

// TestListenerToggle: disabling closes the listener and every connection
// (connection-owned objects die with their sessions); enabling opens a new
// listener that takes fresh connections.
func TestListenerToggle(t *testing.T) {
	h, ep := startHost(t)
	c := ipc.DialClient(t, ipc.Path())
	_, cur := listPage(t, c, `{"limit":1}`)
	ep.Disable()
	if ep.State() != ipc.StateDisabled {
		t.Fatalf("state %s", ep.State())
	}
	// Nothing is sent on the closed connection (the write fails or the
	// reader has seen EOF): never OUTCOME_UNKNOWN.
	if _, err := c.Call(context.Background(), "get_status", nil); contract.CodeOf(err) != contract.CodeBackendUnavailable || !ipc.NotSent(err) {
		t.Fatalf("call on a connection closed by disable: %v", err)
	}
	if _, _, err := ipc.Dial(context.Background(), ipc.Path()); err == nil {
		t.Fatal("dial succeeded with the listener disabled")
	}
	ipc.WaitFor(t, func() bool { return h.Sessions() == 0 })
	if err := ep.Enable(); err != nil {
		t.Fatal(err)
	}
	c2 := ipc.DialClient(t, ipc.Path())
	m := statusMCP(t, c2)
	if m["listener_starts"] != float64(2) || m["connections"] != float64(1) {
		t.Fatalf("status after re-enable: %v", m)
	}
	_, err := c2.Call(context.Background(), "list_processes", json.RawMessage(`{"limit":1,"cursor":"`+cur+`"}`))
	if contract.CodeOf(err) != contract.CodeCursorInvalid {
		t.Fatalf("cursor of a closed connection: %v, want CURSOR_INVALID", err)
	}
}

// TestHostKeepsSamplingWhilePeerStalls: a peer that stops reading does not
// stop sampling, and is dropped.
func TestHostKeepsSamplingWhilePeerStalls(t *testing.T) {
	old := ipc.WriteTimeout
	ipc.WriteTimeout = 500 * time.Millisecond
	t.Cleanup(func() { ipc.WriteTimeout = old })
	h, ep := startHost(t)
	stalled := ipc.RawConn(t, ipc.Path(), true)
	if uc, ok := stalled.(*net.UnixConn); ok {
		uc.SetReadBuffer(4096)
	}
	// Far more reply bytes than socket buffers hold: the host fills the
	// buffers, its writes stall, and ipc.WriteTimeout drops the peer.
	go func() {
		for i := 0; i < 400; i++ {
			req := ipc.Encode(ipc.Request{Kind: ipc.KindRequest, RequestID: "r" + strconv.Itoa(i), Method: "list_processes", Arguments: json.RawMessage(`{"projection":["pid","name","path","command_line","user"]}`)})
			if ipc.WriteFrame(stalled, req) != nil {
				return
			}
		}
	}()
	seq0 := h.Sampler().Latest().Seq
	ipc.WaitFor(t, func() bool { return h.Sampler().Latest().Seq >= seq0+5 })
	ipc.WaitFor(t, func() bool { return ep.Status()["connections"] == 0 })
}

// TestMCPBridgeSessionCannotConfirm: a connection that says it is an MCP
// bridge is refused local confirmation decisions (PERMISSION_DENIED) before
// any lookup, while a local CLI connection reaches the ledger (an unknown
// operation id is then OPERATION_UNKNOWN, not a refusal).
func TestMCPBridgeSessionCannotConfirm(t *testing.T) {
	startHost(t)
	bridge, err := ipc.Connect(context.Background(), ipc.ConnectOptions{Path: ipc.Path(), BridgeVersion: "t", Client: ipc.ClientMCPBridge})
	if err != nil {
		t.Fatal(err)
	}
	defer bridge.Close()
	cli := ipc.DialClient(t, ipc.Path())
	args := json.RawMessage(`{"operation_id":"op-1","decision":"confirm"}`)
	if _, err := bridge.Call(context.Background(), host.ConfirmMethod, args); contract.CodeOf(err) != contract.CodePermissionDenied {
		t.Fatalf("MCP bridge confirm: %v, want PERMISSION_DENIED", err)
	}
	if _, err := cli.Call(context.Background(), host.ConfirmMethod, args); contract.CodeOf(err) == contract.CodePermissionDenied {
		t.Fatalf("CLI confirm refused: %v", err)
	}
}
