package perf

import (
	"testing"
)

// TestTraceUnknownIsNull: what a trace does not say is null in
// inspect_trace_window rows, never "": a thread without thread_name
// metadata, an event without cat (or cat null) in the events and
// categories views, an event without name, and an event without pid or
// tid. A value the trace gives as "" stays "".
func TestTraceUnknownIsNull(t *testing.T) {
	e := newEnv(t)
	trace := e.write("u.json", `[
{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},
{"ph":"M","name":"thread_name","pid":1,"tid":3,"args":{"name":""}},
{"ph":"M","name":"thread_name","pid":1,"tid":4,"args":{"name":null}},
{"ph":"X","name":"named","cat":"c","ts":1,"dur":1,"pid":1,"tid":1},
{"ph":"X","name":"nocat","ts":2,"dur":1,"pid":1,"tid":2},
{"ph":"X","name":"nullcat","cat":null,"ts":3,"dur":1,"pid":1,"tid":3},
{"ph":"X","name":"emptycat","cat":"","ts":4,"dur":1,"pid":1,"tid":4},
{"ph":"X","cat":"c","ts":5,"dur":1,"pid":1,"tid":1},
{"ph":"X","name":"noids","cat":"c","ts":6,"dur":1},
{"ph":"B","cat":"c","ts":7,"pid":1,"tid":1},
{"ph":"E","name":"closer","ts":8,"pid":1,"tid":1}
]`)
	call := func(view string) []map[string]any {
		res := e.mustCall("inspect_trace_window", map[string]any{"sources": []any{pathSrc(trace)}, "start_ns": 0, "end_ns": 100000, "view": view, "page_size": 100})
		return rowsOf(t, e, res)
	}
	type want map[string]any
	check := func(rows []map[string]any, match func(map[string]any) bool, w want) {
		t.Helper()
		for _, r := range rows {
			if match(r) {
				for k, v := range w {
					got, ok := r[k]
					if !ok || got != v {
						t.Errorf("%v: %s = %#v (present %v), want %#v", r, k, got, ok, v)
					}
				}
				return
			}
		}
		t.Errorf("no row matches for %v", w)
	}
	byName := func(n any) func(map[string]any) bool {
		return func(r map[string]any) bool { return r["name"] == n }
	}
	events := call("events")
	check(events, byName("named"), want{"cat": "c", "pid": "1", "tid": "1"})
	check(events, byName("nocat"), want{"cat": nil})
	check(events, byName("nullcat"), want{"cat": nil})
	check(events, byName("emptycat"), want{"cat": ""})
	check(events, byName("noids"), want{"pid": nil, "tid": nil})
	check(events, func(r map[string]any) bool { return r["ts_ns"] == "5000" }, want{"name": nil})
	// A B event without name takes its E's name (the importers' rule).
	check(events, func(r map[string]any) bool { return r["ts_ns"] == "7000" }, want{"name": "closer"})

	threads := call("threads")
	byTid := func(tid any) func(map[string]any) bool {
		return func(r map[string]any) bool { return r["tid"] == tid }
	}
	check(threads, byTid("1"), want{"thread_name": "main"})
	check(threads, byTid("2"), want{"thread_name": nil})
	check(threads, byTid("3"), want{"thread_name": ""})
	check(threads, byTid("4"), want{"thread_name": nil})
	check(threads, byTid(nil), want{"pid": nil, "thread_name": nil})

	cats := call("categories")
	byCat := func(c any) func(map[string]any) bool {
		return func(r map[string]any) bool { v, ok := r["category"]; return ok && v == c }
	}
	check(cats, byCat(nil), want{"events": "2"})
	check(cats, byCat(""), want{"events": "1"})
	check(cats, byCat("c"), want{"events": "4"})
	if len(cats) != 3 {
		t.Errorf("categories %v", cats)
	}
}
