// Package capture runs one workload under measurement for the perf capture
// tools: a request-owned process tree (own process group, descendants found
// through PR_SET_CHILD_SUBREAPER, /proc parentage and an ownership marker in
// the environment), a workload budget (timeout; memory through RLIMIT_AS set
// before the first instruction), resource usage from wait4's rusage, and
// bounded retained console output.
//
// Linux only: the facts come from wait4(2), prctl(2), prlimit(2), ptrace(2)
// and /proc/PID/{stat,environ}.
//go:build linux

package capture

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// MarkerEnv is the environment variable carrying a run's ownership token.
// Every descendant that keeps its environment carries it, so the runner
// finds processes that left the process group (setsid) or were reparented.
const MarkerEnv = "INQUEST_CAPTURE_OWNER"

// Spec is one workload execution.
type Spec struct {
	// Argv is the program and its arguments; Argv[0] is resolved on PATH
	// (of Env when it sets PATH, else of this process).
	Argv []string
	// Dir is the working directory (absolute).
	Dir string
	// Env is the complete environment (KEY=VALUE); the marker is appended.
	Env []string
	// Timeout bounds the wall time of the whole tree (0: none).
	Timeout time.Duration
	// MaxMemoryBytes is the address-space budget of every process of the
	// tree (RLIMIT_AS, inherited across fork and exec); 0: none.
	MaxMemoryBytes int64
	// StdoutPath and StderrPath receive the retained console output (the
	// first MaxOutputBytes of each stream; the rest is counted, not kept).
	StdoutPath, StderrPath string
	MaxOutputBytes         int64
	// Collector marks Argv as a collector (perf record, py-spy record)
	// that runs the workload as its descendant and writes what it
	// recorded when the workload ends. When Timeout expires the runner
	// SIGKILLs every other member of the tree (the workload), sends the
	// collector SIGINT, and kills it only if it has not exited within
	// CollectorGrace; the Execution is then TermTimeout with the
	// collector's own exit status. Cancellation kills the whole tree at
	// once.
	Collector bool
	// Started, when set, is called once the workload runs, before the
	// runner waits for it, with its pid and start time (clock ticks since
	// boot, /proc/PID/stat field 22; 0 when the stat could not be read).
	// The process is this runner's unreaped child until Started returns,
	// so the pid names this lifetime only. Started must return at once (it
	// runs inside the measured wall time when the workload ends first):
	// slow work belongs in a goroutine.
	Started func(pid int, startTicks uint64)
}

// CollectorGrace bounds how long a Collector may take to write its output
// after a timeout stopped its workload.
const CollectorGrace = 15 * time.Second

// Termination values of Execution.Termination.
const (
	// TermExited: the workload exited by itself (ExitCode is set).
	TermExited = "exited"
	// TermSignaled: a signal not sent by the runner ended it (Signal set).
	TermSignaled = "signaled"
	// TermTimeout: the budget's timeout expired; the runner killed the tree.
	TermTimeout = "timeout"
	// TermCancelled: the request was cancelled; the runner killed the tree.
	TermCancelled = "cancelled"
)

// Execution is the measured outcome of one Spec.
type Execution struct {
	// Executable is the resolved absolute path of Argv[0].
	Executable string `json:"executable"`
	// PID is the process the runner started (Argv[0]: the workload, or
	// the collector of a Spec.Collector run).
	PID int `json:"pid"`
	// StartTicks is that process's start time, clock ticks since boot
	// (/proc/PID/stat field 22, read while it was an unreaped child), 0
	// when the stat could not be read; with PID it is the lifetime the
	// proc toolset names (sample.Identity).
	StartTicks uint64 `json:"start_ticks"`
	// StartedAt is the wall-clock start (RFC 3339 in JSON).
	StartedAt time.Time `json:"started_at"`
	// WallTimeNS is monotonic nanoseconds from just before fork to the
	// workload's exit being reaped (wait4).
	WallTimeNS int64 `json:"wall_time_ns"`
	// UserCPUNS and SysCPUNS are ru_utime and ru_stime of the workload and
	// the descendants it waited for (wait4 rusage), in nanoseconds.
	UserCPUNS int64 `json:"user_cpu_ns"`
	SysCPUNS  int64 `json:"sys_cpu_ns"`
	// MaxRSSBytes is ru_maxrss (kernel KiB × 1024): the largest resident
	// set of the workload or of a waited-for descendant. Go starts children
	// with clone(CLONE_VM|CLONE_VFORK), and the kernel folds the launching
	// process's peak RSS (VmHWM) into the child's ru_maxrss at exec; so a
	// value not above LauncherPeakRSSBytes cannot be told apart from the
	// launcher's and MaxRSSKnown is false (the workload's peak is then at
	// most MaxRSSBytes).
	MaxRSSBytes int64 `json:"max_rss_bytes"`
	MaxRSSKnown bool  `json:"max_rss_known"`
	// LauncherPeakRSSBytes is this process's VmHWM (/proc/self/status),
	// reset through /proc/self/clear_refs just before the launch and read
	// just after it.
	LauncherPeakRSSBytes int64 `json:"launcher_peak_rss_bytes"`
	// LauncherReclaimableRSSBytes bounds the launcher's resident pages at
	// exec that VmHWM may not remember: the kernel updates the peak when
	// pages are unmapped, not when reclaim drops file-backed pages or
	// swaps anonymous ones out, so the RSS folded in at exec can exceed
	// the VmHWM read afterwards by up to this much. It is the larger
	// RssFile+RssShmem of /proc/self/status before and after the launch,
	// plus the growth of VmSwap across it, in bytes. A ru_maxrss not
	// above LauncherPeakRSSBytes+LauncherReclaimableRSSBytes is not known
	// to be the workload's.
	LauncherReclaimableRSSBytes int64 `json:"launcher_reclaimable_rss_bytes"`
	// Termination is one of TermExited, TermSignaled, TermTimeout,
	// TermCancelled.
	Termination string `json:"termination"`
	// ExitCode is the exit status when the process exited by itself
	// (Termination exited, or timeout of a Spec.Collector that finished
	// after its workload was stopped), else nil.
	ExitCode *int `json:"exit_code"`
	// Signal names the terminating signal (e.g. "SIGKILL") when the
	// workload was ended by one, else "".
	Signal string `json:"signal,omitempty"`
	// StdoutBytes and StderrBytes count everything the tree wrote;
	// *Truncated say whether more than MaxOutputBytes was written (the
	// retained file then holds only the first MaxOutputBytes).
	StdoutBytes     int64 `json:"stdout_bytes"`
	StderrBytes     int64 `json:"stderr_bytes"`
	StdoutTruncated bool  `json:"stdout_truncated"`
	StderrTruncated bool  `json:"stderr_truncated"`
	// MemoryEnforcement is how MaxMemoryBytes was applied:
	// "cgroup_memory_max" (the leaf's memory.max; MemoryLimitHit from
	// memory.events oom_kill), "rlimit_as"
	// (set while the workload was stopped at exec, before its first
	// instruction), "rlimit_as_after_start" (ptrace unavailable: set just
	// after exec), or "none" (no memory budget).
	MemoryEnforcement string `json:"memory_enforcement"`
	// MemoryLimitBytes is the enforced budget, 0 when none.
	MemoryLimitBytes int64 `json:"memory_limit_bytes,omitempty"`
	// MemoryLimitHit is true when the workload failed and its stderr
	// reports an allocation failure while a memory budget was set
	// (RLIMIT_AS makes allocations fail; the kernel does not report that
	// a limit was reached, so this is read from the workload's own
	// diagnostics: "out of memory", "cannot allocate memory",
	// "MemoryError", "bad_alloc", "xmalloc").
	MemoryLimitHit bool `json:"memory_limit_hit"`
	// Containment names how the tree was owned: "process_group+subreaper"
	// (PR_SET_CHILD_SUBREAPER succeeded) or "process_group", prefixed with
	// "cgroup_leaf+" when a cgroup v2 leaf held the tree (killed through
	// cgroup.kill).
	Containment string `json:"containment"`
	// Cgroup reports cgroup v2 detection (DetectCgroup): the leaf used
	// and why, or why none was used.
	Cgroup string `json:"cgroup"`
	// CgroupLeaf is the leaf directory that held the tree ("" when none);
	// it is removed after the run.
	CgroupLeaf string `json:"cgroup_leaf,omitempty"`
	// LeftoverKilled counts tree members (other than the workload itself)
	// still alive after the workload ended or was killed, that the runner
	// killed.
	LeftoverKilled int `json:"leftover_processes_killed"`
}

// ErrStart wraps a failure to start the workload (missing executable,
// permission denied, bad cwd).
var ErrStart = errors.New("workload could not be started")

// subreaper counts active runs; PR_SET_CHILD_SUBREAPER is on while any run
// is active so orphaned descendants reparent to this process instead of
// init, and is turned off again afterwards.
var subreaper struct {
	mu     sync.Mutex
	active int
	ok     bool
}

func acquireSubreaper() bool {
	subreaper.mu.Lock()
	defer subreaper.mu.Unlock()
	if subreaper.active == 0 {
		subreaper.ok = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil
	}
	subreaper.active++
	return subreaper.ok
}

func subreaperActive() bool {
	subreaper.mu.Lock()
	defer subreaper.mu.Unlock()
	return subreaper.active > 0 && subreaper.ok
}

func releaseSubreaper() {
	subreaper.mu.Lock()
	defer subreaper.mu.Unlock()
	subreaper.active--
	if subreaper.active == 0 && subreaper.ok {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
}

// Run executes spec and returns its measurement. A workload that cannot be
// started returns an error wrapping ErrStart. Timeout and cancellation are
// not errors: the tree is killed and Termination says which.
func Run(ctx context.Context, spec Spec) (*Execution, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("empty argv")
	}
	exe, err := LookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return nil, errors.Join(ErrStart, err)
	}
	var tok [12]byte
	_, _ = rand.Read(tok[:])
	marker := MarkerEnv + "=" + hex.EncodeToString(tok[:])

	outF, err := os.OpenFile(spec.StdoutPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer outF.Close()
	errF, err := os.OpenFile(spec.StderrPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer errF.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}

	newCmd := func(lf *leaf) *exec.Cmd {
		attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if lf != nil {
			attr.UseCgroupFD, attr.CgroupFD = true, lf.fd
		}
		return &exec.Cmd{
			Path: exe, Args: spec.Argv, Dir: spec.Dir,
			Env:    append(append([]string(nil), spec.Env...), marker),
			Stdout: outW, Stderr: errW, SysProcAttr: attr,
		}
	}
	ex := &Execution{Executable: exe, MemoryEnforcement: "none", Containment: "process_group"}
	if acquireSubreaper() {
		ex.Containment = "process_group+subreaper"
	}
	defer releaseSubreaper()
	// A cgroup v2 leaf where a writable delegation is detected.
	cg := DetectCgroup()
	ex.Cgroup = "not used: " + cg.Reason
	var lf *leaf
	if cg.Usable {
		if l, err := newLeaf(cg, hex.EncodeToString(tok[:]), spec.MaxMemoryBytes); err == nil {
			lf = l
			defer func() {
				if lf != nil {
					lf.remove()
				}
			}()
		} else {
			ex.Cgroup = "not used: the leaf could not be created (" + err.Error() + "); process group and RLIMIT_AS apply"
		}
	}
	cmd := newCmd(lf)

	// Lower this process's peak RSS to its current RSS so the floor folded
	// into the child's ru_maxrss is as small as it can be. launchMu keeps
	// another launch's reset out of the window from this reset to the
	// read after exec: that reset would lower the peak below what the
	// kernel folded into this child.
	launchMu.Lock()
	launchLocked := true
	unlockLaunch := func() {
		if launchLocked {
			launchLocked = false
			launchMu.Unlock()
		}
	}
	defer unlockLaunch()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	before := readSelfMem()
	ex.StartedAt = time.Now()
	t0 := time.Now()
	start := func() {
		switch {
		case spec.MaxMemoryBytes > 0 && lf != nil && lf.memory:
			ex.MemoryLimitBytes = spec.MaxMemoryBytes
			ex.MemoryEnforcement = "cgroup_memory_max"
			err = cmd.Start()
		case spec.MaxMemoryBytes > 0:
			ex.MemoryLimitBytes = spec.MaxMemoryBytes
			cmd, ex.MemoryEnforcement, err = startLimited(cmd, spec.MaxMemoryBytes)
		default:
			err = cmd.Start()
		}
	}
	start()
	if err != nil && lf != nil {
		// clone3 into the leaf refused (old kernel, seccomp): run without.
		lf.remove()
		lf = nil
		ex.Cgroup = "not used: starting the workload inside the leaf failed (" + err.Error() + "); process group and RLIMIT_AS apply"
		ex.MemoryEnforcement = "none"
		cmd = newCmd(nil)
		start()
	}
	if lf != nil {
		ex.Containment = "cgroup_leaf+" + ex.Containment
		ex.CgroupLeaf = lf.dir
		ex.Cgroup = "leaf " + lf.dir + ": " + cg.Reason
	}
	after := readSelfMem()
	unlockLaunch()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, errors.Join(ErrStart, err)
	}
	pid := cmd.Process.Pid
	ex.PID = pid
	ex.LauncherPeakRSSBytes = after.hwm
	ex.LauncherReclaimableRSSBytes = reclaimable(before, after)
	// The workload is an unreaped child (a zombie at worst): its pid
	// names this lifetime only.
	if id, _, err := sample.IdentityOf(int32(pid)); err == nil {
		ex.StartTicks = id.StartTicks
	}

	var wg sync.WaitGroup
	copyBounded := func(r *os.File, w *os.File, n *int64, trunc *bool) {
		defer wg.Done()
		defer r.Close()
		total, _ := io.Copy(io.Discard, io.TeeReader(r, &limitWriter{w: w, left: spec.MaxOutputBytes}))
		*n = total
		*trunc = total > spec.MaxOutputBytes
	}
	wg.Add(2)
	go copyBounded(outR, outF, &ex.StdoutBytes, &ex.StdoutTruncated)
	go copyBounded(errR, errF, &ex.StderrBytes, &ex.StderrTruncated)

	// The killer: on timeout or cancellation, kill the whole tree.
	var timeoutC <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	done := make(chan struct{})
	killerDone := make(chan struct{})
	killed := map[int]bool{}
	var reason string
	var reasonMu sync.Mutex
	go func() {
		defer close(killerDone)
		select {
		case <-done:
			return
		case <-timeoutC:
			reasonMu.Lock()
			reason = TermTimeout
			reasonMu.Unlock()
		case <-ctx.Done():
			reasonMu.Lock()
			reason = TermCancelled
			reasonMu.Unlock()
		}
		reasonMu.Lock()
		graceful := reason == TermTimeout && spec.Collector
		reasonMu.Unlock()
		if graceful {
			// Stop the workload (every member but the collector), then
			// let the collector finish writing, within CollectorGrace.
			if lf != nil {
				for _, p := range lf.procs() {
					if p != pid {
						killed[p] = true
						_ = unix.Kill(p, unix.SIGKILL)
					}
				}
			}
			killTree(pid, marker, true, true, killed)
			// Through the Process (a pidfd where the kernel has them),
			// never a pid the collector's exit may have freed.
			_ = cmd.Process.Signal(syscall.SIGINT)
			grace := time.NewTimer(CollectorGrace)
			defer grace.Stop()
			select {
			case <-done:
				return
			case <-grace.C:
			case <-ctx.Done():
				reasonMu.Lock()
				reason = TermCancelled
				reasonMu.Unlock()
			}
		}
		if lf != nil {
			for _, p := range lf.procs() {
				if p != pid {
					killed[p] = true
				}
			}
			lf.kill()
		}
		killTree(pid, marker, true, false, killed)
	}()
	if spec.Started != nil {
		spec.Started(pid, ex.StartTicks)
	}
	werr := cmd.Wait()
	ex.WallTimeNS = time.Since(t0).Nanoseconds()
	close(done)
	<-killerDone
	// Whatever the tree left behind (background children, setsid'd
	// daemons) belongs to this request and dies with it.
	ex.LeftoverKilled = killTree(pid, marker, false, false, killed)
	if lf != nil {
		// The leaf holds every process the tree started, also those that
		// left the process group and scrubbed the ownership marker.
		var extra []int
		for _, p := range lf.procs() {
			if p != pid && !killed[p] {
				killed[p] = true
				extra = append(extra, p)
			}
		}
		lf.kill()
		self := os.Getpid()
		for _, p := range extra {
			if ppid(p) == self {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(p, &ws, 0, nil)
			}
		}
		ex.LeftoverKilled = len(killed)
	}
	wg.Wait()

	st := cmd.ProcessState
	if st == nil {
		return nil, errors.Join(ErrStart, werr)
	}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		ex.UserCPUNS = ru.Utime.Nano()
		ex.SysCPUNS = ru.Stime.Nano()
		ex.MaxRSSBytes = ru.Maxrss * 1024
		ex.MaxRSSKnown = ex.LauncherPeakRSSBytes > 0 && ex.MaxRSSBytes > ex.LauncherPeakRSSBytes+ex.LauncherReclaimableRSSBytes
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case ws.Exited():
		c := ws.ExitStatus()
		ex.ExitCode = &c
		ex.Termination = TermExited
	case ws.Signaled():
		ex.Signal = unix.SignalName(ws.Signal())
		ex.Termination = TermSignaled
	}
	reasonMu.Lock()
	if reason != "" && (ex.Termination != TermExited || reason == TermTimeout && spec.Collector) {
		ex.Termination = reason
	}
	reasonMu.Unlock()
	if ex.MemoryLimitBytes > 0 && (ex.ExitCode == nil || *ex.ExitCode != 0) && ex.Termination != TermTimeout && ex.Termination != TermCancelled {
		ex.MemoryLimitHit = allocationFailure(spec.StderrPath) || ex.MemoryEnforcement == "cgroup_memory_max" && lf.oomKilled()
	}
	return ex, nil
}

// startLimited starts cmd stopped at exec (PTRACE_TRACEME), sets RLIMIT_AS
// with prlimit(2) and detaches, so the limit holds from the workload's
// first instruction. Where ptrace is refused it starts normally and sets
// the limit just after exec.
func startLimited(cmd *exec.Cmd, limit int64) (*exec.Cmd, string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rl := &unix.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	// A Cmd starts once: keep a copy for the fallback.
	attr := *cmd.SysProcAttr
	plain := &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Dir: cmd.Dir, Env: cmd.Env, Stdout: cmd.Stdout, Stderr: cmd.Stderr, SysProcAttr: &attr}
	cmd.SysProcAttr.Ptrace = true
	err := cmd.Start()
	if err == nil {
		pid := cmd.Process.Pid
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err == nil && ws.Stopped() {
			perr := unix.Prlimit(pid, unix.RLIMIT_AS, rl, nil)
			_ = unix.PtraceDetach(pid)
			if perr != nil {
				_ = unix.Kill(pid, unix.SIGKILL)
				_ = cmd.Wait()
				return nil, "none", perr
			}
			return cmd, "rlimit_as", nil
		}
		_ = unix.Kill(pid, unix.SIGKILL)
		_ = cmd.Wait()
		return nil, "none", errors.New("workload did not stop at exec")
	}
	if !errors.Is(err, unix.EPERM) {
		return nil, "none", err
	}
	// ptrace refused (seccomp, Yama): set the limit just after exec.
	if err := plain.Start(); err != nil {
		return nil, "none", err
	}
	if err := unix.Prlimit(plain.Process.Pid, unix.RLIMIT_AS, rl, nil); err != nil {
		_ = plain.Process.Kill()
		_ = plain.Wait()
		return nil, "none", err
	}
	return plain, "rlimit_as_after_start", nil
}

// launchMu serializes the launches of this process from the peak reset
// to the read after exec (see Run).
var launchMu sync.Mutex

// selfMem is this process's memory counters from /proc/self/status, in
// bytes; a field that is absent or unreadable stays 0 (hwm 0 makes every
// ru_maxrss unknown).
type selfMem struct {
	hwm, rssFile, rssShmem, swap int64
}

// readSelfMem reads VmHWM, RssFile, RssShmem and VmSwap of
// /proc/self/status.
func readSelfMem() selfMem {
	var m selfMem
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "VmHWM":
			dst = &m.hwm
		case "RssFile":
			dst = &m.rssFile
		case "RssShmem":
			dst = &m.rssShmem
		case "VmSwap":
			dst = &m.swap
		default:
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				*dst = n * 1024
			}
		}
	}
	return m
}

// reclaimable is Execution.LauncherReclaimableRSSBytes from the counters
// read before and after a launch.
func reclaimable(before, after selfMem) int64 {
	return max(before.rssFile+before.rssShmem, after.rssFile+after.rssShmem) + max(after.swap-before.swap, 0)
}

// limitWriter keeps the first left bytes and accepts (drops) the rest.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left > 0 {
		n := int64(len(p))
		if n > l.left {
			n = l.left
		}
		if _, err := l.w.Write(p[:n]); err != nil {
			l.left = 0
		} else {
			l.left -= n
		}
	}
	return len(p), nil
}

// allocationFailure reports whether the retained stderr names an
// allocation failure.
func allocationFailure(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	s := strings.ToLower(string(b))
	for _, k := range []string{"out of memory", "cannot allocate memory", "memoryerror", "bad_alloc", "xmalloc", "cannot allocate"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// killTree SIGKILLs every live process of the run rooted at pid: the
// members of its process group, its /proc descendants, and any process
// whose environment carries marker (setsid'd or reparented descendants).
// walkRoot adds pid's /proc descendants (only safe before pid is reaped);
// keepRoot spares pid itself (and sends no process-group kill), so a
// collector outlives its workload. It repeats until a scan finds none alive (a forking tree cannot outrun
// it for long: every round kills what it sees), reaps the ones that became
// this process's children (subreaper), and returns how many it killed
// other than pid itself (killed accumulates across calls).
func killTree(pid int, marker string, walkRoot, keepRoot bool, killed map[int]bool) int {
	self := os.Getpid()
	for round := 0; round < 200; round++ {
		procs := scanProcs()
		members := map[int]bool{}
		// descendants of pid by parentage
		children := map[int][]int{}
		for p, pi := range procs {
			children[pi.ppid] = append(children[pi.ppid], p)
		}
		var walk func(int)
		walk = func(p int) {
			for _, c := range children[p] {
				if !members[c] {
					members[c] = true
					walk(c)
				}
			}
		}
		if walkRoot {
			// Only while pid is unreaped: a reaped pid may be reused.
			walk(pid)
		}
		// With a subreaper, a descendant outside the group whose parent
		// died is this process's child, so only our children need the
		// environment check; without one, every process does.
		sub := subreaperActive()
		for p, pi := range procs {
			if pi.pgid == pid || ((!sub || pi.ppid == self) && hasMarker(p, marker)) {
				members[p] = true
				walk(p)
			}
		}
		if !keepRoot {
			_ = unix.Kill(-pid, unix.SIGKILL)
		}
		alive := 0
		for p := range members {
			if p == self || keepRoot && p == pid {
				continue
			}
			pi, ok := procs[p]
			if !ok || pi.state == 'Z' {
				continue
			}
			alive++
			_ = unix.Kill(p, unix.SIGKILL)
			if p != pid {
				killed[p] = true
			}
		}
		// Reap our own (subreaper) children among them; the workload
		// itself is reaped by its exec.Cmd.
		for p := range members {
			if p == pid {
				continue
			}
			if pi, ok := procs[p]; ok && pi.ppid == self {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(p, &ws, unix.WNOHANG, nil)
			}
		}
		if alive == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Final reap of killed orphans that were still dying above.
	for p := range killed {
		if ppid(p) == self {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(p, &ws, 0, nil)
		}
	}
	return len(killed)
}

type procInfo struct {
	ppid, pgid int
	state      byte
}

// scanProcs reads state, ppid and pgrp of every process from
// /proc/PID/stat.
func scanProcs() map[int]procInfo {
	out := map[int]procInfo{}
	d, err := os.Open("/proc")
	if err != nil {
		return out
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		p, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if pi, ok := readStat(p); ok {
			out[p] = pi
		}
	}
	return out
}

func readStat(p int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 3 {
		return procInfo{}, false
	}
	pp, _ := strconv.Atoi(f[1])
	pg, _ := strconv.Atoi(f[2])
	return procInfo{state: f[0][0], ppid: pp, pgid: pg}, true
}

func ppid(p int) int {
	pi, ok := readStat(p)
	if !ok {
		return -1
	}
	return pi.ppid
}

func hasMarker(p int, marker string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/environ")
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if kv == marker {
			return true
		}
	}
	return false
}

// CgroupStatus reports, from DetectCgroup, whether runs get a cgroup v2
// leaf ("leaf per run: ...", with whether memory.max or RLIMIT_AS bounds
// memory) or why not ("not used: cgroup v1 only ...").
func CgroupStatus() string {
	c := DetectCgroup()
	if c.Usable {
		return "leaf per run: " + c.Reason
	}
	return "not used: " + c.Reason
}

// LookPath resolves argv0 like exec.LookPath but against the PATH of env
// when env sets it.
func LookPath(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		return exec.LookPath(argv0)
	}
	path := os.Getenv("PATH")
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			path = kv[5:]
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + argv0
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: argv0, Err: exec.ErrNotFound}
}
