//go:build linux

package sample

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
	"golang.org/x/sys/unix"
)

// userHZ is CLK_TCK, the unit of /proc/PID/stat times; 100 on every Linux
// architecture Go supports (procfs assumes the same).
const userHZ = 100

// LinuxCollector samples /proc. It keeps per-identity caches (exe path) and
// reused read buffers, so it is not safe for concurrent Collect calls; the
// Sampler calls it from one goroutine.
type LinuxCollector struct {
	root     string
	sysRoot  string
	fs       procfs.FS
	bfs      blockdevice.FS
	bootID   string
	bootTime time.Time
	pageSize uint64
	ncpu     int
	fdSize   bool // stat(/proc/PID/fd).st_size is the fd count (Linux 6.2+)
	buf      []byte
	path     []byte
	dents    []byte  // getdents64 records of the root
	pids     []int32 // the PIDs listed this tick
	exeCache map[Identity]exeEntry
	lastCPU  []procfs.CPUStat
	lastAll  procfs.CPUStat
	// wholeDisk caches isWholeDisk per device name.
	wholeDisk map[string]bool
	// tdents is the getdents64 buffer of a zombie leader's task directory.
	tdents []byte
	// link is the readlinkat buffer (PATH_MAX).
	link [4096]byte
	// noSwap is true when the last /proc/meminfo had SwapTotal 0, so no
	// process can have swapped memory (VmSwap is 0 everywhere).
	noSwap bool
	// kept is the per-process files kept open across ticks (procfs
	// mounts only: a fixture tree's files may be replaced between ticks).
	kept *keptFiles
	// exeChecks is this tick's state of each executable file (by device
	// and inode) that a process not run since the previous sample runs;
	// entries not checked in a tick are dropped at its end.
	exeChecks map[[2]uint64]*exeCheck
	// kthreadLinkReads counts the exe link reads (readlinkat) of kernel
	// threads, all ticks together (tests read it).
	kthreadLinkReads uint64
}

// exeEntry caches, per identity, what the name rule needs. It is reused
// while the command name and the exe link text (read every sample: one
// readlinkat) are unchanged; an exec or an unlink of the executable
// (the link gains " (deleted)") changes one of them.
type exeEntry struct {
	comm    string
	link    string // the exe link as read ("" when unreadable)
	exe     string
	deleted bool
	name    string
	facts   *Facts
	argv0   string
	// obj is the executable file's identity and link-relevant state when
	// it was last read (objOK false: not examined, so the link is read
	// every sample).
	obj   exeObj
	objOK bool
	// noExe is a kernel thread whose exe link read ENOENT: a kernel
	// thread never has one, so the link is not read again in its lifetime.
	noExe bool
}

// exeObj is what of an executable file changes when a name of it is
// unlinked or renamed: st_nlink and st_ctime (the kernel updates the
// inode's ctime on both), with the device and inode that identify it.
type exeObj struct {
	dev, ino, nlink uint64
	ctime           unix.Timespec
}

func exeObjOf(st *unix.Stat_t) exeObj {
	return exeObj{dev: st.Dev, ino: st.Ino, nlink: uint64(st.Nlink), ctime: st.Ctim}
}

// exeCheck is one tick's examination of an executable file, shared by
// every process that runs it (one fstatat per file per tick, not one
// readlinkat per process).
type exeCheck struct {
	tick uint64
	obj  exeObj
}

// exeRecheck is the cadence, in samples, at which the exe link of a
// process whose executable shows no change is read anyway (staggered by
// PID): it catches what the file's own state does not show, a rename of
// a directory above it.
const exeRecheck = 16

// NewLinuxCollector opens /proc (root "" means /proc) with sysfs at /sys.
func NewLinuxCollector(root string) (*LinuxCollector, error) {
	return NewLinuxCollectorFS(root, "")
}

// NewLinuxCollectorFS reads the procfs tree at root ("" means /proc) and
// the sysfs tree at sysRoot ("" means /sys; only block/ is read, to tell
// whole disks from partitions): the live mounts, or fixture trees laid out
// as they are. On a root that is not a procfs mount, fd_count is the
// entry count of PID/fd (a directory's size there is not a count).
func NewLinuxCollectorFS(root, sysRoot string) (*LinuxCollector, error) {
	if root == "" {
		root = procfs.DefaultMountPoint
	}
	if sysRoot == "" {
		sysRoot = "/sys"
	}
	fs, err := procfs.NewFS(root)
	if err != nil {
		return nil, err
	}
	c := &LinuxCollector{root: root, sysRoot: sysRoot, fs: fs, pageSize: uint64(os.Getpagesize()), ncpu: runtime.NumCPU(),
		buf: make([]byte, 16<<10), dents: make([]byte, 32<<10), exeCache: map[Identity]exeEntry{}, exeChecks: map[[2]uint64]*exeCheck{}}
	if bfs, err := blockdevice.NewFS(root, sysRoot); err == nil {
		c.bfs = bfs
	}
	if b, err := os.ReadFile(root + "/sys/kernel/random/boot_id"); err == nil {
		c.bootID = strings.TrimSpace(string(b))
	}
	if st, err := fs.Stat(); err == nil {
		c.bootTime = time.Unix(int64(st.BootTime), 0)
		if n := len(st.CPU); n > 0 {
			c.ncpu = n
		}
	}
	var st unix.Stat_t
	var sfs unix.Statfs_t
	procMount := unix.Statfs(root, &sfs) == nil && sfs.Type == unix.PROC_SUPER_MAGIC
	if procMount && unix.Stat(root+"/self/fd", &st) == nil && st.Size > 0 {
		c.fdSize = true
	}
	c.kept = &keptFiles{m: map[int32]*keptProc{}, sys: newSysFiles(root, procMount)}
	var rl unix.Rlimit
	if procMount && unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
		c.kept.max = keptBudget(rl.Cur)
	}
	// A collector dropped without Close still closes its kept fds.
	runtime.AddCleanup(c, (*keptFiles).closeAll, c.kept)
	return c, nil
}

// Close closes the files the collector keeps open across ticks (about
// four per process: its /proc/PID directory, stat, statm and schedstat).
// The collector stays usable: a later Collect opens them again.
func (c *LinuxCollector) Close() error {
	c.kept.closeAll()
	return nil
}

// BootID returns the boot id read at construction.
func (c *LinuxCollector) BootID() string { return c.bootID }

// BootTime returns the boot time from /proc/stat btime.
func (c *LinuxCollector) BootTime() time.Time { return c.bootTime }

// Platform reports the Linux collector's coverage: complete.
func (c *LinuxCollector) Platform() Platform {
	p := Platform{OS: "linux", Collector: "procfs"}
	if !c.fdSize {
		p.Notes = append(p.Notes, "fd_count is counted by reading /proc/PID/fd (kernel older than 6.2)")
	}
	return p
}

// Collect reads every /proc/PID and the system files once.
func (c *LinuxCollector) Collect(prev *Snapshot) (*Snapshot, error) {
	start := time.Now()
	d, err := unix.Open(c.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: c.root, Err: err}
	}
	defer unix.Close(d)
	n := len(c.pids)
	if prev != nil {
		n = max(n, len(prev.Procs))
	}
	c.pids = c.pids[:0]
	for {
		m, err := unix.Getdents(d, c.dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Path: c.root, Err: err}
		}
		if m <= 0 {
			break
		}
		Dirents(c.dents[:m], func(name []byte) {
			if pid, ok := parsePID(name); ok {
				c.pids = append(c.pids, pid)
			}
		})
	}
	c.kept.mu.Lock()
	defer c.kept.mu.Unlock()
	c.kept.tick++
	snap := &Snapshot{Time: start, BootID: c.bootID, Procs: make([]Process, 0, max(n, len(c.pids)))}
	if prev != nil {
		snap.Seq = prev.Seq + 1
	}
	for _, pid := range c.pids {
		var p Process
		switch c.readProcess(pid, &p, prev) {
		case errGone:
			continue
		case errDenied:
			snap.Denied++
			continue
		}
		if prev != nil && p.Has(PCPUTime) {
			if q := prev.Lookup(p.ID()); q != nil && q.Has(PCPUTime) && p.Vals[PCPUTime] >= q.Vals[PCPUTime] {
				wall := start.Sub(prev.Time).Nanoseconds()
				if wall > 0 {
					pct := float64(p.Vals[PCPUTime]-q.Vals[PCPUTime]) / (float64(wall) * float64(c.ncpu)) * 100
					p.Set(PCPUPercent, F(pct))
				}
			}
		}
		snap.Procs = append(snap.Procs, p)
	}
	c.kept.sweep()
	for k, e := range c.exeChecks {
		if e.tick != c.kept.tick {
			delete(c.exeChecks, k)
		}
	}
	sortProcs(snap.Procs)
	// forget the exe names of lifetimes that ended (the snapshot is sorted)
	for id := range c.exeCache {
		if snap.Lookup(id) == nil {
			delete(c.exeCache, id)
		}
	}
	c.readSystem(snap)
	snap.Duration = time.Since(start)
	return snap, nil
}

var (
	errGone   = errors.New("process gone")
	errDenied = errors.New("access denied")
)

func (c *LinuxCollector) procPath(pid int32, file string) string {
	c.path = append(c.path[:0], c.root...)
	c.path = append(c.path, '/')
	c.path = strconv.AppendInt(c.path, int64(pid), 10)
	if file != "" {
		c.path = append(c.path, '/')
		c.path = append(c.path, file...)
	}
	return string(c.path)
}

// openPID opens the /proc/PID directory without allocating: the path is
// built NUL-terminated in c.path and openat(2) is called directly.
func (c *LinuxCollector) openPID(pid int32) (int, error) {
	c.path = append(c.path[:0], c.root...)
	c.path = append(c.path, '/')
	c.path = strconv.AppendInt(c.path, int64(pid), 10)
	c.path = append(c.path, 0)
	return openatZ(unix.AT_FDCWD, &c.path[0], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
}

// NUL-terminated names of the per-process files (openat(2) and
// readlinkat(2) take C strings; passing these avoids a conversion and an
// allocation per call).
var (
	zStat      = []byte("stat\x00")
	zSchedstat = []byte("schedstat\x00")
	zStatm     = []byte("statm\x00")
	zStatus    = []byte("status\x00")
	zIO        = []byte("io\x00")
	zExe       = []byte("exe\x00")
	zCmdline   = []byte("cmdline\x00")
	zTask      = []byte("task\x00")
	zFD        = []byte("fd\x00")
)

func openatZ(dir int, name *byte, flags int) (int, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dir), uintptr(unsafe.Pointer(name)), uintptr(flags), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(r), nil
	}
}

func readlinkatZ(dir int, name *byte, buf []byte) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_READLINKAT, uintptr(dir), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// parsePID parses a /proc entry name as a PID (decimal, > 0, fits int32).
func parsePID(name []byte) (int32, bool) {
	if len(name) == 0 || len(name) > 10 {
		return 0, false
	}
	var v int64
	for _, ch := range name {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		v = v*10 + int64(ch-'0')
	}
	if v <= 0 || v > 1<<31-1 {
		return 0, false
	}
	return int32(v), true
}

// Dirents calls fn with the name of each record of b, a buffer filled by
// getdents64(2) (struct linux_dirent64: ino, off, reclen, type, name),
// skipping "." and "..". name aliases b. A malformed record ends the walk.
func Dirents(b []byte, fn func(name []byte)) {
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return
		}
		name := b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[reclen:]
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
			continue
		}
		fn(name)
	}
}

// readFile reads a small /proc file into c.buf without stat (sizes lie in
// /proc) and returns the bytes read.
func (c *LinuxCollector) readFile(path string) ([]byte, error) {
	return c.readFileAt(unix.AT_FDCWD, path)
}

// readFileAt is readFile relative to the directory fd dir.
func (c *LinuxCollector) readFileAt(dir int, name string) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return c.preadFull(fd, true)
}

// readFileZ is readFileAt with a NUL-terminated name (no allocation).
func (c *LinuxCollector) readFileZ(dir int, name []byte) ([]byte, error) {
	fd, err := openatZ(dir, &name[0], unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return c.preadFull(fd, true)
}

// preadFull reads fd from offset 0 to end of file into c.buf: until a
// read returns 0, or (single: a single-record seq_file, as every
// /proc/PID file and the single_open system files) until a read shorter
// than the space left, which saves the read that would return 0.
func (c *LinuxCollector) preadFull(fd int, single bool) ([]byte, error) {
	n := 0
	for {
		if n == len(c.buf) {
			c.buf = append(c.buf, make([]byte, len(c.buf))...)
		}
		m, err := unix.Pread(fd, c.buf[n:], int64(n))
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return nil, err
		}
		if m == 0 {
			return c.buf[:n], nil
		}
		n += m
		if single && n < len(c.buf) {
			return c.buf[:n], nil
		}
	}
}

func (c *LinuxCollector) readProcess(pid int32, p *Process, prev *Snapshot) error {
	// Every file is read relative to one open /proc/PID directory: one
	// path walk instead of one per file, and all reads come from the same
	// process even if the PID is reused meanwhile (they fail with ESRCH).
	// A process seen before has that directory and its stat, statm and
	// schedstat files open from earlier ticks (kept_linux.go): a tick
	// then costs a pread of each instead of an open, a read and a close.
	statFD, statmFD, schedFD, fdDir := -1, -1, -1, -1
	var b []byte
	var err error
	kp := c.kept.m[pid]
	if kp != nil {
		if b, err = c.preadFull(kp.stat, true); err != nil || len(b) == 0 {
			// the kept process has exited; the PID may be another's now
			c.kept.drop(pid)
			kp = nil
		}
	}
	var dir int
	if kp == nil {
		if dir, err = c.openPID(pid); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
				return errGone
			}
			return errDenied
		}
		var ok bool
		if kp, ok = c.kept.keep(pid, dir, c.fdSize); ok {
			statFD = kp.stat
		} else {
			defer unix.Close(dir)
		}
		if b, err = c.readKept(statFD, dir, zStat); err != nil {
			if kp != nil {
				c.kept.drop(pid)
			}
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
				return errGone
			}
			return errDenied
		}
	}
	if kp != nil {
		kp.tick = c.kept.tick
		dir, statmFD, schedFD, fdDir = kp.dir, kp.statm, kp.sched, kp.fdDir
	}
	comm, err := parseStat(b, p)
	if err != nil {
		return errGone
	}
	p.PID = pid
	// the previous sample of the same lifetime, if any: its comm string is
	// reused when unchanged (no allocation per process and tick)
	var same *Process
	if prev != nil {
		same = prev.Lookup(p.ID())
	}
	if same != nil && same.Comm == string(comm) {
		p.Comm = same.Comm
	} else {
		p.Comm = string(comm)
	}
	p.Name = p.Comm
	p.StartTime = c.bootTime.Add(time.Duration(p.StartTicks) * (time.Second / userHZ))
	// A leader that called pthread_exit while other threads run is a
	// zombie (ps: Zl) whose memory, fd table and exe link are gone from
	// /proc/PID, while the process lives on in its other tasks: the
	// per-process files below are then read through a live task
	// (/proc/PID/task/TID), and the state is that task's.
	mdir := dir
	if LeaderExited(p.State, p.Vals[PThreads]) {
		if tdir, state, ok := c.liveTask(dir, pid); ok {
			defer unix.Close(tdir)
			mdir = tdir
			p.State, p.LeaderExited = state, true
		}
	}
	// RSS from statm, not stat field 24: see parseStatm. Read every tick
	// (no carry): pages are faulted in by any thread of the group and
	// reclaimed without the process running.
	if mdir != dir {
		statmFD = -1 // the live task's, not the exited leader's
	}
	if b, err := c.readKept(statmFD, mdir, zStatm); err == nil {
		if v, ok := parseStatm(b); ok {
			p.Set(PRSS, v*c.pageSize)
		}
	}
	// Whether the thread-group leader ran since the previous sample: its
	// schedstat (ns on CPU, timeslices) is unchanged only if it was never
	// scheduled in. Then the per-task fields of status (Uid, context
	// switches) cannot have changed; VmSwap cannot either when the system
	// has no swap; and io, a whole-group counter, cannot when the group is
	// that one thread. Such fields are carried from the previous sample
	// instead of regenerating the (expensive) status and io files. The
	// values are identical to what a re-read would return.
	var q *Process
	if b, err := c.readKept(schedFD, dir, zSchedstat); err == nil {
		if v, ok := parseSchedstat(b); ok {
			p.sched, p.schedOK = v, true
			if same != nil && same.schedOK && same.sched == v {
				q = same
			}
		}
	}
	if q != nil && q.statusOK && c.noSwap {
		copyStatus(p, q)
	} else if b, err := c.readLazy(kp, kpStatus, dir, zStatus); err == nil {
		parseStatus(b, p)
		p.statusOK = true
	}
	if q != nil && q.ioOK && p.Vals[PThreads] == 1 && q.Vals[PThreads] == 1 {
		copyIO(p, q)
	} else if b, err := c.readLazy(kp, kpIO, dir, zIO); err == nil {
		parseIO(b, p)
		p.ioOK = true
	}
	var st unix.Stat_t
	if c.fdSize && fdDir >= 0 && mdir == dir {
		if unix.Fstat(fdDir, &st) == nil {
			p.Set(PFDs, uint64(st.Size))
		}
	} else if c.fdSize {
		if unix.Fstatat(mdir, "fd", &st, 0) == nil {
			p.Set(PFDs, uint64(st.Size))
		}
	} else if d, err := os.Open(c.fdPath(pid, p.LeaderExited, mdir)); err == nil {
		names, err := d.Readdirnames(-1)
		d.Close()
		if err == nil {
			p.Set(PFDs, uint64(len(names)))
		}
	}
	id := p.ID()
	e, ok := c.exeCache[id]
	if ok && (e.comm != p.Comm || mdir != dir || q == nil || (uint64(pid)+c.kept.tick)%exeRecheck == 0) {
		ok = false
	}
	// An exec needs the process to run (and an exec by another thread
	// makes that thread the leader, whose schedstat then differs), so the
	// exe link of a process whose leader did not run since the previous
	// sample (q != nil) can change only by a rename or unlink of the file
	// or a directory above it. The file's own link count and ctime show
	// the first two: one fstatat of the file per tick, shared by every
	// process that runs it, decides whether the link is read again.
	if ok && e.link != "" {
		ok = e.objOK && c.exeUnchanged(dir, &e)
	}
	if e2, had := c.exeCache[id]; !ok && had && e2.noExe && mdir == dir {
		// a kernel thread: no exe link to read; a new command name (a
		// kworker's names its work queue) is decided as readNames would
		// with an unreadable link
		ok = true
		if e2.comm != p.Comm {
			facts := e2.facts
			e = c.readNames(mdir, p.Comm, "")
			e.facts, e.noExe = facts, true
			c.exeCache[id] = e
		} else {
			e = e2
		}
	}
	if !ok {
		n, lerr := readlinkatZ(mdir, &zExe[0], c.link[:])
		if p.kthread {
			c.kthreadLinkReads++
		}
		if lerr != nil {
			n = 0
		}
		noExe := p.kthread && errors.Is(lerr, unix.ENOENT)
		if e2, had := c.exeCache[id]; had && e2.comm == p.Comm && e2.link == string(c.link[:n]) && mdir == dir {
			e = e2
			if chk := c.exeChecks[[2]uint64{e.obj.dev, e.obj.ino}]; chk != nil && chk.tick == c.kept.tick && e.objOK {
				e.obj = chk.obj // the name is unchanged: the file's new state is the one to compare
				c.exeCache[id] = e
			}
		} else {
			e = c.readNames(mdir, p.Comm, string(c.link[:n]))
			// namespaces and container: identity-time facts, read again
			// only when the names are (a new lifetime or an exec)
			e.facts = factsAt(mdir)
			c.exeCache[id] = e
		}
		if noExe && !e.noExe {
			e.noExe = true
			c.exeCache[id] = e
		}
	}
	p.Exe, p.ExeDeleted, p.Name, p.Argv0 = e.exe, e.deleted, e.name, e.argv0
	p.Facts = e.facts
	return nil
}

// exeUnchanged reports whether the executable file of e (the cached
// names of a process whose leader did not run since the previous sample,
// whose open /proc/PID directory is dir) shows no unlink or rename since
// e was read: its link count and ctime are those e recorded. The file is
// examined once per tick (through the first such process that runs it);
// false when it cannot be examined.
func (c *LinuxCollector) exeUnchanged(dir int, e *exeEntry) bool {
	key := [2]uint64{e.obj.dev, e.obj.ino}
	chk := c.exeChecks[key]
	if chk == nil || chk.tick != c.kept.tick {
		var st unix.Stat_t
		if unix.Fstatat(dir, "exe", &st, 0) != nil {
			return false
		}
		o := exeObjOf(&st)
		if o.dev != e.obj.dev || o.ino != e.obj.ino {
			return false // not the file recorded: read the link
		}
		if chk == nil {
			chk = &exeCheck{}
			c.exeChecks[key] = chk
		}
		chk.tick, chk.obj = c.kept.tick, o
	}
	return chk.obj == e.obj
}

// fdPath is the fd directory of pid read by the non-procfs fallback:
// /proc/PID/fd, or the live task's when the leader exited (mdir is that
// task's open directory).
func (c *LinuxCollector) fdPath(pid int32, leaderExited bool, mdir int) string {
	if leaderExited {
		return "/proc/self/fd/" + strconv.Itoa(mdir) + "/fd"
	}
	return c.procPath(pid, "fd")
}

// liveTask opens the directory of a task of pid other than its exited
// leader that still runs (/proc/PID/task/TID, state neither Z nor X) and
// returns it with that task's state letter; ok is false when none is left.
func (c *LinuxCollector) liveTask(dir int, pid int32) (tdir int, state byte, ok bool) {
	td, err := openatZ(dir, &zTask[0], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return -1, 0, false
	}
	defer unix.Close(td)
	if c.tdents == nil {
		c.tdents = make([]byte, 4096)
	}
	tdir = -1
	for tdir < 0 {
		m, err := unix.Getdents(td, c.tdents)
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break
		}
		Dirents(c.tdents[:m], func(name []byte) {
			tid, okT := parsePID(name)
			if tdir >= 0 || !okT || tid == pid {
				return
			}
			fd, err := unix.Openat(td, string(name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return
			}
			b, err := c.readFileZ(fd, zStat)
			var tp Process
			if err != nil {
				unix.Close(fd)
				return
			}
			if _, err := parseStat(b, &tp); err != nil || tp.State == 'Z' || tp.State == 'X' {
				unix.Close(fd)
				return
			}
			tdir, state = fd, tp.State
		})
	}
	return tdir, state, tdir >= 0
}

// readNames decides the exe link text link of the open /proc/PID
// directory dir ("" when unreadable; its " (deleted)" suffix decided by
// ResolveDeleted), reads argv[0] from cmdline and applies the name rule
// FullName.
func (c *LinuxCollector) readNames(dir int, comm, link string) exeEntry {
	e := exeEntry{comm: comm, link: link}
	if link != "" {
		var st unix.Stat_t
		obj := &st
		if unix.Fstatat(dir, "exe", &st, 0) != nil {
			obj = nil
		} else {
			e.obj, e.objOK = exeObjOf(&st), true
		}
		path, del := ResolveDeleted(link, obj, StatInRoot(dir))
		e.exe, e.deleted = path, del == Deleted
	}
	// argv[0] once per identity and exec: the name rule matches it too.
	if b, err := c.readFileZ(dir, zCmdline); err == nil {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		e.argv0 = string(b)
	}
	e.name = FullName(e.exe, e.argv0, comm)
	return e
}

// parseStat parses /proc/PID/stat (proc(5)) in place and returns the
// command name, the bytes between the first '(' and the last ')' (aliasing
// b; the caller sets p.Comm).
func parseStat(b []byte, p *Process) ([]byte, error) {
	l := bytes.IndexByte(b, '(')
	r := bytes.LastIndexByte(b, ')')
	if l < 0 || r < l || r+2 > len(b) {
		return nil, errMalformedStat
	}
	comm := b[l+1 : r]
	rest := b[r+2:]
	// fields numbered from 3 (state)
	var f [22]uint64
	field := 3
	for len(rest) > 0 && field <= 24 {
		i := bytes.IndexByte(rest, ' ')
		tok := rest
		if i >= 0 {
			tok = rest[:i]
			rest = rest[i+1:]
		} else {
			rest = nil
		}
		if field == 3 {
			if len(tok) > 0 {
				p.State = tok[0]
			}
		} else if field >= 4 {
			v, neg := parseInt(tok)
			if neg {
				v = 0
			}
			f[field-4+0] = v
		}
		field++
	}
	if field <= 24 {
		return nil, errShortStat
	}
	at := func(n int) uint64 { return f[n-4] }
	p.PPID = int32(at(4))
	p.Set(PMinorFaults, at(10))
	p.Set(PMajorFaults, at(12))
	p.Set(PCPUTime, (at(14)+at(15))*uint64(time.Second/userHZ))
	p.ChildCPUNs, p.ChildCPUOK = (at(16)+at(17))*uint64(time.Second/userHZ), true
	p.Set(PThreads, at(20))
	p.StartTicks = at(22)
	p.Set(PVirtual, at(23))
	// PF_EXITING in the flags (field 9) of a single-threaded process: it
	// is in exit() and may have released its memory already. A leader of
	// several threads sets it when only it exits (pthread_exit), so it
	// says nothing of the process there.
	p.Exiting = at(9)&pfExiting != 0 && at(20) <= 1 && p.State != 'Z' && p.State != 'X'
	p.kthread = at(9)&pfKthread != 0
	return comm, nil
}

// parseStatm returns resident, the second field of /proc/PID/statm (size
// resident shared text lib data dt, in pages; proc(5)): the number of
// resident pages, file + anon + shmem. It is the same count as VmRSS in
// /proc/PID/status (RssFile + RssAnon + RssShmem, in KiB), which is what
// ps's RSS column reads (procps-ng: PIDS_VM_RSS from status): both come
// from the same mm counters, summed exactly over CPUs on Linux 6.18
// (stat field 24 reads them approximately, without the per-CPU parts).
// A task without memory (kernel thread, zombie) reads 0. ok is false
// when the field is missing or not a decimal number.
func parseStatm(b []byte) (resident uint64, ok bool) {
	i := bytes.IndexByte(b, ' ')
	if i <= 0 {
		return 0, false
	}
	b = b[i+1:]
	if j := bytes.IndexAny(b, " \n"); j >= 0 {
		b = b[:j]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		resident = resident*10 + uint64(ch-'0')
	}
	return resident, true
}

// pfExiting and pfKthread are PF_EXITING and PF_KTHREAD in the task
// flags (include/linux/sched.h).
const (
	pfExiting = 0x4
	pfKthread = 0x00200000
)

var (
	errMalformedStat = errors.New("malformed stat")
	errShortStat     = errors.New("short stat")
)

func parseInt(b []byte) (uint64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	var v uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			break
		}
		v = v*10 + uint64(ch-'0')
	}
	return v, neg
}

// parseStatus takes Uid, VmSwap and the context-switch counters from
// /proc/PID/status.
func parseStatus(b []byte, p *Process) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b
		if i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		c := bytes.IndexByte(line, ':')
		if c < 0 {
			continue
		}
		key, val := line[:c], bytes.TrimLeft(line[c+1:], " \t")
		switch string(key) {
		case "Uid":
			v, _ := parseInt(val)
			p.UID, p.UIDKnown = uint32(v), true
		case "VmSwap":
			v, _ := parseInt(val)
			p.Set(PSwap, v*1024)
		case "voluntary_ctxt_switches":
			v, _ := parseInt(val)
			p.Set(PVolCtx, v)
		case "nonvoluntary_ctxt_switches":
			v, _ := parseInt(val)
			p.Set(PInvolCtx, v)
		}
	}
}

// parseSchedstat reads /proc/PID/schedstat: ns on CPU, ns waiting, and
// the number of timeslices run; it returns the first and the third.
func parseSchedstat(b []byte) ([2]uint64, bool) {
	var f [3][]byte
	n := 0
	for n < 3 {
		b = bytes.TrimLeft(b, " \t\n")
		if len(b) == 0 {
			break
		}
		i := bytes.IndexAny(b, " \t\n")
		if i < 0 {
			i = len(b)
		}
		f[n], b = b[:i], b[i:]
		n++
	}
	if n < 3 {
		return [2]uint64{}, false
	}
	run, _ := parseInt(f[0])
	slices, _ := parseInt(f[2])
	return [2]uint64{run, slices}, true
}

// copyStatus carries the status-derived fields of q (same lifetime, leader
// not run since) into p.
func copyStatus(p, q *Process) {
	p.UID, p.UIDKnown, p.statusOK = q.UID, q.UIDKnown, true
	for _, i := range []int{PSwap, PVolCtx, PInvolCtx} {
		if q.Has(i) {
			p.Set(i, q.Vals[i])
		}
	}
}

// copyIO carries the io-derived fields of q into p.
func copyIO(p, q *Process) {
	p.ioOK = true
	for _, i := range []int{PReadBytes, PWriteBytes} {
		if q.Has(i) {
			p.Set(i, q.Vals[i])
		}
	}
}

// parseIO takes read_bytes and write_bytes from /proc/PID/io.
func parseIO(b []byte, p *Process) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b
		if i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		switch {
		case bytes.HasPrefix(line, []byte("read_bytes: ")):
			v, _ := parseInt(line[len("read_bytes: "):])
			p.Set(PReadBytes, v)
		case bytes.HasPrefix(line, []byte("write_bytes: ")):
			v, _ := parseInt(line[len("write_bytes: "):])
			p.Set(PWriteBytes, v)
		}
	}
}

func (c *LinuxCollector) readSystem(s *Snapshot) {
	sys := &s.System
	sys.Set(SProcesses, uint64(len(s.Procs)))
	f := &c.kept.sys
	if b, err := f.stat.read(c); err == nil {
		if total, cpus, ok := parseProcStat(b); ok {
			if c.lastCPU != nil && len(c.lastCPU) == len(cpus) {
				if pct, ok := busyPercent(c.lastAll, total); ok {
					sys.Set(SCPUPercent, F(pct))
				}
				cores := make([]float64, len(cpus))
				i := 0
				for _, cpu := range sortedCPUs(cpus) {
					pct, _ := busyPercent(c.lastCPU[i], cpu)
					cores[i] = pct
					i++
				}
				sys.CoreCPUPercent = cores
			}
			sys.Set(SCPUTime, uint64(math.Round((total.User+total.Nice+total.System)*1e9)))
			c.lastAll = total
			c.lastCPU = sortedCPUs(cpus)
		}
	}
	if b, err := f.meminfo.read(c); err == nil {
		mi := parseMeminfo(b)
		if mi.has[0] {
			sys.Set(SMemTotal, mi.total)
		}
		if mi.has[1] {
			sys.Set(SMemAvailable, mi.avail)
			if mi.has[0] && mi.total >= mi.avail {
				sys.Set(SMemUsed, mi.total-mi.avail)
			}
		}
		if mi.has[2] {
			sys.Set(SCommitted, mi.committed)
		}
		c.noSwap = mi.has[3] && mi.swapTotal == 0
		if mi.has[3] {
			sys.Set(SSwapTotal, mi.swapTotal)
			if mi.has[4] && mi.swapTotal >= mi.swapFree {
				sys.Set(SSwapUsed, mi.swapTotal-mi.swapFree)
			}
		}
	}
	if b, err := f.loadavg.read(c); err == nil {
		if la, ok := parseLoadavg(b); ok {
			sys.Set(SLoad1, F(la[0]))
			sys.Set(SLoad5, F(la[1]))
			sys.Set(SLoad15, F(la[2]))
		}
	}
	if b, err := f.diskstats.read(c); err == nil {
		var rd, wr uint64
		parseDiskstats(b, func(name string, r, w uint64) {
			if c.isWholeDisk(name) {
				rd += r * 512
				wr += w * 512
			}
		})
		sys.Set(SDiskRead, rd)
		sys.Set(SDiskWrite, wr)
	}
	if b, err := f.netdev.read(c); err == nil {
		var rx, tx uint64
		parseNetDev(b, func(name []byte, r, t uint64) {
			if string(name) == "lo" {
				return
			}
			rx += r
			tx += t
		})
		sys.Set(SNetRx, rx)
		sys.Set(SNetTx, tx)
	}
	if b, err := f.uptime.read(c); err == nil {
		if i := bytes.IndexAny(b, " \n"); i > 0 {
			if v, err := strconv.ParseFloat(string(b[:i]), 64); err == nil {
				sys.Set(SUptime, F(v))
			}
		}
	}
}

func sortedCPUs(m map[int64]procfs.CPUStat) []procfs.CPUStat {
	out := make([]procfs.CPUStat, len(m))
	for i := range out {
		out[i] = m[int64(i)]
	}
	return out
}

func busyPercent(a, b procfs.CPUStat) (float64, bool) {
	tot := func(c procfs.CPUStat) float64 {
		return c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
	}
	idle := func(c procfs.CPUStat) float64 { return c.Idle + c.Iowait }
	dt := tot(b) - tot(a)
	if dt <= 0 {
		return 0, false
	}
	busy := dt - (idle(b) - idle(a))
	if busy < 0 {
		busy = 0
	}
	return busy / dt * 100, true
}

// isWholeDisk excludes partitions and virtual block devices so bytes are
// not counted twice (sda but not sda1; nvme0n1 but not nvme0n1p1): a whole
// disk has a /sys/block entry. Answers are cached per device name.
func (c *LinuxCollector) isWholeDisk(name string) bool {
	if v, ok := c.wholeDisk[name]; ok {
		return v
	}
	whole := true
	for _, p := range []string{"loop", "ram", "dm-", "md", "zram", "sr"} {
		if strings.HasPrefix(name, p) {
			whole = false
		}
	}
	if whole {
		_, err := os.Stat(c.sysRoot + "/block/" + name)
		whole = err == nil
	}
	if c.wholeDisk == nil {
		c.wholeDisk = map[string]bool{}
	}
	c.wholeDisk[name] = whole
	return whole
}

// NewCollector returns the platform collector: /proc on Linux.
func NewCollector() (Collector, error) { return NewLinuxCollector("") }
