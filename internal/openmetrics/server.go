package openmetrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Setting names of the exporter in inquest.toml ([settings]).
const (
	SettingListen      = "openmetrics_listen"
	SettingAllowRemote = "openmetrics_allow_remote"
)

// HTTP limits of the exporter's server: a client gets ReadHeaderTimeout to
// send its request head and WriteTimeout to take the response; an idle
// keep-alive connection is closed after IdleTimeout.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 8 << 10
)

// ListenError is an openmetrics_listen value that is not HOST:PORT (an IP
// address or "localhost", and a port number).
type ListenError struct {
	Listen, Reason string
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("%s %q: %s (want HOST:PORT, for example 127.0.0.1:9935)", SettingListen, e.Listen, e.Reason)
}

// RemoteError is an openmetrics_listen address that is not loopback while
// openmetrics_allow_remote is not true: the exporter then stays off.
type RemoteError struct {
	Listen string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s %q is not a loopback address: set %s true to serve metrics to other machines (anyone who can reach the port reads the tracked processes' names and metrics), or listen on 127.0.0.1", SettingListen, e.Listen, SettingAllowRemote)
}

// CheckListen validates an openmetrics_listen value: HOST:PORT with an IP
// address or "localhost" (a host name other than localhost, or an empty
// host meaning every interface, counts as remote) and a port 0-65535 (0:
// any free port). A non-loopback address needs allowRemote, else
// *RemoteError. "" (off) is valid.
func CheckListen(listen string, allowRemote bool) error {
	if listen == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return &ListenError{Listen: listen, Reason: "not HOST:PORT"}
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(p, 10) != port {
		return &ListenError{Listen: listen, Reason: "the port is not a number from 0 to 65535"}
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil {
		loopback = ip.IsLoopback()
	}
	if !loopback && !allowRemote {
		return &RemoteError{Listen: listen}
	}
	return nil
}

// Server is the exporter's own HTTP listener, separate from the MCP
// endpoints (local sockets and stdio, which it never touches). It is off
// until Apply gets an address.
type Server struct {
	x *Exporter

	mu     sync.Mutex
	listen string // the setting applied ("" = off)
	srv    *http.Server
	ln     net.Listener
	done   chan struct{}
}

// NewServer returns a stopped server for x.
func NewServer(x *Exporter) *Server { return &Server{x: x} }

// Apply makes the server listen as the settings say: listen "" stops it;
// an address (checked by CheckListen) opens a fresh listener there,
// closing any previous one. Applying the setting already in force does
// nothing. An invalid setting or a failed bind stops the server and
// returns the error (*ListenError, *RemoteError, or the bind error
// naming the address).
func (s *Server) Apply(listen string, allowRemote bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := CheckListen(listen, allowRemote); err != nil {
		s.stopLocked()
		return err
	}
	if listen == s.listen && (s.ln != nil || listen == "") {
		return nil
	}
	s.stopLocked()
	if listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("%s %s: %w", SettingListen, listen, err)
	}
	srv := &http.Server{
		Handler:           s.x,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	s.listen, s.srv, s.ln, s.done = listen, srv, ln, done
	return nil
}

// Addr returns the bound address ("127.0.0.1:9935"; the port chosen for
// port 0), or "" while the server is off.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the server (as Apply("")).
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() {
	s.listen = ""
	if s.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.srv.Close()
	}
	<-s.done
	s.srv, s.ln, s.done = nil, nil, nil
}
