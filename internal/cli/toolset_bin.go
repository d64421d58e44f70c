package cli

import (
	"context"
	"sync"

	"github.com/inquest-dev/inquest/internal/bin"
	"github.com/inquest-dev/inquest/internal/evidence"
)

func init() { addToolset(buildBin) }

// buildBin adds the bin toolset (seed 004): binary inspection, symbols,
// strings, disassembly, comparison and HAR captures. The evidence store is
// opened lazily, the first time a cursor is issued or resumed or preserve
// is requested; its persisted key makes cursors survive restarts. When it
// cannot be opened, cursors fall back to a process-local key and preserve
// fails with PROVIDER_UNAVAILABLE.
func buildBin(ctx context.Context, rt *Runtime, opts runtimeOptions) error {
	var (
		once  sync.Once
		st    *evidence.Store
		stErr error
		local = evidence.NewContinuations(nil)
	)
	open := func() { once.Do(func() { st, stErr = evidence.OpenDefault() }) }
	env := bin.Env{
		Continuations: func(context.Context) *evidence.Continuations {
			open()
			if stErr == nil {
				return st.Continuations()
			}
			return local
		},
		Store: func(context.Context) (*evidence.Store, error) {
			open()
			return st, stErr
		},
	}
	rt.closers = append(rt.closers, func() {
		if st != nil {
			st.Close()
		}
	})
	if err := rt.Registry.Add(bin.Tools(env)...); err != nil {
		return err
	}
	return rt.Registry.Add(bin.HTTPTools(env)...)
}
