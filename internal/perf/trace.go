package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// maxNS is the largest trace-window bound (seed 003: 9223372036854775807).
const maxNS = math.MaxInt64

func boundSchema(desc string) map[string]any {
	return map[string]any{
		"description": desc,
		"oneOf": []any{
			map[string]any{"type": "integer", "minimum": 0, "maximum": json.Number("9223372036854775807")},
			map[string]any{"type": "string", "pattern": "^(0|[1-9][0-9]{0,18})$"},
		},
	}
}

func traceWindowOperation() *Operation {
	return &Operation{
		Name:  "inspect_trace_window",
		Title: "Inspect a trace window",
		Description: "Select the events of one Chrome trace-event JSON file (array form or {\"traceEvents\": [...]}) that overlap the window [start_ns, end_ns) on the trace clock in nanoseconds (trace ts/dur are microseconds), and aggregate them per thread and per category. " +
			"Required: sources (exactly one chrome-trace file), start_ns, end_ns (integers or canonical decimal strings 0..9223372036854775807; end_ns must be positive and greater than start_ns). Optional: view (events|threads|categories; default events), page_size, limits, continuation. " +
			"Complete (X) events, B/E pairs per thread, and instant (i/I/n) and counter (C) events are selected; other phases are counted in coverage as not selectable.",
		MinSources: 1, MaxSources: 1,
		Formats: []string{FormatChromeTrace},
		Fields: []Field{
			{"start_ns", boundSchema("Inclusive window start, ns.")},
			{"end_ns", boundSchema("Exclusive window end, ns.")},
			{"view", map[string]any{"enum": []string{"events", "threads", "categories"}, "description": "Rows: overlapping events in the order their records complete them, or per-thread / per-category aggregates."}},
		},
		Required: []string{"start_ns", "end_ns"},
		Replay: func(f map[string]any) {
			for _, k := range []string{"start_ns", "end_ns"} {
				if v, err := boundField(f, k); err == nil {
					f[k] = strconv.FormatInt(v, 10)
				}
			}
		},
		Run: runTraceWindow,
	}
}

func boundField(m map[string]any, key string) (int64, error) {
	var s string
	switch v := m[key].(type) {
	case json.Number:
		s = string(v)
	case string:
		s = v
	default:
		return 0, fieldErr(contract.CodeInvalidArgument, "/"+key, "%s must be an integer or a decimal string", key)
	}
	if !boundedExponent(s) {
		return 0, fieldErr(contract.CodeInvalidArgument, "/"+key, "%s must be an integer from 0 through 9223372036854775807", key)
	}
	if r, ok := new(big.Rat).SetString(s); ok && r.IsInt() && r.Sign() >= 0 && r.Num().IsInt64() {
		return r.Num().Int64(), nil
	}
	return 0, fieldErr(contract.CodeInvalidArgument, "/"+key, "%s must be an integer from 0 through 9223372036854775807", key)
}

// traceEvent is one Chrome trace event (Trace Event Format: ph, ts and dur
// in microseconds, pid, tid, name, cat, args).
type traceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	Pid  json.RawMessage `json:"pid"`
	Tid  json.RawMessage `json:"tid"`
	Args json.RawMessage `json:"args"`
}

// usToNS converts a decimal microsecond value to integer nanoseconds
// exactly (digits beyond nanoseconds are truncated toward zero).
func usToNS(n json.Number) (int64, bool) {
	s := string(n)
	if s == "" || !boundedExponent(s) {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, false
	}
	r.Mul(r, big.NewRat(1000, 1))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

// fastUsToNS handles the common integer and short-decimal forms without
// big.Rat.
func fastUsToNS(n json.Number) (int64, bool) {
	s := string(n)
	ip, fp, hasDot := strings.Cut(s, ".")
	if strings.ContainsAny(s, "eE+") || len(ip) == 0 || len(ip) > 15 || len(fp) > 3 || (hasDot && len(fp) == 0) {
		return usToNS(n)
	}
	i, err := strconv.ParseInt(ip, 10, 64)
	if err != nil {
		return usToNS(n)
	}
	f := int64(0)
	if len(fp) > 0 {
		fs := fp + strings.Repeat("0", 3-len(fp))
		v, err := strconv.ParseInt(fs, 10, 64)
		if err != nil || v < 0 {
			return usToNS(n)
		}
		f = v
	}
	if strings.HasPrefix(ip, "-") {
		return i*1000 - f, true
	}
	return i*1000 + f, true
}

// exactNS reports whether the microsecond literal n converts to integer
// nanoseconds without dropping sub-nanosecond digits.
func exactNS(n json.Number) bool {
	s := string(n)
	_, fp, _ := strings.Cut(s, ".")
	if !strings.ContainsAny(s, "eE") && len(strings.TrimRight(fp, "0")) <= 3 {
		return true
	}
	if !boundedExponent(s) {
		return false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return false
	}
	return r.Mul(r, big.NewRat(1000, 1)).IsInt()
}

func idString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

type traceAgg struct {
	key       string
	pid, tid  string
	name      string
	events    int64
	overlapNS int64
}

type traceWindowResult struct {
	rows       []any
	selected   int64
	threads    map[string]*traceAgg
	cats       map[string]*traceAgg
	total      int64
	unselect   int64
	unmatched  int64
	threadName map[string]string
	minTS      int64
	maxTS      int64
}

// scanTrace streams the trace events of r and calls emit for every
// span or instant it reconstructs. It is the Chrome trace decoder.
//
// When truncated is not nil it counts the events whose ts or dur had
// digits below one nanosecond, which the conversion drops (toward zero).
func scanTrace(ctx context.Context, r io.Reader, memCap int64, visit func(ev *traceEvent, start, end int64, instant bool) error, meta func(ev *traceEvent), truncated ...*int64) (int64, int64, int64, error) {
	g := newJSONGuard(bufio.NewReaderSize(r, 64<<10), "the Chrome trace", 0, 0)
	dec := json.NewDecoder(g)
	dec.UseNumber()
	bad := func() error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if g.err != nil {
			return g.err
		}
		return decodeFail("the Chrome trace is malformed near byte %d", dec.InputOffset())
	}
	tok, err := dec.Token()
	if err != nil {
		return 0, 0, 0, bad()
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return 0, 0, 0, decodeFail("a Chrome trace is a JSON array of events or an object with traceEvents")
	}
	// From here on one event (below the events array) may hold at most
	// limits.max_memory_bytes; bytes the guard already scanned are within
	// the first read buffer.
	g.maxElem, g.elemDepth = memCap, 1
	if d == '{' {
		g.elemDepth = 2
		found := false
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return 0, 0, 0, bad()
			}
			if k, _ := kt.(string); k == "traceEvents" {
				t, err := dec.Token()
				if err != nil || t != json.Delim('[') {
					return 0, 0, 0, decodeFail("traceEvents is not an array")
				}
				found = true
				break
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, 0, 0, bad()
			}
		}
		if !found {
			return 0, 0, 0, decodeFail("the trace object has no traceEvents array")
		}
	} else if d != '[' {
		return 0, 0, 0, decodeFail("a Chrome trace is a JSON array of events or an object with traceEvents")
	}
	type open struct {
		ev    traceEvent
		start int64
	}
	stacks := map[string][]open{}
	var total, unselect, unmatched int64
	for i := int64(0); dec.More(); i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return 0, 0, 0, ctx.Err()
		}
		var ev traceEvent
		if err := dec.Decode(&ev); err != nil {
			if g.err != nil {
				return 0, 0, 0, g.err
			}
			return 0, 0, 0, decodeFail("trace event %d is malformed", i)
		}
		total++
		if ev.Ph == "M" {
			meta(&ev)
			continue
		}
		ts, ok := fastUsToNS(ev.Ts)
		if !ok {
			if ev.Ts == "" && (ev.Ph == "" || strings.ContainsAny(ev.Ph, "XBEiInC")) {
				return 0, 0, 0, decodeFail("trace event %d has no numeric ts", i)
			}
			unselect++
			continue
		}
		if len(truncated) > 0 && truncated[0] != nil && (!exactNS(ev.Ts) || (ev.Dur != "" && !exactNS(ev.Dur))) {
			*truncated[0]++
		}
		th := idString(ev.Pid) + "/" + idString(ev.Tid)
		switch ev.Ph {
		case "X":
			dur := int64(0)
			if ev.Dur != "" {
				if dur, ok = fastUsToNS(ev.Dur); !ok || dur < 0 {
					return 0, 0, 0, decodeFail("trace event %d has an invalid dur", i)
				}
			}
			if err := visit(&ev, ts, satAdd(ts, dur), false); err != nil {
				return 0, 0, 0, err
			}
		case "B":
			stacks[th] = append(stacks[th], open{ev, ts})
		case "E":
			st := stacks[th]
			if len(st) == 0 {
				unmatched++
				continue
			}
			o := st[len(st)-1]
			stacks[th] = st[:len(st)-1]
			if o.ev.Name == "" {
				o.ev.Name = ev.Name
			}
			if err := visit(&o.ev, o.start, ts, false); err != nil {
				return 0, 0, 0, err
			}
		case "i", "I", "n", "C":
			if err := visit(&ev, ts, ts, true); err != nil {
				return 0, 0, 0, err
			}
		default:
			unselect++
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, 0, 0, bad()
	}
	for _, st := range stacks {
		unmatched += int64(len(st))
	}
	return total, unselect, unmatched, nil
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func runTraceWindow(ctx context.Context, req *Request) (*Output, error) {
	start, err := boundField(req.Fields, "start_ns")
	if err != nil {
		return nil, err
	}
	end, err := boundField(req.Fields, "end_ns")
	if err != nil {
		return nil, err
	}
	if end <= 0 || end <= start {
		return nil, fieldErr(contract.CodeInvalidArgument, "/end_ns", "end_ns must be positive and greater than start_ns")
	}
	view := strField(req.Fields, "view")
	if view == "" {
		view = "events"
	}
	f, err := os.Open(req.Inputs[0].file)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInputChanged, "the source can no longer be read")
	}
	defer f.Close()
	p := newPager(req, req.Start.Row)
	threads := map[string]*traceAgg{}
	cats := map[string]*traceAgg{}
	names := map[string]string{}
	var selected int64
	hasMore := false
	visit := func(ev *traceEvent, s, e int64, instant bool) error {
		var ov int64
		if instant {
			if s < start || s >= end {
				return nil
			}
		} else {
			if !(s < end && e > start) && !(s == e && s >= start && s < end) {
				return nil
			}
			ov = min(e, end) - max(s, start)
			if ov < 0 {
				ov = 0
			}
		}
		selected++
		pid, tid := idString(ev.Pid), idString(ev.Tid)
		th := pid + "/" + tid
		if len(threads) < 1<<20 {
			a := threads[th]
			if a == nil {
				a = &traceAgg{key: th, pid: pid, tid: tid}
				threads[th] = a
			}
			a.events++
			a.overlapNS += ov
		}
		for _, c := range strings.Split(ev.Cat, ",") {
			a := cats[c]
			if a == nil && len(cats) < 1<<20 {
				a = &traceAgg{key: c}
				cats[c] = a
			}
			if a != nil {
				a.events++
				a.overlapNS += ov
			}
		}
		if view == "events" {
			if p.full() && p.seen >= p.start {
				hasMore = true
			}
			ph, name, cat := ev.Ph, ev.Name, ev.Cat
			if ph == "B" {
				ph = "B/E"
			}
			if p.seen >= p.start && p.full() {
				hasMore = true
			}
			idx := p.seen
			if !p.offer(func() any {
				row := map[string]any{"event": idx, "name": name, "cat": cat, "ph": ph, "pid": pid, "tid": tid,
					"ts_ns": contract.Int(s), "end_ns": contract.Int(e), "dur_ns": contract.Int(e - s), "overlap_ns": contract.Int(ov)}
				return row
			}) {
				hasMore = true
				p.seen++ // later events keep their indices
			}
		}
		return nil
	}
	meta := func(ev *traceEvent) {
		if ev.Name == "thread_name" && len(names) < 1<<20 {
			var a struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(ev.Args, &a) == nil {
				names[idString(ev.Pid)+"/"+idString(ev.Tid)] = a.Name
			}
		}
	}
	var truncated int64
	total, unselect, unmatched, err := scanTrace(ctx, ctxReader{ctx, f}, req.Limits.MaxMemoryBytes, visit, meta, &truncated)
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	aggRows := func(m map[string]*traceAgg, thread bool) []any {
		list := make([]*traceAgg, 0, len(m))
		for _, a := range m {
			list = append(list, a)
		}
		sort.Slice(list, func(i, j int) bool {
			if list[i].overlapNS != list[j].overlapNS {
				return list[i].overlapNS > list[j].overlapNS
			}
			return list[i].key < list[j].key
		})
		rows := make([]any, len(list))
		for i, a := range list {
			r := map[string]any{"events": contract.Int(a.events), "overlap_ns": contract.Int(a.overlapNS)}
			if thread {
				r["pid"], r["tid"], r["thread_name"] = a.pid, a.tid, names[a.key]
			} else {
				r["category"] = a.key
			}
			rows[i] = r
		}
		return rows
	}
	var out *Output
	switch view {
	case "threads":
		out, err = page(aggRows(threads, true), req)
	case "categories":
		out, err = page(aggRows(cats, false), req)
	default:
		out = &Output{Rows: p.rows, Total: selected}
		if hasMore {
			out.Next = &evidence.Position{Row: p.start + int64(len(p.rows))}
		}
	}
	if err != nil {
		return nil, err
	}
	if view == "events" && !req.Resuming && len(p.rows) == 0 && p.start > 0 {
		return nil, fieldErr(contract.CodeInvalidArgument, "/continuation", "no events at this position")
	}
	out.Summary = map[string]any{"window": map[string]any{"start_ns": contract.Int(start), "end_ns": contract.Int(end), "duration_ns": contract.Int(end - start)},
		"view": view, "events_in_window": contract.Int(selected), "threads": len(threads), "categories": len(cats), "trace_events": contract.Int(total)}
	if out.Coverage == nil {
		out.Coverage = map[string]any{}
	}
	out.Coverage["events_not_selectable"] = contract.Int(unselect)
	out.Coverage["unmatched_begin_end"] = contract.Int(unmatched)
	p.noteBudget(out)
	if truncated > 0 {
		out.Coverage["sub_ns_truncated_events"] = contract.Int(truncated)
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d event(s) have ts or dur with digits below one nanosecond; they were truncated toward zero to whole nanoseconds (see coverage.sub_ns_truncated_events)", truncated))
	}
	if unmatched > 0 {
		out.Warnings = append(out.Warnings, "some B/E events had no partner and were not selected; see coverage.unmatched_begin_end")
	}
	return out, nil
}

// boundedExponent reports whether a JSON number literal is short and has an
// exponent within ±40, so big.Rat never expands 1e999999999.
func boundedExponent(s string) bool {
	if len(s) > 64 {
		return false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		return err == nil && e <= 40 && e >= -40
	}
	return true
}
