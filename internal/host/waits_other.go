//go:build !linux

package host

import (
	"context"
	"time"

	"github.com/inquest-dev/inquest/internal/proc"
)

// watchExit polls the lifetime's identity once per sampling interval on
// platforms without a pidfd (the seed's held process handle is Windows'
// mechanism; this build keeps the contract with polling).
func watchExit(ctx context.Context, id proc.Identity, interval time.Duration) (ev, last map[string]any, err error) {
	return pollExit(ctx, id, interval)
}
