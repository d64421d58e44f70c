package cli

import (
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestHistorySummaryGolden renders a fixed get_history summary in human
// units (testdata/history_summary.golden: 285.9M, 1.57s, 12.5%) and with
// --bytes (testdata/history_summary_bytes.golden: the exact values).
func TestHistorySummaryGolden(t *testing.T) {
	res := &contract.Result{
		Coverage: map[string]any{"retained_from": "2026-11-30T10:00:00Z", "retained_to": "2026-11-30T10:01:00Z", "sample_count": 61, "max_sample_interval_ms": 1000},
		Data: map[string]any{"metrics": map[string]any{
			"rss_bytes": map[string]any{"sample_count": 61, "available_value_count": 61, "missing_value_count": 0,
				"min": "299790336", "max": "306184192", "mean": map[string]any{"numerator": "18551107584", "denominator": "61"},
				"first": map[string]any{"value": "299790336"}, "last": map[string]any{"value": "298000000"}, "first_to_last_change": "-1790336"},
			"cpu_time_ns": map[string]any{"sample_count": 61, "available_value_count": 61, "missing_value_count": 0,
				"min": "800000000", "max": "1570000000", "mean": map[string]any{"numerator": "71000000000", "denominator": "61"},
				"first": map[string]any{"value": "800000000"}, "last": map[string]any{"value": "1570000000"}, "first_to_last_change": "770000000"},
			"cpu_percent": map[string]any{"sample_count": 61, "available_value_count": 60, "missing_value_count": 1,
				"min": 0.0, "max": 41.1, "mean": 12.5, "first": map[string]any{"value": 3.0}, "last": map[string]any{"value": 12.5}, "first_to_last_change": 9.5},
			"threads": map[string]any{"sample_count": 61, "available_value_count": 0, "missing_value_count": 61,
				"min": nil, "max": nil, "mean": nil, "first": nil, "last": nil, "first_to_last_change": nil},
		}},
	}
	metrics := []string{"rss_bytes", "cpu_time_ns", "cpu_percent", "threads"}
	for _, c := range []struct {
		name  string
		exact bool
	}{{"history_summary.golden", false}, {"history_summary_bytes.golden", true}} {
		var b strings.Builder
		if err := renderSummary(&b, metrics, res, c.exact); err != nil {
			t.Fatal(err)
		}
		golden(t, c.name, b.String())
	}
}

// TestHumanMetric: units as ps, htop and pprof print them; unknown stays
// "-".
func TestHumanMetric(t *testing.T) {
	for _, c := range []struct {
		unit string
		v    any
		want string
	}{
		{"bytes", "299790336", "285.9M"},
		{"bytes", "-1790336", "-1.7M"},
		{"bytes", 512.0, "512B"},
		{"nanoseconds", "800000000", "0.80s"},
		{"percent", 41.1, "41.1%"},
		{"count", map[string]any{"numerator": "25", "denominator": "2"}, "12.50"},
		{"bytes", nil, "-"},
	} {
		if got := humanMetric(c.unit, c.v); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.unit, c.v, got, c.want)
		}
	}
}
