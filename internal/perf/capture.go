package perf

import (
	"context"

	"github.com/inquest-dev/inquest/internal/tool"
)

// CaptureTools returns the capture_and_<operation> tools (Linux only; none
// elsewhere): each runs a target under a provider and feeds the named
// analysis operation with what it captured.
func CaptureTools(rt *Runtime) []tool.Tool { return rt.captureTools() }

// CaptureProviderKinds lists the provider kinds the capture tools of this
// build accept.
func CaptureProviderKinds() []string { return captureProviderKinds() }

// ReleaseCaptures removes the scratch directories of this Runtime's
// captures (their live next_page handoffs then fail with INPUT_CHANGED;
// preserved evidence is unaffected).
func (rt *Runtime) ReleaseCaptures() { rt.releaseCaptures() }

// WithProgress returns ctx carrying fn, called by capture tools after each
// execution with the executions done and the total.
func WithProgress(ctx context.Context, fn func(done, total int)) context.Context {
	return tool.WithProgress(ctx, func(done, total float64, _ string) { fn(int(done), int(total)) })
}
