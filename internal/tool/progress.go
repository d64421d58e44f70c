package tool

import "context"

// ProgressFunc receives a long-running handler's progress: done units out
// of total (both counts; total is 0 when unknown) and a short message.
type ProgressFunc func(done, total float64, message string)

type progressKey struct{}

// WithProgress returns ctx carrying fn; transports set it when the caller
// asked for progress (an MCP progress token, a CLI terminal).
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress calls the ProgressFunc carried by ctx, if any.
func ReportProgress(ctx context.Context, done, total float64, message string) {
	if fn, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && fn != nil {
		fn(done, total, message)
	}
}
