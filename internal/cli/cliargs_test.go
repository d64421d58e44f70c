package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCLIArgumentErrors: a bad PID, --sort or ps --limit is refused by the CLI itself,
// naming the CLI argument and what it accepts (the aliases included),
// never a tool's schema path, and before any host is reached.
func TestCLIArgumentErrors(t *testing.T) {
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		t.Setenv(k, t.TempDir())
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"lsof", "99999999"}, []string{"PID 99999999 is out of range", "1..4194304"}},
		{[]string{"lsof", "4194305"}, []string{"PID 4194305 is out of range"}},
		{[]string{"lsof", "184467440737095516160"}, []string{"is out of range"}},
		{[]string{"lsof", "0"}, []string{`PID "0" is not a positive integer`}},
		{[]string{"lsof", "abc"}, []string{`PID "abc" is not a positive integer`}},
		{[]string{"threads", "99999999"}, []string{"PID 99999999 is out of range"}},
		{[]string{"ps", "--limit", "0"}, []string{"--limit 0 is out of range", "1..5000"}},
		{[]string{"ps", "--limit", "5001"}, []string{"--limit 5001 is out of range"}},
		{[]string{"ps", "--sort", "bogus"}, []string{`--sort "bogus" is not a sort key`, "pid, name", "rss_bytes", "cpu, ", "rss, ", "vsz", "majflt"}},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		msg := errb.String()
		if code == 0 || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q", c.args, code, out.String())
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: stderr %q lacks %q", c.args, msg, w)
			}
		}
		if strings.Contains(msg, "/filter") || strings.Contains(msg, "/sort") || strings.Contains(msg, "constraint") {
			t.Errorf("%v: stderr names a schema path: %q", c.args, msg)
		}
	}
	// valid keys still pass parsing: aliases resolve to metric ids
	for in, want := range map[string]string{"pid": "pid", "name": "name", "rss": "rss_bytes", "CPU": "cpu_percent", "fd_count": "fd_count"} {
		if got, err := psSortKey(in); err != nil || got != want {
			t.Errorf("psSortKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if pid, err := parsePID("4194304"); err != nil || pid != 4194304 {
		t.Errorf("parsePID(4194304) = %d, %v", pid, err)
	}
}
