package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPsColumnsMatchPs runs `inquest ps -o pid,user,time,comm,args` and
// `ps -o pid,user,time,comm,args -p PID` on the same process (a sleep this
// test starts with arguments) in the same run: the row has the same PID,
// USER, TIME ([DD-]HH:MM:SS), COMMAND (comm) and command line.
func TestPsColumnsMatchPs(t *testing.T) {
	psBin, err := exec.LookPath("ps")
	if err != nil {
		t.Skip("ps is not installed")
	}
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	// GNU sleep sums its operands: two arguments for the command line.
	child := exec.Command(sleepBin, "300", "300")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pid := strconv.Itoa(child.Process.Pid)
	waitUntil(t, "the child runs sleep", func() bool {
		b, err := os.ReadFile("/proc/" + pid + "/comm")
		return err == nil && strings.TrimSpace(string(b)) == filepath.Base(sleepBin)
	})
	find := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == pid {
				return strings.Join(f, " ")
			}
		}
		return ""
	}
	var got string
	waitUntil(t, "inquest ps lists the child", func() bool {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), []string{"ps", "-o", "pid,user,time,comm,args", "--name", filepath.Base(sleepBin)}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("inquest ps: exit %d: %s", code, errb.String())
		}
		got = find(out.String())
		return got != ""
	})
	ref, err := exec.Command(psBin, "-o", "pid,user,time,comm,args", "-p", pid).Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	want := find(string(ref))
	if want == "" || got != want {
		t.Errorf("inquest ps -o: %q\nps -o:         %q", got, want)
	}
}

// TestPsColumnsGolden renders fixed list_processes rows with -o columns
// (testdata/ps_columns.golden: human units; ps_columns_bytes.golden:
// --bytes).
func TestPsColumnsGolden(t *testing.T) {
	cols, err := parsePSColumns([]string{"pid,user,time,%cpu,rss,vsz,nlwp,stat,comm=CMD,args"})
	if err != nil {
		t.Fatal(err)
	}
	rows := []map[string]any{
		{"pid": 1.0, "user": "root", "comm": "systemd", "state": "sleeping", "command_line": map[string]any{"value": []any{"/sbin/init", "splash"}},
			"values": map[string]any{"cpu_time_ns": "65432000000", "cpu_percent": 0.3, "rss_bytes": "13303808", "virtual_bytes": "171966464", "threads": 1.0}},
		{"pid": 2.0, "user": "root", "comm": "kthreadd", "state": "sleeping", "command_line": map[string]any{"value": []any{}},
			"values": map[string]any{"cpu_time_ns": "0", "cpu_percent": 0.0, "rss_bytes": "0", "virtual_bytes": "0", "threads": 1.0}},
		{"pid": 4242.0, "user": "alice", "comm": "python3.11", "state": "running", "command_line": map[string]any{"value": []any{"python3", "-m", "http.server"}},
			"values": map[string]any{"cpu_time_ns": "93784000000000", "cpu_percent": 41.1, "rss_bytes": "299790336", "virtual_bytes": "1207959552", "threads": 8.0}},
		{"pid": 4243.0, "user": nil, "comm": "secret", "state": "sleeping", "unavailable": map[string]any{"command_line": "access denied"},
			"values": map[string]any{"cpu_time_ns": nil, "cpu_percent": nil, "rss_bytes": nil, "virtual_bytes": nil, "threads": nil}},
	}
	for _, c := range []struct {
		name  string
		exact bool
	}{{"ps_columns.golden", false}, {"ps_columns_bytes.golden", true}} {
		var b strings.Builder
		renderPSColumns(&b, cols, rows, c.exact)
		golden(t, c.name, b.String())
	}
	if _, err := parsePSColumns([]string{"pid,nosuch"}); err == nil || !strings.Contains(err.Error(), `-o "nosuch": unknown column`) {
		t.Errorf("unknown keyword: %v", err)
	}
}
