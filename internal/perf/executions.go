package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// FormatExecutions is the execution-measurement artifact written by the
// capture tools: JSON Lines, one ExecutionRecord per workload execution.
const FormatExecutions = "inquest-executions"

// BootstrapResamples is the number of bootstrap resamples behind every
// paired confidence interval of summarize_executions.
const BootstrapResamples = 10000

// ExecutionRecord is one line of a FormatExecutions artifact: one
// execution of a workload (one case in one block of an experiment, or the
// single execution of a plain capture). Times are nanoseconds, sizes
// bytes; facts come from the runner (wait4 rusage, monotonic clock).
type ExecutionRecord struct {
	// Case is the case name ("target" outside experiments); CaseIndex its
	// declared position (0 = baseline).
	Case      string `json:"case"`
	CaseIndex int    `json:"case_index"`
	// Block is the experiment block; Position the case's place in that
	// block's randomized order.
	Block    int `json:"block"`
	Position int `json:"position"`
	// Termination: exited, signaled, timeout or cancelled.
	Termination string `json:"termination"`
	ExitCode    *int   `json:"exit_code"`
	Signal      string `json:"signal,omitempty"`
	// ExitOwner says whose exit code this is: "workload" (direct) or
	// "collector" (a wrapping provider such as go test).
	ExitOwner  string `json:"exit_owner"`
	WallTimeNS int64  `json:"wall_time_ns"`
	UserCPUNS  int64  `json:"user_cpu_ns"`
	SysCPUNS   int64  `json:"sys_cpu_ns"`
	CPUTimeNS  int64  `json:"cpu_time_ns"`
	// MaxRSSBytes is the workload's peak RSS, nil when it could not be
	// told apart from the launcher's (see MaxRSSAtMostBytes).
	MaxRSSBytes       *int64 `json:"max_rss_bytes"`
	MaxRSSAtMostBytes int64  `json:"max_rss_at_most_bytes"`
	StdoutBytes       int64  `json:"stdout_bytes"`
	StderrBytes       int64  `json:"stderr_bytes"`
	MemoryEnforce     string `json:"memory_enforcement"`
	MemoryLimitHit    bool   `json:"memory_limit_hit"`
	LeftoverKilled    int    `json:"leftover_processes_killed"`
	// OracleExitCode is the oracle command's exit status, nil when no
	// oracle ran.
	OracleExitCode *int `json:"oracle_exit_code"`
	// Included is false when the observation is excluded from comparison;
	// ExcludedReason then says why (workload_failed, oracle_failed).
	Included       bool   `json:"included"`
	ExcludedReason string `json:"excluded_reason,omitempty"`
}

// metric returns the named metric, false when it is unknown.
func (r *ExecutionRecord) metric(name string) (int64, bool) {
	switch name {
	case "cpu_time_ns":
		return r.CPUTimeNS, true
	case "max_rss_bytes":
		if r.MaxRSSBytes == nil {
			return 0, false
		}
		return *r.MaxRSSBytes, true
	}
	return r.WallTimeNS, true
}

func (r *ExecutionRecord) row() map[string]any {
	m := map[string]any{
		"case": r.Case, "case_index": r.CaseIndex, "block": r.Block, "position": r.Position,
		"termination": r.Termination, "exit_code": r.ExitCode, "exit_owner": r.ExitOwner,
		"wall_time_ns": contract.Int(r.WallTimeNS), "user_cpu_ns": contract.Int(r.UserCPUNS), "sys_cpu_ns": contract.Int(r.SysCPUNS),
		"cpu_time_ns": contract.Int(r.CPUTimeNS), "max_rss_bytes": nil, "max_rss_at_most_bytes": contract.Int(r.MaxRSSAtMostBytes),
		"stdout_bytes": contract.Int(r.StdoutBytes), "stderr_bytes": contract.Int(r.StderrBytes),
		"memory_enforcement": r.MemoryEnforce, "memory_limit_hit": r.MemoryLimitHit,
		"leftover_processes_killed": r.LeftoverKilled, "oracle_exit_code": r.OracleExitCode, "included": r.Included,
	}
	if r.MaxRSSBytes != nil {
		m["max_rss_bytes"] = contract.Int(*r.MaxRSSBytes)
	}
	if r.Signal != "" {
		m["signal"] = r.Signal
	}
	if r.ExcludedReason != "" {
		m["excluded_reason"] = r.ExcludedReason
	}
	return m
}

// executionFields are summarize_executions' own arguments.
type executionFields struct {
	Metric    string   `json:"metric,omitempty"`
	Estimand  string   `json:"estimand,omitempty"`
	Threshold *float64 `json:"threshold,omitempty"`
	Seed      *integer `json:"seed,omitempty"`
}

type executionsArgs struct {
	operationArgs
	executionFields
}

func executionFieldSchemas() []Field {
	return []Field{
		{"metric", js{"enum": []string{"wall_time_ns", "cpu_time_ns", "max_rss_bytes"}, "default": "wall_time_ns", "description": "Metric compared."}},
		{"estimand", js{"enum": []string{"median_difference", "mean_difference"}, "default": "median_difference", "description": "Paired difference against the first case."}},
		{"threshold", js{"type": "number", "minimum": 0, "maximum": 10, "default": 0.05, "description": "Relative effect a CI bound must clear."}},
		{"seed", js{"type": "integer", "minimum": 0, "maximum": 9007199254740991, "default": 0, "description": "Bootstrap seed."}},
	}
}

// executionsOperation summarizes execution measurements and, when the
// records hold several cases, compares each against the first.
func executionsOperation() *Operation {
	return bindOperation(&Operation{
		Name:        "summarize_executions",
		Title:       "Summarize execution measurements",
		Description: "Summarize the execution records of a capture (wall time, CPU, max RSS): per-case statistics and, with several cases, each case against the first by a paired difference with a bootstrap 95% CI, classified faster, slower or inconclusive (smaller, larger or inconclusive for max_rss_bytes). Required: sources (exactly one).",
		MinSources:  1, MaxSources: 1,
		Formats: []string{FormatExecutions},
		Fields:  executionFieldSchemas(),
	}, func(ctx context.Context, req *Request, a *executionsArgs) (*Output, error) {
		return runExecutions(ctx, req, &a.executionFields)
	})
}

func readExecutions(ctx context.Context, path string, maxLine int) ([]ExecutionRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInputChanged, "the execution record could not be read")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var out []ExecutionRecord
	line := 0
	for sc.Scan() {
		line++
		if ctx.Err() != nil {
			return nil, contract.AsError(ctx.Err())
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		var r ExecutionRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Termination == "" || r.ExitOwner == "" {
			return nil, contract.Errorf(contract.CodeDecodeFailed, "line %d is not an execution record", line).WithDetail("line", line)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, contract.Errorf(contract.CodeLimitExceeded, "an execution record line exceeds %d bytes", maxLine)
	}
	return out, nil
}

func runExecutions(ctx context.Context, req *Request, f *executionFields) (*Output, error) {
	recs, err := readExecutions(ctx, req.Inputs[0].file, 1<<20)
	if err != nil {
		return nil, err
	}
	metric := f.Metric
	if metric == "" {
		metric = "wall_time_ns"
	}
	estimand := f.Estimand
	if estimand == "" {
		estimand = "median_difference"
	}
	threshold := 0.05
	if f.Threshold != nil {
		threshold = *f.Threshold
	}
	var seed uint64
	if f.Seed != nil {
		seed = uint64(*f.Seed)
	}
	summary := SummarizeExecutions(recs, metric, estimand, threshold, seed)
	start := int(req.Start.Row)
	if start > len(recs) {
		start = len(recs)
	}
	sub := *req
	sub.Start = evidence.Position{Row: int64(start)}
	out, err := pageFunc(int64(len(recs)), func(i int64) any {
		row := recs[i].row()
		if _, known := recs[i].metric(metric); recs[i].Included && !known {
			row["excluded_from_summary"] = "metric_unknown"
		}
		return row
	}, &sub)
	if err != nil {
		return nil, err
	}
	out.Summary = summary
	if w := metricUnknownWarning(recs, metric); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	return out, nil
}

// metricUnknownWarning says how many included executions of recs have no
// value for metric (only max_rss_bytes can be unknown: the workload's
// peak RSS did not exceed the launcher's own, which the kernel folds into
// ru_maxrss at exec), so the summary leaves them out
// (excluded_by_reason metric_unknown); "" when none.
func metricUnknownWarning(recs []ExecutionRecord, metric string) string {
	included, unknown := 0, 0
	for i := range recs {
		if !recs[i].Included {
			continue
		}
		included++
		if _, known := recs[i].metric(metric); !known {
			unknown++
		}
	}
	if unknown == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d included executions have no %s value, so the summary leaves them out (excluded_by_reason metric_unknown; their rows say excluded_from_summary): the workload's peak RSS did not exceed the launcher's (launcher_peak_rss_bytes), which the kernel folds into ru_maxrss at exec, so only the bound max_rss_at_most_bytes is known", unknown, included, metric)
}

// SummarizeExecutions computes per-case statistics and paired comparisons
// against the first case (see executionsOperation's description). The
// result is the summary object of summarize_executions.
func SummarizeExecutions(recs []ExecutionRecord, metric, estimand string, threshold float64, seed uint64) map[string]any {
	type caseData struct {
		name     string
		index    int
		execs    int
		vals     []float64
		byBlock  map[int]float64
		excluded map[string]int
	}
	var cases []*caseData
	idx := map[int]*caseData{}
	for _, r := range recs {
		c := idx[r.CaseIndex]
		if c == nil {
			c = &caseData{name: r.Case, index: r.CaseIndex, byBlock: map[int]float64{}, excluded: map[string]int{}}
			idx[r.CaseIndex] = c
			cases = append(cases, c)
		}
		c.execs++
		if !r.Included {
			c.excluded[r.ExcludedReason]++
			continue
		}
		mv, known := r.metric(metric)
		if !known {
			c.excluded["metric_unknown"]++
			continue
		}
		v := float64(mv)
		c.vals = append(c.vals, v)
		c.byBlock[r.Block] = v
	}
	sort.SliceStable(cases, func(i, j int) bool { return cases[i].index < cases[j].index })
	caseRows := []any{}
	for _, c := range cases {
		row := map[string]any{"case": c.name, "executions": c.execs, "included": len(c.vals), "excluded": c.execs - len(c.vals)}
		if len(c.excluded) > 0 {
			row["excluded_by_reason"] = c.excluded
		}
		if len(c.vals) > 0 {
			row["median"] = xMedian(c.vals)
			row["mean"] = xMean(c.vals)
			row["min"] = xMinOf(c.vals)
			row["max"] = xMaxOf(c.vals)
		} else {
			row["median"], row["mean"], row["min"], row["max"] = nil, nil, nil, nil
		}
		caseRows = append(caseRows, row)
	}
	s := map[string]any{
		"executions": len(recs), "metric": metric, "unit": xUnitOf(metric), "cases": caseRows,
	}
	if len(cases) < 2 {
		return s
	}
	s["estimand"] = estimand
	s["threshold"] = threshold
	s["confidence_level"] = 0.95
	s["bootstrap_resamples"] = BootstrapResamples
	s["bootstrap_method"] = "percentile bootstrap over paired blocks"
	base := cases[0]
	var comps []any
	for ci, c := range cases[1:] {
		var blocks []int
		for b := range c.byBlock {
			if _, ok := base.byBlock[b]; ok {
				blocks = append(blocks, b)
			}
		}
		sort.Ints(blocks)
		comp := map[string]any{"case": c.name, "baseline": base.name, "pairs": len(blocks)}
		diffs := make([]float64, len(blocks))
		baseVals := make([]float64, len(blocks))
		for i, b := range blocks {
			diffs[i] = c.byBlock[b] - base.byBlock[b]
			baseVals[i] = base.byBlock[b]
		}
		if len(blocks) < 2 {
			comp["estimate"], comp["ci_low"], comp["ci_high"], comp["relative_estimate"] = nil, nil, nil, nil
			comp["classification"] = "inconclusive"
			comp["reason"] = "fewer than 2 blocks where both the baseline and this case were included with a value of the metric (see each case's excluded_by_reason)"
			comps = append(comps, comp)
			continue
		}
		est := xEstimator(estimand)
		point := est(diffs)
		lo, hi := xBootstrapCI(diffs, est, seed+uint64(ci))
		ref := xMedian(baseVals)
		comp["estimate"] = point
		comp["ci_low"] = lo
		comp["ci_high"] = hi
		comp["baseline_median"] = ref
		class := "inconclusive"
		if ref > 0 {
			comp["relative_estimate"] = point / ref
			comp["relative_ci_low"] = lo / ref
			comp["relative_ci_high"] = hi / ref
			switch {
			case hi < -threshold*ref:
				class = "faster"
			case lo > threshold*ref:
				class = "slower"
			}
			if metric == "max_rss_bytes" && class != "inconclusive" {
				class = map[string]string{"faster": "smaller", "slower": "larger"}[class]
			}
		} else {
			comp["relative_estimate"] = nil
			comp["reason"] = "the baseline's median is zero; no relative effect"
		}
		comp["classification"] = class
		comps = append(comps, comp)
	}
	s["comparisons"] = comps
	return s
}

func xUnitOf(metric string) string {
	if metric == "max_rss_bytes" {
		return "bytes"
	}
	return "ns"
}

func xEstimator(name string) func([]float64) float64 {
	if name == "mean_difference" {
		return xMean
	}
	return xMedian
}

// xBootstrapCI is the 95% percentile bootstrap interval of est over d:
// BootstrapResamples resamples of len(d) paired differences drawn with
// replacement by a PCG generator seeded with seed.
func xBootstrapCI(d []float64, est func([]float64) float64, seed uint64) (float64, float64) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	stats := make([]float64, BootstrapResamples)
	buf := make([]float64, len(d))
	for i := range stats {
		for j := range buf {
			buf[j] = d[r.IntN(len(d))]
		}
		stats[i] = est(buf)
	}
	sort.Float64s(stats)
	return xQuantile(stats, 0.025), xQuantile(stats, 0.975)
}

// xQuantile of sorted s by linear interpolation (type 7).
func xQuantile(s []float64, q float64) float64 {
	if len(s) == 1 {
		return s[0]
	}
	h := q * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

func xMedian(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func xMean(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

func xMinOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = math.Min(m, x)
	}
	return m
}

func xMaxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}
