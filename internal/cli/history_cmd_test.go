package cli

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// inquest history prints integral counts and values without decimals or
// exponents, exact means as decimals (not n/d), and the warning of a
// request reaching beyond retained coverage.
func TestHistoryOutputClean(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", t.TempDir()+"/inquest.toml")
	t.Setenv(inProcessEnv, "1")
	// --bytes: the exact values (the default prints human units)
	out, code := runInvCLI(t, "history", "--metric", "memory_available_bytes,process_count", "--from", "2020-01-01T00:00:00Z", "--bytes")
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
		// integers is a decimal with at most two places; DELTA (the last
		// column) a signed integer.
		for i, v := range f[1:] {
			if v == "-" {
				continue
			}
			re := `^[0-9]+(\.[0-9]{1,2})?$`
			if i == len(f)-2 {
				re = `^-?[0-9]+$`
			}
			if ok, _ := regexp.MatchString(re, v); !ok {
				t.Fatalf("column %d of %q is %q", i+1, line, v)
			}
		}
	}
}

// DELTA is LAST - FIRST, the first_to_last_change get_history reports:
// "0" when the first and last values are equal (a sleeping process's
// threads and descriptors), never "-" while FIRST and LAST are known.
func TestHistoryDeltaZero(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", t.TempDir()+"/inquest.toml")
	t.Setenv(inProcessEnv, "1")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	child := exec.Command(sleep, "600")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pid := strconv.Itoa(child.Process.Pid)
	out, code := runInvCLI(t, "history", "--metric", "threads,fd_count", "--pid", pid)
	if code != 0 {
		t.Fatalf("history: %d %s", code, out)
	}
	js, code := runInvCLI(t, "history", "--metric", "threads,fd_count", "--pid", pid, "--json")
	if code != 0 {
		t.Fatalf("history --json: %d %s", code, js)
	}
	var env struct {
		Data struct {
			Metrics map[string]struct {
				Change string `json:"first_to_last_change"`
			} `json:"metrics"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(js), &env); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 10 || (f[0] != "threads" && f[0] != "fd_count") {
			continue
		}
		rows++
		first, last, delta := f[7], f[8], f[9]
		a, err1 := strconv.ParseInt(first, 10, 64)
		b, err2 := strconv.ParseInt(last, 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("FIRST %q LAST %q in %q", first, last, line)
		}
		if want := strconv.FormatInt(b-a, 10); delta != want || delta != "0" {
			t.Fatalf("%s: DELTA %q, want %q (LAST - FIRST, a sleeping process does not change)\n%s", f[0], delta, want, out)
		}
		if mcp := env.Data.Metrics[f[0]].Change; mcp != delta {
			t.Fatalf("%s: DELTA %q, get_history first_to_last_change %q", f[0], delta, mcp)
		}
	}
	if rows != 2 {
		t.Fatalf("%d metric rows:\n%s", rows, out)
	}
}
