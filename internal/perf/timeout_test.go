package perf

import (
	"encoding/json"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestAnalysisTimeoutRetryable: an analysis that passes the
// limits.timeout_seconds the caller set is TIMEOUT, not retryable (the
// same call times out again), with details naming the limit and a
// next_action raising it to the server ceiling; the server's own ceiling
// stays retryable. Every deadline has passed when the call starts
// (timeoutUnit 0), so nothing races the clock.
func TestAnalysisTimeoutRetryable(t *testing.T) {
	e := newEnv(t)
	trace := e.write("t.json", `{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":5}]}`)
	saved := timeoutUnit
	timeoutUnit = 0
	t.Cleanup(func() { timeoutUnit = saved })
	ceiling := DefaultCeilings.TimeoutSeconds
	tests := []struct {
		name      string
		limits    map[string]any
		retryable bool
	}{
		{"caller's limit", map[string]any{"timeout_seconds": 1}, false},
		{"caller's limit with others", map[string]any{"timeout_seconds": 30, "max_rows": 7}, false},
		{"server ceiling", nil, true},
		{"caller asks for the ceiling", map[string]any{"timeout_seconds": ceiling}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"sources": []any{pathSrc(trace)}, "start_ns": 0, "end_ns": 100}
			if tt.limits != nil {
				args["limits"] = tt.limits
			}
			m, code := e.call("inspect_trace_window", args)
			if code != contract.CodeTimeout {
				t.Fatalf("code %s %v", code, m["error"])
			}
			er := m["error"].(map[string]any)
			if er["retryable"] != tt.retryable {
				t.Errorf("retryable %v, want %v", er["retryable"], tt.retryable)
			}
			d := er["details"].(map[string]any)
			if d["limit"] != "timeout_seconds" || d["maximum"] != float64(ceiling) {
				t.Errorf("details %v", d)
			}
			if tt.retryable {
				if er["next_action"] != nil {
					t.Errorf("next_action %v", er["next_action"])
				}
				return
			}
			if d["timeout_seconds"] != tt.limits["timeout_seconds"].(int) && d["timeout_seconds"] != float64(tt.limits["timeout_seconds"].(int)) {
				t.Errorf("timeout_seconds %v", d["timeout_seconds"])
			}
			na, _ := er["next_action"].(map[string]any)
			if na == nil || na["tool"] != "inspect_trace_window" {
				t.Fatalf("next_action %v", er["next_action"])
			}
			a := na["arguments"].(map[string]any)
			lm := a["limits"].(map[string]any)
			if lm["timeout_seconds"] != float64(ceiling) {
				t.Errorf("next_action limits %v", lm)
			}
			for k, v := range tt.limits {
				if k != "timeout_seconds" && lm[k] != float64(v.(int)) {
					t.Errorf("next_action dropped limits.%s: %v", k, lm)
				}
			}
			b, _ := json.Marshal(a["sources"])
			if string(b) != mustJSON([]any{pathSrc(trace)}) || a["start_ns"] == nil || a["end_ns"] == nil {
				t.Errorf("next_action arguments %v", a)
			}
		})
	}
}
