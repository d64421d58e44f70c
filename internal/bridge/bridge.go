// Package bridge is the MCP side of the proc toolset: the proc tools'
// definitions (strict input schemas, descriptions, annotations) and the
// forwarding of schema-valid calls to a Backend, the host that owns live
// state (seed 000 section 2). The bridge itself holds no process state.
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

// Mode selects the delivery defaults of seed 000 section 4.
type Mode struct {
	// Raw: wait_ms defaults to 0, explicit read, 100-row pages.
	Raw bool
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

// Tools returns the proc tools bound to the backend that get returns (the
// backend is resolved per call, so a bridge can connect lazily).
func Tools(get func(ctx context.Context) (Backend, error), mode Mode) []tool.Tool {
	call := func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		b, err := get(ctx)
		if err != nil {
			return nil, err
		}
		return b.Call(ctx, method, args)
	}
	defs := definitions(mode)
	for _, more := range extraDefinitions {
		defs = append(defs, more(mode, call)...)
	}
	out := make([]tool.Tool, 0, len(defs))
	for _, d := range defs {
		d := d
		name := d.Name
		d.Toolset = tool.Proc
		if d.Handler != nil {
			// A definition with its own handler runs in the bridge (bounded
			// completion wrappers); it reaches the backend itself.
			out = append(out, withPID(d, call))
			continue
		}
		d.Handler = func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			b, err := get(ctx)
			if err != nil {
				return nil, err
			}
			if mode.Raw {
				args = withDefault(args, "limit", host.RawPageRows, pagedTools[name])
			}
			return b.Call(ctx, name, args)
		}
		out = append(out, withPID(d, call))
	}
	return out
}

// pagedTools take limit/cursor; raw mode defaults their limit to 100.
// Feature files add their paged tools in init.
var pagedTools = map[string]bool{"list_processes": true}

// extraDefinitions are the proc tool definitions of feature files
// (captures, history, tracking...), added in init with AddDefinitions.
var extraDefinitions []func(Mode, CallFunc) []tool.Tool

// CallFunc reaches the backend (connecting lazily) and runs one method.
type CallFunc func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error)

// AddDefinitions registers more proc tool definitions. A definition with a
// nil Handler is bound to the backend method of the same name; one with a
// Handler runs in the bridge (bounded completion, first-page delivery) and
// uses call to reach the backend. paged names take limit/cursor.
func AddDefinitions(defs func(mode Mode, call CallFunc) []tool.Tool, paged ...string) {
	extraDefinitions = append(extraDefinitions, defs)
	for _, p := range paged {
		pagedTools[p] = true
	}
}

func withDefault(args json.RawMessage, key string, v any, applies bool) json.RawMessage {
	if !applies {
		return args
	}
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
