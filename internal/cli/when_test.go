package cli

import (
	"strings"
	"testing"
	"time"
)

// parseWhen reads the forms a person types for --from/--to and names the
// flag when it cannot.
func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	local := time.Date(2026, 12, 2, 4, 30, 0, 0, time.Local).UTC().Format(time.RFC3339Nano)
	for _, c := range []struct{ in, want, err string }{
		{in: "2026-12-02T04:00:00Z", want: "2026-12-02T04:00:00Z"},
		{in: "2026-12-02T06:00:00+02:00", want: "2026-12-02T04:00:00Z"},
		{in: "2026-12-02T04:00:00.25Z", want: "2026-12-02T04:00:00.25Z"},
		{in: "2026-12-02 04:30", want: local},
		{in: "2026-12-02 04:30:00", want: local},
		{in: "90m", want: "2026-12-02T03:30:00Z"},
		{in: "-2h", want: "2026-12-02T03:00:00Z"},
		{in: "yesterday", err: `--from "yesterday" is not a time`},
		{in: "0s", err: `--from "0s" is not a time`},
		{in: "2026-13-02T04:00:00Z", err: "is not a time"},
	} {
		got, err := parseWhen("--from", c.in, now)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "how long ago") {
				t.Errorf("parseWhen(%q) = %q, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseWhen(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// A tool's warning printed to a person names commands, not tools.
func TestNoteCell(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a shorter window or update_tracking keeps it", "a shorter window or inquest track add NAME keeps it"},
		{"see get_history and rank_processes", "see inquest history and inquest top"},
		{"cpu_accounting misses it", "cpu_accounting misses it"},
		{"line\nbreak", `line\nbreak`},
	} {
		if got := noteCell(c.in); got != c.want {
			t.Errorf("noteCell(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
