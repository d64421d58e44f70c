package host

import (
	"context"
	"encoding/json"
	"math"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// MaxMetricTargets is the most targets one get_metrics call takes, system
// targets included (seed 000 section 7).
const MaxMetricTargets = 50

type metricsArgs struct {
	Source    string         `json:"source"`
	MetricIDs []string       `json:"metric_ids"`
	Targets   []metricTarget `json:"targets"`
}

type metricTarget struct {
	ProcessRef string `json:"process_ref,omitempty"`
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

func (h *Host) getMetrics(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
	var a metricsArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "arguments could not be decoded")
	}
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
			p, _, err := h.ResolveLive(t.ProcessRef)
			if err != nil {
				ce := contract.AsError(err)
				ce.Field = "/targets/" + itoa(ti) + "/process_ref"
				if firstErr == nil {
					firstErr = ce
				}
				failed++
				samples = append(samples, map[string]any{"target": map[string]any{"process_ref": t.ProcessRef}, "error": ce})
				continue
			}
			tgt := map[string]any{"process_ref": t.ProcessRef, "pid": p.PID}
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
	return res, nil
}

func itoa(i int) string { return contract.Int(int64(i)) }
