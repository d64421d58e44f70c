package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
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
// Connection loss (docs/host.md, "Startup and failures"): a call in flight when the
// connection drops gets OUTCOME_UNKNOWN and is never replayed. A call that
// finds the held connection already dead (the host exited, or closed its
// listener by the setting) was never sent: the bridge drops that
// connection and connects again as at first use (to a fresh host if the
// old one is gone, whose new backend_instance_id makes old refs
// REFERENCE_INVALID), sends the call there and warns on its outcome that
// the old connection's objects were released; when no host can be reached
// the call gets BACKEND_UNAVAILABLE. A read-only bounded wait or read sent
// with ipc.WithReplyOnCancel (wait slices, get_job, get_operation polls,
// first pages, resolve_pid) is answered by the host on cancellation and
// keeps the connection. Any other cancellation, a host that does not
// answer one within ipc.CancelReplyWait, or the 10 s response deadline
// after dispatch closes the connection (which releases its
// connection-owned objects) and gives OUTCOME_UNKNOWN; the reset warning
// names the tool the client cancelled (toolOf).
type IPC struct {
	opts ipc.ConnectOptions

	mu     sync.Mutex
	client *ipc.Client
	closed bool
	// reset says why the previous connection was dropped; the first result
	// (or error) on the next connection carries it as a warning, so a client
	// whose captures, jobs and cursors vanished is told why.
	reset string
}

// released is appended to every OUTCOME_UNKNOWN that drops the connection:
// a disconnect releases all connection-owned objects.
const released = " The bridge closed its host connection for this, which released every connection-owned object of this client: retained captures and running and finished jobs (waits included) are now REFERENCE_INVALID, and cursors CURSOR_INVALID; process_refs stay valid while the host runs."

// lostBetweenCalls is the reset note of a connection found dead before a
// request was written on it.
const lostBetweenCalls = "the previous host connection was lost between calls (the host exited or closed its MCP listener)"

// NewIPC returns an unconnected IPC backend.
func NewIPC(opts ipc.ConnectOptions) *IPC { return &IPC{opts: opts} }

// conn returns the current connection, connecting (or, when start and the
// backend's options allow it, starting a host) if there is none. A held
// connection found dead is dropped (its reset noted for the next outcome)
// and replaced: nothing was sent on it. Whichever call connects first, the
// connection is the backend's one connection, reused by every later call.
func (b *IPC) conn(ctx context.Context, start bool) (*ipc.Client, error) {
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
		if b.reset == "" {
			b.reset = lostBetweenCalls
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, contract.Errorf(contract.CodeCancelled, "the call was cancelled before it reached the host")
	}
	opts := b.opts
	opts.Start = opts.Start && start
	c, err := ipc.Connect(ctx, opts)
	if err != nil {
		return nil, err
	}
	b.client = c
	return c, nil
}

// Running is a view of b that never starts a host: its calls use b's
// connection, connecting to a host that already runs when b has none
// (that connection then stays b's, so a later call of b reuses it), and
// fail with BACKEND_UNAVAILABLE when no host runs. A bridge uses it for
// side questions (inspect_binary's mapped_by, naming a capture's
// workload) so that one bridge holds at most one host connection whatever
// toolset it calls first. Closing the view does nothing; close b.
func (b *IPC) Running() Backend { return runningIPC{b} }

type runningIPC struct{ b *IPC }

func (r runningIPC) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	return r.b.call(ctx, method, args, false)
}

func (r runningIPC) Close() error { return nil }

// Preconnect connects to a host that already runs when the backend has no
// connection yet, so a command can overlap connecting with its own work
// (checking its arguments) and the first call finds the connection made.
// It never starts a host and reports nothing: when no host answers, the
// first call connects (or starts one) as it would have.
func (b *IPC) Preconnect(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.client != nil || ctx.Err() != nil {
		return
	}
	opts := b.opts
	opts.Start = false
	if c, err := ipc.Connect(ctx, opts); err == nil {
		b.client = c
	}
}

// Call runs method on the host. An OUTCOME_UNKNOWN (cancellation or
// deadline after dispatch, lost connection) drops the connection; its
// message says the client's connection-owned objects were released, and
// the first outcome on the next connection carries a warning naming the
// reset and its cause.
//
// A request the connection lost before it was written (ipc.NotSent) is
// sent once more on a new connection; if that one is lost before writing
// too, the call gets the retryable BACKEND_UNAVAILABLE.
func (b *IPC) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	return b.call(ctx, method, args, true)
}

func (b *IPC) call(ctx context.Context, method string, args json.RawMessage, start bool) (*contract.Result, error) {
	var c *ipc.Client
	var res *contract.Result
	var err error
	for attempt := 0; ; attempt++ {
		if c, err = b.conn(ctx, start); err != nil {
			return nil, err
		}
		// The host pages to the caller's result byte budget.
		res, err = c.Call(ctx, method, args)
		if !ipc.NotSent(err) {
			break
		}
		// Nothing was sent: drop the dead connection; the next conn
		// reconnects as at first use.
		c.Close()
		b.mu.Lock()
		if b.client == c {
			b.client = nil
		}
		if b.reset == "" {
			b.reset = lostBetweenCalls
		}
		b.mu.Unlock()
		if attempt > 0 {
			return nil, err
		}
	}
	if contract.CodeOf(err) == contract.CodeOutcomeUnknown {
		// Never replay; drop the connection so the next call reconnects.
		c.Close()
		b.mu.Lock()
		if b.client == c {
			b.client = nil
		}
		cause := "a call's outcome became unknown"
		name, during := toolOf(ctx, method), ""
		if name != method {
			during = " (during its host call " + method + ")"
		}
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			cause = "the MCP client cancelled " + name + " after it reached the host" + during
		case ctx.Err() != nil:
			cause = "the deadline of " + name + " passed after it reached the host" + during
		default:
			cause = method + " lost its connection or got no reply within the response deadline"
		}
		b.reset = "the previous host connection was reset because " + cause
		b.mu.Unlock()
		var ce *contract.Error
		if errors.As(err, &ce) {
			e := *ce
			e.Message = sentence(e.Message) + released
			err = &e
		}
		return res, err
	}
	b.mu.Lock()
	note := ""
	if b.client == c && b.reset != "" {
		note, b.reset = b.reset+"; its retained captures, jobs (waits included) and cursors were released: captures and jobs are REFERENCE_INVALID and cursors CURSOR_INVALID on this connection", ""
	}
	b.mu.Unlock()
	if note != "" {
		switch {
		case res != nil:
			res.Warn(note)
		case err != nil:
			var ce *contract.Error
			if errors.As(err, &ce) {
				e := *ce
				e.Message += " (Note: " + note + ".)"
				e.Details = maps.Clone(e.Details)
				err = e.WithDetail("previous_connection_reset", note)
			}
		}
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

// sentence ends msg with a full stop when it ends without one, so text
// appended after it starts a new sentence.
func sentence(msg string) string {
	if msg == "" || strings.HasSuffix(msg, ".") || strings.HasSuffix(msg, ".)") {
		return msg
	}
	return msg + "."
}
