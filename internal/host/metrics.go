package host

import (
	"context"
	"math"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// MaxMetricTargets is the most targets one get_metrics call takes, system
// targets included; more is INVALID_ARGUMENT.
const MaxMetricTargets = 50

// metricsArgs are get_metrics' arguments.
type metricsArgs struct {
	Source    string         `json:"source"`
	LogRef    string         `json:"log_ref"`
	MetricIDs []string       `json:"metric_ids"`
	Targets   []metricTarget `json:"targets"`
}

// metricTarget is one target: a process (process_ref; a pid is resolved
// to it by the bridge) or the system.
type metricTarget struct {
	ProcessRef string `json:"process_ref,omitempty"`
	PID        *int64 `json:"pid,omitempty"`
	System     bool   `json:"system,omitempty"`
}

// EncodeValue renders a metric slot by its representation: integers as
// decimal strings, numbers as JSON numbers; a non-finite number is
// reported unavailable (ok false).
func EncodeValue(m sample.Metric, v uint64) (any, bool) {
	if m.Repr == sample.ReprNumber {
		f := sample.AsFloat(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		return f, true
	}
	return contract.Uint(v), true
}

// getMetricsTool declares get_metrics; built when the tools are listed
// (ToolsFor), not at package initialisation: its schema splices the
// metric catalog.
func getMetricsTool() Decl {
	t := define(tool.Tool{
		Name:        "get_metrics",
		Title:       "Current metric values",
		Description: "Current values of metric_ids (required) for up to 50 targets ({process_ref}, {pid} or {system:true}; default the system) from the latest snapshot. Integers are decimal strings and unavailable values are listed, never zero; source log with log_ref reads a recording's last frame.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["metric_ids"],"properties":{
` + sourceSchema + `,
` + logRefSchema + `,
"metric_ids":{"type":"array","minItems":1,"maxItems":64,"uniqueItems":true,"items":{"type":"string","enum":$METRIC_IDS}},
"targets":{"type":"array","minItems":1,"maxItems":50,"items":{"oneOf":[
  {"type":"object","additionalProperties":false,"required":["process_ref"],"properties":{"process_ref":{"type":"string","minLength":1,"maxLength":128}}},
  ` + pidTargetBranch + `,
  {"type":"object","additionalProperties":false,"required":["system"],"properties":{"system":{"const":true}}}]}}}}`),
		Annotations: readOnly,
	}, func(ctx context.Context, h *Host, s *Session, a metricsArgs) (*contract.Result, error) {
		// source log (or log_ref alone) reads a loaded recording.
		if useLog, err := logQuery(a.Source, a.LogRef); err != nil {
			return nil, err
		} else if useLog {
			return recorderOf(h).logs.getMetrics(ctx, s, a)
		}
		return h.getMetrics(ctx, s, a)
	})
	t.PIDAt = PIDTargets
	return t
}

// getMetrics answers live get_metrics. A {pid} target the bridge left
// unresolved (its pid has no live process) is resolved here the same way
// (resolve_pid) and fails as that one target: its sample carries the error
// with field /targets/i/pid, and the result is partial, as for an exited
// process_ref target.
func (h *Host) getMetrics(ctx context.Context, s *Session, a metricsArgs) (*contract.Result, error) {
	targets := a.Targets
	if len(targets) == 0 {
		targets = []metricTarget{{System: true}}
	}
	if len(targets) > MaxMetricTargets {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "at most %d targets per call", MaxMetricTargets)
	}
	metrics := make([]sample.Metric, 0, len(a.MetricIDs))
	for i, id := range a.MetricIDs {
		m, ok := sample.LookupMetric(id)
		if !ok {
			e := contract.Errorf(contract.CodeInvalidArgument, "metric_ids/%d is not a known metric id; list_metrics gives the catalog", i)
			e.Field = "/metric_ids/" + itoa(i)
			return nil, e
		}
		metrics = append(metrics, m)
	}
	snap := h.sampler.Latest()
	samples := make([]map[string]any, 0, len(targets))
	// A process target that cannot be read (exited, unverifiable, invalid
	// ref) fails the whole call only when no target succeeds; otherwise its
	// sample carries the error and the result is partial.
	var firstErr error
	failed := 0
	for ti, t := range targets {
		kind := sample.TargetProcess
		if t.System {
			kind = sample.TargetSystem
		}
		for mi, m := range metrics {
			if m.Target != kind {
				// Name what the caller sent: a default target is a
				// default, not an argument at /targets/0.
				if len(a.Targets) == 0 {
					e := contract.Errorf(contract.CodeInvalidArgument, "no targets given; the default system target does not have %s (a %s metric); give targets [{process_ref}] or [{pid}]", m.ID, m.Target)
					e.Field = "/metric_ids/" + itoa(mi)
					return nil, e
				}
				e := contract.Errorf(contract.CodeInvalidArgument, "metric %s is a %s metric and targets/%d is a %s target", m.ID, m.Target, ti, kind)
				e.Field = "/targets/" + itoa(ti)
				return nil, e
			}
		}
		values := map[string]any{}
		unavailable := map[string]any{}
		row := map[string]any{}
		if t.System {
			row["target"] = map[string]any{"system": true}
			for _, m := range metrics {
				if v, ok := EncodeValue(m, snap.System.Vals[m.Index]); ok && snap.System.Has(m.Index) {
					values[m.ID] = v
				} else {
					unavailable[m.ID] = "unknown"
				}
				if m.Index == sample.SCPUPercent && snap.System.CoreCPUPercent != nil {
					row["core_cpu_percent"] = snap.System.CoreCPUPercent
				}
			}
		} else {
			ref, field, sent := t.ProcessRef, "/process_ref", map[string]any{"process_ref": t.ProcessRef}
			var err error
			if t.PID != nil && ref == "" {
				field, sent = "/pid", map[string]any{"pid": *t.PID}
				ref, err = h.resolvePIDRef(ctx, s, *t.PID)
			}
			var p *sample.Process
			if err == nil {
				p, _, err = h.ResolveLive(ref)
			}
			if err != nil {
				ce := contract.AsError(err)
				ce.Field = "/targets/" + itoa(ti) + field
				if firstErr == nil {
					firstErr = ce
				}
				failed++
				samples = append(samples, map[string]any{"target": sent, "error": ce})
				continue
			}
			tgt := map[string]any{"process_ref": ref, "pid": p.PID}
			addText(tgt, "name", p.Name)
			addText(tgt, "comm", p.Comm)
			row["target"] = tgt
			for _, m := range metrics {
				if v, ok := EncodeValue(m, p.Vals[m.Index]); ok && p.Has(m.Index) {
					values[m.ID] = v
				} else {
					unavailable[m.ID] = "unknown"
				}
			}
		}
		row["values"] = values
		row["unavailable"] = unavailable
		samples = append(samples, row)
	}
	if failed == len(targets) {
		return nil, firstErr
	}
	res := contract.NewResult("live", snap.Time, map[string]any{"snapshot_seq": snap.Seq, "samples": samples})
	if failed > 0 {
		res.Warn(itoa(failed) + " of " + itoa(len(targets)) + " targets could not be read; their samples carry error instead of values")
		res.Coverage = map[string]any{"targets": len(targets), "targets_failed": failed}
	}
	if countsProcesses(targets, metrics) {
		// process_count is the processes this host's /proc shows: say
		// when that view hides some (viewCoverage)
		pv, restricted, warn := viewCoverage(snap)
		cov, _ := res.Coverage.(map[string]any)
		if cov == nil {
			cov = map[string]any{}
		}
		cov["proc_view"] = pv
		res.Coverage = cov
		if restricted {
			res.Warn(warn)
			res.Status = contract.StatusPartial
		}
	}
	return res, nil
}

func itoa(i int) string { return contract.Int(int64(i)) }

// countsProcesses reports whether a system target asks for process_count.
func countsProcesses(targets []metricTarget, metrics []sample.Metric) bool {
	sys := false
	for _, t := range targets {
		sys = sys || t.System
	}
	for _, m := range metrics {
		if sys && m.Target == sample.TargetSystem && m.Index == sample.SProcesses {
			return true
		}
	}
	return false
}
