// Package ipc is the local, authenticated transport between bridges (and
// CLI commands) and the user's inquest host. No TCP/IP is involved anywhere.
//
// # Endpoint
//
// Unix: the socket $XDG_RUNTIME_DIR/inquest/mcp.v1.sock; when
// XDG_RUNTIME_DIR is unset, /run/user/<uid>/inquest/mcp.v1.sock if
// /run/user/<uid> is this user's private directory, else
// /tmp/inquest-<uid>/mcp.v1.sock (Dir, Path, Dirs). Without
// XDG_RUNTIME_DIR, Connect also uses a host already listening in the other
// of those two places before starting one. The directory must be a real directory owned by this uid
// with mode 0700; the socket is created 0600. Both sides verify the peer
// with SO_PEERCRED (macOS: LOCAL_PEERCRED): the host rejects a connecting
// process of another uid before the handshake; the bridge rejects a
// listening process of another uid before sending anything (Dial). A
// directory or socket owned by another uid, a path that is not a socket, a
// symlink or loose permissions fail closed with ErrUntrusted and never lead
// to starting a host; only ErrNoHost (no socket, or a stale one that
// refuses connections) does.
//
// Windows (compiled, not tested here): the named pipe
// \\.\pipe\inquest.mcp.v1.<SID> created through go-winio with a protected
// DACL granting only the current user, remote clients rejected and
// first-instance protection; both sides compare the peer process's token
// user with their own.
//
// The same directory holds host.lock (flock, held by the running host for
// its life: one host per user; it contains the host's pid), launch.lock
// (the launch marker that makes concurrent bridges start one host) and
// listener.state (listening/disabled/failed, written by the host so that
// bridges fail at once when a running host does not listen).
//
// # Frames and messages
//
// A frame is a 4-byte unsigned little-endian payload length and exactly
// that many bytes of UTF-8 holding one JSON object, at most 4 MiB
// (ReadFrame, WriteFrame). Zero-length, oversized, non-UTF-8, malformed or
// non-object frames close the connection before dispatch. Messages carry a
// "kind" and are decoded strictly (unknown fields are protocol errors):
//
//	bridge -> host  {"kind":"hello","ipc_major":1,"ipc_minor":1,"bridge_version":"0.1.0"}
//	host -> bridge  {"kind":"welcome","ipc_major":1,"ipc_minor":1,"backend_instance_id":"…","application_version":"…"}
//	host -> bridge  {"kind":"reject","code":"BUSY","message":"…"}            (instead of welcome: 4 connections, or major mismatch)
//	bridge -> host  {"kind":"request","request_id":"7","method":"list_processes","arguments":{…},"result_budget":131072}
//	host -> bridge  {"kind":"response","request_id":"7","result":{…envelope or {"error":{…}}…}}
//	bridge -> host  {"kind":"cancel","request_id":"7"}
//
// request_id is 1..128 bytes and unique among the connection's pending
// requests (a duplicate closes the connection); cancelling an unknown or
// finished id does nothing. At most 8 requests are pending per connection
// (more are answered BUSY) and 4 connections are served (a fifth gets a
// BUSY reject). A reply the peer does not read within 10 s drops the
// connection, so a stalled peer holds at most 8 replies and never blocks
// sampling. Each connection is one host.Session: its cursors, captures and
// jobs close with it.
//
// # Using the host from Go (CLI commands, tools)
//
//	c, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: cli.Version, Start: true})
//	if err != nil { … } // *contract.Error: BACKEND_UNAVAILABLE (with guidance), BUSY, CANCELLED
//	defer c.Close()
//	res, err := c.Call(ctx, "confirm_operation", json.RawMessage(`{"operation_id":"…","decision":"approve"}`))
//
// Connect finds the user's host or, with Start, launches `inquest serve
// --detach` (this executable) when none runs: 2 s per attempt, 12 s in
// total, never when mcp_connections_disabled is saved true or inquest.toml
// is unreadable, never a second host while one holds host.lock. Call
// carries any method the host registered with host.Handle, by name,
// including internal methods no MCP tool exposes (local confirmation);
// results keep the host's JSON exactly (Data and Coverage are
// json.RawMessage). A lost connection, cancellation after dispatch or the
// 10 s response deadline give OUTCOME_UNKNOWN; a Client never replays. A
// request never written (the connection was already lost) is a retryable
// BACKEND_UNAVAILABLE for which NotSent is true.
// Inside internal/cli, callHost(ctx, method, args) does connect-call-close
// in one step; bridge.IPC is the reconnecting Backend of `inquest mcp`.
//
// # Serving a host
//
// HostEndpoint binds a HostService (the host's IPCService) to the endpoint (Enable/Disable at
// runtime) and adds get_status data.mcp: listener state, connections,
// limits, last error, listener_starts. `inquest serve` wires it, with the
// settings watcher that applies mcp_connections_disabled at runtime.
package ipc
