//go:build linux

package sample

import (
	"errors"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// keptProc is the files the collector keeps open across ticks for one
// process: its /proc/PID directory, its stat, statm and schedstat files
// (and status and io, below)
// (-1 when that one could not be opened), re-read each tick with pread(2)
// at offset 0, which makes the kernel generate the file anew, and an
// O_PATH fd of its fd directory, whose fstat(2) size is the open fd
// count on Linux 6.2+ (computed at each call).
// Every fd refers to the process, not to the PID: once the process has
// exited each read fails (ESRCH), so a reused PID is never read through
// them.
//
// status and io (lazy[kpStatus], lazy[kpIO]) are opened the first time a
// tick reads them (a process that never runs is read once, at its first
// tick, and carried after: see readProcess) and kept from then on; 0
// until then (fd 0 is never a kept file: it is stdin or /dev/null).
type keptProc struct {
	dir, stat, statm, sched, fdDir int
	lazy                           [2]int
	tick                           uint64 // the last tick that listed the PID
}

// Indexes of keptProc.lazy.
const (
	kpStatus = iota
	kpIO
)

func (k *keptProc) close() {
	for _, fd := range [...]int{k.dir, k.stat, k.statm, k.sched, k.fdDir, k.lazy[0] - 1, k.lazy[1] - 1} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// keptFiles is the collector's table of kept processes. It is its own
// object so that a collector dropped without Close still closes its fds
// (runtime.AddCleanup in NewLinuxCollectorFS).
type keptFiles struct {
	mu   sync.Mutex // held by Collect and Close
	m    map[int32]*keptProc
	max  int // budget of kept processes, all collectors together (keptProcs); 0 keeps none
	tick uint64
	sys  sysFiles // the system-wide files, kept open on a procfs mount
}

// keptProcs counts the processes kept by every collector of this process:
// the budget (keptBudget) is one for the whole process, so several
// collectors (hosts in tests, a command's in-process host) never hold
// more than it together.
var keptProcs atomic.Int64

// keptFDsPerProcess is how many fds a kept process holds.
const keptFDsPerProcess = 7

// keptBudget is how many processes may keep files open under the
// RLIMIT_NOFILE soft limit cur: at most half of it in fds (the rest stays
// for captures, connections and stores), at most 1<<16 processes.
func keptBudget(cur uint64) int {
	n := cur / 2 / keptFDsPerProcess
	return int(min(n, 1<<16))
}

// closeAll closes every kept fd (the collector keeps working: later ticks
// open them again).
func (k *keptFiles) closeAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sys.close()
	for pid, p := range k.m {
		p.close()
		delete(k.m, pid)
		keptProcs.Add(-1)
	}
}

// drop closes and forgets pid's kept files.
func (k *keptFiles) drop(pid int32) {
	if p := k.m[pid]; p != nil {
		p.close()
		delete(k.m, pid)
		keptProcs.Add(-1)
	}
}

// sweep closes the files of every process the current tick did not list.
func (k *keptFiles) sweep() {
	for pid, p := range k.m {
		if p.tick != k.tick {
			p.close()
			delete(k.m, pid)
			keptProcs.Add(-1)
		}
	}
}

// keep opens and records stat, statm and schedstat of the open process
// directory dir for pid, which then belongs to the table (the caller must
// not close it). ok is false (and nothing is kept, dir left to the
// caller) when the table is full or stat cannot be opened; an EMFILE or
// ENFILE shrinks this collector's budget to what is kept now (by all
// collectors), so it goes on
// with per-tick opens instead of failing.
func (k *keptFiles) keep(pid int32, dir int, fdCount bool) (*keptProc, bool) {
	if keptProcs.Load() >= int64(k.max) {
		return nil, false
	}
	full := false
	open := func(name []byte, flags int) int {
		fd, err := openatZ(dir, &name[0], flags|unix.O_CLOEXEC)
		if err != nil {
			full = full || errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE)
			return -1
		}
		return fd
	}
	p := &keptProc{dir: -1, stat: open(zStat, unix.O_RDONLY), statm: open(zStatm, unix.O_RDONLY), sched: open(zSchedstat, unix.O_RDONLY), fdDir: -1, tick: k.tick}
	if fdCount {
		p.fdDir = open(zFD, unix.O_PATH|unix.O_DIRECTORY)
	}
	if full || p.stat < 0 {
		if full {
			k.max = int(keptProcs.Load())
		}
		p.close() // not dir: it stays the caller's
		return nil, false
	}
	p.dir = dir
	k.m[pid] = p
	keptProcs.Add(1)
	return p, true
}

// readLazy reads the per-process file name of the open process
// directory dir through kp's kept fd lazy[i], opening and keeping it at
// the first read; without kp (not kept), by an open per read.
func (c *LinuxCollector) readLazy(kp *keptProc, i int, dir int, name []byte) ([]byte, error) {
	if kp == nil || kp.dir != dir {
		return c.readFileZ(dir, name)
	}
	if kp.lazy[i] == 0 {
		fd, err := openatZ(dir, &name[0], unix.O_RDONLY|unix.O_CLOEXEC)
		if err != nil {
			return nil, err
		}
		kp.lazy[i] = fd + 1
	}
	return c.preadFull(kp.lazy[i]-1, true)
}

// readKept reads a per-process file: through its kept fd when there is one
// (fd >= 0), else by opening name in the process directory dir.
func (c *LinuxCollector) readKept(fd, dir int, name []byte) ([]byte, error) {
	if fd >= 0 {
		return c.preadFull(fd, true)
	}
	return c.readFileZ(dir, name)
}
