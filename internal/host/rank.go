package host

import (
	"context"
	"encoding/json"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Bounds of rank_processes.
const (
	// DefaultRankLimit is the number of rows rank_processes returns by default.
	DefaultRankLimit = 10
	// MaxRankLimit is the largest limit.
	MaxRankLimit = 1000
	// DefaultRankSeconds is the window when none is given: the last minute.
	DefaultRankSeconds = 60
	// MaxRankSeconds bounds last_seconds (one day; retention is shorter).
	MaxRankSeconds = 86400
)

// rankProcessesTool declares rank_processes; built when the tools are
// listed (ToolsFor), not at package initialisation: its schema splices
// the process metric ids.
func rankProcessesTool() Decl {
	return define(tool.Tool{
		Name:        "rank_processes",
		Title:       "Rank processes over a window",
		Description: "Ranks processes by metric_id (required) over a window of retained history (last_seconds, default 60, or from/to), exited ones included. cpu_time_ns adds each parent's reaped children as a row and coverage.cpu_accounting against /proc/stat. Growth: rss_bytes with aggregate slope.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["metric_id"],"properties":{
"source":{"type":"string","enum":["live"]},
"metric_id":{"type":"string","enum":$PROCESS_METRIC_IDS},
"aggregate":{"type":"string","enum":["increase","mean","max","last","slope"],"description":"counters: increase (default), last; gauges: mean (default), max, last, increase, slope (per second)"},
"last_seconds":{"type":"integer","minimum":1,"maximum":86400,"description":"window up to the latest sample, default 60"},
"from":{"type":"string","minLength":20,"maxLength":40,"description":"window start, RFC 3339"},
"to":{"type":"string","minLength":20,"maxLength":40,"description":"window end, RFC 3339; needs from"},
"scope":{"type":"string","enum":["live","retained","all"],"description":"all (default) or retained: every lifetime, ended too; live: the latest snapshot's"},
"filter":{"type":"object","additionalProperties":false,"properties":{
  "name":{"type":"string","minLength":1,"maxLength":256,"description":"substring of the process name"}}},
"limit":{"type":"integer","minimum":1,"maximum":1000,"description":"rows per page, default 10"},
"cursor":{"type":"string","minLength":1,"maxLength":4096}}}`),
		Annotations: readOnly,
		Paging:      tool.CursorPaging,
	}, func(ctx context.Context, h *Host, s *Session, a RankArgs) (*contract.Result, error) {
		return h.rankProcesses(ctx, s, a)
	})
}

// RankArgs are the arguments of rank_processes.
type RankArgs struct {
	Source      string      `json:"source"`
	MetricID    string      `json:"metric_id"`
	Aggregate   string      `json:"aggregate"`
	LastSeconds *int        `json:"last_seconds"`
	From        string      `json:"from"`
	To          string      `json:"to"`
	Scope       string      `json:"scope"`
	Filter      *nameFilter `json:"filter"`
	Limit       int         `json:"limit"`
	Cursor      string      `json:"cursor"`
}

// SuitedAggregates lists the aggregates rank_processes accepts for a
// metric: increase (default) and last for cumulative counters; mean
// (default), max, last, increase (last - first, negative when it shrank)
// and slope (least squares, unit per second) for gauges.
func SuitedAggregates(m sample.Metric) []string {
	if m.Cumulative {
		return []string{history.AggIncrease, history.AggLast}
	}
	return []string{history.AggMean, history.AggMax, history.AggLast, history.AggIncrease, history.AggSlope}
}

// CheckRankArgs does the checks of rank_processes that the input schema
// cannot express (its handler runs them before any work): last_seconds excludes
// from and to; to needs from; from must not be after to; the metric must
// be a process metric and the aggregate suited to it. Errors are
// INVALID_ARGUMENT with field naming the argument.
func CheckRankArgs(raw json.RawMessage) error {
	var a RankArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return contract.Errorf(contract.CodeInvalidArgument, "arguments could not be decoded")
	}
	_, _, err := a.check()
	return err
}

func invalidAt(field, format string, args ...any) *contract.Error {
	e := contract.Errorf(contract.CodeInvalidArgument, format, args...)
	e.Field = field
	return e
}

// check validates a and returns the metric and the aggregate to use.
func (a *RankArgs) check() (sample.Metric, string, error) {
	m, ok := sample.LookupMetric(a.MetricID)
	if !ok || m.Target != sample.TargetProcess {
		return m, "", invalidAt("/metric_id", "metric_id must be a process metric; list_metrics {target_kind: process} gives the catalog")
	}
	agg := a.Aggregate
	suited := SuitedAggregates(m)
	if agg == "" {
		agg = suited[0]
	}
	ok = false
	for _, s := range suited {
		ok = ok || s == agg
	}
	if !ok {
		kind := "a gauge"
		if m.Cumulative {
			kind = "a cumulative counter"
		}
		return m, "", invalidAt("/aggregate", "%s is %s; its aggregates are %s", m.ID, kind, strings.Join(suited, ", "))
	}
	if a.LastSeconds != nil && (a.From != "" || a.To != "") {
		f := "/from"
		if a.From == "" {
			f = "/to"
		}
		return m, "", invalidAt(f, "give either last_seconds or from/to, not both")
	}
	if a.LastSeconds != nil && (*a.LastSeconds < 1 || *a.LastSeconds > MaxRankSeconds) {
		return m, "", invalidAt("/last_seconds", "last_seconds must be 1..%d", MaxRankSeconds)
	}
	if a.To != "" && a.From == "" {
		return m, "", invalidAt("/to", "to requires from, which is missing (or use last_seconds instead)")
	}
	var from, to time.Time
	var err error
	if a.From != "" {
		if from, err = time.Parse(time.RFC3339Nano, a.From); err != nil {
			return m, "", invalidAt("/from", "from is not an RFC 3339 timestamp with offset")
		}
	}
	if a.To != "" {
		if to, err = time.Parse(time.RFC3339Nano, a.To); err != nil {
			return m, "", invalidAt("/to", "to is not an RFC 3339 timestamp with offset")
		}
		if from.After(to) {
			return m, "", invalidAt("/from", "from is after to")
		}
	}
	if a.Limit < 0 || a.Limit > MaxRankLimit {
		return m, "", invalidAt("/limit", "limit must be 1..%d", MaxRankLimit)
	}
	switch a.Scope {
	case "", "live", "retained", "all":
	default:
		return m, "", invalidAt("/scope", "scope must be live, retained or all")
	}
	return m, agg, nil
}

// rankRow is one ranked lifetime before encoding.
type rankRow struct {
	lv  history.LifetimeView
	w   history.Window
	val history.Value
	// children marks a parent's reaped-children row (cpuAccount);
	// folded, a lifetime counted in the children row of foldedInto.
	children, folded bool
	foldedInto       sample.Identity
}

// rankProcesses answers rank_processes: every retained lifetime in scope
// with stored samples inside the window, ranked by an aggregate of one
// process metric over the samples it has there, from one frozen view of
// the whole retained history (Store.Views). The whole ranking is frozen
// (encoded once, a "rank-" listing of the session) and paged with the
// proc paging contract: limit rows per page, fewer when the result budget
// ends the page (row-complete, partial, with the budget warning); the
// next page is next_cursor / next_action, so every ranked row arrives
// exactly once, with its rank, across the pages.
func (h *Host) rankProcesses(ctx context.Context, s *Session, a RankArgs) (*contract.Result, error) {
	m, agg, err := a.check()
	if err != nil {
		return nil, err
	}
	raw := rawArgs(ctx)
	limit := a.Limit
	if limit == 0 {
		limit = DefaultRankLimit
	}
	if a.Cursor != "" {
		l, off, err := h.resumeList(s, "rank_processes", raw, a.Cursor)
		if err != nil {
			return nil, err
		}
		return h.rankPage(ctx, l, raw, off, limit)
	}
	store := h.HistoryStore()
	if store == nil {
		return nil, contract.Errorf(contract.CodeUnsupported, "retained history is not enabled in this host")
	}
	snap := h.sampler.Latest()
	latest := snap.Time.UnixMilli()
	var iv history.Interval
	iv.HasFrom, iv.HasTo = true, true
	window := map[string]any{}
	switch {
	case a.From != "":
		if iv.From, _, err = parseBound(a.From, "from", true); err != nil {
			return nil, err
		}
		iv.To = latest
		if a.To != "" {
			if iv.To, _, err = parseBound(a.To, "to", false); err != nil {
				return nil, err
			}
		}
		if iv.From > iv.To {
			return nil, invalidAt("/from", "from is after to")
		}
	default:
		n := DefaultRankSeconds
		if a.LastSeconds != nil {
			n = *a.LastSeconds
		}
		iv.To, iv.From = latest, latest-int64(n)*1000
		window["last_seconds"] = n
	}
	scope := a.Scope
	if scope == "" {
		scope = "all"
	}
	views := store.Views()
	pruned := store.PrunedLifetimes()
	sysCov := store.System().Coverage(iv)
	isFloat := m.Repr == sample.ReprNumber
	sysView := store.System()
	// The window's first system sample: a lifetime first seen after it
	// started inside the window.
	firstMs := iv.From
	if sw := sysView.Window(iv, sample.SProcesses); sw.SampleCount > 0 {
		firstMs = sw.FirstAt
	}
	fromZero := m.Cumulative && agg == history.AggIncrease && countsFromStart(m)
	var acct cpuAccount
	if m.Index == sample.PCPUTime && agg == history.AggIncrease {
		acct = accountCPU(views, store.PrunedCPURecords(), sysView, iv)
	}
	var ranked, children []rankRow
	unranked := map[string]int{}
	inScope, withSamples, unrankedN := 0, 0, 0
	for _, lv := range views {
		if scope == "live" && lv.Ended {
			continue
		}
		if a.Filter != nil && a.Filter.Name != "" && !lifetimeNameContains(&lv.Lifetime, a.Filter.Name) {
			continue
		}
		inScope++
		w := lv.View.Window(iv, m.Index)
		if w.SampleCount == 0 {
			continue
		}
		withSamples++
		if !m.Cumulative {
			w = w.Gauge()
		}
		v := w.Aggregate(agg, isFloat)
		if fromZero && w.Available > 0 && startedIn(&lv, firstMs) {
			// Started inside the window: the counter began at 0 there.
			v = history.Value{OK: true, Int: new(big.Int).SetUint64(w.Last)}
		}
		if acct.ok {
			if c, ok := acct.children[lv.ID]; ok {
				children = append(children, rankRow{lv: lv, w: w, val: history.Value{OK: true, Int: new(big.Int).SetUint64(c)}, children: true})
			}
		}
		row := rankRow{lv: lv, w: w, val: v}
		if acct.ok {
			row.foldedInto, row.folded = acct.folded[lv.ID]
		}
		if !v.OK {
			unranked[v.Reason]++
			unrankedN++
			continue
		}
		ranked = append(ranked, row)
	}
	ranked = append(ranked, children...)
	sort.Slice(ranked, func(i, j int) bool {
		x, y := ranked[i], ranked[j]
		if c := x.val.Cmp(y.val); c != 0 {
			return c > 0
		}
		if x.children != y.children {
			return !x.children
		}
		if x.lv.ID.PID != y.lv.ID.PID {
			return x.lv.ID.PID < y.lv.ID.PID
		}
		return x.lv.ID.StartTicks < y.lv.ID.StartTicks
	})
	span := iv.To - iv.From
	rows := make([]json.RawMessage, 0, len(ranked))
	truncatedByRing := 0
	for i, r := range ranked {
		lf := r.lv.From.UnixMilli()
		// The ring dropped samples the window asks for: a full ring whose
		// first retained sample is after the window start although the
		// process started before it.
		ringCut := lf > iv.From && r.lv.Samples >= r.lv.Capacity && r.lv.StartTime.UnixMilli() < lf
		if ringCut {
			truncatedByRing++
		}
		b, err := json.Marshal(h.rankRowJSON(i+1, r, agg, iv, span, ringCut))
		if err != nil {
			return nil, err
		}
		rows = append(rows, b)
	}
	var warnings []string
	cov := map[string]any{
		"scope":                         scope,
		"lifetimes_retained":            len(views),
		"lifetimes_in_scope":            inScope,
		"lifetimes_with_samples":        withSamples,
		"ranked":                        len(ranked),
		"unranked":                      unrankedN,
		"unranked_reasons":              unranked,
		"host_history":                  nil,
		"ranked_truncated_by_retention": truncatedByRing,
	}
	if acct.ok {
		var rowsNs uint64
		for _, r := range ranked {
			if !r.folded {
				rowsNs += r.val.Int.Uint64()
			}
		}
		cov["cpu_accounting"] = map[string]any{
			"from":             contract.TS(history.MsTime(acct.From)),
			"to":               contract.TS(history.MsTime(acct.To)),
			"system_cpu_ns":    u64s(acct.SystemNs),
			"accounted_ns":     u64s(acct.TotalNs),
			"accounted_share":  share(acct.TotalNs, acct.SystemNs),
			"rows_ns":          u64s(rowsNs),
			"rows_share":       share(rowsNs, acct.SystemNs),
			"children_rows":    len(children),
			"children_clamped": acct.clamped,
			"lifetimes_cut":    acct.cut,
			"pruned_ns":        u64s(acct.prunedNs),
		}
		if acct.cut > 0 {
			warnings = append(warnings, itoa(acct.cut)+" lifetimes that ran at the window's start keep no samples back to it (untracked lifetimes keep "+itoa(history.UntrackedCapacity)+"), so cpu_accounting misses their CPU before their first retained sample; a shorter window or update_tracking keeps it")
		}
	}
	if sysCov.HasBounds {
		cov["host_history"] = map[string]any{"retained_from": contract.TS(history.MsTime(sysCov.RetainedFrom)), "retained_to": contract.TS(history.MsTime(sysCov.RetainedTo))}
	}
	window["from"] = contract.TS(history.MsTime(iv.From))
	window["to"] = contract.TS(history.MsTime(iv.To))
	window["duration_ms"] = span
	if unrankedN > 0 {
		warnings = append(warnings, itoa(unrankedN)+" lifetimes with samples in the window have no "+agg+" of "+m.ID+" there ("+reasonList(unranked)+"); they are not ranked, and unknown is not zero")
	}
	if !sysCov.HasBounds || sysCov.RetainedFrom > iv.From {
		warnings = append(warnings, "the window starts before the host's retained history (the host started later, or its samples were pruned); lifetimes seen only before "+tsString(sysCov.RetainedFrom, sysCov.HasBounds)+" are unknown")
	}
	if iv.To > latest+(2*h.sampler.Interval()+time.Second).Milliseconds() {
		warnings = append(warnings, "the window extends past the latest sample ("+snap.Time.UTC().Format(time.RFC3339Nano)+") into time not collected yet")
	}
	if pruned.Count > 0 && pruned.LastMs >= iv.From {
		warnings = append(warnings, "identity pruning removed ended lifetimes whose last samples fall inside the window; they cannot be ranked: "+prunedWarning(pruned))
	}
	if truncatedByRing > 0 {
		warnings = append(warnings, itoa(truncatedByRing)+" ranked lifetimes keep fewer samples than the window needs (untracked lifetimes keep "+itoa(history.UntrackedCapacity)+"), so their values cover only part of it (see each row's coverage); update_tracking keeps up to "+itoa(history.TrackedCapacity))
	}
	meta := map[string]any{
		"metric":      map[string]any{"id": m.ID, "unit": m.Unit, "representation": m.Repr, "cumulative": m.Cumulative},
		"aggregate":   agg,
		"value_unit":  valueUnit(m, agg),
		"window":      window,
		"snapshot_at": contract.TS(snap.Time),
		"warnings":    warnings,
	}
	l := frozenOf(s).put("rank", rows, cov, meta)
	return h.rankPage(ctx, l, raw, 0, limit)
}

// rankPage renders one page of a frozen ranking: data {metric, aggregate,
// window, rows, page, next_cursor, coverage} with the ranking's warnings
// on every page. next_action is the next page while there is one, else
// get_history of the page's top row over the window (raw), or null for an
// empty page.
func (h *Host) rankPage(ctx context.Context, l *frozenList, raw json.RawMessage, off, limit int) (*contract.Result, error) {
	data, action, byBytes, err := h.listPage(ctx, "rank_processes", l, raw, off, limit)
	if err != nil {
		return nil, err
	}
	delete(data, "snapshot_at")
	delete(data, "warnings")
	delete(data, "capture_id")
	ts, _ := l.meta["snapshot_at"].(*contract.Timestamp)
	res := contract.NewResult("live", time.Time{}, data)
	res.CapturedAt = ts
	res.Coverage = liftCoverage(data)
	warnings, _ := l.meta["warnings"].([]string)
	for _, w := range warnings {
		res.Warn(w)
		res.Status = contract.StatusPartial
	}
	res.NextAction = action
	pageEnvelope(res, byBytes)
	if action == nil {
		rows, _ := data["rows"].([]json.RawMessage)
		if len(rows) > 0 {
			var top struct {
				Ref string `json:"process_ref"`
			}
			json.Unmarshal(rows[0], &top)
			m, _ := l.meta["metric"].(map[string]any)
			w, _ := l.meta["window"].(map[string]any)
			res.NextAction = &contract.Action{Tool: "get_history", Arguments: map[string]any{
				"target":     map[string]any{"process_ref": top.Ref},
				"metric_ids": []string{m["id"].(string)},
				"from":       w["from"], "to": w["to"], "mode": "raw"}}
		}
	}
	return res, nil
}

func tsString(ms int64, ok bool) string {
	if !ok {
		return "now"
	}
	return history.MsTime(ms).Format(time.RFC3339Nano)
}

func reasonList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + itoa(m[k])
	}
	return strings.Join(parts, ", ")
}

// rankRowJSON renders one ranked lifetime: identity, value, the samples
// the value rests on, and the lifetime's coverage of the window.
func (h *Host) rankRowJSON(rank int, r rankRow, agg string, iv history.Interval, span int64, ringCut bool) map[string]any {
	lf, lt := r.lv.From.UnixMilli(), r.lv.To.UnixMilli()
	frac := 1.0
	if span > 0 {
		frac = float64(history.Overlap(lf, lt, iv.From, iv.To)) / float64(span)
	}
	frac = math.Round(frac*1000) / 1000
	// lifecycle keeps list_processes' values (unknown for a lifetime known
	// only from history); exited_at is what the host saw: the time of the
	// first snapshot without this PID and start time, exit_basis how.
	lifecycle := "live"
	var exitedAt, exitBasis any
	if r.lv.Ended {
		lifecycle = "unknown"
		if !r.lv.EndedAt.IsZero() {
			exitedAt, exitBasis = contract.TS(r.lv.EndedAt), "absent_from_snapshot"
		}
	}
	coverage := map[string]any{
		"from":                   contract.TS(history.MsTime(max(lf, iv.From))),
		"to":                     contract.TS(history.MsTime(min(lt, iv.To))),
		"fraction":               frac,
		"started_in_window":      r.lv.StartTime.UnixMilli() > iv.From,
		"ended_in_window":        r.lv.Ended && lt <= iv.To,
		"truncated_by_retention": ringCut,
	}
	var value any
	switch {
	case r.val.IsFloat:
		value = r.val.Float
	case agg == history.AggMean:
		den := "1"
		if r.val.Den != nil {
			den = r.val.Den.String()
		}
		value = meanJSON(r.val.Int.String(), den)
	default:
		value = r.val.Int.String()
	}
	kind, name := "lifetime", r.lv.Name
	if r.children {
		kind, name = "reaped_children", "children of PID "+itoa(int(r.lv.ID.PID))+" ("+r.lv.Name+")"
	}
	out := map[string]any{
		"rank":                  rank,
		"kind":                  kind,
		"process_ref":           h.Ref(r.lv.ID),
		"pid":                   r.lv.ID.PID,
		"name":                  name,
		"start_time":            contract.TS(r.lv.StartTime),
		"lifecycle":             lifecycle,
		"exited_at":             exitedAt,
		"exit_basis":            exitBasis,
		"value":                 value,
		"sample_count":          r.w.SampleCount,
		"available_value_count": r.w.Available,
		"first_value_at":        contract.TS(history.MsTime(r.w.FirstAt)),
		"last_value_at":         contract.TS(history.MsTime(r.w.LastAt)),
		"coverage":              coverage,
	}
	if r.folded {
		// Reaped inside the window: its CPU is counted in its reaper's
		// children row, not again in the accounting's sums.
		out["accounted_in"] = map[string]any{"kind": "reaped_children", "process_ref": h.Ref(r.foldedInto), "pid": r.foldedInto.PID}
	}
	return out
}

// lifetimeNameContains reports whether sub occurs, by the substring form
// of the one name rule (sample.NameFacts.Contains: name, comm, exe and
// argv[0] base names, case-folded on exact bytes), in any name the
// lifetime had, as list_processes' name filter matches.
func lifetimeNameContains(l *history.Lifetime, sub string) bool {
	for _, n := range l.Names {
		if (sample.NameFacts{Name: n.Name, Comm: n.Comm, Exe: n.Exe, Argv0: n.Argv0}).Contains(sub) {
			return true
		}
	}
	return sample.NameFacts{Name: l.Name, Comm: l.Comm, Exe: l.Exe}.Contains(sub)
}

// countsFromStart reports whether a cumulative process metric counts
// from 0 at the process's start (CPU time, faults, I/O bytes, context
// switches), so a lifetime that started inside a window spent its whole
// value there. The JVM counters start when collection does.
func countsFromStart(m sample.Metric) bool {
	return m.Cumulative && m.Index < sample.PJVMHeapUsed
}

func u64s(v uint64) string { return strconv.FormatUint(v, 10) }

// share is part/whole rounded to 4 decimals (nil when whole is 0).
func share(part, whole uint64) any {
	if whole == 0 {
		return nil
	}
	return math.Round(float64(part)/float64(whole)*1e4) / 1e4
}

// valueUnit is the unit of a ranked value: the metric's, or per second
// for a slope ("bytes/s").
func valueUnit(m sample.Metric, agg string) string {
	if agg == history.AggSlope {
		return m.Unit + "/s"
	}
	return m.Unit
}
