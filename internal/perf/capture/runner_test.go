//go:build linux

package capture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

func spec(t *testing.T, argv ...string) Spec {
	dir := t.TempDir()
	return Spec{Argv: argv, Dir: dir, Env: os.Environ(), StdoutPath: filepath.Join(dir, "stdout"), StderrPath: filepath.Join(dir, "stderr"), MaxOutputBytes: 1 << 20}
}

func TestRunExitAndUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
		code int
		sig  string
	}{
		{"true", []string{"true"}, 0, ""},
		{"exit3", []string{"sh", "-c", "exit 3"}, 3, ""},
		{"killed", []string{"sh", "-c", "kill -TERM $$"}, -1, "SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := Run(context.Background(), spec(t, tc.argv...))
			if err != nil {
				t.Fatal(err)
			}
			if tc.sig != "" {
				if ex.Termination != TermSignaled || ex.Signal != tc.sig || ex.ExitCode != nil {
					t.Fatalf("got %+v", ex)
				}
			} else if ex.Termination != TermExited || ex.ExitCode == nil || *ex.ExitCode != tc.code {
				t.Fatalf("got %+v", ex)
			}
			if ex.WallTimeNS <= 0 || ex.MaxRSSBytes <= 0 || !filepath.IsAbs(ex.Executable) {
				t.Fatalf("usage missing: %+v", ex)
			}
		})
	}
}

func TestRunStartFailure(t *testing.T) {
	if _, err := Run(context.Background(), spec(t, "/nonexistent/prog")); err == nil {
		t.Fatal("want error")
	}
}

func TestRunBoundedOutput(t *testing.T) {
	s := spec(t, "sh", "-c", "i=0; while [ $i -lt 200 ]; do echo 0123456789; i=$((i+1)); done; echo err >&2")
	s.MaxOutputBytes = 100
	ex, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(s.StdoutPath)
	if len(b) != 100 || ex.StdoutBytes != 2200 || !ex.StdoutTruncated || ex.StderrTruncated || ex.StderrBytes != 4 {
		t.Fatalf("kept %d, %+v", len(b), ex)
	}
}

// TestRunCPUTime: a CPU loop's user time is accounted from rusage.
func TestRunCPUTime(t *testing.T) {
	ex, err := Run(context.Background(), spec(t, "sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"))
	if err != nil {
		t.Fatal(err)
	}
	if ex.UserCPUNS+ex.SysCPUNS <= 0 {
		t.Fatalf("no CPU time: %+v", ex)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func readPids(t *testing.T, dir string, names ...string) []int {
	var out []int
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		p, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// treeScript starts a background grandchild, a setsid'd grandchild (new
// session and process group) with its own child, writes their pids, then
// signals readiness by writing "ready" and blocks.
const treeScript = `sleep 1000 & echo $! > bg
setsid sh -c 'echo $$ > sid; sleep 1000 & echo $! > sidchild; wait' &
while [ ! -s sidchild ]; do sleep 0.01; done
echo ready > ready
`

func TestTimeoutKillsWholeTree(t *testing.T) {
	s := spec(t, "sh", "-c", treeScript+"sleep 1000")
	// The timeout only has to exceed the script's start-up; no assertion
	// depends on it beyond "the tree was killed".
	s.Timeout = 3 * time.Second
	ex, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "ready")); err != nil {
		t.Skip("the tree did not start within the timeout on this loaded machine")
	}
	if ex.Termination != TermTimeout || ex.Signal != "SIGKILL" {
		t.Fatalf("got %+v", ex)
	}
	for _, p := range readPids(t, s.Dir, "bg", "sid", "sidchild") {
		if alive(p) {
			t.Errorf("pid %d survived", p)
		}
	}
	if ex.LeftoverKilled < 3 {
		t.Errorf("leftover_processes_killed = %d, want >= 3", ex.LeftoverKilled)
	}
}

func TestCancelKillsWholeTree(t *testing.T) {
	s := spec(t, "sh", "-c", treeScript+"sleep 1000")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(s.Dir, "ready")); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	ex, err := Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Termination != TermCancelled {
		t.Fatalf("got %+v", ex)
	}
	for _, p := range readPids(t, s.Dir, "bg", "sid", "sidchild") {
		if alive(p) {
			t.Errorf("pid %d survived", p)
		}
	}
}

// TestExitLeavesNoDescendants: a workload that exits normally leaving
// background and setsid'd children behind has them killed too.
func TestExitLeavesNoDescendants(t *testing.T) {
	s := spec(t, "sh", "-c", treeScript+"exit 0")
	ex, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if ex.ExitCode == nil || *ex.ExitCode != 0 {
		t.Fatalf("got %+v", ex)
	}
	for _, p := range readPids(t, s.Dir, "bg", "sid", "sidchild") {
		if alive(p) {
			t.Errorf("pid %d survived", p)
		}
	}
}

func TestMemoryBudget(t *testing.T) {
	// bash doubles a string until allocation fails under RLIMIT_AS.
	s := spec(t, "bash", "-c", `x=aaaaaaaaaaaaaaaa; while :; do x=$x$x; done`)
	s.MaxMemoryBytes = 64 << 20
	ex, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if ex.MemoryEnforcement != "rlimit_as" && ex.MemoryEnforcement != "rlimit_as_after_start" {
		t.Fatalf("enforcement %q", ex.MemoryEnforcement)
	}
	if ex.Termination == TermExited && *ex.ExitCode == 0 {
		t.Fatalf("runaway allocator succeeded: %+v", ex)
	}
	if !ex.MemoryLimitHit {
		b, _ := os.ReadFile(s.StderrPath)
		t.Fatalf("memory_limit_hit false: %+v stderr %q", ex, b)
	}
	if ex.MaxRSSBytes > 64<<20 {
		t.Fatalf("max rss %d above the budget", ex.MaxRSSBytes)
	}
}

// TestMaxRSS: a workload touching 128 MiB reports a known peak above it;
// a tiny one cannot be told apart from the launcher's own peak.
func TestMaxRSS(t *testing.T) {
	s := spec(t, "bash", "-c", `x=$(head -c 134217728 /dev/zero | tr '\0' a); echo ${#x}`)
	ex, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !ex.MaxRSSKnown || ex.MaxRSSBytes < 128<<20 {
		t.Fatalf("max rss %d known %v launcher %d", ex.MaxRSSBytes, ex.MaxRSSKnown, ex.LauncherPeakRSSBytes)
	}
	ex, err = Run(context.Background(), spec(t, "true"))
	if err != nil {
		t.Fatal(err)
	}
	if ex.MaxRSSKnown || ex.LauncherPeakRSSBytes <= 0 || ex.LauncherReclaimableRSSBytes <= 0 {
		t.Fatalf("true: %+v", ex)
	}
}

// TestMaxRSSConcurrentLaunches: launches from several goroutines at once
// never let one launch's peak reset lower another's reading, so a tiny
// workload's ru_maxrss (the launcher's peak folded in at exec) is never
// taken for the workload's own. Goroutines allocate between launches so
// the launcher's peak moves.
func TestMaxRSSConcurrentLaunches(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				buf := make([]byte, (8+4*i)<<20)
				for k := 0; k < len(buf); k += 4096 {
					buf[k] = 1
				}
				ex, err := Run(context.Background(), spec(t, "true"))
				if err != nil {
					errs <- err.Error()
					return
				}
				if ex.MaxRSSKnown {
					errs <- fmt.Sprintf("true: max_rss %d taken as known (launcher peak %d, reclaimable %d)", ex.MaxRSSBytes, ex.LauncherPeakRSSBytes, ex.LauncherReclaimableRSSBytes)
				}
				runtime.KeepAlive(buf)
				debug.FreeOSMemory()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestReclaimable(t *testing.T) {
	for _, tc := range []struct {
		before, after selfMem
		want          int64
	}{
		{selfMem{rssFile: 10, rssShmem: 1}, selfMem{rssFile: 4, rssShmem: 1}, 11},
		{selfMem{rssFile: 4}, selfMem{rssFile: 9, rssShmem: 2}, 11},
		{selfMem{rssFile: 4, swap: 100}, selfMem{rssFile: 4, swap: 130}, 34},
		{selfMem{rssFile: 4, swap: 100}, selfMem{rssFile: 4, swap: 70}, 4},
	} {
		if got := reclaimable(tc.before, tc.after); got != tc.want {
			t.Errorf("reclaimable(%+v, %+v) = %d, want %d", tc.before, tc.after, got, tc.want)
		}
	}
}

// TestRunCollectorTimeout: when the budget's timeout expires under a
// Collector, the workload (the collector's child) is killed but the
// collector itself is left to finish writing its output and exit; the
// execution is a timeout that keeps the collector's exit status.
func TestRunCollectorTimeout(t *testing.T) {
	s := spec(t, "sh", "-c", `trap 'echo interrupted >> log' INT
sleep 1000 &
echo $! > child
wait $!
echo "wrote after $?" >> log`)
	s.Timeout = time.Second
	s.Collector = true
	ex, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Termination != TermTimeout || ex.ExitCode == nil || *ex.ExitCode != 0 {
		t.Fatalf("got %+v", ex)
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, "log"))
	// wait returns 137 when the runner SIGKILLs the workload, or 130 when
	// the collector's SIGINT interrupts it first: either way the
	// collector went on to write.
	if err != nil || !strings.Contains(string(b), "wrote after ") {
		t.Fatalf("the collector did not finish: %q %v", b, err)
	}
	cb, _ := os.ReadFile(filepath.Join(s.Dir, "child"))
	child, _ := strconv.Atoi(strings.TrimSpace(string(cb)))
	if child <= 0 {
		t.Fatalf("child pid %q", cb)
	}
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Fatalf("the workload %d survived: %s", child, st)
	}

	// Without Collector the whole tree is killed at once.
	s = spec(t, "sh", "-c", `trap 'echo interrupted >> log' INT
sleep 1000 &
wait $!
echo wrote >> log`)
	s.Timeout = time.Second
	ex, err = Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Termination != TermTimeout || ex.Signal != "SIGKILL" || ex.ExitCode != nil {
		t.Fatalf("got %+v", ex)
	}
	if b, err := os.ReadFile(filepath.Join(s.Dir, "log")); err == nil {
		t.Fatalf("the killed tree wrote %q", b)
	}
}

// TestRunStartedNamesTheLifetime: Started is called once, while the
// workload runs (it blocks reading a FIFO the callback's goroutine
// writes), with the pid and start ticks the sampler would record for it
// (sample.IdentityOf) and the Execution carries the same; with and without
// a memory budget (the ptrace start path).
func TestRunStartedNamesTheLifetime(t *testing.T) {
	for _, limit := range []int64{0, 1 << 30} {
		t.Run(strconv.FormatInt(limit, 10), func(t *testing.T) {
			s := spec(t, "sh", "-c", `read x < "$0"`)
			fifo := filepath.Join(s.Dir, "release")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			s.Argv = append(s.Argv, fifo)
			s.MaxMemoryBytes = limit
			calls := 0
			var pid int
			var ticks uint64
			var id sample.Identity
			var running bool
			var idErr error
			s.Started = func(p int, st uint64) {
				calls++
				pid, ticks = p, st
				id, running, idErr = sample.IdentityOf(int32(p))
				go func() {
					if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
						f.WriteString("x\n")
						f.Close()
					}
				}()
			}
			ex, err := Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if calls != 1 || idErr != nil || !running {
				t.Fatalf("Started called %d times; the workload's identity then: %+v running=%v %v", calls, id, running, idErr)
			}
			if ex.PID != pid || pid != int(id.PID) || ex.StartTicks != ticks || ticks != id.StartTicks || ticks == 0 {
				t.Fatalf("execution pid %d ticks %d; Started %d %d; /proc then %+v", ex.PID, ex.StartTicks, pid, ticks, id)
			}
			if ex.Termination != TermExited || ex.ExitCode == nil || *ex.ExitCode != 0 {
				t.Fatalf("got %+v", ex)
			}
		})
	}
}
