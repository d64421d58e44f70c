//go:build windows

package ipc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// transportKind names the endpoint kind in get_status.
const transportKind = "named_pipe"

// SocketName is the pipe name prefix; the user's SID is appended
// (\\.\pipe\<name>.mcp.v1.<SID>; docs/host.md, "Endpoint and checks").
const SocketName = "inquest.mcp.v1"

// Dir returns the per-user directory of the host lock and launch marker:
// %LOCALAPPDATA%\inquest.
func Dir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "inquest")
}

// Path returns the named pipe of the current user: \\.\pipe\inquest.mcp.v1.<SID>.
func Path() string {
	sid, err := currentSID()
	if err != nil {
		sid = "unknown"
	}
	return `\\.\pipe\` + SocketName + "." + sid
}

// PrepareDir creates dir (when create). Access control on Windows comes
// from the pipe's DACL, not from this directory.
func PrepareDir(dir string, create bool) error {
	if _, err := os.Stat(dir); err != nil {
		if !create {
			return fmt.Errorf("%w: %v", ErrNoHost, err)
		}
		return os.MkdirAll(dir, 0o700)
	}
	return nil
}

func currentSID() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", err
	}
	return u.User.Sid.String(), nil
}

func processSID(pid uint32) (string, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return "", err
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok); err != nil {
		return "", err
	}
	defer tok.Close()
	u, err := tok.GetTokenUser()
	if err != nil {
		return "", err
	}
	return u.User.Sid.String(), nil
}

// Listen creates the pipe with a protected DACL granting only the current
// user (no inherited or default ACEs), remote clients rejected (go-winio
// sets PIPE_REJECT_REMOTE_CLIENTS) and first-instance protection (the first
// pipe instance is created with FILE_FLAG_FIRST_PIPE_INSTANCE, so a squatter
// that already owns the name makes Listen fail).
func Listen(path string) (net.Listener, error) {
	sid, err := currentSID()
	if err != nil {
		return nil, err
	}
	ln, err := winio.ListenPipe(path, &winio.PipeConfig{
		SecurityDescriptor: "D:P(A;;GA;;;" + sid + ")",
		InputBufferSize:    64 << 10,
		OutputBufferSize:   64 << 10,
	})
	if err != nil {
		return nil, untrusted("cannot create %s: %v", path, err)
	}
	return ln, nil
}

type fder interface{ Fd() uintptr }

// Dial connects to the pipe and verifies that the server process runs as
// the current user (GetNamedPipeServerProcessId + its token's user SID).
func Dial(ctx context.Context, path string) (net.Conn, Peer, error) {
	c, err := winio.DialPipeContext(ctx, path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, windows.ERROR_FILE_NOT_FOUND) {
			return nil, Peer{}, fmt.Errorf("%w: %v", ErrNoHost, err)
		}
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return nil, Peer{}, untrusted("access to %s denied", path)
		}
		return nil, Peer{}, err
	}
	f, ok := c.(fder)
	if !ok {
		c.Close()
		return nil, Peer{}, untrusted("pipe handle unavailable")
	}
	var pid uint32
	if err := windows.GetNamedPipeServerProcessId(windows.Handle(f.Fd()), &pid); err != nil {
		c.Close()
		return nil, Peer{}, untrusted("server process id unavailable: %v", err)
	}
	p, err := peerCheck(pid)
	if err != nil {
		c.Close()
		return nil, p, err
	}
	return c, p, nil
}

func peerCheck(pid uint32) (Peer, error) {
	me, err := currentSID()
	if err != nil {
		return Peer{}, err
	}
	sid, err := processSID(pid)
	if err != nil {
		return Peer{PID: int(pid), UID: -1}, untrusted("cannot read the user of pid %d: %v", pid, err)
	}
	p := Peer{PID: int(pid), UID: -1, SID: sid}
	if sid != me {
		return p, untrusted("pipe peer pid %d runs as another user", pid)
	}
	return p, nil
}

// checkPeer is the accept-side check: the client process must run as the
// current user.
func checkPeer(c net.Conn) (Peer, error) {
	f, ok := c.(fder)
	if !ok {
		return Peer{}, untrusted("pipe handle unavailable")
	}
	var pid uint32
	if err := windows.GetNamedPipeClientProcessId(windows.Handle(f.Fd()), &pid); err != nil {
		return Peer{}, untrusted("client process id unavailable: %v", err)
	}
	return peerCheck(pid)
}

// watchSocketFile is false: a named pipe has no file to delete.
const watchSocketFile = false

// Dirs returns Dir() alone: the pipe name is fixed per user, so every
// client finds the same host.
func Dirs() []string { return []string{Dir()} }

// altPaths returns no other endpoint: there is one pipe per user.
func altPaths() []string { return nil }
