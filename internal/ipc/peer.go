package ipc

import (
	"errors"
	"fmt"
)

// Peer is the other end of a local connection as the kernel reports it
// (Linux: SO_PEERCRED; macOS: LOCAL_PEERCRED/LOCAL_PEERPID; Windows:
// GetNamedPipeClient/ServerProcessId and the process token). UID is -1 and
// SID holds the user on Windows.
type Peer struct {
	PID int
	UID int
	SID string
	// Client is Hello.Client of the connection (set after the handshake).
	Client string
}

// ErrUntrusted marks an endpoint that fails closed: a directory or socket
// owned by another user, a path that is not a socket, loose permissions, or
// a peer running as another user. It never permits starting a host.
var ErrUntrusted = errors.New("ipc: endpoint is not trusted")

// ErrNoHost marks an absent endpoint: no socket file, or a stale socket
// nobody listens on. Only this error permits starting a host
// (docs/host.md, "Startup and failures": only a missing or stale socket
// may lead on to startup).
var ErrNoHost = errors.New("ipc: no host is listening")

func untrusted(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUntrusted}, args...)...)
}
