package cli

import (
	"context"
	"io"

	"github.com/inquest-dev/inquest/internal/tool"
)

// runtimeOptions configure newRuntime.
type runtimeOptions struct {
	// Raw selects seed 000's raw delivery mode for proc tools.
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
}

// Runtime is the set of toolsets a command runs over: one registry plus
// whatever each toolset must close.
type Runtime struct {
	Registry *tool.Registry
	closers  []func()
}

// Close releases every toolset's resources, last opened first.
func (rt *Runtime) Close() {
	for i := len(rt.closers) - 1; i >= 0; i-- {
		rt.closers[i]()
	}
}

// toolsetBuilder adds one toolset's tools to rt; it may append a closer.
type toolsetBuilder func(ctx context.Context, rt *Runtime, opts runtimeOptions) error

// toolsets is filled by the toolset_*.go files' init functions, in
// tool.Toolsets order (proc, perf, bin) by file name.
var toolsets []toolsetBuilder

func addToolset(b toolsetBuilder) { toolsets = append(toolsets, b) }

// newRuntime builds the registry over every toolset.
func newRuntime(ctx context.Context, opts runtimeOptions) (*Runtime, error) {
	rt := &Runtime{Registry: tool.NewRegistry()}
	for _, b := range toolsets {
		if err := b(ctx, rt, opts); err != nil {
			rt.Close()
			return nil, err
		}
	}
	return rt, nil
}
