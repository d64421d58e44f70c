package cli

import (
	"context"
	"encoding/json"

	"github.com/inquest-dev/inquest/internal/bridge"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
)

// nameCaptureWorkloads makes the perf captures of rt name each workload
// execution's lifetime for the proc tools (perf.ProcessNamer), through
// the proc host's resolve_pid with the workload's start time. serveProc
// says the proc tools are served to the caller (else a ref would name
// nothing it can call); start says the host may be started for it (the
// MCP server: the agent's next proc call would start it anyway); without
// start only a host that already runs is asked, as the CLI's capture
// never leaves a host behind.
func (rt *Runtime) nameCaptureWorkloads(serveProc, start bool) {
	prt := rt.perfRuntime()
	backend := rt.runningProc
	if start {
		backend = rt.proc
	}
	switch {
	case !serveProc:
		prt.SetProcessNamer(nil, "this server does not serve the proc toolset (inquest mcp --toolsets), so no process_ref names the workload; its pid does while it runs")
		return
	case backend == nil:
		prt.SetProcessNamer(nil, "no proc toolset runs in this process, so no process_ref names the workload; its pid does while it runs")
		return
	}
	prt.SetProcessNamer(func(ctx context.Context, pid int, startTicks uint64) (string, error) {
		return resolveLifetime(ctx, backend, pid, startTicks)
	}, "")
}

// resolveLifetime asks the proc host behind backend for the process_ref of
// the lifetime (pid, startTicks): resolve_pid answers once the host has
// sampled it (COLLECTION_FAILED until then) and PROCESS_EXITED when that
// lifetime no longer runs. No host (BACKEND_UNAVAILABLE) keeps its message
// and adds that the pid still names the workload.
func resolveLifetime(ctx context.Context, backend func(context.Context) (bridge.Backend, error), pid int, startTicks uint64) (string, error) {
	b, err := backend(ctx)
	if err != nil {
		return "", err
	}
	args, _ := json.Marshal(map[string]any{"pid": pid, "start_ticks": startTicks})
	res, err := b.Call(ctx, host.ResolvePIDMethod, args)
	if err != nil {
		e := contract.AsError(err)
		if e.Code == contract.CodeBackendUnavailable {
			c := *e
			c.Message = "no proc host could be reached, so no process_ref names the workload (its pid does while it runs): " + e.Message
			return "", &c
		}
		return "", e
	}
	var d struct {
		ProcessRef string `json:"process_ref"`
	}
	raw, _ := json.Marshal(res.Data)
	if json.Unmarshal(raw, &d) != nil || d.ProcessRef == "" {
		return "", contract.Errorf(contract.CodeInternalError, "the proc host's resolve_pid answer names no process_ref")
	}
	return d.ProcessRef, nil
}
