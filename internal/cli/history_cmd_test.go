package cli

import (
	"regexp"
	"strings"
	"testing"
)

// inquest history prints integral counts and values without decimals or
// exponents, exact means as decimals (not n/d), and the warning of a
// request reaching beyond retained coverage.
func TestHistoryOutputClean(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", t.TempDir()+"/inquest.toml")
	t.Setenv(inProcessEnv, "1")
	out, code := runInvCLI(t, "history", "--metric", "memory_available_bytes,process_count", "--from", "2020-01-01T00:00:00Z")
	if code != 0 {
		t.Fatalf("history: %d %s", code, out)
	}
	if !strings.Contains(out, "warning: the requested interval starts before retained coverage") {
		t.Fatalf("no coverage warning:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "process_count") && !strings.HasPrefix(line, "memory_available_bytes") {
			continue
		}
		f := strings.Fields(line)
		// counts and integer values: plain decimal integers; the mean of
		// integers is a decimal with at most two places.
		for i, v := range f[1:] {
			if v == "-" {
				continue
			}
			if ok, _ := regexp.MatchString(`^[0-9]+(\.[0-9]{1,2})?$`, v); !ok {
				t.Fatalf("column %d of %q is %q", i+1, line, v)
			}
		}
	}
}
