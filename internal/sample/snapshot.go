package sample

import (
	"sort"
	"time"
)

// Identity names one process lifetime: PID plus start time (clock ticks
// since boot, /proc/PID/stat field 22) within one boot (BootID). A reused
// PID has a different StartTicks and is a different identity.
type Identity struct {
	PID        int32
	StartTicks uint64
}

// Process is one process in one snapshot. Vals holds metric slots (see
// ProcessMetrics); bit i of Avail says slot i was measured. Missing is not
// zero: read a slot only when its bit is set.
type Process struct {
	PID        int32
	PPID       int32
	StartTicks uint64
	// StartTime is the wall-clock start (boot time + StartTicks/CLK_TCK).
	StartTime time.Time
	// Name is the process name by the one name rule (FullName): the
	// executable's base name, else argv[0]'s base name when it extends
	// Comm, else Comm. Exact bytes (see Display for JSON).
	Name string
	// Comm is the kernel command name (/proc/PID/stat field 2, cut at 15
	// bytes on Linux).
	Comm string
	// Exe is the executable path from /proc/PID/exe without the kernel's
	// " (deleted)" suffix when ExeDeleted, or "" when unreadable.
	Exe string
	// Argv0 is argv[0] from /proc/PID/cmdline, read once per lifetime and
	// exec ("" when empty or unreadable): the name rule (NameFacts) also
	// matches it.
	Argv0 string
	// ExeDeleted says the executable was unlinked (or replaced) after the
	// process started it (ResolveDeleted on the exe link).
	ExeDeleted bool
	// State is the one-letter kernel state (R, S, D, Z, T, t, X, I).
	// When LeaderExited it is the state of the live task the process was
	// read through, not the leader's Z.
	State byte
	// LeaderExited says the thread-group leader has exited (it is a
	// zombie, ps shows "Zl") while other threads of the process still run:
	// the process is live, and its memory, fd count and executable were
	// read through one of its live tasks (/proc/PID/task/TID).
	LeaderExited bool
	// Exiting says a single-threaded process is inside exit(): PF_EXITING
	// (0x4) in the task flags, /proc/PID/stat field 9, while the state
	// letter still reads R or D. Its memory may already be released (RSS
	// reads 0) before it becomes a zombie, so like a zombie's its values
	// are not observations of the live lifetime. Linux only.
	Exiting bool
	// UID is the real user id; UIDKnown says whether it was read.
	UID      uint32
	UIDKnown bool
	Vals     [NumProcessMetrics]uint64
	Avail    uint32
	// Facts are the lifetime's namespaces and container, read when the
	// collector first saw it and again after an exec (shared, never
	// modified); nil where the platform collector does not read them.
	Facts *Facts
	// ChildCPUNs is the CPU time (user + system, ns) of the children the
	// process has waited for (reaped), their own reaped descendants
	// included: cutime + cstime, /proc/PID/stat fields 16-17. It grows by
	// a child's whole CPU when the child is reaped. ChildCPUOK says it was
	// read (false where the platform does not expose it).
	ChildCPUNs uint64
	ChildCPUOK bool

	// sched is the thread-group leader's /proc/PID/schedstat (run time in
	// ns, timeslice count), when read: the Linux collector uses it to tell
	// whether the leader ran since the previous sample.
	sched    [2]uint64
	schedOK  bool
	statusOK bool
	ioOK     bool
	// kthread is PF_KTHREAD in the flags of /proc/PID/stat (field 9): a
	// kernel thread, which has no exe link.
	kthread bool
}

// NameFacts returns what the name rule reads of p.
func (p *Process) NameFacts() NameFacts {
	return NameFacts{Name: p.Name, Comm: p.Comm, Exe: p.Exe, Argv0: p.Argv0}
}

// ID returns the process's identity.
func (p *Process) ID() Identity { return Identity{PID: p.PID, StartTicks: p.StartTicks} }

// Has reports whether metric slot i was measured.
func (p *Process) Has(i int) bool { return p.Avail&(1<<uint(i)) != 0 }

// Set stores v in slot i and marks it available.
func (p *Process) Set(i int, v uint64) { p.Vals[i] = v; p.Avail |= 1 << uint(i) }

// System is the system-wide sample of one snapshot.
type System struct {
	Vals  [NumSystemMetrics]uint64
	Avail uint32
	// CoreCPUPercent is busy percent per logical CPU over the interval
	// (each core = 100), nil on the first sample.
	CoreCPUPercent []float64
}

// Has reports whether system slot i was measured.
func (s *System) Has(i int) bool { return s.Avail&(1<<uint(i)) != 0 }

// Set stores v in slot i and marks it available.
func (s *System) Set(i int, v uint64) { s.Vals[i] = v; s.Avail |= 1 << uint(i) }

// Snapshot is one immutable sample of every visible process and of the
// system. It is never modified after the sampler publishes it.
type Snapshot struct {
	// Seq increases by one per published snapshot of a sampler.
	Seq uint64
	// Time is when collection started.
	Time time.Time
	// Duration is how long collection took.
	Duration time.Duration
	// BootID identifies the boot (/proc/sys/kernel/random/boot_id).
	BootID string
	// Procs is sorted by PID.
	Procs  []Process
	System System
	// Denied counts processes whose files could not be read at all.
	Denied int
}

// Find returns the process with pid, or nil.
func (s *Snapshot) Find(pid int32) *Process {
	i := sort.Search(len(s.Procs), func(i int) bool { return s.Procs[i].PID >= pid })
	if i < len(s.Procs) && s.Procs[i].PID == pid {
		return &s.Procs[i]
	}
	return nil
}

// Lookup returns the process with exactly this identity, or nil.
func (s *Snapshot) Lookup(id Identity) *Process {
	p := s.Find(id.PID)
	if p == nil || p.StartTicks != id.StartTicks {
		return nil
	}
	return p
}

// StateName spells the process's state for the proc tools: StateName of
// State, or "zombie_leader" when the leader has exited while other
// threads run (LeaderExited; ps shows "Zl").
func (p *Process) StateName() string {
	if p.LeaderExited {
		return "zombie_leader"
	}
	return StateName(p.State)
}

// LeaderExited reports whether a /proc/PID/stat with state letter state
// and num_threads threads (field 20) is a zombie leader whose process
// lives on in other threads: the kernel keeps an exited leader as a
// zombie until its whole thread group has ended, and counts it in
// num_threads until then, so more than one thread means a live one.
func LeaderExited(state byte, threads uint64) bool { return state == 'Z' && threads > 1 }

// StateName spells a kernel state letter as ps(1) documents it.
func StateName(b byte) string {
	switch b {
	case 'R':
		return "running"
	case 'S':
		return "sleeping"
	case 'D':
		return "disk_sleep"
	case 'Z':
		return "zombie"
	case 'T':
		return "stopped"
	case 't':
		return "tracing_stop"
	case 'X', 'x':
		return "dead"
	case 'I':
		return "idle"
	case 'P':
		return "parked"
	case 'W':
		return "waking"
	}
	return "unknown"
}

// StateLetter is StateName's inverse: the kernel's state letter ps(1)
// prints for a state name ("R" for "running"), "" for a name StateName
// does not produce.
func StateLetter(name string) string {
	for _, b := range []byte("RSDZTtXIPW") {
		if StateName(b) == name {
			return string(b)
		}
	}
	return ""
}

// Platform describes what a collector can do; get_status reports it.
type Platform struct {
	// OS is runtime.GOOS.
	OS string
	// Collector names the data source ("procfs", "gopsutil").
	Collector string
	// Missing lists process and system metric ids this platform never provides.
	Missing []string
	// Notes are limitations in plain words.
	Notes []string
}

// Collector takes one snapshot. prev is the previous snapshot (nil on the
// first call) and is used for interval rates such as cpu_percent.
type Collector interface {
	Collect(prev *Snapshot) (*Snapshot, error)
	Platform() Platform
}
