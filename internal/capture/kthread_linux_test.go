//go:build linux

package capture

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// kernelThreads lists up to n live kernel threads: pid 2 (kthreadd) first,
// then its children, each with PF_KTHREAD in /proc/PID/stat field 9 (the
// flag is read here from the file itself, not through the package).
func kernelThreads(t *testing.T, n int) []int32 {
	t.Helper()
	flags := func(pid int32) (uint64, bool) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
		if err != nil {
			return 0, false
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		v, err := strconv.ParseUint(f[6], 10, 64)
		return v, err == nil
	}
	var out []int32
	ents, _ := os.ReadDir("/proc")
	for _, pid := range append([]int32{2}, func() []int32 {
		var ps []int32
		for _, e := range ents {
			if p, err := strconv.Atoi(e.Name()); err == nil && p > 2 {
				ps = append(ps, int32(p))
			}
		}
		return ps
	}()...) {
		if f, ok := flags(pid); ok && f&0x00200000 != 0 {
			out = append(out, pid)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// get_process_info of a live kernel thread (kthreadd, pid 2, and a few of
// its children): exe and image are {unavailable: kernel_thread}, never
// process_exited, and the result is complete, as ps(1) shows no executable
// (`ps -o exe` prints "-") and readlink /proc/PID/exe fails with ENOENT in
// the same run while the thread runs. cwd is read as for any process.
func TestProcessInfoKernelThread(t *testing.T) {
	pids := kernelThreads(t, 4)
	if len(pids) == 0 || pids[0] != 2 {
		t.Skip("no kernel threads visible (not the initial PID namespace)")
	}
	for _, pid := range pids {
		id, _, err := sample.IdentityOf(pid)
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		// The reference, in the same run.
		var buf [256]byte
		_, lerr := unix.Readlink("/proc/"+strconv.Itoa(int(pid))+"/exe", buf[:])
		if !errors.Is(lerr, unix.ENOENT) {
			t.Fatalf("pid %d: readlink exe: %v, want ENOENT for a kernel thread", pid, lerr)
		}
		ps, err := exec.Command("ps", "-o", "exe=,comm=", "-p", strconv.Itoa(int(pid))).Output()
		if err != nil {
			t.Fatalf("ps: %v", err)
		}
		psFields := strings.Fields(string(ps))
		if len(psFields) < 2 || psFields[0] != "-" {
			t.Fatalf("pid %d: ps -o exe,comm: %q", pid, ps)
		}
		c, err := ProcessInfo(context.Background(), id, append(append([]string{}, DefaultInfoFields...), "command_line"))
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		if c.Partial || c.Coverage["fields_unavailable"] != nil || len(c.Warnings) != 0 {
			t.Errorf("pid %d: partial %v, coverage %v, warnings %q", pid, c.Partial, c.Coverage, c.Warnings)
		}
		got := map[string]any{}
		for _, f := range c.Rows[0].Fields {
			got[f.Key] = f.Value
		}
		// A kworker renames itself as it takes other work: the comm
		// read between two ps runs equals one of them.
		after, _ := exec.Command("ps", "-o", "comm=", "-p", strconv.Itoa(int(pid))).Output()
		if got["comm"] != strings.Join(psFields[1:], " ") && got["comm"] != strings.TrimSpace(string(after)) {
			t.Errorf("pid %d: comm %v, ps before %q, after %q", pid, got["comm"], psFields[1:], strings.TrimSpace(string(after)))
		}
		for _, k := range []string{"exe", "image"} {
			m, _ := got[k].(map[string]any)
			if m["unavailable"] != "kernel_thread" {
				t.Errorf("pid %d: %s = %v, want {unavailable: kernel_thread}", pid, k, got[k])
			}
		}
		if m, _ := got["cwd"].(map[string]any); m["value"] == nil {
			t.Errorf("pid %d: cwd = %v", pid, got["cwd"])
		}
		if m, _ := got["command_line"].(map[string]any); m["value"] == nil || len(m["value"].([]string)) != 0 {
			t.Errorf("pid %d: command_line = %v (a kernel thread's cmdline is empty)", pid, got["command_line"])
		}
	}
}
