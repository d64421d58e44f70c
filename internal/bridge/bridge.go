// Package bridge is the MCP side of the proc toolset: it publishes the
// proc tools declared in host.Tools (schemas, descriptions, annotations)
// and forwards schema-valid calls to a Backend, the host that owns live
// state (docs/host.md), completing them as each declaration says
// (job delivery, operation polling, sliced waits, pid resolution). The
// bridge itself holds no process state.
package bridge

import (
	"context"
	"encoding/json"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Backend answers proc methods. Local runs a host in this process; the IPC
// backend reaches `inquest serve` over the local socket.
type Backend interface {
	// Call runs method with schema-valid args. Failures are *contract.Error.
	Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error)
	// Close releases the backend (the session, the connection).
	Close() error
}

// Mode selects the delivery defaults: normal mode or raw mode.
type Mode struct {
	// Raw: wait_ms defaults to 0, explicit read, 100-row pages.
	Raw bool
	// ResultBudget, when positive, is the delivered-result byte budget of
	// every call, replacing the caller's (the CLI prints whole pages, up to
	// tool.HardResultBytes); zero keeps the budget the MCP server set.
	ResultBudget int
}

// Local is a Backend over an in-process host and one session.
type Local struct {
	Host    *host.Host
	Session *host.Session
	own     bool
}

// NewLocal starts a host in this process and opens one session on it.
func NewLocal(ctx context.Context, version string) (*Local, error) {
	h, err := host.New(host.Options{Version: version})
	if err != nil {
		return nil, contract.Errorf(contract.CodeBackendUnavailable, "the process sampler could not start: %v", err).Permanent()
	}
	if err := h.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, contract.Errorf(contract.CodeBackendUnavailable, "the process sampler could not take its first sample")
	}
	return &Local{Host: h, Session: h.NewSession(), own: true}, nil
}

// Call dispatches to the host in this process.
func (l *Local) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	return l.Host.Dispatch(ctx, l.Session, method, args)
}

// Close closes the session and, when Local started the host, stops it.
func (l *Local) Close() error {
	l.Session.Close()
	if l.own {
		l.Host.Stop()
	}
	return nil
}

// Tools returns the proc tools of host.ToolsFor(mode) bound to the
// backend that get returns (the backend is resolved per call, so a bridge
// can connect lazily). Every tool forwards its schema-valid arguments to
// the host method of the same name; its declaration says what the bridge
// adds: raw-mode page size (a paged tool's limit defaults to 100 in raw
// mode), pid resolution (PIDAt) and completion (Delivery).
func Tools(get func(ctx context.Context) (Backend, error), mode Mode) []tool.Tool {
	return bind(get, mode, host.ToolsFor(host.Delivery{Raw: mode.Raw}))
}

// ToolsNamed is Tools limited to the named proc tools (host.ToolsNamed:
// only their declarations and schemas are built), for a command that
// calls a few of them. Names that are no proc tool are skipped.
func ToolsNamed(get func(ctx context.Context) (Backend, error), mode Mode, names ...string) []tool.Tool {
	return bind(get, mode, host.ToolsNamed(host.Delivery{Raw: mode.Raw}, names...))
}

// bind makes the bridge's tools of decls, as Tools describes.
func bind(get func(ctx context.Context) (Backend, error), mode Mode, decls []host.Decl) []tool.Tool {
	call := func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		b, err := get(ctx)
		if err != nil {
			return nil, err
		}
		return b.Call(ctx, method, args)
	}
	d := newDelivery(mode, call)
	out := make([]tool.Tool, 0, len(decls))
	for _, decl := range decls {
		t := decl.Tool
		name, paged := t.Name, t.Paging != nil
		forward := func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			if mode.Raw && paged {
				args = withDefault(args, t.Paging.Limit, host.RawPageRows)
			}
			return call(ctx, name, args)
		}
		switch decl.Delivery {
		case host.DeliverJob:
			t.Handler = func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
				return d.start(ctx, name, args)
			}
		case host.DeliverJobStatus:
			t.Handler = func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
				return d.poll(ctx, name, args)
			}
		case host.DeliverPages:
			t.Handler = func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
				return d.read(ctx, forward, args)
			}
		case host.DeliverOperation:
			t.Handler = operationHandler(call, name, d.waitDefault())
		case host.DeliverSlices:
			t.Handler = slicedHandler(call, name, d.waitDefault())
		default:
			t.Handler = forward
		}
		t = withPID(t, decl, call)
		inner := t.Handler
		t.Handler = func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			return inner(context.WithValue(ctx, toolKey{}, name), args)
		}
		if mode.ResultBudget > 0 {
			inner := t.Handler
			t.Handler = func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
				return inner(tool.WithResultBudget(ctx, mode.ResultBudget), args)
			}
		}
		out = append(out, t)
	}
	return out
}

// withDefault sets args[key] to v when args is an object without key.
func withDefault(args json.RawMessage, key string, v any) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args
	}
	if _, ok := m[key]; ok {
		return args
	}
	m[key] = v
	b, _ := json.Marshal(m)
	return b
}

// toolKey carries the name of the tool a bridge call runs for, so a reset
// caused by the client cancelling it names that tool rather than the host
// method in flight (resolve_pid, get_job).
type toolKey struct{}

// toolOf is the tool name ctx carries, or method when it carries none.
func toolOf(ctx context.Context, method string) string {
	if n, _ := ctx.Value(toolKey{}).(string); n != "" {
		return n
	}
	return method
}
