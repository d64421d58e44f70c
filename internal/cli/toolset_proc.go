package cli

import (
	"context"
	"os"
	"sync"

	"github.com/inquest-dev/inquest/internal/bridge"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tool"
)

// inProcessEnv, set to 1, makes every command run the proc tools over a
// host inside the command's own process (bridge.Local) instead of the
// user's host over IPC: an escape hatch for tests and for machines where
// no host may run. History then lives only as long as the command.
const inProcessEnv = "INQUEST_IN_PROCESS"

// buildProc adds the proc tools. The backend is reached lazily on the first
// valid proc call, so initialize, tools/list and invalid calls start
// nothing. By default that backend is the user's host over the local
// endpoint (started headless when none runs); --in-process or
// INQUEST_IN_PROCESS=1 selects a host inside this process.
func buildProc(ctx context.Context, rt *Runtime, opts runtimeOptions) error {
	var mu sync.Mutex
	var backend bridge.Backend
	// closed: the runtime was closed; nothing connects any more (a
	// preconnect still on its way must not open a connection then).
	var closed bool
	inProcess := opts.InProcess || os.Getenv(inProcessEnv) == "1"
	// remote is the one IPC backend of this process: every proc call, the
	// bin toolset's mapped_by probe and the naming of perf workloads share
	// its single host connection, so one bridge holds one bridge slot of
	// the host whatever toolset it calls first.
	var remote *bridge.IPC
	ipcBackend := func() *bridge.IPC {
		if remote == nil {
			client := ""
			if opts.MCP {
				client = ipc.ClientMCPBridge
			}
			remote = bridge.NewIPC(ipc.ConnectOptions{BridgeVersion: Version, Start: true, Client: client})
		}
		return remote
	}
	get := func(ctx context.Context) (bridge.Backend, error) {
		mu.Lock()
		defer mu.Unlock()
		if backend != nil {
			return backend, nil
		}
		if closed {
			return nil, contract.Errorf(contract.CodeBackendUnavailable, "the command's proc runtime is closed")
		}
		if !inProcess {
			backend = ipcBackend()
			return backend, nil
		}
		b, err := bridge.NewLocal(ctx, Version)
		if err != nil {
			return nil, err
		}
		// Nothing outside this process can reach this host, so no local
		// decision can ever arrive: actions needing one fail at once
		// (UNSUPPORTED) instead of waiting in pending_confirmation.
		host.DisableLocalDecisions(b.Host)
		// get_status data.host: this process is the host.
		pid := os.Getpid()
		b.Host.AddStatus(func(m map[string]any) {
			m["host"] = map[string]any{"pid": pid, "face": "in-process"}
		})
		backend = b
		return b, nil
	}
	rt.proc = get
	// A host that already runs, for bin's mapped_by: the backend of an
	// earlier proc call, else (over IPC) the same backend's connection
	// made without starting a host (Running). An in-process host runs only
	// once a proc tool was called.
	rt.runningProc = func(ctx context.Context) (bridge.Backend, error) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return nil, contract.Errorf(contract.CodeBackendUnavailable, "the command's proc runtime is closed")
		}
		if inProcess {
			if backend != nil {
				return backend, nil
			}
			return nil, contract.Errorf(contract.CodeBackendUnavailable, "the in-process proc host has not started: no proc tool was called yet in this session")
		}
		return ipcBackend().Running(), nil
	}
	rt.preconnectProc = func(ctx context.Context) {
		if inProcess {
			return // the first call starts the in-process host
		}
		if b, err := get(ctx); err == nil {
			if ib, ok := b.(*bridge.IPC); ok {
				ib.Preconnect(ctx)
			}
		}
	}
	rt.closers = append(rt.closers, func() {
		mu.Lock()
		defer mu.Unlock()
		closed = true
		if backend != nil {
			backend.Close()
			backend = nil
		}
		if remote != nil {
			remote.Close()
		}
	})
	mode := bridge.Mode{Raw: opts.Raw}
	if !opts.MCP {
		// A terminal reads whole pages: the agent-sized budget is MCP's.
		mode.ResultBudget = tool.HardResultBytes
	}
	if opts.ProcTools != nil {
		// only the command's tools' declarations and schemas are built
		return rt.Registry.Add(bridge.ToolsNamed(get, mode, opts.ProcTools...)...)
	}
	return rt.Registry.Add(bridge.Tools(get, mode)...)
}
