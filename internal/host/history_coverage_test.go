package host

import (
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// TestHistoryBeyondRetainedCoverage: counts stay as get_history
// defines them (stored samples inside the interval), but a request reaching outside retained coverage is
// status partial with a warning naming the retained bounds (in summary
// mode and on every raw page); a request inside it is complete.
func TestHistoryBeyondRetainedCoverage(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	step := func(s *sample.Snapshot) { s.System.Set(sample.SMemTotal, 10) }
	c := &scripted{t0: t0, steps: []func(*sample.Snapshot){step, step, step, step}}
	h := testHost(t, time.Hour, c)
	h.Sampler().Step()
	h.Sampler().Step()
	s := h.NewSession()
	ts := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	cases := []struct {
		name, from, to string
		count          float64
		warn           string // "" = complete without warnings
	}{
		{"inside", ts(t0), ts(t0.Add(3 * time.Second)), 4, ""},
		{"no bounds", "", "", 4, ""},
		{"starts before retention", ts(t0.Add(-time.Hour)), ts(t0.Add(3 * time.Second)), 4, "starts before retained coverage"},
		{"year 0001", "0001-01-01T00:00:00Z", "0001-01-02T00:00:00Z", 0, "ends before retained coverage begins"},
		{"year 9999", "9999-01-01T00:00:00Z", "9999-01-02T00:00:00Z", 0, "past the latest sample"},
		{"from inside, no to", ts(t0.Add(time.Second)), "", 3, ""},
		{"from in the future, no to", ts(t0.Add(time.Hour)), "", 0, "starts after the latest retained sample"},
		{"from year 9999, no to", "9999-01-01T00:00:00Z", "", 0, "starts after the latest retained sample"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"metric_ids": []string{"memory_total_bytes"}, "mode": "summary"}
			if tc.from != "" {
				args["from"] = tc.from
			}
			if tc.to != "" {
				args["to"] = tc.to
			}
			d, res := mustCall(t, h, s, "get_history", args)
			mt := d["metrics"].(map[string]any)["memory_total_bytes"].(map[string]any)
			if mt["sample_count"] != tc.count || mt["missing_value_count"] != 0.0 {
				t.Fatalf("counts %v", mt)
			}
			cov := covOf(res)
			if cov["retained_from"] != ts(t0) {
				t.Fatalf("coverage %v", cov)
			}
			check := func(res *contract.Result) {
				t.Helper()
				if tc.warn == "" {
					if res.Status != contract.StatusComplete || len(res.Warnings) != 0 {
						t.Fatalf("status %s warnings %q", res.Status, res.Warnings)
					}
					return
				}
				if res.Status != contract.StatusPartial || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tc.warn) || !strings.Contains(res.Warnings[0], "2026-11-29T10:00:00Z") {
					t.Fatalf("status %s warnings %q", res.Status, res.Warnings)
				}
			}
			check(res)
			args["mode"], args["limit"] = "raw", 2
			for {
				_, res := mustCall(t, h, s, "get_history", args)
				check(res)
				if res.NextAction == nil {
					break
				}
				args["cursor"] = res.NextAction.Arguments["cursor"]
			}
		})
	}
}
