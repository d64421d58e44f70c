package bridge

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/ipc"
)

// IPC is the Backend of `inquest mcp`: it reaches the user's host over the
// local endpoint and holds no process state. It connects lazily on the
// first call (ipc.Connect: 2 s per attempt, start `inquest serve --detach`
// when no host runs, 12 s in total, BACKEND_UNAVAILABLE with guidance), so
// initialize, tools/list, ping and schema-invalid calls never start a host.
//
// Connection loss follows seed 000 section 3.3: a call in flight when the
// connection drops gets OUTCOME_UNKNOWN and is never replayed; a call that
// finds the held connection already dead drops it and gets OUTCOME_UNKNOWN;
// the next call reconnects (to a fresh host if the old one is gone, whose
// new backend_instance_id makes old refs REFERENCE_INVALID). Cancellation
// or the 10 s response deadline after dispatch closes the connection (which
// releases its connection-owned objects) and gives OUTCOME_UNKNOWN.
type IPC struct {
	opts ipc.ConnectOptions

	mu     sync.Mutex
	client *ipc.Client
	closed bool
}

// NewIPC returns an unconnected IPC backend.
func NewIPC(opts ipc.ConnectOptions) *IPC { return &IPC{opts: opts} }

// Client returns the current connection, connecting (or starting a host) if
// there is none. A held connection found dead is dropped with
// OUTCOME_UNKNOWN.
func (b *IPC) conn(ctx context.Context) (*ipc.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, contract.Errorf(contract.CodeBackendUnavailable, "the bridge is shutting down")
	}
	if b.client != nil {
		if b.client.Alive() {
			return b.client, nil
		}
		b.client = nil
		return nil, contract.Errorf(contract.CodeOutcomeUnknown, "the connection to the host was lost since the last call (the host may have exited); nothing was sent. Call again to reconnect; references from the old host will be REFERENCE_INVALID")
	}
	if err := ctx.Err(); err != nil {
		return nil, contract.Errorf(contract.CodeCancelled, "the call was cancelled before it reached the host")
	}
	c, err := ipc.Connect(ctx, b.opts)
	if err != nil {
		return nil, err
	}
	b.client = c
	return c, nil
}

// Call runs method on the host.
func (b *IPC) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	c, err := b.conn(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.Call(ctx, method, args)
	if contract.CodeOf(err) == contract.CodeOutcomeUnknown {
		// Never replay; drop the connection so the next call reconnects.
		c.Close()
		b.mu.Lock()
		if b.client == c {
			b.client = nil
		}
		b.mu.Unlock()
	}
	return res, err
}

// InstanceID returns the backend_instance_id of the current connection, or
// "" when not connected.
func (b *IPC) InstanceID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.client == nil {
		return ""
	}
	return b.client.Welcome.BackendInstanceID
}

// Close closes the connection; the host keeps running.
func (b *IPC) Close() error {
	b.mu.Lock()
	c := b.client
	b.client, b.closed = nil, true
	b.mu.Unlock()
	if c != nil {
		c.Close()
	}
	return nil
}
