package cli

import (
	"context"
	"io"

	"github.com/inquest-dev/inquest/internal/bin"
	"github.com/inquest-dev/inquest/internal/bridge"
	"github.com/inquest-dev/inquest/internal/perf"
	"github.com/inquest-dev/inquest/internal/tool"
)

// runtimeOptions configure newRuntime.
type runtimeOptions struct {
	// Raw selects the raw delivery mode for proc tools (inquest mcp --raw).
	Raw bool
	// NoHost builds the catalog without starting or reaching a proc host
	// (inspect, docs generation).
	NoHost bool
	// MCP marks the runtime of `inquest mcp`: its host connection is an MCP
	// bridge session, refused local-only decisions.
	MCP bool
	// Stderr receives diagnostics.
	Stderr io.Writer
	// InProcess runs the proc tools over a host inside this process instead
	// of the user's host over IPC (inquest mcp --in-process).
	InProcess bool
	// Ceilings are the perf tools' server ceilings (perf.DefaultCeilings
	// when zero): inquest mcp --limits.
	Ceilings perf.Ceilings
	// ProcTools, when set, registers only these proc tools (a command that
	// calls one tool, such as ps, skips checking the others' schemas).
	ProcTools []string
	// BinTools, when set, registers only these bin tools (a bin command
	// calls one tool and skips parsing the others' schemas).
	BinTools []string
}

// Runtime is the set of toolsets a command runs over: one registry plus
// whatever each toolset must close.
type Runtime struct {
	Registry *tool.Registry
	closers  []func()
	// perf is the analysis runtime behind the perf tools; the bin tools
	// retain their results in its session table (analysis_id), so one
	// preserve_evidence serves both toolsets.
	perf *perf.Runtime
	// runningProc returns the proc backend only when a host already runs
	// (nil when this runtime has no proc toolset): bin's mapped_by asks it
	// and never starts a host.
	runningProc func(ctx context.Context) (bridge.Backend, error)
	// proc returns the proc tools' backend, starting a host when none
	// runs (nil when this runtime has no proc toolset): the MCP server's
	// captures name their workloads through it (follow.go).
	proc func(ctx context.Context) (bridge.Backend, error)
	// preconnectProc connects the proc backend to a host that already
	// runs, before the first call needs it (nil without a proc toolset);
	// see bridge.IPC.Preconnect.
	preconnectProc func(ctx context.Context)
	// ceilings are the perf runtime's server ceilings (zero: built-in).
	ceilings perf.Ceilings
}

// perfRuntime returns rt's perf runtime, creating it (sessions on, bin
// replay registered, closed with rt) on first use.
func (rt *Runtime) perfRuntime() *perf.Runtime {
	if rt.perf == nil {
		prt := perf.New(perf.Config{Sessions: true, Ceilings: rt.ceilings})
		prt.SetReplayer(tool.Bin, bin.Replay)
		rt.perf = prt
		rt.closers = append(rt.closers, func() { prt.ReleaseCaptures(); prt.Close() })
	}
	return rt.perf
}

// Close releases every toolset's resources, last opened first.
func (rt *Runtime) Close() {
	for i := len(rt.closers) - 1; i >= 0; i-- {
		rt.closers[i]()
	}
}

// toolsetBuilder adds one toolset's tools to rt; it may append a closer.
type toolsetBuilder func(ctx context.Context, rt *Runtime, opts runtimeOptions) error

// toolsets is the one list of toolsets a full runtime holds, in
// tool.Toolsets order: proc (toolset_proc.go), perf (toolset_perf.go),
// bin (toolset_bin.go).
var toolsets = []toolsetBuilder{buildProc, buildPerf, buildBin}

// newRuntime builds the registry over every toolset.
func newRuntime(ctx context.Context, opts runtimeOptions) (*Runtime, error) {
	rt := &Runtime{Registry: tool.NewRegistry(), ceilings: opts.Ceilings}
	for _, b := range toolsets {
		if err := b(ctx, rt, opts); err != nil {
			rt.Close()
			return nil, err
		}
	}
	return rt, nil
}
