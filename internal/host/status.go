package host

import (
	"context"
	"os"
	"runtime"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// StaleAfter is the sample age at which get_status reports sampling stale
// (three seconds without a new sample).
const StaleAfter = 3 * time.Second

// noArgsStruct is the arguments type of a tool without arguments.
type noArgsStruct struct{}

var getStatusTool = define(tool.Tool{
	Name:        "get_status",
	Title:       "Backend status",
	Description: "Backend status: connectivity, version, sample age and staleness, permissions, platform coverage, enabled methods and limits. No arguments.",
	Input:       schema(noArgs),
	Annotations: readOnly,
}, func(ctx context.Context, h *Host, s *Session, _ noArgsStruct) (*contract.Result, error) {
	return h.getStatus()
})

var getSystemInfoTool = define(tool.Tool{
	Name:        "get_system_info",
	Title:       "System information",
	Description: "Host facts: OS, kernel, architecture, hostname, CPU model, topology and caches, total memory. No arguments.",
	Input:       schema(noArgs),
	Annotations: readOnly,
}, func(ctx context.Context, h *Host, s *Session, _ noArgsStruct) (*contract.Result, error) {
	return h.getSystemInfo()
})

var listMetricsTool = define(tool.Tool{
	Name:        "list_metrics",
	Title:       "Metric catalog",
	Description: "The metric catalog: ids, target kind, unit, representation, cumulative flag and source. No required arguments.",
	Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"target_kind":{"type":"string","enum":["process","system"]}}}`),
	Annotations: readOnly,
}, func(ctx context.Context, h *Host, s *Session, a listMetricsArgs) (*contract.Result, error) {
	return h.listMetrics(a)
})

func (h *Host) getStatus() (*contract.Result, error) {
	snap := h.sampler.Latest()
	age := time.Since(snap.Time)
	plat := h.sampler.Collector().Platform()
	tools, local := h.methodKinds()
	data := map[string]any{
		"backend":             "connected",
		"application_version": h.Version,
		"started_at":          contract.TS(h.Started),
		"activity":            "live",
		"sampling": map[string]any{
			"interval_ms":          h.sampler.Interval().Milliseconds(),
			"last_sample_at":       contract.TS(snap.Time),
			"sample_age_ms":        age.Milliseconds(),
			"stale":                age > StaleAfter,
			"last_collection_ms":   float64(snap.Duration.Microseconds()) / 1000,
			"snapshot_seq":         snap.Seq,
			"processes":            len(snap.Procs),
			"processes_unreadable": snap.Denied,
			"last_error":           nilIfEmpty(h.sampler.LastError()),
		},
		"permissions": map[string]any{
			"uid":        os.Getuid(),
			"privileged": os.Geteuid() == 0,
			"note":       "processes of other users are readable only with privilege; unreadable ones are counted, never guessed",
		},
		"platform": map[string]any{
			"os":              plat.OS,
			"arch":            runtime.GOARCH,
			"collector":       plat.Collector,
			"missing_metrics": orEmpty(plat.Missing),
			"notes":           orEmpty(plat.Notes),
		},
		"methods":       tools,
		"local_methods": local,
		"sessions":      h.Sessions(),
		"limits": map[string]any{
			"page_rows_max":      MaxPageRows,
			"metric_targets_max": MaxMetricTargets,
			"message_bytes_max":  4 << 20,
		},
	}
	h.mu.Lock()
	fns := append([]func(map[string]any){}, h.status...)
	h.mu.Unlock()
	for _, fn := range fns {
		fn(data)
	}
	// how complete this host's view of /proc is (viewCoverage)
	pv, restricted, warn := viewCoverage(snap)
	data["sampling"].(map[string]any)["proc_view"] = pv
	res := contract.NewResult("live", snap.Time, data)
	if restricted {
		res.Warnings = append(res.Warnings, warn)
	}
	if age > StaleAfter {
		res.Warn("sampling is stale: the last sample is older than 3 s")
	}
	if rec, ok := data["recording"].(map[string]any); ok && rec["write_error"] != nil {
		res.Warn(RecordingWriteWarning)
	}
	return res, nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (h *Host) getSystemInfo() (*contract.Result, error) {
	snap := h.sampler.Latest()
	info := systemInfo()
	sys := &snap.System
	if sys.Has(sample.SMemTotal) {
		info["memory_total_bytes"] = contract.Uint(sys.Vals[sample.SMemTotal])
	} else {
		info["memory_total_bytes"] = nil
	}
	info["logical_cpus"] = runtime.NumCPU()
	if snap.System.CoreCPUPercent != nil {
		info["core_cpu_percent"] = snap.System.CoreCPUPercent
	}
	info["boot_id"] = nilIfEmpty(snap.BootID)
	return contract.NewResult("live", snap.Time, info), nil
}

// listMetricsArgs are list_metrics' arguments.
type listMetricsArgs struct {
	TargetKind string `json:"target_kind"`
}

func (h *Host) listMetrics(a listMetricsArgs) (*contract.Result, error) {
	var out []sample.Metric
	missing := map[string]bool{}
	for _, m := range h.sampler.Collector().Platform().Missing {
		missing[m] = true
	}
	type entry struct {
		sample.Metric
		Available bool `json:"available_on_platform"`
	}
	var rows []entry
	if a.TargetKind == "" || a.TargetKind == sample.TargetProcess {
		out = append(out, sample.ProcessMetrics[:]...)
	}
	if a.TargetKind == "" || a.TargetKind == sample.TargetSystem {
		out = append(out, sample.SystemMetrics[:]...)
	}
	for _, m := range out {
		rows = append(rows, entry{Metric: m, Available: !missing[m.ID]})
	}
	return contract.NewResult("live", time.Time{}, map[string]any{"metrics": rows}), nil
}
