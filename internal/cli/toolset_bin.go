package cli

import (
	"context"
	"encoding/json"
	"os"
	"slices"

	"github.com/inquest-dev/inquest/internal/bin"
	"github.com/inquest-dev/inquest/internal/bridge"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/tool"
)

// buildBin adds the bin toolset: binary inspection, symbols, strings,
// disassembly, comparison and HAR captures. Every result is retained in
// the perf runtime's session table, so preserve_evidence publishes it by
// analysis_id. Cursors are sealed with the evidence store's persisted key
// (opened on the first cursor), so they survive restarts; when the store
// cannot be opened they fall back to a process-local key.
func buildBin(ctx context.Context, rt *Runtime, opts runtimeOptions) error {
	tools := bin.Tools(binEnv(rt, opts))
	if len(opts.BinTools) > 0 {
		tools = slices.DeleteFunc(tools, func(t tool.Tool) bool { return !slices.Contains(opts.BinTools, t.Name) })
	}
	return rt.Registry.Add(tools...)
}

// binEnv is the bin toolset's environment in rt: analyses adopted by
// rt's perf runtime, cursors from its evidence store (or this process
// when the store is unusable), mapped_by from its running proc host.
func binEnv(rt *Runtime, opts runtimeOptions) bin.Env {
	prt := rt.perfRuntime()
	local := evidence.NewContinuations(nil)
	env := bin.Env{
		Analyses: prt,
		Continuations: func(context.Context) *evidence.Continuations {
			if st, err := prt.Store(); err == nil {
				return st.Continuations()
			}
			return local
		},
	}
	if rt.runningProc != nil && !opts.NoHost {
		env.MappedBy = func(ctx context.Context, path string) any { return mappedBy(ctx, rt.runningProc, path) }
	}
	return env
}

// mappedBy is inspect_binary's data.mapped_by for the file at path: the
// running proc host's answer ({state: "known", count, processes: first
// 20 {pid, process_ref, name}, processes_examined, processes_unreadable,
// complete}: from every readable /proc/PID/maps, matching the file's
// device and inode; this process, which maps the file while it reads it,
// is not counted), or {state: "unknown", reason} when no host runs (none
// is started for this), the host cannot answer, or the call fails.
func mappedBy(ctx context.Context, running func(context.Context) (bridge.Backend, error), path string) any {
	unknown := func(reason string) any { return map[string]any{"state": "unknown", "reason": reason} }
	b, err := running(ctx)
	if err != nil {
		return unknown(contract.AsError(err).Message + " (inspect_binary never starts a host to answer mapped_by)")
	}
	// This process maps the file while inspect_binary reads it: not counted.
	args, _ := json.Marshal(map[string]any{"path": path, "exclude_pid": os.Getpid()})
	res, err := b.Call(ctx, host.MappedByMethod, args)
	if err != nil {
		e := contract.AsError(err)
		if e.Code == contract.CodeBackendUnavailable {
			return unknown(e.Message + " (inspect_binary never starts a host to answer mapped_by; a proc tool call does)")
		}
		return unknown("the proc host could not answer (" + string(e.Code) + "): " + e.Message)
	}
	var d map[string]any
	raw, _ := json.Marshal(res.Data)
	if json.Unmarshal(raw, &d) != nil || d == nil {
		return unknown("the proc host's answer was not an object")
	}
	delete(d, "path")
	out := map[string]any{"state": "known"}
	for k, v := range d {
		out[k] = v
	}
	return out
}
