package perf

import (
	"strings"
	"testing"
)

func TestParseCeilings(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    func(c Ceilings) bool
		wantErr string
	}{
		{`{}`, func(c Ceilings) bool { return c == DefaultCeilings }, ""},
		{`{"max_rows":50}`, func(c Ceilings) bool { return c.MaxRows == 50 && c.DefaultRows == 50 }, ""},
		{`{"max_rows":5000}`, func(c Ceilings) bool { return c.MaxRows == 5000 && c.DefaultRows == DefaultCeilings.DefaultRows }, ""},
		{`{"max_memory_bytes":1048576}`, func(c Ceilings) bool { return c.MaxMemoryBytes == 1<<20 && c.defaultMemory() == 1<<20 }, ""},
		{`{"timeout_seconds":2e1}`, func(c Ceilings) bool { return c.TimeoutSeconds == 20 }, ""},
		{`{"max_input_bytes":0}`, nil, "max_input_bytes 0 is out of range"},
		{`{"timeout_seconds":601}`, nil, "timeout_seconds 601 is out of range: give 1 to 600"},
		{`{"max_rows":"5"}`, nil, `max_rows: "5" is not an integer`},
		{`{"max_rows":1.5}`, nil, "max_rows: 1.5 is not an integer"},
		{`{"x":1}`, nil, `unknown key "x"`},
		{`{} {}`, nil, "found more after it"},
		{`null`, nil, "want a JSON object"},
	} {
		c, err := ParseCeilings(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !tc.want(c) {
			t.Errorf("%s: %+v, %v", tc.in, c, err)
		}
	}
}
