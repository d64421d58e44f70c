package cli

import (
	"context"
	"sync"

	"github.com/inquest-dev/inquest/internal/bridge"
)

func init() { addToolset(buildProc) }

// buildProc adds the proc tools. The backend is reached lazily on the first
// valid proc call, so initialize, tools/list and invalid calls start nothing.
func buildProc(ctx context.Context, rt *Runtime, opts runtimeOptions) error {
	var mu sync.Mutex
	var backend bridge.Backend
	get := func(ctx context.Context) (bridge.Backend, error) {
		mu.Lock()
		defer mu.Unlock()
		if backend != nil {
			return backend, nil
		}
		b, err := bridge.NewLocal(ctx, Version)
		if err != nil {
			return nil, err
		}
		backend = b
		return b, nil
	}
	rt.closers = append(rt.closers, func() {
		mu.Lock()
		defer mu.Unlock()
		if backend != nil {
			backend.Close()
			backend = nil
		}
	})
	return rt.Registry.Add(bridge.Tools(get, bridge.Mode{Raw: opts.Raw})...)
}
