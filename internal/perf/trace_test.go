package perf

import (
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

func TestTraceWindowGolden(t *testing.T) {
	e := newEnv(t)
	src := []any{pathSrc(abs2(t, "trace/small.json"))}
	tests := []struct {
		name       string
		start, end any
		view       string
	}{
		{"events_0_20us", 0, "20000", "events"},
		{"threads_0_50us", 0, 50000, "threads"},
		{"categories_0_50us", "0", "50000", "categories"},
		{"events_epoch", "9223372036854775000", "9223372036854775807", "events"},
		{"events_half_open", 10000, 10500, "events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"sources": src, "start_ns": tt.start, "end_ns": tt.end, "view": tt.view, "page_size": 2}
			res := e.mustCall("inspect_trace_window", args)
			rows, _ := e.follow(res)
			golden(t, "trace/"+tt.name+".golden.json", map[string]any{"summary": data(res)["summary"], "coverage": res["coverage"], "rows": rows})
			if na, ok := res["next_action"].(map[string]any); ok {
				a := na["arguments"].(map[string]any)
				if _, ok := a["start_ns"].(string); !ok {
					t.Error("replay bounds are not exact decimal strings")
				}
			}
		})
	}
	bad := []struct {
		name       string
		start, end any
		field      string
	}{
		{"end before start", 10, 5, "/end_ns"},
		{"empty window", 5, 5, "/end_ns"},
		{"end zero", 0, 0, "/end_ns"},
		{"beyond int64", "0", "9223372036854775808", "/end_ns"},
		{"negative", -1, 5, "/start_ns"},
		{"non-canonical string", "007", 5, "/start_ns"},
		{"boolean", true, 5, "/start_ns"},
		{"fraction", 1.5, 5, "/start_ns"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			m, code := e.call("inspect_trace_window", map[string]any{"sources": src, "start_ns": tt.start, "end_ns": tt.end})
			if code != contract.CodeInvalidArgument {
				t.Fatalf("got %s", code)
			}
			if f := m["error"].(map[string]any)["field"]; f != tt.field {
				t.Fatalf("field %v, want %s", f, tt.field)
			}
		})
	}
	// The largest bound passes as a JSON integer too.
	e.mustCall("inspect_trace_window", map[string]any{"sources": src, "start_ns": 0, "end_ns": uint64(9223372036854775807)})
	for _, doc := range []string{`{"traceEvents": 3}`, `[{"ph":"X","ts":"x"}]`, `[{"ph":"X","ts":1,"dur":-1}]`, `{"a":1}`, `[1,`} {
		p := e.write("bad.json", doc)
		if _, code := e.call("inspect_trace_window", map[string]any{"sources": []any{pathSrc(p)}, "start_ns": 0, "end_ns": 10}); code != contract.CodeDecodeFailed {
			t.Errorf("%s: got %s", doc, code)
		}
	}
}
