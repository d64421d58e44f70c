package cli

import (
	"context"

	"github.com/inquest-dev/inquest/internal/perf"
	"github.com/inquest-dev/inquest/internal/tool"
)

// buildPerf adds the perf toolset (docs/perf.md): artifact analysis tools and
// the evidence lifecycle tools. The evidence store ($INQUEST_DATA_DIR, else
// $XDG_DATA_HOME/inquest/evidence) is opened on first use. Session analyses
// are enabled so preserve_evidence and rescue_evidence can name a result of
// this process by analysis_id.
func buildPerf(ctx context.Context, rt *Runtime, opts runtimeOptions) error {
	prt := rt.perfRuntime()
	if err := rt.Registry.Add(perf.Tools(prt)...); err != nil {
		return err
	}
	return rt.Registry.Add(perf.CaptureTools(prt)...)
}

// newAnalysisRuntime is the runtime of `inquest analyze`: the perf
// analysis and evidence lifecycle tools only (the tools it calls), without
// the proc, bin and capture toolsets whose catalogs it would only build
// and discard. It is newRuntime's perf part; Close releases it.
func newAnalysisRuntime() (*Runtime, error) {
	rt := &Runtime{Registry: tool.NewRegistry()}
	if err := rt.Registry.Add(perf.Tools(rt.perfRuntime())...); err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}
