//go:build linux

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// threadHolder starts python3 with three named threads (prctl
// PR_SET_NAME), one of which first burns over a second of CPU, and
// returns its pid once every thread is idle.
func threadHolder(t *testing.T) int {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	ready := filepath.Join(t.TempDir(), "ready")
	script := `import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None)
def run(name, burn, done):
    libc.prctl(15, name.encode(), 0, 0, 0)
    if burn:
        t0 = time.process_time()
        while time.thread_time() < 1.3: pass
    done.set()
    time.sleep(600)
evs = []
for i, n in enumerate(["inq-worker-0", "inq-worker-1", "inq-burner"]):
    e = threading.Event(); evs.append(e)
    threading.Thread(target=run, args=(n, n == "inq-burner", e), daemon=True).start()
for e in evs: e.wait()
open(sys.argv[1], "w").close()
time.sleep(600)
`
	child := exec.Command(py, "-c", script, ready)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	waitUntil(t, "the threads are named and idle", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	return child.Process.Pid
}

// TestThreadsMatchPs runs `inquest threads PID` and `ps -L -o
// tid,comm,state,priority,ni,psr,time -p PID` on the same idle process in
// the same run: every thread has the same TID, COMMAND, S, PRI, NI, PSR
// and TIME as ps prints them (one thread burned over a second of CPU, so
// TIME is not all zeros), and no thread is missing on either side.
func TestThreadsMatchPs(t *testing.T) {
	psBin, err := exec.LookPath("ps")
	if err != nil {
		t.Skip("ps is not installed")
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	pid := strconv.Itoa(threadHolder(t))
	out, errOut, code := runCaptureCLI("threads", pid)
	if code != 0 {
		t.Fatalf("inquest threads: exit %d\n%s%s", code, out, errOut)
	}
	ref, err := exec.Command(psBin, "-L", "-o", "tid=,comm=,state=,priority=,ni=,psr=,time=", "-p", pid).Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	t.Logf("inquest threads:\n%s\nps -L:\n%s", out, ref)
	// ours: TID COMMAND S PRI NI PSR TIME USR SYS VCSW NVCSW (COMMAND has
	// no spaces here)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if h := strings.Fields(lines[0]); strings.Join(h, " ") != "TID COMMAND S PRI NI PSR TIME USR SYS VCSW NVCSW" {
		t.Fatalf("header %q", lines[0])
	}
	ours := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 11 {
			t.Fatalf("row %q", l)
		}
		ours[f[0]] = strings.Join(f[:7], " ")
	}
	theirs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(ref)), "\n") {
		f := strings.Fields(l)
		if len(f) != 7 {
			t.Fatalf("ps row %q", l)
		}
		theirs[f[0]] = strings.Join(f, " ")
	}
	if len(theirs) != 4 {
		t.Fatalf("ps lists %d threads, want 4:\n%s", len(theirs), ref)
	}
	for tid, want := range theirs {
		got := ours[tid]
		if tid == pid {
			// ps -L prints the whole process's CPU time on the leader's
			// row; inquest prints the leader thread's own
			// (/proc/PID/task/PID/stat), compared with that file below.
			got, want = got[:strings.LastIndexByte(got, ' ')], want[:strings.LastIndexByte(want, ' ')]
		}
		if got != want {
			t.Errorf("thread %s: inquest %q, ps %q", tid, got, want)
		}
	}
	b, err := os.ReadFile("/proc/" + pid + "/task/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	st := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(st[11], 64) // fields 14 and 15: utime, stime in ticks
	stt, _ := strconv.ParseFloat(st[12], 64)
	if want := threadTime(ut/100, stt/100); !strings.HasSuffix(ours[pid], " "+want) {
		t.Errorf("leader thread: inquest %q, its task stat says %s", ours[pid], want)
	}
	for tid := range ours {
		if _, ok := theirs[tid]; !ok {
			t.Errorf("inquest lists thread %s, ps does not", tid)
		}
	}
	if !strings.Contains(string(ref), "inq-burner") || strings.Count(string(ref), " 00:00:00") == 4 {
		t.Errorf("the burner thread is not in ps's list with CPU time:\n%s", ref)
	}
}
