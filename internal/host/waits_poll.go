package host

import (
	"context"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// pollExit re-verifies the lifetime once per interval (the fallback where
// no process handle can be held). Unverifiable is not an exit.
func pollExit(ctx context.Context, id sample.Identity, interval time.Duration) (ev, last map[string]any, err error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last = map[string]any{"alive": true, "method": "start_time_poll", "checked_at": contract.TS(time.Now())}
	for {
		switch sample.Verify(id) {
		case sample.Exited:
			return map[string]any{"exited": true, "method": "start_time_poll", "observed": "the PID is gone, reused by another lifetime, or a zombie", "detected_at": contract.TS(time.Now())}, nil, nil
		case sample.Alive:
			last = map[string]any{"alive": true, "method": "start_time_poll", "checked_at": contract.TS(time.Now())}
		case sample.Unverifiable:
			last = map[string]any{"alive": "unknown", "method": "start_time_poll", "checked_at": contract.TS(time.Now()), "note": "access failure; not taken as an exit"}
		}
		select {
		case <-ctx.Done():
			return nil, last, nil
		case <-t.C:
		}
	}
}
