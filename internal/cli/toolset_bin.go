package cli

import (
	"context"

	"github.com/inquest-dev/inquest/internal/bin"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// buildBin adds the bin toolset: binary inspection, symbols, strings,
// disassembly, comparison and HAR captures. Every result is retained in
// the perf runtime's session table, so preserve_evidence publishes it by
// analysis_id. Cursors are sealed with the evidence store's persisted key
// (opened on the first cursor), so they survive restarts; when the store
// cannot be opened they fall back to a process-local key.
func buildBin(ctx context.Context, rt *Runtime, opts runtimeOptions) error {
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
	return rt.Registry.Add(bin.Tools(env)...)
}
