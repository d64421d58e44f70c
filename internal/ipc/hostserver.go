package ipc

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Listener states reported by get_status under mcp.listener.
const (
	StateListening = "listening"
	StateDisabled  = "disabled"
	StateFailed    = "failed"
)

// HostService is the host an endpoint serves: a Service (handshake facts
// and one session per connection) that also takes get_status sections.
// host.Host's IPCService implements it; ipc does not import the host.
type HostService interface {
	Service
	// AddStatus registers fn to add fields to get_status data.
	AddStatus(fn func(map[string]any))
}

// HostEndpoint serves a HostService on the local endpoint: one session
// per connection, closed on disconnect. Enable/Disable open and close the
// listener at runtime (settings toggle): disabling closes every connection,
// which closes their sessions and so invalidates connection-owned objects
// (captures, cursors, jobs); clients reconnect through a fresh handshake.
// NewHostEndpoint adds an "mcp" section to the host's get_status.
type HostEndpoint struct {
	svc    HostService
	path   string
	logger *slog.Logger
	// stateFile (Dir()/listener.state) tells bridges why the endpoint is
	// absent while the host runs: "disabled" or "failed", so they fail at
	// once with the right guidance instead of waiting out their deadline.
	stateFile string

	mu       sync.Mutex
	srv      *Server
	state    string
	lastErr  string
	restarts int
	done     chan struct{}
	// sock is the socket file as created (Lstat after Listen); stop ends
	// the watcher that recreates the listener when the file disappears.
	sock fs.FileInfo
	stop chan struct{}
}

// SocketCheckInterval is how often a listening endpoint checks that its
// socket file is still the one it created where it cannot be told of a
// change (systems other than Linux, or inotify unavailable); on Linux the
// check runs when inotify reports the socket file or listener.state
// created, deleted or renamed, and every 30 s besides. A file that was
// deleted or replaced makes the endpoint listen anew (a bridge's connect
// budget of 12 s spans several checks), and a recreation that fails is
// recorded as "failed" in listener.state and get_status.
const SocketCheckInterval = time.Second

// NewHostEndpoint binds h to the endpoint at path (default Path()) in the
// disabled state; call Enable to listen.
func NewHostEndpoint(svc HostService, path string, logger *slog.Logger) *HostEndpoint {
	if path == "" {
		path = Path()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &HostEndpoint{svc: svc, path: path, logger: logger, state: StateDisabled, stateFile: filepath.Join(filepath.Dir(path), StateFileName)}
	svc.AddStatus(func(m map[string]any) { m["mcp"] = e.Status() })
	return e
}

// Status is the get_status "mcp" section: listener state
// (listening/disabled/failed), connections that completed the handshake
// (in total, MCP bridges against connections_max, local CLI connections
// against local_connections_max, local decision connections of
// `inquest confirm` against confirm_connections_max),
// the last listener error, the transport kind and the limits.
func (e *HostEndpoint) Status() map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	bridges, local, confirm := 0, 0, 0
	if e.srv != nil {
		bridges, local, confirm = e.srv.ConnsByClass()
	}
	var lastErr any
	if e.lastErr != "" {
		lastErr = e.lastErr
	}
	return map[string]any{
		"listener":                 e.state,
		"connections":              bridges + local + confirm,
		"bridge_connections":       bridges,
		"connections_max":          MaxConns,
		"local_connections":        local,
		"local_connections_max":    MaxLocalConns,
		"confirm_connections":      confirm,
		"confirm_connections_max":  MaxConfirmConns,
		"in_flight_per_connection": MaxInFlight,
		"transport":                transportKind,
		"socket_path":              e.path,
		"ipc_major":                Major,
		"ipc_minor":                Minor,
		"last_error":               lastErr,
		"listener_starts":          e.restarts,
	}
}

// State returns the listener state.
func (e *HostEndpoint) State() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// Enable opens the listener (no-op when listening). A failure leaves the
// state failed with the error visible in get_status, and is returned.
func (e *HostEndpoint) Enable() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		return nil
	}
	ln, err := Listen(e.path)
	if err != nil {
		e.state = StateFailed
		e.lastErr = err.Error()
		e.writeState()
		e.logger.Error("MCP listener failed", "err", err)
		return err
	}
	e.restarts++
	e.state = StateListening
	e.lastErr = ""
	e.writeState()
	srv := NewServer(e.svc, e.logger)
	e.srv = srv
	done := make(chan struct{})
	e.done = done
	e.sock, _ = os.Lstat(e.path)
	if watchSocketFile {
		stop := make(chan struct{})
		e.stop = stop
		go e.watch(srv, stop)
	}
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil {
			e.logger.Error("MCP listener stopped", "err", err)
			e.mu.Lock()
			if e.srv == srv {
				e.state = StateFailed
				e.lastErr = err.Error()
				e.writeState()
			}
			e.mu.Unlock()
		}
	}()
	e.logger.Info("MCP listener open", "instance", e.svc.InstanceID())
	return nil
}

// Disable rejects new connections, closes the listener and every accepted
// connection (their sessions close after running requests return; their
// replies are dropped) and removes the socket file.
func (e *HostEndpoint) Disable() {
	e.mu.Lock()
	srv, done := e.srv, e.done
	e.srv, e.done = nil, nil
	if e.stop != nil {
		close(e.stop)
		e.stop = nil
	}
	e.state = StateDisabled
	e.writeState()
	e.mu.Unlock()
	if srv != nil {
		srv.Close()
		<-done
		e.logger.Info("MCP listener closed")
	}
}

// watch checks the socket file whenever the socket waker says (a change
// in the endpoint directory, or a period) until stop.
func (e *HostEndpoint) watch(srv *Server, stop chan struct{}) {
	w := newSocketWaker(filepath.Dir(e.path), filepath.Base(e.path), StateFileName)
	defer w.Close()
	// a change between Listen and the watch's start has no event
	e.CheckSocket(srv)
	for w.Wait(stop) {
		e.CheckSocket(srv)
	}
}

// CheckSocket makes sure the endpoint of srv is reachable: when the socket
// file is missing or is no longer the file this endpoint created, it
// listens anew on the path (connections already accepted stay open) and
// records "listening", or "failed" with the error when that fails. It also
// rewrites listener.state when that file was removed or altered. It does
// nothing when srv is no longer the endpoint's server.
func (e *HostEndpoint) CheckSocket(srv *Server) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != srv || srv == nil {
		return
	}
	fi, err := os.Lstat(e.path)
	if err == nil && e.sock != nil && os.SameFile(fi, e.sock) {
		if readListenerState(filepath.Dir(e.stateFile)) != e.state {
			e.writeState()
		}
		return
	}
	ln, lerr := Listen(e.path)
	if lerr != nil {
		if e.state != StateFailed || e.lastErr != lerr.Error() {
			e.logger.Error("MCP socket file is gone and the listener cannot be recreated", "err", lerr)
		}
		e.state = StateFailed
		e.lastErr = "the socket file disappeared and the listener could not be recreated: " + lerr.Error()
		e.writeState()
		return
	}
	srv.Replace(ln)
	e.sock, _ = os.Lstat(e.path)
	e.restarts++
	e.state = StateListening
	e.lastErr = ""
	e.writeState()
	e.logger.Warn("MCP socket file disappeared; listener recreated")
}

// Server returns the current server, nil when disabled.
func (e *HostEndpoint) Server() *Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.srv
}

// StateFileName is the listener state file in the endpoint directory.
const StateFileName = "listener.state"

// writeState records the state for bridges (caller holds e.mu). The
// directory is the private endpoint directory; a write failure only costs
// bridges their fast failure.
func (e *HostEndpoint) writeState() {
	if PrepareDir(filepath.Dir(e.stateFile), false) != nil {
		return
	}
	tmp := e.stateFile + ".tmp"
	if os.WriteFile(tmp, []byte(e.state+"\n"), 0o600) == nil {
		os.Rename(tmp, e.stateFile)
	}
}

// RemoveState deletes the state file (host shutdown).
func (e *HostEndpoint) RemoveState() { os.Remove(e.stateFile) }

// readListenerState returns the state a running host recorded in dir
// ("" when none).
func readListenerState(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, StateFileName))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// SetEnabled enables or disables the listener.
func (e *HostEndpoint) SetEnabled(on bool) error {
	if on {
		return e.Enable()
	}
	e.Disable()
	return nil
}
