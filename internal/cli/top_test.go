package cli

import "testing"

func TestParseLast(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"60s", 60, true}, {"5m", 300, true}, {"90", 90, true}, {"1h30m", 5400, true},
		{"0", 0, false}, {"0s", 0, false}, {"1.5s", 0, false}, {"500ms", 0, false}, {"-3s", 0, false}, {"soon", 0, false},
	} {
		got, err := parseLast(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseLast(%q) = %d, %v", tc.in, got, err)
		}
	}
}

// FuzzParseLast: --last either gives at least one whole second or an
// error, never a panic.
func FuzzParseLast(f *testing.F) {
	for _, s := range []string{"60s", "5m", "90", "1.5s", "", "9223372036854775807", "-1h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseLast(s)
		if err == nil && n < 1 {
			t.Fatalf("parseLast(%q) = %d without error", s, n)
		}
	})
}

func TestFmtMetricValue(t *testing.T) {
	for _, tc := range []struct {
		unit string
		v    any
		want string
	}{
		{"percent", 12.345, "12.3"},
		{"bytes", "1048576", "1.0M"},
		{"nanoseconds", "1500000000", "1.50s"},
		{"count", map[string]any{"numerator": "7", "denominator": "2"}, "3.50"},
		{"count", "42", "42"},
		{"bytes", nil, "-"},
	} {
		if got := fmtMetricValue(tc.unit, tc.v); got != tc.want {
			t.Errorf("fmtMetricValue(%s, %v) = %q, want %q", tc.unit, tc.v, got, tc.want)
		}
	}
}
