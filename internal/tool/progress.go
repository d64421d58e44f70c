package tool

import "context"

// ProgressFunc receives a long-running handler's progress: done units out
// of total (both counts; total is 0 when unknown) and a short message.
type ProgressFunc func(done, total float64, message string)

// ProgressMetaFunc is ProgressFunc with the report's structured detail:
// meta is a JSON object (nil when the report has none) that MCP sends as
// the progress notification's _meta, beside the message that says the
// same in words.
type ProgressMetaFunc func(done, total float64, message string, meta map[string]any)

type progressKey struct{}

// WithProgress returns ctx carrying fn; transports set it when the caller
// asked for progress (an MCP progress token, a CLI terminal).
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return WithProgressMeta(ctx, func(done, total float64, message string, _ map[string]any) { fn(done, total, message) })
}

// WithProgressMeta is WithProgress for a receiver of the structured detail
// too (ReportProgressMeta's meta).
func WithProgressMeta(ctx context.Context, fn ProgressMetaFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress calls the progress receiver carried by ctx, if any.
func ReportProgress(ctx context.Context, done, total float64, message string) {
	ReportProgressMeta(ctx, done, total, message, nil)
}

// ReportProgressMeta is ReportProgress with structured detail (meta, a
// JSON object); a receiver set by WithProgress gets the message only.
func ReportProgressMeta(ctx context.Context, done, total float64, message string, meta map[string]any) {
	if fn, ok := ctx.Value(progressKey{}).(ProgressMetaFunc); ok && fn != nil {
		fn(done, total, message, meta)
	}
}
