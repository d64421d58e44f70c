package cli

import (
	"context"
	"encoding/json"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/ipc"
)

// callHost runs one host method over IPC, connecting to the user's host and
// starting it when none runs (ipc.Connect), then closes the connection.
// Any method the host registered can be called by name, including internal
// methods that no MCP tool exposes (local confirmation: `inquest confirm`).
// args is marshalled to a JSON object (nil = {}). The outcome is the host's
// result or a *contract.Error (BACKEND_UNAVAILABLE, OUTCOME_UNKNOWN, ...).
// Objects the method creates for the connection (captures, cursors) die
// with it; use a Client from ipc.Connect to keep a connection across calls.
func callHost(ctx context.Context, method string, args any) (*contract.Result, error) {
	return hostCall(ctx, true, "", method, args)
}

// callRunningHost is callHost without starting a host: when none runs the
// error is BACKEND_UNAVAILABLE ("no inquest host is running"). Use it for
// methods that only make sense on a host that already has state (local
// confirmation of a pending operation).
func callRunningHost(ctx context.Context, method string, args any) (*contract.Result, error) {
	return hostCall(ctx, false, "", method, args)
}

// callConfirmHost is callRunningHost over a local decision connection
// (hello client ipc.ClientLocalConfirm): the host keeps a reserved
// allowance for these (ipc.MaxConfirmConns) that MCP bridges and other CLI
// commands cannot use, so `inquest confirm` and the y/N answer of a
// waiting mutation are never refused BUSY by other connections.
func callConfirmHost(ctx context.Context, method string, args any) (*contract.Result, error) {
	return hostCall(ctx, false, ipc.ClientLocalConfirm, method, args)
}

func hostCall(ctx context.Context, start bool, client, method string, args any) (*contract.Result, error) {
	raw := json.RawMessage("{}")
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, contract.Errorf(contract.CodeInvalidArgument, "arguments cannot be encoded")
		}
		raw = b
	}
	c, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: Version, Start: start, Client: client})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Call(ctx, method, raw)
}
