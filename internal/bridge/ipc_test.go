package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tool"
)

// TestIPCBackendLazyStart: schema-invalid calls dispatch nothing and start
// no host; the first valid call launches one host, later calls reuse the
// connection; a host lost between calls makes the next call start a fresh
// host and succeed there, with a warning.
func TestIPCBackendLazyStart(t *testing.T) {
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME"} {
		t.Setenv(k, t.TempDir())
	}
	t.Setenv("INQUEST_CONFIG", "")
	var launches atomic.Int32
	var current atomic.Pointer[func()]
	launch := func(ctx context.Context) error {
		launches.Add(1)
		lock, err := ipc.AcquireHostLock(ipc.Dir(), time.Second)
		if err != nil {
			return err
		}
		h, err := host.New(host.Options{Version: "test", Interval: 100 * time.Millisecond})
		if err != nil {
			return err
		}
		if err := h.Start(context.Background()); err != nil {
			return err
		}
		ep := ipc.NewHostEndpoint(h.IPCService(), "", nil)
		if err := ep.Enable(); err != nil {
			return err
		}
		stop := func() { ep.Disable(); h.Stop(); lock.Release() }
		current.Store(&stop)
		return nil
	}
	t.Cleanup(func() {
		if f := current.Load(); f != nil {
			(*f)()
		}
	})
	be := NewIPC(ipc.ConnectOptions{BridgeVersion: "test", Start: true, Launch: launch})
	defer be.Close()
	reg := tool.NewRegistry()
	if err := reg.Add(Tools(func(context.Context) (Backend, error) { return be, nil }, Mode{})...); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, bad := range []string{`{"limit":0}`, `{"bogus":1}`, `{"sort":"cpu"}`} {
		if _, err := reg.Call(ctx, "list_processes", json.RawMessage(bad)); contract.CodeOf(err) != contract.CodeInvalidArgument {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	if launches.Load() != 0 || be.InstanceID() != "" {
		t.Fatal("an invalid call started or reached a host")
	}
	res, err := reg.Call(ctx, "get_status", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	first := be.InstanceID()
	if launches.Load() != 1 || first == "" || res.BackendInstanceID != first {
		t.Fatalf("launches %d, instance %q, result instance %q", launches.Load(), first, res.BackendInstanceID)
	}
	for i := 0; i < 3; i++ {
		if _, err := reg.Call(ctx, "list_metrics", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if launches.Load() != 1 {
		t.Fatalf("%d launches for one host", launches.Load())
	}
	// The host goes away between calls: nothing was in flight, so the next
	// call is not OUTCOME_UNKNOWN: the bridge starts a fresh host as at
	// first use, sends the call there and warns once that the old
	// connection's objects were released.
	old := be.client
	(*current.Load())()
	<-old.Done() // the bridge's reader has seen the host close the connection
	res, err = reg.Call(ctx, "get_status", json.RawMessage(`{}`))
	if err != nil {
		t.Fatalf("after host loss: %v", err)
	}
	if launches.Load() != 2 || be.InstanceID() == first || res.BackendInstanceID != be.InstanceID() {
		t.Fatalf("launches %d, instance %q (was %q), result instance %q", launches.Load(), be.InstanceID(), first, res.BackendInstanceID)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "lost between calls") || !strings.Contains(res.Warnings[0], "REFERENCE_INVALID") {
		t.Fatalf("warnings after the host loss: %q", res.Warnings)
	}
	if res, err := reg.Call(ctx, "get_status", json.RawMessage(`{}`)); err != nil || len(res.Warnings) != 0 || launches.Load() != 2 {
		t.Fatalf("the call after the reconnect: %v, warnings %v, launches %d", err, res, launches.Load())
	}
}

// TestIPCNotSentReconnects: a connection the bridge still believes alive
// but that is closed under it (the host's reader is gone) fails the write,
// not after it: the request never reached the host, so the bridge
// reconnects and sends it; a call whose reconnect finds no host gets a
// retryable BACKEND_UNAVAILABLE, never OUTCOME_UNKNOWN.
func TestIPCNotSentReconnects(t *testing.T) {
	h, ep := startTestHost(t)
	be := NewIPC(ipc.ConnectOptions{BridgeVersion: "test", Client: ipc.ClientMCPBridge})
	defer be.Close()
	if _, err := be.Call(context.Background(), "get_status", nil); err != nil {
		t.Fatal(err)
	}
	// The held connection dies (closed here: deterministic, no race with
	// the reader); the next call reconnects to the same host and succeeds.
	first := be.client
	first.Close()
	res, err := be.Call(context.Background(), "get_status", nil)
	if err != nil {
		t.Fatalf("call after the connection died: %v", err)
	}
	if be.client == first || res.BackendInstanceID != h.InstanceID || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "lost between calls") {
		t.Fatalf("reconnect: instance %q (host %q), warnings %q", res.BackendInstanceID, h.InstanceID, res.Warnings)
	}
	// No host to reconnect to (listener closed, no start): the dead
	// connection is replaced by nothing, and the call says so retryably.
	ep.Disable()
	<-be.client.Done()
	_, err = be.Call(context.Background(), "get_status", nil)
	var ce *contract.Error
	if contract.CodeOf(err) != contract.CodeBackendUnavailable || !errors.As(err, &ce) || !ce.Retryable {
		t.Fatalf("call with no host reachable: %v", err)
	}
}

// TestIPCCancelResetIsExplicit: cancelling a call after dispatch (one not
// made with ipc.WithReplyOnCancel) drops the connection and says so: the OUTCOME_UNKNOWN names
// the released connection-owned objects, and the next call, on a new
// connection, carries a warning naming the reset and its cause, once.
func TestIPCCancelResetIsExplicit(t *testing.T) {
	h, _ := startTestHost(t)
	started := make(chan struct{}, 1)
	h.Handle("test_block", func(ctx context.Context, s *host.Session, _ json.RawMessage) (*contract.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	be := NewIPC(ipc.ConnectOptions{BridgeVersion: "test", Client: ipc.ClientMCPBridge})
	defer be.Close()
	if _, err := be.Call(context.Background(), "get_status", nil); err != nil {
		t.Fatal(err)
	}
	first := be.client
	// The call runs for a tool (as the bridge's handlers mark it): the
	// reset names that tool, the one the client cancelled, beside the
	// host method in flight.
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), toolKey{}, "wait_condition"))
	go func() { <-started; cancel() }()
	_, err := be.Call(ctx, "test_block", nil)
	var ce *contract.Error
	if contract.CodeOf(err) != contract.CodeOutcomeUnknown || !errors.As(err, &ce) || !strings.Contains(ce.Message, "released every connection-owned object") ||
		!strings.Contains(ce.Message, "not repeated. The bridge") {
		t.Fatalf("cancelled call: %v", err)
	}
	res, err := be.Call(context.Background(), "get_status", nil)
	if err != nil {
		t.Fatal(err)
	}
	if be.client == first {
		t.Fatal("the connection was not replaced")
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "reset because the MCP client cancelled wait_condition after it reached the host (during its host call test_block)") || !strings.Contains(res.Warnings[0], "REFERENCE_INVALID") {
		t.Fatalf("warnings after reset: %q", res.Warnings)
	}
	res, err = be.Call(context.Background(), "get_status", nil)
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("the reset warning repeats: %v %q", err, res.Warnings)
	}
}

// TestIPCCarriesResultBudget: the caller's result byte budget crosses IPC
// in the request, so the host pages to it: the same listing is one page
// under a large budget and ends early by bytes under a small one.
func TestIPCCarriesResultBudget(t *testing.T) {
	startTestHost(t)
	be := NewIPC(ipc.ConnectOptions{BridgeVersion: "test"})
	defer be.Close()
	reg := tool.NewRegistry()
	if err := reg.Add(Tools(func(context.Context) (Backend, error) { return be, nil }, Mode{})...); err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"scope":"all","projection":["process_ref","pid","name","path","parent","start_time","history"]}`)
	whole, err := reg.Call(tool.WithResultBudget(context.Background(), tool.HardResultBytes), "list_processes", args)
	if err != nil {
		t.Fatal(err)
	}
	if whole.NextAction != nil || whole.Status != contract.StatusComplete {
		t.Fatalf("under the hard limit the listing is not one page: %v %s", whole.NextAction, whole.Status)
	}
	small, err := reg.Call(tool.WithResultBudget(context.Background(), 12<<10), "list_processes", args)
	if err != nil {
		t.Fatal(err)
	}
	// A page cut by bytes misses no evidence: complete, with the budget
	// note and the next call.
	if small.NextAction == nil || small.Status != contract.StatusComplete || !strings.Contains(strings.Join(small.Warnings, "\n"), tool.BudgetWarning) {
		t.Fatalf("a 12 KiB budget did not end the page by bytes: %v %s %v", small.NextAction, small.Status, small.Warnings)
	}
}

// startTestHost isolates the runtime, config and state directories, takes
// the host lock, starts a real host (100 ms sampling) and opens its IPC
// listener; the test's cleanup closes the listener, stops the host and
// releases the lock. Methods registered later with h.Handle are served too.
func startTestHost(t *testing.T) (*host.Host, *ipc.HostEndpoint) {
	t.Helper()
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME"} {
		t.Setenv(k, t.TempDir())
	}
	t.Setenv("INQUEST_CONFIG", "")
	lock, err := ipc.AcquireHostLock(ipc.Dir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lock.Release)
	h, err := host.New(host.Options{Version: "test", Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	ep := ipc.NewHostEndpoint(h.IPCService(), "", nil)
	if err := ep.Enable(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ep.Disable)
	return h, ep
}
