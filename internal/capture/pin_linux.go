//go:build linux

package capture

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// procRoot is the procfs mount the collectors read by default.
const procRoot = "/proc"

// FS is a procfs tree the collectors read, like prometheus/procfs's
// procfs.NewFS: "/proc" on a live host, or a fixture tree laid out as
// /proc is (testdata/). The zero FS reads "/proc".
type FS struct{ root string }

// NewFS returns the FS rooted at root (a directory laid out as /proc).
func NewFS(root string) FS { return FS{root: root} }

// Root is the directory the FS reads ("/proc" for the zero FS).
func (fs FS) Root() string {
	if fs.root == "" {
		return procRoot
	}
	return fs.root
}

// live reports whether fs is the host's own /proc (system calls on its
// PIDs then address the same processes).
func (fs FS) live() bool { return fs.Root() == procRoot }

// path joins a name below the root ("self/ns/net" -> "/proc/self/ns/net").
func (fs FS) path(name string) string { return fs.Root() + "/" + name }

// maxProcFile bounds one /proc file read (maps of a huge process can be
// megabytes; anything beyond this is reported, never silently cut).
const maxProcFile = 64 << 20

// errTooBig reports a /proc file over maxProcFile.
var errTooBig = errors.New("proc file larger than the read bound")

// pinned is an open /proc/PID directory. Files opened relative to it
// belong to the process instance that was running when it was opened; after
// that process ends they fail with ESRCH or ENOENT even if the PID is
// reused.
//
// When the process's leader has exited while other threads run
// (sample.LeaderExited: the leader is a zombie, ps shows "Zl"), the fd
// table, memory map, executable and namespaces are gone from /proc/PID
// but live on in the other tasks: tfd is then the directory of one live
// task (/proc/PID/task/TID), else it is fd. Per-process resources are read
// through tfd (taskDir); the leader's stat, status and task list through fd.
type pinned struct {
	fd   int
	tfd  int
	pid  int32
	root string // the procfs tree it was opened in ("" for /proc)
}

// taskDir is the directory to read the fd table, fdinfo, maps, exe, cwd,
// root, ns, net and cmdline of the pinned process through.
func (p *pinned) taskDir() int { return p.tfd }

// leaderExited reports whether the pinned process is read through a live
// task because its leader has exited (see pinned).
func (p *pinned) leaderExited() bool { return p.tfd != p.fd }

// useLiveTask points tfd at a live task other than the leader when st (the
// leader's stat) says the leader has exited while other threads run; it
// returns false when none is left (the process has ended meanwhile).
func (p *pinned) useLiveTask(st statInfo) bool {
	if !sample.LeaderExited(st.state, st.threads) {
		return true
	}
	if p.tfd != p.fd {
		return true
	}
	d := p.liveTask()
	if d < 0 {
		return false
	}
	p.tfd = d
	return true
}

func openPinned(pid int32) (*pinned, error) { return FS{}.openPinned(pid) }

func (fs FS) openPinned(pid int32) (*pinned, error) {
	fd, err := unix.Open(fs.path(strconv.Itoa(int(pid))), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &pinned{fd: fd, tfd: fd, pid: pid, root: fs.root}, nil
}

func (p *pinned) close() {
	if p.tfd != p.fd {
		unix.Close(p.tfd)
	}
	unix.Close(p.fd)
}

// read reads the file name under the pinned directory, bounded: stat,
// status and the task list are the leader's, every other file is read
// through taskDir.
func (p *pinned) read(name string, buf []byte) ([]byte, error) {
	dir := p.tfd
	switch name {
	case "stat", "status":
		dir = p.fd
	}
	return readInto(dir, name, buf)
}

// readInto reads the file name under the directory fd dir into buf,
// bounded by maxProcFile.
func readInto(dir int, name string, buf []byte) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if cap(buf) == 0 {
		buf = make([]byte, 0, 4096)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxProcFile {
				return nil, errTooBig
			}
			nb := make([]byte, len(buf), 2*cap(buf))
			copy(nb, buf)
			buf = nb
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// readlink reads the symlink name under dirfd into buf.
func readlinkAt(dirfd int, name string, buf []byte) ([]byte, error) {
	for {
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return nil, err
		}
		if n < len(buf) {
			return buf[:n], nil
		}
		if len(buf) >= 1<<16 {
			return buf[:n], nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// statInfo is what collectors use from /proc/PID/stat.
type statInfo struct {
	name       string
	state      byte
	ppid       int32
	flags      uint64 // field 9: the kernel's task flags (PF_*)
	threads    uint64 // field 20: num_threads
	utime      uint64 // clock ticks
	stime      uint64
	priority   int64
	nice       int64
	startTicks uint64
	processor  int64
	rtPriority uint64
	policy     uint64
	fields     int // number of fields after comm parsed
}

var errStatFormat = errors.New("stat: unexpected format")

// parseStatLine parses a /proc/PID/stat or task stat line. comm is taken
// between the first '(' and the last ')'; fields after it are numbered from
// 3 (state) as in proc(5).
func parseStatLine(b []byte) (statInfo, error) {
	var s statInfo
	open := bytes.IndexByte(b, '(')
	cl := bytes.LastIndexByte(b, ')')
	if open < 0 || cl < open || cl+2 > len(b) {
		return s, errStatFormat
	}
	s.name = string(b[open+1 : cl])
	rest := bytes.Fields(b[cl+1:])
	if len(rest) < 20 || len(rest[0]) != 1 {
		return s, errStatFormat
	}
	s.state = rest[0][0]
	s.fields = len(rest)
	// field n (1-based, proc(5)) is rest[n-3]
	get := func(n int) (int64, bool) {
		if n-3 >= len(rest) {
			return 0, false
		}
		v, err := strconv.ParseInt(string(rest[n-3]), 10, 64)
		return v, err == nil
	}
	getu := func(n int) (uint64, bool) {
		if n-3 >= len(rest) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(rest[n-3]), 10, 64)
		return v, err == nil
	}
	var ok bool
	var v int64
	if v, ok = get(4); !ok {
		return s, errStatFormat
	}
	s.ppid = int32(v)
	s.flags, _ = getu(9)
	s.threads, _ = getu(20)
	if s.utime, ok = getu(14); !ok {
		return s, errStatFormat
	}
	if s.stime, ok = getu(15); !ok {
		return s, errStatFormat
	}
	if s.priority, ok = get(18); !ok {
		return s, errStatFormat
	}
	if s.nice, ok = get(19); !ok {
		return s, errStatFormat
	}
	if s.startTicks, ok = getu(22); !ok {
		return s, errStatFormat
	}
	s.processor, _ = get(39)
	s.rtPriority, _ = getu(40)
	s.policy, _ = getu(41)
	return s, nil
}

// gone reports whether err means the pinned process has ended.
func gone(err error) bool {
	return errors.Is(err, unix.ESRCH) || errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT)
}

// denied reports an access failure (not an exit).
func denied(err error) bool {
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// pinIdentity opens id's /proc directory and checks, through it, that the
// running process has id's start time. sample.Verify runs first as the
// host-wide identity check. Errors: PROCESS_EXITED (gone, zombie or PID
// reused), IDENTITY_UNVERIFIABLE (stat unreadable), ACCESS_DENIED.
func pinIdentity(id sample.Identity) (*pinned, statInfo, error) { return FS{}.pinIdentity(id) }

// pinIdentity is the package's pinIdentity in the tree fs.
func (fs FS) pinIdentity(id sample.Identity) (*pinned, statInfo, error) {
	exited := contract.Errorf(contract.CodeProcessExited, "the process of this process_ref has exited")
	switch sample.VerifyIn(fs.Root(), id) {
	case sample.Exited:
		return nil, statInfo{}, exited
	case sample.Unverifiable:
		return nil, statInfo{}, contract.Errorf(contract.CodeIdentityUnverifiable, "the process's start time cannot be read, so its identity cannot be verified")
	}
	p, err := fs.openPinned(id.PID)
	if err != nil {
		if denied(err) {
			return nil, statInfo{}, contract.Errorf(contract.CodeAccessDenied, "access to the process's /proc directory was denied")
		}
		return nil, statInfo{}, exited
	}
	st, err := p.stat()
	if err != nil {
		p.close()
		if gone(err) {
			return nil, statInfo{}, exited
		}
		return nil, statInfo{}, contract.Errorf(contract.CodeIdentityUnverifiable, "the process's start time cannot be read, so its identity cannot be verified")
	}
	if st.startTicks != id.StartTicks || st.state == 'X' || (st.state == 'Z' && !sample.LeaderExited(st.state, st.threads)) || !p.useLiveTask(st) {
		p.close()
		return nil, statInfo{}, exited
	}
	return p, st, nil
}

func (p *pinned) stat() (statInfo, error) {
	var buf [1024]byte
	b, err := p.read("stat", buf[:0:len(buf)])
	if err != nil {
		return statInfo{}, err
	}
	return parseStatLine(b)
}

// pfExiting is PF_EXITING in the stat flags field (include/linux/sched.h):
// set when the task enters do_exit, before its fd table and memory are
// released and long before it is a zombie.
const pfExiting = 0x4

// pfKthread is PF_KTHREAD in the stat flags field (include/linux/sched.h),
// the flag ps(1) and the kernel's own get_task_exe_file use to tell a
// kernel thread: it has no user address space, so /proc/PID/exe fails with
// ENOENT (and image with it) while the thread runs.
const pfKthread = 0x00200000

// stillSame re-checks the lifetime (PID and start time) through the pinned
// directory and sample.Verify: true when the same lifetime still runs and
// is not exiting. An exiting task (PF_EXITING) has state R or D while
// exit() tears down its fds and mappings, so a read that failed then is
// the exit's doing, not a closed fd.
func (p *pinned) stillSame(id sample.Identity) bool {
	if !p.stillRuns(id.StartTicks) {
		return false
	}
	return sample.VerifyIn(FS{root: p.root}.Root(), id) == sample.Alive
}

// stillRuns reports, from the pinned directory alone (no lookup by PID),
// whether the lifetime with start time startTicks still runs: its leader's
// stat (statInfo.running) and, when its leader has exited, the stat of the
// task it is read through.
//
// A zombie leader with other threads is a group exit in progress (SIGKILL,
// exit_group) as often as a leader that ended alone: the leader becomes a
// zombie while the other threads are still being torn down. Unless a task
// that is not ending remains (taskEnding), the lifetime has ended.
func (p *pinned) stillRuns(startTicks uint64) bool {
	st, err := p.stat()
	if err != nil || !st.running(startTicks) {
		return false
	}
	if p.leaderExited() {
		return !taskEnding(p.tfd)
	}
	if sample.LeaderExited(st.state, st.threads) {
		// The leader ended after it was pinned: the process runs only
		// while one of its other tasks does.
		return p.liveTask() >= 0
	}
	return true
}

// sigkillPending is SIGKILL's bit in the SigPnd mask of /proc/PID/status
// (signal 9, bit 8): the kernel queues it on every thread of a group
// exit (complete_signal, zap_other_threads) before they run do_exit.
const sigkillPending = 1 << 8

// taskEnding reports, from the task directory dir (/proc/PID or
// /proc/PID/task/TID), whether that task is ending or gone: stat
// unreadable, state Z or X, PF_EXITING set, or SIGKILL pending on it (a
// group exit it has not yet run). An unreadable status counts as not
// ending: stat is the authority, SigPnd only an earlier sign.
func taskEnding(dir int) bool {
	var buf [2048]byte
	b, err := readInto(dir, "stat", buf[:0:len(buf)])
	if err != nil {
		return true
	}
	ts, err := parseStatLine(b)
	if err != nil || ts.state == 'Z' || ts.state == 'X' || ts.flags&pfExiting != 0 {
		return true
	}
	b, err = readInto(dir, "status", buf[:0:len(buf)])
	if err != nil {
		return false
	}
	return sigPending(b)&sigkillPending != 0
}

// sigPending is the SigPnd mask of a /proc/PID/status text (hex), 0 when
// absent or malformed.
func sigPending(status []byte) uint64 {
	const key = "\nSigPnd:"
	i := bytes.Index(status, []byte(key))
	if i < 0 {
		return 0
	}
	rest := bytes.TrimLeft(status[i+len(key):], " \t")
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 16, 64)
	if err != nil {
		return 0
	}
	return v
}

// liveTask returns an open directory of a task of the pinned process other
// than the leader that is not ending (taskEnding), or -1 when none is
// left. The caller closes it.
func (p *pinned) liveTask() int {
	tfd, names, err := p.fdNames("task")
	if err != nil {
		return -1
	}
	defer unix.Close(tfd)
	sortNumeric(names)
	self := strconv.Itoa(int(p.pid))
	for _, n := range names {
		if n == self {
			continue
		}
		d, err := unix.Openat(tfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if !taskEnding(d) {
			return d
		}
		unix.Close(d)
	}
	return -1
}

// running reports whether the leader's stat s is of the lifetime with
// start time startTicks and that lifetime still runs: not a zombie (unless
// only its leader has exited, sample.LeaderExited), not dead, not exiting
// (PF_EXITING on the leader; an exited leader's flag is its own, so it is
// not consulted then).
func (s statInfo) running(startTicks uint64) bool {
	if s.startTicks != startTicks || s.state == 'X' {
		return false
	}
	if s.state == 'Z' {
		return sample.LeaderExited(s.state, s.threads)
	}
	return s.flags&pfExiting == 0
}

// finishTargeted applies the after-collection identity check to a
// per-process capture: if the process ended during collection, rows read
// through the pinned directory are still its own, so the capture becomes
// partial; with no rows it is PROCESS_EXITED.
func finishTargeted(c *Capture, p *pinned, id sample.Identity, exitedDuring bool) (*Capture, error) {
	if exitedDuring || !p.stillSame(id) {
		if len(c.Rows) == 0 {
			return nil, contract.Errorf(contract.CodeProcessExited, "the process exited during collection")
		}
		c.warn("the process exited during collection; rows read before it ended are listed and the rest are missing")
		c.Coverage["process_exited"] = true
	}
	return c, nil
}

// ctxErr maps a done context to CANCELLED/TIMEOUT.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return contract.AsError(err)
	}
	return nil
}

func accessDenied(what string) error {
	return contract.Errorf(contract.CodeAccessDenied, "access to %s was denied", what)
}
