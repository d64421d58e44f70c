//go:build linux

package perf

import (
	"testing"
)

// checkPagedStatus follows first's next_action to the end and checks every
// page: complete (nothing it covers is missing) with page.more,
// coverage.more_pages and next_action agreeing, and the rows returned
// add up to want.
func checkPagedStatus(t *testing.T, e *env, first map[string]any, want int) {
	t.Helper()
	cur := first
	rows := 0
	for page := 1; ; page++ {
		pg := data(cur)["page"].(map[string]any)
		cov := cur["coverage"].(map[string]any)
		more := cur["next_action"] != nil
		rows += len(data(cur)["rows"].([]any))
		if cur["status"] != "complete" || cov["complete"] != true || pg["more"] != more || cov["more_pages"] != more {
			t.Fatalf("page %d: status %v coverage.complete %v page.more %v more_pages %v next_action %v",
				page, cur["status"], cov["complete"], pg["more"], cov["more_pages"], more)
		}
		if _, ok := cov["incomplete"]; ok {
			t.Fatalf("page %d: coverage.incomplete %v on a complete page", page, cov["incomplete"])
		}
		if !more {
			break
		}
		if np, ok := data(cur)["next_page"]; ok {
			t.Fatalf("page %d: data.next_page %v repeats next_action: the next call is stated once", page, np)
		}
		na := cur["next_action"].(map[string]any)
		cur = e.mustCall(na["tool"].(string), na["arguments"])
	}
	if rows != want {
		t.Fatalf("%d rows across the pages, want %d", rows, want)
	}
}

// TestPagedResultsAreComplete: a page of summarize_profile or
// summarize_executions whose evidence is all there is status complete
// even when more pages follow (page.more and the exact next call say
// so); partial is kept for results where something could not be read.
func TestPagedResultsAreComplete(t *testing.T) {
	e := newCaptureEnv(t)
	cpu, _ := makeProfiles(t)
	all := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(cpu)}, "sample_type": "cpu", "page_size": 1000})
	n := len(data(all)["rows"].([]any))
	if n < 2 || all["next_action"] != nil {
		t.Fatalf("the profile has %d functions in one page (next_action %v); the test needs at least 2", n, all["next_action"])
	}
	first := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(cpu)}, "sample_type": "cpu", "page_size": 1})
	if first["next_action"] == nil {
		t.Fatal("page_size 1 of several functions names no next call")
	}
	checkPagedStatus(t, e, first, n)

	res := e.mustCall("capture_and_summarize_executions", map[string]any{
		"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"},
		"experiment": map[string]any{"cases": []any{
			map[string]any{"name": "a", "argv": []string{"true"}},
			map[string]any{"name": "b", "argv": []string{"true"}},
		}, "blocks": 3, "seed": 1},
		"page_size": 2,
	})
	if res["next_action"] == nil {
		t.Fatal("6 executions at page_size 2 name no next call")
	}
	checkPagedStatus(t, e, res, 6)

	// Partial stays for what could not be read: an unclosed B.
	p := e.write("open.json", `[{"ph":"B","name":"a","ts":1,"pid":1,"tid":1},{"ph":"X","name":"b","ts":2,"dur":1,"pid":1,"tid":1},{"ph":"X","name":"c","ts":3,"dur":1,"pid":1,"tid":1}]`)
	tr := e.mustCall("inspect_trace_window", map[string]any{"sources": []any{pathSrc(p)}, "start_ns": 0, "end_ns": 100000, "page_size": 1})
	if tr["status"] != "partial" || tr["coverage"].(map[string]any)["complete"] != false || tr["next_action"] == nil {
		t.Fatalf("unclosed B: status %v coverage %v", tr["status"], tr["coverage"])
	}
}
