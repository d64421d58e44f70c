//go:build !linux

package host

import (
	"context"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

// watchExit polls the lifetime's identity once per sampling interval on
// platforms without a pidfd (a held process handle is Windows'
// mechanism; this build keeps the contract with polling).
func watchExit(ctx context.Context, id sample.Identity, interval time.Duration) (ev, last map[string]any, err error) {
	return pollExit(ctx, id, interval)
}

// exitedState reports "gone" when the lifetime no longer verifies (no
// process with that PID and start time); zombies are not distinguished
// on this platform. "" when the state cannot be established.
func exitedState(id sample.Identity) string {
	if sample.Verify(id) == sample.Exited {
		return "gone"
	}
	return ""
}
