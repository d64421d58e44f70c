package host

import (
	"context"
	"encoding/json"
	"math/big"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// installHistory feeds every published snapshot into the store and serves
// list_processes scope retained/all from it (ended lifetimes are listed
// with lifecycle unknown by processes.go).
func (inv *investigation) installHistory(h *Host) {
	h.sampler.Subscribe(inv.store.Apply)
	if snap := h.sampler.Latest(); snap != nil {
		inv.store.Apply(snap)
	}
	// The list is rebuilt only when the store changed (a new snapshot
	// applied, the tracking list set): the TUI reads it on every refresh.
	var (
		mu      sync.Mutex
		kept    []Retained
		keptGen uint64
		keptOK  bool
	)
	h.SetRetained(func() []Retained {
		gen := inv.store.Generation()
		mu.Lock()
		defer mu.Unlock()
		if keptOK && keptGen == gen {
			return kept
		}
		ls := inv.store.Lifetimes()
		out := make([]Retained, len(ls))
		for i, l := range ls {
			var names []string
			for _, n := range l.Names {
				names = append(names, n.Name, n.Comm)
			}
			out[i] = Retained{ID: l.ID, Name: l.Name, Comm: l.Comm, Names: names, PPID: l.PPID, StartTime: l.StartTime, UID: l.UID, UIDKnown: l.UIDKnown, From: l.From, To: l.To, Ended: l.Ended, EndedAt: l.EndedAt}
		}
		// Generation read before Lifetimes: a snapshot applied between
		// the two leaves a newer list under an older generation, rebuilt
		// on the next call.
		kept, keptGen, keptOK = out, gen, true
		return out
	})
}

// Store returns the host's retained history (nil before the history
// feature is installed). The TUI reads its graphs from it.
func (h *Host) HistoryStore() *history.Store {
	if inv := investigationOf(h); inv != nil {
		return inv.store
	}
	return nil
}

// historyArgs are get_history's arguments.
type historyArgs struct {
	Source    string        `json:"source"`
	LogRef    string        `json:"log_ref"`
	Target    *metricTarget `json:"target"`
	MetricIDs []string      `json:"metric_ids"`
	From      string        `json:"from"`
	To        string        `json:"to"`
	// LastSeconds is the relative window [now - last_seconds, open end],
	// exclusive with From and To.
	LastSeconds *int64 `json:"last_seconds"`
	Mode        string `json:"mode"`
	Limit       int    `json:"limit"`
	Cursor      string `json:"cursor"`
}

// parseBound parses an RFC 3339 bound into ms. exact says the bound has no
// sub-millisecond part (only then can it equal a stored timestamp).
func parseBound(s, field string, up bool) (ms int64, exact bool, err error) {
	t, perr := time.Parse(time.RFC3339Nano, s)
	if perr != nil {
		e := contract.Errorf(contract.CodeInvalidArgument, "%s is not an RFC 3339 timestamp with offset", field)
		e.Field = "/" + field
		return 0, false, e
	}
	ms = t.UnixMilli() // floor: the sub-second part is never negative
	exact = t.Nanosecond()%int(time.Millisecond) == 0
	if !exact && up {
		ms++ // from: the first whole millisecond at or after the bound
	}
	return ms, exact, nil
}

func getHistoryTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "get_history",
		Title:       "Retained metric history",
		Description: "Retained metric history of one target (process_ref, pid or the system, the default) for metric_ids (required) over from/to or last_seconds. mode summary (default) gives counts, min, max, mean, first and last values and their change; mode raw pages every sample; source log with log_ref reads a recording.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["metric_ids"],"properties":{
` + sourceSchema + `,
` + logRefSchema + `,
"target":{"oneOf":[
  {"type":"object","additionalProperties":false,"required":["process_ref"],"properties":{"process_ref":{"type":"string","minLength":1,"maxLength":128}}},
  ` + pidTargetBranch + `,
  {"type":"object","additionalProperties":false,"required":["system"],"properties":{"system":{"const":true}}}]},
"metric_ids":{"type":"array","minItems":1,"maxItems":32,"uniqueItems":true,"items":{"type":"string","enum":$METRIC_IDS},"description":"metrics of the target's kind"},
"from":{"type":"string","minLength":20,"maxLength":40,"description":"inclusive start, RFC 3339"},
"to":{"type":"string","minLength":20,"maxLength":40,"description":"inclusive end, RFC 3339"},
"last_seconds":{"type":"integer","minimum":1,"maximum":86400,"description":"the last N seconds, instead of from/to"},
"mode":{"type":"string","enum":["summary","raw"],"default":"summary"},
"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"raw rows per page, default ` + d.limitDefault() + `"},
"cursor":{"type":"string","minLength":1,"maxLength":4096}}}`),
		Annotations: readOnly,
		Paging:      tool.CursorPaging,
	}, func(ctx context.Context, h *Host, s *Session, a historyArgs) (*contract.Result, error) {
		// source log (or log_ref alone) reads a loaded recording.
		if useLog, err := logQuery(a.Source, a.LogRef); err != nil {
			return nil, err
		} else if useLog {
			return recorderOf(h).logs.getHistory(ctx, s, a)
		}
		return investigationOf(h).getHistory(ctx, s, a)
	})
	t.PIDAt = PIDTarget
	return t
}

func (inv *investigation) getHistory(ctx context.Context, s *Session, a historyArgs) (*contract.Result, error) {
	h := inv.h
	raw := rawArgs(ctx)
	if a.Mode == "" {
		a.Mode = "summary"
	}
	if a.Cursor != "" {
		if a.Mode != "raw" {
			e := contract.Errorf(contract.CodeInvalidArgument, "cursor applies to mode raw only")
			e.Field = "/cursor"
			return nil, e
		}
		l, off, err := h.resumeList(s, "get_history", raw, a.Cursor)
		if err != nil {
			return nil, err
		}
		return inv.historyPage(ctx, l, raw, off, a.Limit)
	}
	var iv history.Interval
	exactFrom, exactTo := false, false
	var err error
	var window map[string]any
	if a.LastSeconds != nil {
		if a.From != "" || a.To != "" {
			e := contract.Errorf(contract.CodeInvalidArgument, "last_seconds and from/to are alternatives; send either last_seconds or from/to")
			e.Field = "/last_seconds"
			return nil, e
		}
		if *a.LastSeconds < 1 || *a.LastSeconds > MaxHistorySeconds {
			e := contract.Errorf(contract.CodeInvalidArgument, "last_seconds must be 1..%d", MaxHistorySeconds)
			e.Field = "/last_seconds"
			return nil, e
		}
		// The window starts last_seconds before the call and stays open
		// at the end: the frozen view ends at the latest sample.
		from := time.Now().Add(-time.Duration(*a.LastSeconds) * time.Second).Truncate(time.Millisecond)
		iv.From, iv.HasFrom = from.UnixMilli(), true
		window = map[string]any{"last_seconds": *a.LastSeconds, "from": contract.TS(from)}
	}
	if a.From != "" {
		if iv.From, exactFrom, err = parseBound(a.From, "from", true); err != nil {
			return nil, err
		}
		iv.HasFrom = true
	}
	if a.To != "" {
		if iv.To, exactTo, err = parseBound(a.To, "to", false); err != nil {
			return nil, err
		}
		iv.HasTo = true
	}
	if iv.HasFrom && iv.HasTo && a.From != "" && mustTime(a.From).After(mustTime(a.To)) {
		e := contract.Errorf(contract.CodeInvalidArgument, "from is after to")
		e.Field = "/from"
		return nil, e
	}
	kind := sample.TargetSystem
	var target map[string]any
	var view *history.View
	if a.Target == nil || a.Target.System {
		view = inv.store.System()
		target = map[string]any{"system": true}
	} else {
		kind = sample.TargetProcess
		id, err := h.ParseRef(a.Target.ProcessRef)
		if err != nil {
			contract.AsError(err).Field = "/target/process_ref"
			return nil, err
		}
		v, lt, ok := inv.store.Process(id)
		if !ok {
			e := contract.Errorf(contract.CodeReferenceInvalid, "no history is retained for this process_ref (retention pruned it); list retained processes again, nothing is resolved by PID or name")
			e.Field = "/target/process_ref"
			e.NextAction = &contract.Action{Tool: "list_processes", Arguments: map[string]any{"scope": "retained"}}
			return nil, e
		}
		view = v
		lifecycle := "unknown"
		if !lt.Ended {
			lifecycle = "live"
			if p := h.sampler.Latest().Lookup(id); p != nil && p.State == 'Z' {
				lifecycle = "zombie"
			}
		}
		target = map[string]any{"process_ref": a.Target.ProcessRef, "pid": lt.ID.PID, "start_time": contract.TS(lt.StartTime),
			"lifecycle": lifecycle, "tracked": lt.Tracked, "capacity_samples": lt.Capacity}
		addText(target, "name", lt.Name)
		addText(target, "comm", lt.Comm)
		target["names"] = nameSpans(lt.Names)
	}
	metrics := make([]sample.Metric, 0, len(a.MetricIDs))
	slots := make([]int, 0, len(a.MetricIDs))
	for i, id := range a.MetricIDs {
		m, ok := sample.LookupMetric(id)
		if !ok || m.Target != kind {
			e := contract.Errorf(contract.CodeInvalidArgument, "metric_ids/%d is not a %s metric; list_metrics gives the catalog", i, kind)
			if ok && a.Target == nil {
				e = contract.Errorf(contract.CodeInvalidArgument, "no target given; the default system target does not have %s (a %s metric); give target {process_ref} or {pid}", m.ID, m.Target)
			}
			e.Field = "/metric_ids/" + itoa(i)
			return nil, e
		}
		metrics = append(metrics, m)
		slots = append(slots, m.Index)
	}
	cov := view.Coverage(iv)
	temporal := temporalCoverage(cov)
	snap := h.sampler.Latest()
	var latest time.Time
	if snap != nil {
		latest = snap.Time
	}
	beyond := retentionWarnings(iv, cov, latest, 2*h.sampler.Interval()+time.Second)
	if a.Mode == "summary" {
		sums := map[string]any{}
		for _, m := range metrics {
			sm := view.Summarize(iv, m.Index)
			if !(exactFrom && exactTo) {
				sm.HasDelta = false
			}
			sums[m.ID] = summaryJSON(m, sm)
		}
		data := map[string]any{"mode": "summary", "target": target, "metrics": sums}
		if window != nil {
			data["window"] = window
		}
		res := contract.NewResult("live", snap.Time, data)
		res.Coverage = temporal
		for _, w := range beyond {
			res.Warn(w)
			res.Status = contract.StatusPartial
		}
		return res, nil
	}
	rows, err := rawHistoryRows(view.Raw(iv, slots), metrics)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{"mode": "raw", "target": target, "temporal_coverage": temporal, "snapshot_at": contract.TS(snap.Time), "retention_warnings": beyond}
	if window != nil {
		meta["window"] = window
	}
	l := frozenOf(s).put("hist", rows, map[string]any{}, meta)
	return inv.historyPage(ctx, l, raw, 0, a.Limit)
}

func mustTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func (inv *investigation) historyPage(ctx context.Context, l *frozenList, raw json.RawMessage, off, limit int) (*contract.Result, error) {
	if limit <= 0 {
		limit = MaxPageRows
	}
	data, action, byBytes, err := inv.h.listPage(ctx, "get_history", l, raw, off, limit)
	if err != nil {
		return nil, err
	}
	delete(data, "snapshot_at")
	delete(data, "retention_warnings")
	ts, _ := l.meta["snapshot_at"].(*contract.Timestamp)
	res := contract.NewResult("live", time.Time{}, data)
	res.CapturedAt = ts
	beyond, _ := l.meta["retention_warnings"].([]string)
	for _, w := range beyond {
		res.Warn(w)
		res.Status = contract.StatusPartial
	}
	res.Coverage = liftCoverage(data)
	res.NextAction = action
	pageEnvelope(res, byBytes)
	return res, nil
}

// retentionWarnings says when an explicit request bound lies outside what
// is retained, so a result whose counts cover less than the requested
// interval is never presented as complete. get_history keeps the
// counts as they are (time outside retained coverage adds no missing
// values, outside-retention portions are not separate fields); the result
// is marked partial with a warning instead, and coverage carries the
// retained bounds. The from side is beyond coverage when it precedes the
// first retained sample (pruned by retention, or never collected: before
// the host or the process started); the to side when it lies after the
// latest published sample by more than slack (the future: nothing can be
// retained there yet). Time after an ended lifetime's last sample but
// before now is not flagged: it is the lifetime's end, not lost coverage.
// With nothing retained at all, any explicit bound is flagged.
func retentionWarnings(iv history.Interval, c history.Coverage, latest time.Time, slack time.Duration) []string {
	var out []string
	bounds := "nothing is retained for this target"
	if c.HasBounds {
		bounds = "retained coverage is " + history.MsTime(c.RetainedFrom).UTC().Format(time.RFC3339Nano) + " to " + history.MsTime(c.RetainedTo).UTC().Format(time.RFC3339Nano)
	}
	switch {
	case !c.HasBounds && (iv.HasFrom || iv.HasTo):
		out = append(out, "the requested interval extends beyond retained coverage: "+bounds+"; counts are zero because no stored samples exist, not because values were measured missing")
	case c.HasBounds && iv.HasTo && iv.To < c.RetainedFrom:
		out = append(out, "the requested interval ends before retained coverage begins ("+bounds+"): earlier samples were pruned by retention or never collected; counts describe no samples")
	case c.HasBounds && iv.HasFrom && iv.From < c.RetainedFrom:
		out = append(out, "the requested interval starts before retained coverage ("+bounds+"): samples before retained_from were pruned by retention or never collected (before the host or the process started); counts describe only retained samples")
	}
	switch {
	case c.HasBounds && !latest.IsZero() && iv.HasTo && iv.To > latest.Add(slack).UnixMilli():
		out = append(out, "the requested interval extends past the latest sample ("+latest.UTC().Format(time.RFC3339Nano)+") into time not yet collected ("+bounds+"); counts describe only retained samples")
	case c.HasBounds && iv.HasFrom && iv.From > c.RetainedTo:
		// from after the last retained sample, with or without to: the
		// interval holds no retained sample (time not yet collected, or
		// after the process's last sample), so zero counts are no
		// measurement.
		out = append(out, "the requested interval starts after the latest retained sample ("+bounds+"): that time was not collected (yet); counts describe no samples")
	}
	return out
}

func temporalCoverage(c history.Coverage) map[string]any {
	out := map[string]any{"retained_from": nil, "retained_to": nil, "sample_count": c.SampleCount, "max_sample_interval_ms": nil}
	if c.HasBounds {
		out["retained_from"] = contract.TS(history.MsTime(c.RetainedFrom))
		out["retained_to"] = contract.TS(history.MsTime(c.RetainedTo))
	}
	if c.HasMaxInterval {
		out["max_sample_interval_ms"] = c.MaxIntervalMs
	}
	return out
}

// meanJSON is an integer metric's mean: the exact reduced fraction
// {numerator, denominator} (decimal strings, exact beyond 2^53) and, beside
// it, value: the same fraction as the nearest JSON number.
func meanJSON(num, den string) map[string]any {
	out := map[string]any{"numerator": num, "denominator": den}
	if r, ok := new(big.Rat).SetString(num + "/" + den); ok {
		out["value"], _ = r.Float64()
	}
	return out
}

// MaxHistorySeconds is the largest get_history last_seconds (one day,
// beyond the longest retention of 7,200 samples at the default interval).
const MaxHistorySeconds = 86400

// summaryJSON renders one metric's summary (docs/investigation.md, "get_history"): counts
// always; min, max, mean, first/last with timestamps only with available
// values; delta only at exact available endpoints. first_to_last_change
// is last.value - first.value over the available values actually found
// (whatever the interval's endpoints), with first_to_last_ms the time
// between them; it differs from delta, which needs values at both exact
// requested endpoints. Integer means are exact rationals of decimal
// strings; integer deltas and changes are signed decimal strings.
func summaryJSON(m sample.Metric, s history.Summary) map[string]any {
	out := map[string]any{"sample_count": s.SampleCount, "available_value_count": s.Available, "missing_value_count": s.Missing}
	if s.Available == 0 {
		return out
	}
	enc := func(v uint64) any { x, _ := EncodeValue(m, v); return x }
	out["min"], out["max"] = enc(s.Min), enc(s.Max)
	out["first"] = map[string]any{"value": enc(s.First), "at": contract.TS(history.MsTime(s.FirstAt))}
	out["last"] = map[string]any{"value": enc(s.Last), "at": contract.TS(history.MsTime(s.LastAt))}
	if m.Repr == sample.ReprInteger {
		n, d, _ := s.MeanRational()
		out["mean"] = meanJSON(n, d)
		if s.HasDelta {
			out["delta"] = s.IntDelta()
		}
		out["first_to_last_change"] = new(big.Int).Sub(new(big.Int).SetUint64(s.Last), new(big.Int).SetUint64(s.First)).String()
	} else {
		out["first_to_last_change"] = sample.AsFloat(s.Last) - sample.AsFloat(s.First)
		out["mean"] = s.FloatSum / float64(s.Available)
		if s.HasDelta {
			out["delta"] = sample.AsFloat(s.DeltaTo) - sample.AsFloat(s.DeltaFrom)
		}
	}
	out["first_to_last_ms"] = s.LastAt - s.FirstAt
	return out
}

// addText sets m[key] to the display form of s and, when that is lossy,
// m[key+"_bytes"] to its exact bytes (sample.TextFields).
func addText(m map[string]any, key, s string) {
	sample.TextFields(key, s, func(k string, v any) { m[k] = v })
}

// nameSpans is a history target's names: every name the lifetime had,
// oldest first, each with the time of the first sample that showed it
// (the first is the name at the start of the retained lifetime, the last
// the name at its end; an exec adds one).
func nameSpans(spans []history.NameSpan) []any {
	out := make([]any, 0, len(spans))
	for _, n := range spans {
		m := map[string]any{"since": contract.TS(n.At)}
		addText(m, "name", n.Name)
		addText(m, "comm", n.Comm)
		if n.Exe != "" {
			addText(m, "exe", n.Exe)
		} else {
			m["exe"] = nil
		}
		out = append(out, m)
	}
	return out
}

// rawHistoryRows encodes raw samples as get_history rows: the sample time,
// the values of the requested metrics (metrics[k] is the sample's slot k)
// and every metric without a value listed as unknown, never as zero. Live
// history and saved logs share it.
func rawHistoryRows(samples []history.Sample, metrics []sample.Metric) ([]json.RawMessage, error) {
	rows := make([]json.RawMessage, 0, len(samples))
	for _, smp := range samples {
		vals, unav := map[string]any{}, map[string]any{}
		for k, m := range metrics {
			if smp.Avail[k] {
				if v, ok := EncodeValue(m, smp.Vals[k]); ok {
					vals[m.ID] = v
					continue
				}
			}
			unav[m.ID] = "unknown"
		}
		b, err := json.Marshal(map[string]any{"at": contract.TS(history.MsTime(smp.At)), "values": vals, "unavailable": unav})
		if err != nil {
			return nil, contract.Errorf(contract.CodeInternalError, "a row could not be encoded").Permanent()
		}
		rows = append(rows, b)
	}
	return rows, nil
}
