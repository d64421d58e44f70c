package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Server limits: connections per client kind.
const (
	// MaxConns is the number of simultaneously connected MCP bridges
	// (hello client ClientMCPBridge); a fifth is rejected BUSY.
	MaxConns = 4
	// MaxLocalConns is a separate allowance for local CLI connections
	// (hello without a client value or with an unknown one: `inquest ps`,
	// `inquest wait`, a CLI mutation awaiting its confirmation), so four
	// idle MCP clients never lock the local user out.
	MaxLocalConns = 2
	// MaxConfirmConns is a reserved allowance for local decision
	// connections (hello client ClientLocalConfirm: `inquest confirm` and
	// the y/N answer of a CLI mutation), which neither bridges nor other
	// CLI commands can use, so the local user can always decide a pending
	// confirmation however many bridges and CLI commands are connected.
	MaxConfirmConns = 2
	// MaxInFlight is the number of pending requests per connection; more
	// are answered BUSY at once.
	MaxInFlight = 8
)

// Server timeouts; variables so tests can shorten them.
var (
	// HandshakeTimeout bounds the wait for hello after accept.
	HandshakeTimeout = 5 * time.Second
	// WriteTimeout bounds one frame write; a peer that stops reading for
	// this long is disconnected, so the host never buffers without bound
	// (at most MaxInFlight finished replies wait per connection).
	WriteTimeout = 10 * time.Second
)

// Service is what a Server serves: one Session per accepted connection.
// The host adapter (ServeHost) binds it to host.Host.
type Service interface {
	// InstanceID is sent as welcome.backend_instance_id.
	InstanceID() string
	// Version is sent as welcome.application_version.
	Version() string
	// NewSession opens the connection's session.
	NewSession(p Peer) Session
}

// Session runs requests of one connection; Close releases every object it
// owns (captures, cursors, jobs). Call must be safe for concurrent use.
type Session interface {
	Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error)
	Close()
}

// Server accepts connections on one listener, authenticates the peer
// (same uid), performs the handshake and serves requests with the limits
// above. Close stops accepting and drops every connection.
type Server struct {
	svc    Service
	logger *slog.Logger

	mu     sync.Mutex
	ln     net.Listener
	conns  map[*serverConn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewServer returns a server for svc; logger may be nil.
func NewServer(svc Service, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{svc: svc, logger: logger, conns: map[*serverConn]struct{}{}}
}

// Conns returns the number of connections that completed the handshake.
func (s *Server) Conns() int {
	b, l := s.ConnsByKind()
	return b + l
}

// ConnsByKind returns the handshaken connections of MCP bridges and of
// local clients (other CLI commands and local decision connections
// together).
func (s *Server) ConnsByKind() (bridges, local int) {
	b, l, c := s.ConnsByClass()
	return b, l + c
}

// ConnsByClass returns the handshaken connections per allowance: MCP
// bridges (of MaxConns), local CLI commands (of MaxLocalConns) and local
// decision connections (of MaxConfirmConns).
func (s *Server) ConnsByClass() (bridges, local, confirm int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.countLocked()
}

func (s *Server) countLocked() (bridges, local, confirm int) {
	for c := range s.conns {
		if !c.welcomed {
			continue
		}
		switch c.class {
		case classBridge:
			bridges++
		case classConfirm:
			confirm++
		default:
			local++
		}
	}
	return bridges, local, confirm
}

// Connection classes, each with its own allowance.
const (
	classLocal = iota
	classBridge
	classConfirm
)

func classOf(client string) int {
	switch client {
	case ClientMCPBridge:
		return classBridge
	case ClientLocalConfirm:
		return classConfirm
	}
	return classLocal
}

// Serve accepts on ln until ln is closed (by Close), then returns nil.
// Other accept errors are logged and retried after 100 ms.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.ln = ln
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed, cur := s.closed, s.ln
			s.mu.Unlock()
			if !closed && cur != ln {
				ln = cur // Replace swapped the listener
				continue
			}
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Temporary failures (EMFILE, ECONNABORTED...) back off and
			// retry, as net/http does; the listener stays up.
			s.logger.Warn("accept failed; retrying", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		peer, err := checkPeer(c)
		if err != nil {
			s.logger.Warn("connection rejected", "err", err)
			c.Close()
			continue
		}
		sc := &serverConn{srv: s, c: c, peer: peer, pending: map[string]context.CancelFunc{}}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			continue
		}
		// Room for every bridge and local connection; the per-kind limit
		// is checked once hello says which kind this is.
		full := len(s.conns) >= MaxConns+MaxLocalConns+MaxConfirmConns
		if !full {
			s.conns[sc] = struct{}{}
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			if full {
				sc.refuse(contract.CodeBusy, "the host already serves its connection limit (4 MCP bridges, 2 local CLI connections and 2 local confirmation connections); close another MCP client or CLI command and retry")
				return
			}
			sc.serve()
		}()
	}
}

// Replace makes Serve accept on ln instead of the current listener, which
// is closed without removing its socket file (the path may already hold
// ln's). Accepted connections are not affected. After Close, ln is closed.
func (s *Server) Replace(ln net.Listener) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return
	}
	old := s.ln
	s.ln = ln
	s.mu.Unlock()
	if old != nil {
		if ul, ok := old.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false)
		}
		old.Close()
	}
}

// Close stops accepting, closes every connection (their sessions close and
// release connection-owned objects once running requests return; late
// replies are dropped) and waits for the connection goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.c.Close()
	}
	s.wg.Wait()
}

type serverConn struct {
	srv  *Server
	c    net.Conn
	peer Peer

	wmu      sync.Mutex // one writer per direction
	mu       sync.Mutex
	pending  map[string]context.CancelFunc
	welcomed bool
	class    int // classOf(hello.client)
}

func (sc *serverConn) write(v any) error {
	b := encode(v)
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	sc.c.SetWriteDeadline(time.Now().Add(WriteTimeout))
	return WriteFrame(sc.c, b)
}

// readHello reads and validates the handshake.
func (sc *serverConn) readHello() (*Hello, error) {
	sc.c.SetReadDeadline(time.Now().Add(HandshakeTimeout))
	defer sc.c.SetReadDeadline(time.Time{})
	p, err := ReadFrame(sc.c)
	if err != nil {
		return nil, err
	}
	m, err := Decode(p)
	if err != nil {
		return nil, err
	}
	h, ok := m.(*Hello)
	if !ok {
		return nil, ErrProtocol
	}
	return h, nil
}

func (sc *serverConn) refuse(code contract.Code, msg string) {
	defer sc.c.Close()
	if _, err := sc.readHello(); err != nil {
		return
	}
	sc.write(Reject{Kind: KindReject, Code: code, Message: msg})
}

func (sc *serverConn) serve() {
	s := sc.srv
	defer func() {
		sc.c.Close()
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
	}()
	h, err := sc.readHello()
	if err != nil {
		s.logger.Info("handshake failed", "pid", sc.peer.PID, "err", err)
		return
	}
	if h.IPCMajor != Major {
		sc.write(Reject{Kind: KindReject, Code: contract.CodeBackendUnavailable, Message: "IPC major version mismatch: the host speaks ipc_major 1; restart the host or the bridge so both are the same inquest version"})
		return
	}
	sc.peer.Client = h.Client
	class := classOf(h.Client)
	s.mu.Lock()
	bridges, local, confirm := s.countLocked()
	var over bool
	switch class {
	case classBridge:
		over = bridges >= MaxConns
	case classConfirm:
		over = confirm >= MaxConfirmConns
	default:
		over = local >= MaxLocalConns
	}
	if !over {
		sc.welcomed, sc.class = true, class
	} else {
		// A refused connection gives its slot back at the decision, before
		// the reject is written: the client that reads the reject and dials
		// again (or a confirm connection right after) must not find the
		// total still counting it.
		delete(s.conns, sc)
	}
	s.mu.Unlock()
	if over {
		switch class {
		case classBridge:
			sc.write(Reject{Kind: KindReject, Code: contract.CodeBusy, Message: "the host already serves 4 MCP bridge connections (the limit); close another MCP client and retry"})
		case classConfirm:
			sc.write(Reject{Kind: KindReject, Code: contract.CodeBusy, Message: "the host already serves 2 local confirmation connections (their reserved allowance); let another `inquest confirm` finish and retry"})
		default:
			sc.write(Reject{Kind: KindReject, Code: contract.CodeBusy, Message: "the host already serves 2 local CLI connections (their own allowance besides the 4 MCP bridges and the 2 reserved for `inquest confirm`); let another inquest command finish and retry"})
		}
		return
	}
	sess := s.svc.NewSession(sc.peer)
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() {
		// Disconnect: cancel pending work, then close the session once the
		// handlers returned, so no late reply repopulates it.
		cancel()
		sc.c.Close()
		running.Wait()
		sess.Close()
	}()
	if err := sc.write(Welcome{Kind: KindWelcome, IPCMajor: Major, IPCMinor: Minor, BackendInstanceID: s.svc.InstanceID(), ApplicationVersion: s.svc.Version()}); err != nil {
		return
	}
	for {
		p, err := ReadFrame(sc.c)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.logger.Info("connection closed on a bad frame", "pid", sc.peer.PID, "err", err)
			}
			return
		}
		m, err := Decode(p)
		if err != nil {
			s.logger.Info("connection closed on a bad message", "pid", sc.peer.PID, "err", err)
			return
		}
		switch m := m.(type) {
		case *Request:
			sc.mu.Lock()
			_, dup := sc.pending[m.RequestID]
			busy := len(sc.pending) >= MaxInFlight
			var rctx context.Context
			var rcancel context.CancelFunc
			if !dup && !busy {
				rctx, rcancel = context.WithCancel(ctx)
				sc.pending[m.RequestID] = rcancel
			}
			sc.mu.Unlock()
			if dup {
				s.logger.Info("connection closed: duplicate request_id", "pid", sc.peer.PID)
				return
			}
			if busy {
				body, _ := contract.Marshal(nil, contract.Errorf(contract.CodeBusy, "8 requests are already pending on this connection"))
				if sc.write(Response{Kind: KindResponse, RequestID: m.RequestID, Result: body}) != nil {
					return
				}
				continue
			}
			running.Add(1)
			go func(req *Request) {
				defer running.Done()
				cctx := rctx
				if req.ResultBudget > 0 {
					cctx = tool.WithResultBudget(rctx, req.ResultBudget)
				}
				res, err := sess.Call(cctx, req.Method, req.Arguments)
				sc.mu.Lock()
				delete(sc.pending, req.RequestID)
				sc.mu.Unlock()
				rcancel()
				if ctx.Err() != nil {
					return // connection gone: drop the stale reply
				}
				body, _ := contract.Marshal(res, err)
				if len(body)+len(req.RequestID)+64 > MaxFrame {
					body, _ = contract.Marshal(nil, contract.Errorf(contract.CodeResultTooLarge, "the result exceeds the 4 MiB message limit; request a smaller page"))
				}
				if sc.write(Response{Kind: KindResponse, RequestID: req.RequestID, Result: body}) != nil {
					sc.c.Close() // a peer that stops reading is dropped
				}
			}(m)
		case *Cancel:
			sc.mu.Lock()
			if cf, ok := sc.pending[m.RequestID]; ok {
				cf()
			}
			sc.mu.Unlock()
		default:
			s.logger.Info("connection closed: unexpected message kind", "pid", sc.peer.PID)
			return
		}
	}
}
