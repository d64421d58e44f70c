//go:build unix

package ipc

import (
	"context"
	"errors"
	"fmt"
	"github.com/inquest-dev/inquest/internal/fsguard"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// transportKind names the endpoint kind in get_status.
const transportKind = "unix_socket"

// SocketName is the endpoint's file name; the version suffix is the IPC
// major version (docs/host.md, "Endpoint and checks").
const SocketName = "mcp.v1.sock"

// Dir returns the per-user endpoint directory, found the same way by every
// client of one user:
//
//  1. $XDG_RUNTIME_DIR/inquest when XDG_RUNTIME_DIR is set;
//  2. else /run/user/<uid>/inquest when /run/user/<uid> exists, is a real
//     directory (not a symlink), belongs to this uid and has no group or
//     other permission bits (the directory systemd-logind makes for a
//     session, and what XDG_RUNTIME_DIR names there): a client started
//     without the variable (an MCP client's launcher, cron, a non-login
//     SSH session) finds the host that a login shell started;
//  3. else /tmp/inquest-<uid>.
//
// The fallback ignores $TMPDIR on purpose: a bridge started by an MCP
// client and a host started from a shell often see different TMPDIRs, and
// must still find the same endpoint and the same host lock. The host lock,
// the launch marker and listener.state live there too. Connect also looks
// for a host already listening in the other places of rule 2 and 3 (Dirs)
// before it starts one.
func Dir() string {
	return Dirs()[0]
}

// runUserBase is the parent of the per-user runtime directories that
// systemd-logind creates (/run/user/<uid>).
const runUserBase = "/run/user"

// userRuntimeDir returns /run/user/<uid> when it is this user's private
// runtime directory (a real directory, owned by this uid, mode 0700 or
// tighter), else "".
func userRuntimeDir() string {
	d := filepath.Join(runUserBase, strconv.Itoa(os.Getuid()))
	fi, err := os.Lstat(d)
	if err != nil || !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return ""
	}
	if ownerOf(fi) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return ""
	}
	return d
}

// Dirs returns the endpoint directories of this user in the order of Dir's
// rule: Dirs()[0] is Dir(). With XDG_RUNTIME_DIR set it is that one place;
// without it, /run/user/<uid>/inquest (when usable) and /tmp/inquest-<uid>,
// since a host may have been started while /run/user/<uid> did not exist
// yet (before the first login of the user) or by a client that found it
// unusable. Connect dials the others, in order, before it starts a host
// in Dir().
func Dirs() []string {
	var out []string
	add := func(d string) {
		for _, o := range out {
			if o == d {
				return
			}
		}
		out = append(out, d)
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		// The user chose the place: no other is searched.
		return []string{filepath.Join(d, "inquest")}
	}
	if d := userRuntimeDir(); d != "" {
		add(filepath.Join(d, "inquest"))
	}
	add(filepath.Join("/tmp", "inquest-"+strconv.Itoa(os.Getuid())))
	return out
}

// Path returns the endpoint: Dir()/mcp.v1.sock.
func Path() string { return filepath.Join(Dir(), SocketName) }

// altPaths returns the endpoints of Dirs() after the first one.
func altPaths() []string {
	var out []string
	for _, d := range Dirs()[1:] {
		out = append(out, filepath.Join(d, SocketName))
	}
	return out
}

// PrepareDir makes sure dir exists (when create) and is trustworthy: a real
// directory (not a symlink), owned by this uid, with no group or other
// permission bits (0700). Anything else is ErrUntrusted; the directory is
// never repaired or deleted, since another user may have planted it. A
// missing dir without create is ErrNoHost.
func PrepareDir(dir string, create bool) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return fmt.Errorf("%w: endpoint directory does not exist", ErrNoHost)
		}
		// A missing parent ($XDG_RUNTIME_DIR removed) is recreated 0700,
		// as the login manager makes it: nobody else lists or enters it.
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return err
	}
	// The check of every directory inquest writes into, with the
	// runtime directory's stricter mode: 0700.
	var e *fsguard.Error
	if err := fsguard.CheckDirInfo(dir, fi, fsguard.Private); errors.As(err, &e) {
		return untrusted("%s: %s; remove it or set XDG_RUNTIME_DIR", dir, e.Reason)
	}
	return nil
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// checkSocketFile verifies path is a socket owned by this uid. A missing
// path is ErrNoHost.
func checkSocketFile(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: no socket", ErrNoHost)
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return untrusted("%s exists and is not a socket", path)
	}
	if uid := ownerOf(fi); uid != os.Getuid() {
		return untrusted("%s is owned by uid %d, not by this user", path, uid)
	}
	return nil
}

// Listen creates the endpoint socket at path (mode 0600) after checking its
// directory with PrepareDir. An existing path must be a socket of this user
// that nobody answers (a stale socket of a crashed host), which is
// replaced; a live socket is an error (another host listens), and a path
// of another owner or type fails closed with ErrUntrusted. Callers hold the
// host lock, so replacing a stale socket cannot race another host.
func Listen(path string) (net.Listener, error) {
	if err := PrepareDir(filepath.Dir(path), true); err != nil {
		return nil, err
	}
	switch err := checkSocketFile(path); {
	case err == nil:
		c, derr := net.DialTimeout("unix", path, 500*time.Millisecond)
		if derr == nil {
			c.Close()
			return nil, fmt.Errorf("ipc: another process already listens on %s", path)
		}
		if !errors.Is(derr, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("ipc: cannot probe existing socket %s: %w", path, derr)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	case errors.Is(err, ErrNoHost):
	default:
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Dial connects to the endpoint at path and verifies, before any byte is
// sent, that the directory and socket belong to this user and that the
// listening process runs as this user (SO_PEERCRED). A missing socket or a
// stale one (connection refused) is ErrNoHost; everything else that is
// wrong is ErrUntrusted and must not lead to starting a host.
func Dial(ctx context.Context, path string) (net.Conn, Peer, error) {
	if err := PrepareDir(filepath.Dir(path), false); err != nil {
		return nil, Peer{}, err
	}
	if err := checkSocketFile(path); err != nil {
		return nil, Peer{}, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
			return nil, Peer{}, fmt.Errorf("%w: %v", ErrNoHost, err)
		case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
			return nil, Peer{}, untrusted("access to %s denied", path)
		}
		return nil, Peer{}, err
	}
	p, err := peerOf(c)
	if err != nil {
		c.Close()
		return nil, Peer{}, err
	}
	if p.UID != os.Getuid() {
		c.Close()
		return nil, p, untrusted("the process listening on %s (pid %d) runs as uid %d, not as this user", path, p.PID, p.UID)
	}
	return c, p, nil
}

// checkPeer is the accept-side check: the connecting process must run as
// this user.
func checkPeer(c net.Conn) (Peer, error) {
	p, err := peerOf(c)
	if err != nil {
		return p, err
	}
	if p.UID != os.Getuid() {
		return p, untrusted("connection from pid %d of uid %d rejected", p.PID, p.UID)
	}
	return p, nil
}

// watchSocketFile says the endpoint is a file that can be deleted while the
// host listens, so the host watches it (HostEndpoint.CheckSocket).
const watchSocketFile = true
