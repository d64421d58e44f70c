//go:build linux

package perf

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestCaptureInspectReplay walks every capture tool: a preserved capture's
// inspect_evidence next_action, sent back unchanged, is the analysis tool
// over the captured artifacts with only that tool's own arguments, and it
// returns the rows the capture returned.
func TestCaptureInspectReplay(t *testing.T) {
	e := newCaptureEnv(t)
	retainHeap()
	srv := httptest.NewServer(http.DefaultServeMux)
	defer srv.Close()
	mod := goModule(t)
	heap := map[string]any{"kind": "pprof-http", "url": srv.URL, "profile": "heap"}
	goTest := map[string]any{"kind": "go-test", "bench": "Sum", "benchtime": "5x"}
	twoCases := map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "blocks": 1}
	covered := map[string]bool{}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"capture_and_summarize_executions", map[string]any{"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"}, "experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "argv": []string{"sh", "-c", "exit 0"}}}, "blocks": 2, "seed": 5}}},
		{"capture_and_preview_artifact", map[string]any{"target": target(e.dir, "sh", "-c", "printf 'a\\nb\\nc\\n'"), "provider": map[string]any{"kind": "direct"}, "page_size": 2}},
		{"capture_and_summarize_benchmarks", map[string]any{"target": target(mod, "."), "provider": goTest}},
		{"capture_and_summarize_profile", map[string]any{"target": target(e.dir, "true"), "provider": heap, "sample_type": "inuse_space"}},
		{"capture_and_compare_benchmarks", map[string]any{"target": target(mod, "."), "provider": goTest, "experiment": twoCases}},
		{"capture_and_compare_profiles", map[string]any{"target": target(e.dir, "true"), "provider": heap, "experiment": twoCases}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			tc.args["preserve"] = true
			res := e.mustCall(tc.tool, tc.args)
			if af := data(res)["analysis_failure"]; af != nil {
				t.Fatalf("analysis failed: %v", af)
			}
			ins := e.mustCall("inspect_evidence", map[string]any{"evidence_id": data(res)["evidence_id"]})
			na, ok := ins["next_action"].(map[string]any)
			if !ok {
				t.Fatalf("inspect_evidence has no next_action: %s", toJSON(ins))
			}
			want := strings.TrimPrefix(tc.tool, "capture_and_")
			if na["tool"] != want {
				t.Fatalf("next_action tool %v, want %s", na["tool"], want)
			}
			args := na["arguments"].(map[string]any)
			for _, k := range []string{"capture", "target", "provider", "preserve", "experiment"} {
				if _, ok := args[k]; ok {
					t.Errorf("next_action arguments carry capture argument %q: %s", k, toJSON(args))
				}
			}
			if toJSON(args["sources"]) != toJSON(data(res)["analysis_sources"]) {
				t.Errorf("next_action sources %s, analysis_sources %s", toJSON(args["sources"]), toJSON(data(res)["analysis_sources"]))
			}
			m, code := e.call(na["tool"].(string), args)
			if code != "" {
				t.Fatalf("next_action unchanged failed: %s %v", code, m["error"])
			}
			// The capture's page is sized within what its capture block
			// leaves of the result budget, so the replay's first page holds
			// the same rows and possibly more.
			replayed := data(m)["rows"].([]any)
			captured := data(res)["rows"].([]any)
			if len(replayed) < len(captured) || toJSON(replayed[:len(captured)]) != toJSON(captured) {
				t.Fatalf("replay rows differ:\n%s\n%s", toJSON(replayed), toJSON(captured))
			}
			if len(data(res)["rows"].([]any)) == 0 {
				t.Fatal("the capture returned no rows")
			}
			covered[tc.tool] = true
		})
	}
	for _, tl := range CaptureTools(e.rt) {
		if strings.HasPrefix(tl.Name, "capture_and_") && !covered[tl.Name] {
			t.Errorf("%s is not walked", tl.Name)
		}
	}
}

// heapRetained keeps the allocations of retainHeap reachable, so the heap
// profile this test process serves has in-use samples.
var heapRetained [][]byte

// retainHeap allocates 8 MiB that stays live and runs two collections: a
// heap profile reports the state as of the last completed GC cycle, so
// without this a fresh test process (or one that ran only this test)
// serves a profile with no in-use samples at all.
func retainHeap() {
	for i := 0; i < 64; i++ {
		heapRetained = append(heapRetained, make([]byte, 128<<10))
	}
	runtime.GC()
	runtime.GC()
}
