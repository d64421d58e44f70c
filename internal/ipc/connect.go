package ipc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/contract"
)

// Startup deadlines (docs/host.md, "Startup and failures").
const (
	// AttemptTimeout bounds one connect + handshake attempt.
	AttemptTimeout = 2 * time.Second
	// StartupDeadline bounds the whole connect-or-start sequence.
	StartupDeadline = 12 * time.Second
)

// ConnectOptions configure Connect.
type ConnectOptions struct {
	// Path is the endpoint (default Path()).
	Path string
	// BridgeVersion is sent in hello.
	BridgeVersion string
	// Client is sent in hello (ClientMCPBridge for `inquest mcp`).
	Client string
	// Start permits starting a headless host when none runs. CLI commands
	// and the MCP bridge set it; a status probe does not.
	Start bool
	// Launch starts a host; it returns once the launcher finished (success
	// is not readiness). Default: run `<this executable> serve --detach`.
	Launch func(ctx context.Context) error
	// Deadline overrides StartupDeadline (tests).
	Deadline time.Duration
}

// unavailable builds BACKEND_UNAVAILABLE with guidance.
func unavailable(format string, args ...any) *contract.Error {
	return contract.Errorf(contract.CodeBackendUnavailable, format, args...)
}

// needsAction is BACKEND_UNAVAILABLE that an unchanged retry cannot fix
// (retryable false): the user must change a setting, a file or a path.
func needsAction(format string, args ...any) *contract.Error {
	e := unavailable(format, args...)
	e.Retryable = false
	return e
}

// disabledHelp is the remedy for saved or runtime MCP disablement: the
// shared host serves CLI commands over the same endpoint, so they need it
// re-enabled or a one-shot in-process host.
const disabledHelp = "Re-enable them with `inquest settings set mcp_connections_disabled false`, or run a single command on its own in-process host with `INQUEST_IN_PROCESS=1 inquest ...` (for MCP clients: `inquest mcp --in-process`); an in-process host's history lasts only as long as that command"

// Connect returns a handshaken client to the user's host, starting one
// when none runs and opts.Start allows it. The sequence (docs/host.md,
// "Startup and failures"):
//
//  1. Dial + handshake, at most 2 s. Only ErrNoHost (no socket, or a stale
//     socket) lets the sequence continue; an untrusted endpoint, a refused
//     handshake (BUSY at 4 connections) or a version mismatch is returned.
//  2. If the host lock is held, a host runs (starting, or with its listener
//     disabled or failed): wait for it, never launch another.
//  3. Read inquest.toml without changing it: saved mcp_connections_disabled
//     (or an unreadable file) stops here.
//  4. Take the launch marker; the winner rechecks endpoint and lock, then
//     launches `inquest serve --detach`; losers wait and recheck.
//  5. Wait for the handshake within the 12 s total; launch at most once.
//
// Every failure is a *contract.Error: BACKEND_UNAVAILABLE with guidance,
// BUSY, or CANCELLED when ctx ended before anything was dispatched.
func Connect(ctx context.Context, opts ConnectOptions) (*Client, error) {
	path := opts.Path
	if path == "" {
		path = Path()
	}
	total := opts.Deadline
	if total <= 0 {
		total = StartupDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	parent := ctx

	cl, err := attempt(ctx, path, opts.BridgeVersion, opts.Client)
	if err == nil || !errors.Is(err, ErrNoHost) {
		return cl, mapConnErr(parent, err)
	}
	if opts.Path == "" {
		// A host started by a client of this user with another
		// environment (XDG_RUNTIME_DIR set or not) listens in another of
		// the user's endpoint directories: use it rather than start a
		// second host with its own history.
		for _, alt := range altPaths() {
			// Only a host that answers is used; an alternate place that
			// fails its checks never stops the start in Dir().
			if acl, aerr := attempt(ctx, alt, opts.BridgeVersion, opts.Client); aerr == nil {
				return acl, nil
			}
		}
	}
	if !opts.Start {
		return nil, unavailable("no inquest host is running; start one with `inquest serve --detach`")
	}
	dir := Dir()
	running, pid, lerr := HostRunning(dir)
	if lerr != nil && !running {
		if errors.Is(lerr, fs.ErrPermission) {
			return nil, needsAction("cannot inspect the host lock in %s: %v; this user (uid %d) may not use that directory, so no host was started. Set XDG_RUNTIME_DIR to a directory this user owns, or run as the user that owns it", dir, lerr, os.Getuid())
		}
		return nil, unavailable("cannot inspect the host lock: %v", lerr)
	}
	if running {
		// A host holds the lock: it is starting, or its listener is off or
		// failed (it says which in listener.state). Never start a second one.
		switch readListenerState(dir) {
		case StateDisabled:
			return nil, needsAction("the running inquest host (pid %d) has MCP connections disabled (mcp_connections_disabled = true), which closes the endpoint that inquest commands and MCP clients use. %s", pid, disabledHelp)
		case StateFailed:
			return nil, unavailable("the running inquest host (pid %d) could not open its MCP listener; see `inquest serve` log ($XDG_STATE_HOME/inquest/serve.log) and its get_status, or restart it", pid)
		}
		cl, err = waitReady(ctx, path, opts.BridgeVersion, opts.Client)
		if err != nil && errors.Is(err, ErrNoHost) && !errors.Is(parent.Err(), context.Canceled) {
			return nil, unavailable("an inquest host is running (pid %d) but accepts no MCP connections: its listener may be disabled at runtime (`inquest settings get mcp_connections_disabled`), may have failed (see $XDG_STATE_HOME/inquest/serve.log), or it is still starting; no second host was started", pid)
		}
		return cl, mapConnErr(parent, err)
	}
	cfg, cerr := config.Load()
	if cerr != nil {
		return nil, needsAction("inquest.toml cannot be read (%v), so no host was started automatically; fix the file or start the host with `inquest serve --detach`", cerr)
	}
	if cfg.Settings.MCPConnectionsDisabled {
		return nil, needsAction("MCP connections are disabled in the saved settings (mcp_connections_disabled = true), so no host was started: a host started with that setting opens no endpoint, and inquest commands reach the host through it too. %s", disabledHelp)
	}
	release, merr := AcquireLaunchMarker(ctx, dir)
	if merr != nil {
		return nil, mapConnErr(parent, fmt.Errorf("%w: waiting for the launch marker: %v", ErrNoHost, merr))
	}
	defer release()
	// Recheck after winning the marker: another bridge may have started the
	// host meanwhile (it released the marker once the host answered).
	cl, err = attempt(ctx, path, opts.BridgeVersion, opts.Client)
	if err == nil || !errors.Is(err, ErrNoHost) {
		return cl, mapConnErr(parent, err)
	}
	if r, _, _ := HostRunning(dir); !r {
		if lerr := launch(ctx, opts); lerr != nil {
			return nil, unavailable("starting `inquest serve --detach` failed: %v; start the host manually and see its log", lerr)
		}
	}
	cl, err = waitReady(ctx, path, opts.BridgeVersion, opts.Client)
	return cl, mapConnErr(parent, err)
}

// attempt dials and handshakes once, bounded by AttemptTimeout.
func attempt(ctx context.Context, path, version, client string) (*Client, error) {
	actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	c, peer, err := Dial(actx, path)
	if err != nil {
		return nil, err
	}
	// The listening process must be the host that holds the host lock
	// (the bridge verifies the server's pid too; docs/host.md, "Endpoint and checks").
	if running, pid, _ := HostRunning(filepath.Dir(path)); running && pid > 0 && pid != peer.PID {
		c.Close()
		return nil, untrusted("the endpoint is served by pid %d but the host lock is held by pid %d", peer.PID, pid)
	}
	d := AttemptTimeout
	if dl, ok := actx.Deadline(); ok {
		d = time.Until(dl)
	}
	return HandshakeAs(c, peer, version, client, d)
}

// waitReady retries attempt until it succeeds, fails with something other
// than ErrNoHost, or ctx ends.
func waitReady(ctx context.Context, path, version, client string) (*Client, error) {
	for {
		cl, err := attempt(ctx, path, version, client)
		if err == nil || !errors.Is(err, ErrNoHost) {
			return cl, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func launch(ctx context.Context, opts ConnectOptions) error {
	if opts.Launch != nil {
		return opts.Launch(ctx)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, exe, "serve", "--detach")
	// No stdio of the MCP client reaches the launcher or the host.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 0 {
			return fmt.Errorf("%v: %s", err, firstLine(out))
		}
		return err
	}
	return nil
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// mapConnErr turns a connection failure into a contract error with guidance:
// an untrusted endpoint (another owner, a symlink, loose modes) and a
// permission failure (EACCES/EPERM) are BACKEND_UNAVAILABLE with retryable
// false, since an unchanged retry fails the same way.
func mapConnErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var ce *contract.Error
	if errors.As(err, &ce) {
		return ce
	}
	switch {
	case errors.Is(err, ErrUntrusted):
		return needsAction("the host endpoint failed its security check and was not used: %v. Nothing was started; remove the offending path or set XDG_RUNTIME_DIR to a private directory", err)
	case errors.Is(ctx.Err(), context.Canceled):
		return contract.Errorf(contract.CodeCancelled, "the call was cancelled before it reached the host")
	case errors.Is(err, fs.ErrPermission):
		// EACCES/EPERM on the endpoint's directory or socket: the same
		// call fails the same way until a permission or a path changes.
		return needsAction("cannot connect to the inquest host: %v; this user (uid %d) may not use the endpoint directory, so nothing was started. Set XDG_RUNTIME_DIR to a directory this user owns, or run as the user that owns it", err, os.Getuid())
	case errors.Is(err, ErrNoHost):
		return unavailable("no inquest host became ready within %s; start one with `inquest serve --detach` and check its log ($XDG_STATE_HOME/inquest/serve.log)", StartupDeadline)
	}
	return unavailable("cannot connect to the inquest host: %v", err)
}
