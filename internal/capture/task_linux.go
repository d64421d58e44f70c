//go:build linux

package capture

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// clockTicks is CLK_TCK (USER_HZ), the unit of stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// statusFields returns the "Key:\tvalue" lines of a /proc status file.
func parseStatusFile(b []byte) map[string]string {
	out := map[string]string{}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(k) == 0 {
			continue
		}
		out[string(k)] = string(bytes.TrimSpace(v))
	}
	return out
}

var stateNames = map[byte]string{'R': "running", 'S': "sleeping", 'D': "disk_sleep", 'Z': "zombie", 'T': "stopped",
	't': "tracing_stop", 'X': "dead", 'I': "idle", 'P': "parked", 'W': "waking", 'K': "wakekill"}

func stateName(b byte) string {
	if s, ok := stateNames[b]; ok {
		return s
	}
	return string(rune(b))
}

// Threads lists the threads of the verified process id from
// /proc/PID/task/TID/{stat,status}. Rows: tid, name (comm), state,
// priority and nice (stat fields 18 and 19), user_cpu_seconds and
// system_cpu_seconds (fields 14 and 15 / CLK_TCK), last_cpu (field 39),
// voluntary_context_switches and nonvoluntary_context_switches (status;
// null when unreadable). Coverage: threads_listed and threads_unavailable
// (threads that ended or could not be read during the capture).
func Threads(ctx context.Context, id sample.Identity) (*Capture, error) {
	return FS{}.Threads(ctx, id)
}

// Threads is the package's Threads in the tree fs.
func (fs FS) Threads(ctx context.Context, id sample.Identity) (*Capture, error) {
	p, _, err := fs.pinIdentity(id)
	if err != nil {
		return nil, err
	}
	defer p.close()
	c := &Capture{Kind: KindThreads, Started: time.Now(), Coverage: map[string]any{}}
	tfd, tids, err := p.fdNames("task")
	if err != nil {
		if denied(err) {
			return nil, accessDenied("the process's thread list")
		}
		return finishTargeted(c, p, id, true)
	}
	defer unix.Close(tfd)
	sortNumeric(tids)
	task := &pinned{fd: tfd, tfd: tfd, pid: id.PID, root: fs.root}
	unavailable := 0
	buf := make([]byte, 0, 2048)
	for i, tid := range tids {
		if i&63 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		b, err := task.read(tid+"/stat", buf)
		if err != nil {
			unavailable++
			continue
		}
		st, err := parseStatLine(b)
		if err != nil {
			unavailable++
			continue
		}
		var vol, nonvol any
		if sb, err := task.read(tid+"/status", nil); err == nil {
			m := parseStatusFile(sb)
			if v, err := strconv.ParseUint(m["voluntary_ctxt_switches"], 10, 64); err == nil {
				vol = strconv.FormatUint(v, 10)
			}
			if v, err := strconv.ParseUint(m["nonvoluntary_ctxt_switches"], 10, 64); err == nil {
				nonvol = strconv.FormatUint(v, 10)
			}
		}
		tidN, _ := strconv.Atoi(tid)
		var lastCPU any
		if st.fields >= 37 {
			lastCPU = st.processor
		}
		fields := make([]Field, 0, 11)
		fields = append(fields, Field{"tid", tidN})
		fields = appendText(fields, "name", st.name)
		c.Rows = append(c.Rows, Row{Owner: st.name, Proc: id, Verified: true, Fields: append(fields,
			Field{"state", stateName(st.state)}, Field{"priority", st.priority}, Field{"nice", st.nice},
			Field{"user_cpu_seconds", float64(st.utime) / clockTicks}, Field{"system_cpu_seconds", float64(st.stime) / clockTicks},
			Field{"last_cpu", lastCPU}, Field{"voluntary_context_switches", vol}, Field{"nonvoluntary_context_switches", nonvol},
		)})
	}
	c.Finished = time.Now()
	c.Coverage["threads_listed"] = len(tids)
	c.Coverage["threads_unavailable"] = unavailable
	if unavailable > 0 {
		c.warn(strconv.Itoa(unavailable) + " threads ended or could not be read during the capture")
	}
	return finishTargeted(c, p, id, false)
}

var policyNames = map[uint64]string{0: "SCHED_OTHER", 1: "SCHED_FIFO", 2: "SCHED_RR", 3: "SCHED_BATCH", 5: "SCHED_IDLE", 6: "SCHED_DEADLINE"}

var ioClassNames = map[int]string{0: "none", 1: "realtime", 2: "best_effort", 3: "idle"}

// Scheduling returns one row for the verified process id: policy (stat
// field 41), nice (19), rt_priority (40), affinity_mask (status
// Cpus_allowed, hex) and affinity_cpus (Cpus_allowed_list), cgroup
// (/proc/PID/cgroup lines), cpuset (/proc/PID/cpuset), oom_score_adj and
// io_priority ({class, level} from ioprio_get(2)). Absent fields are
// omitted without per-field reasons. Nothing is
// changed.
func Scheduling(ctx context.Context, id sample.Identity) (*Capture, error) {
	return FS{}.Scheduling(ctx, id)
}

// Scheduling is the package's Scheduling in the tree fs. io_priority comes
// from a system call on the PID, not from a file, so it is read only in
// the live /proc (a fixture tree has no such process).
func (fs FS) Scheduling(ctx context.Context, id sample.Identity) (*Capture, error) {
	p, st, err := fs.pinIdentity(id)
	if err != nil {
		return nil, err
	}
	defer p.close()
	c := &Capture{Kind: KindScheduling, Started: time.Now(), Coverage: map[string]any{}}
	owner := p.processName(st.name, make([]byte, 256))
	f := []Field{{"pid", id.PID}}
	f = appendText(f, "name", owner)
	f = appendText(f, "comm", st.name)
	if pn, ok := policyNames[st.policy]; ok {
		f = append(f, Field{"policy", pn})
	}
	f = append(f, Field{"nice", st.nice}, Field{"rt_priority", st.rtPriority})
	if b, err := p.read("status", nil); err == nil {
		m := parseStatusFile(b)
		if v := m["Cpus_allowed"]; v != "" {
			f = append(f, Field{"affinity_mask", strings.ReplaceAll(v, ",", "")})
		}
		if v := m["Cpus_allowed_list"]; v != "" {
			f = append(f, Field{"affinity_cpus", v})
		}
	}
	if b, err := p.read("cgroup", nil); err == nil {
		f = append(f, Field{"cgroup", cgroupLines(b)})
	}
	if b, err := p.read("cpuset", nil); err == nil {
		f = append(f, Field{"cpuset", strings.TrimSpace(string(b))})
	}
	if b, err := p.read("oom_score_adj", nil); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			f = append(f, Field{"oom_score_adj", v})
		}
	}
	// ioprio_get(IOPRIO_WHO_PROCESS, pid): class in bits 13.., level below.
	if r, _, errno := ioprioGet(fs, id.PID); errno == 0 {
		class := int(r >> 13)
		lvl := int(r & 0x1fff)
		io := map[string]any{"class": ioClassNames[class], "level": lvl}
		if class == 0 {
			// "none": the kernel derives best-effort level (nice+20)/5
			io["effective_level"] = int((st.nice + 20) / 5)
		}
		f = append(f, Field{"io_priority", io})
	}
	c.Rows = append(c.Rows, Row{Owner: owner, Comm: st.name, Proc: id, Verified: true, Fields: f})
	c.Finished = time.Now()
	return finishTargeted(c, p, id, false)
}

// cgroupLines splits /proc/PID/cgroup into its lines
// ("hierarchy-ID:controllers:path"); a cgroup path may hold spaces, so
// lines are split on newlines only. Empty lines are dropped.
func cgroupLines(b []byte) []string {
	out := []string{}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// ioprioGet is ioprio_get(IOPRIO_WHO_PROCESS, pid) on the live /proc;
// ENOSYS in any other tree.
func ioprioGet(fs FS, pid int32) (uintptr, uintptr, unix.Errno) {
	if !fs.live() {
		return 0, 0, unix.ENOSYS
	}
	return unix.Syscall(unix.SYS_IOPRIO_GET, 1, uintptr(pid), 0)
}

// unavailableFor returns the {unavailable: reason} object for a failed
// read of the pinned process id's /proc file. ENOENT or ESRCH means the
// process exited only when it no longer runs (stillSame): a live kernel
// thread has no executable (/proc/PID/exe fails with ENOENT while it runs,
// as `ls -l /proc/2/exe` shows), so exe and image are kernel_thread; any
// other such failure of a live process is unreadable. Never process_exited
// for a live process.
func (p *pinned) unavailableFor(err error, id sample.Identity) map[string]any {
	if gone(err) {
		st, serr := p.stat()
		if serr == nil && p.stillSame(id) {
			if st.flags&pfKthread != 0 {
				return map[string]any{"unavailable": reasonKernelThread}
			}
			return map[string]any{"unavailable": "unreadable"}
		}
	}
	return unavailable(err)
}

// reasonKernelThread is the unavailable reason of exe and image for a
// kernel thread (PF_KTHREAD): it has no executable. It is the whole
// answer, not a gap, so it does not make the capture partial.
const reasonKernelThread = "kernel_thread"

// unavailable returns the {unavailable: reason} object for err.
func unavailable(err error) map[string]any {
	switch {
	case denied(err):
		return map[string]any{"unavailable": "access_denied"}
	case gone(err):
		return map[string]any{"unavailable": "process_exited"}
	}
	return map[string]any{"unavailable": "unreadable"}
}

func value(v any) map[string]any { return map[string]any{"value": v} }

// ProcessInfo returns one row of metadata for the verified process id:
// pid, name (sample.FullName), comm, then each requested field as {value:
// ...} or {unavailable: reason}
// (access_denied, process_exited, unreadable, unsupported, and
// kernel_thread for a kernel thread's exe and image): exe
// (/proc/PID/exe) and cwd as {value: path, value_bytes (only when lossy),
// deleted (sample.ResolveDeleted; the suffix is removed from value)}, image ({size_bytes, modified_at, build_id} of the
// running executable, read through /proc/PID/exe), parent ({pid}),
// start_time (boot time from /proc/stat btime + stat field 22 / CLK_TCK), cgroup (lines), namespaces (name -> link
// such as "net:[4026531840]"), ns_pid (the NSpid chain of status, this
// host's PID first), container (sample.ParseCgroup of the cgroup file:
// runtime, id, pod, engine, cgroup, rule), command_line (argv) and user ({uid, name}).
// A requested field that is unavailable for a reason other than
// unsupported makes the capture partial with coverage.fields_unavailable
// {field: reason}; namespace links refused one by one are
// coverage.namespaces_unreadable. The environment is never read.
//
// command_line is one page of the argv (InfoOptions; sample.PageArgv):
// the row then also carries command_line_truncated and, when truncated,
// command_line_bytes (decimal string), command_line_sha256 (of the
// whole /proc/PID/cmdline), command_line_arguments (the count) and
// command_line_next_offset (null at the end), and the capture is partial
// with a warning naming the next page.
func ProcessInfo(ctx context.Context, id sample.Identity, fields []string) (*Capture, error) {
	return FS{}.ProcessInfoPage(ctx, id, fields, InfoOptions{})
}

// InfoOptions page ProcessInfo's command_line: CommandLineOffset is the
// index of the first argument, CommandLineLimit the page size in bytes
// (each argument's bytes plus its NUL; 0 means
// sample.DefaultCommandLinePage).
type InfoOptions struct {
	CommandLineOffset, CommandLineLimit int
}

// ProcessInfoPage is ProcessInfo with the command line paged by o.
func ProcessInfoPage(ctx context.Context, id sample.Identity, fields []string, o InfoOptions) (*Capture, error) {
	return FS{}.ProcessInfoPage(ctx, id, fields, o)
}

// ProcessInfo is the package's ProcessInfo in the tree fs.
func (fs FS) ProcessInfo(ctx context.Context, id sample.Identity, fields []string) (*Capture, error) {
	return fs.ProcessInfoPage(ctx, id, fields, InfoOptions{})
}

// ProcessInfoPage is the package's ProcessInfoPage in the tree fs.
func (fs FS) ProcessInfoPage(ctx context.Context, id sample.Identity, fields []string, o InfoOptions) (*Capture, error) {
	if o.CommandLineLimit <= 0 {
		o.CommandLineLimit = sample.DefaultCommandLinePage
	}
	var extra []Field
	p, st, err := fs.pinIdentity(id)
	if err != nil {
		return nil, err
	}
	defer p.close()
	if len(fields) == 0 {
		fields = DefaultInfoFields
	}
	c := &Capture{Kind: KindProcessInfo, Started: time.Now(), Coverage: map[string]any{}}
	buf := make([]byte, 4096)
	owner := p.processName(st.name, buf)
	row := Row{Owner: owner, Comm: st.name, Proc: id, Verified: true, Fields: []Field{{"pid", id.PID}}}
	row.Fields = appendText(row.Fields, "name", owner)
	row.Fields = appendText(row.Fields, "comm", st.name)
	missing := map[string]any{}
	for _, f := range fields {
		var v any
		switch f {
		case "exe", "cwd":
			if l, err := readlinkAt(p.tfd, f, buf); err == nil {
				path, del := resolveLink(p.tfd, p.tfd, f, l)
				m := map[string]any{}
				sample.TextFields("value", path, func(k string, x any) { m[k] = x })
				m["deleted"] = del.JSON()
				v = m
				if f == "exe" {
					row.Path = path
				}
			} else {
				v = p.unavailableFor(err, id)
			}
		case "image":
			fd, err := unix.Openat(p.tfd, "exe", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				v = p.unavailableFor(err, id)
				break
			}
			file := os.NewFile(uintptr(fd), "exe")
			img := map[string]any{}
			if fi, err := file.Stat(); err == nil {
				img["size_bytes"] = strconv.FormatInt(fi.Size(), 10)
				img["modified_at"] = contract.TS(fi.ModTime())
			}
			if bid := buildID(file); bid != "" {
				img["build_id"] = bid
			} else {
				img["build_id"] = nil
			}
			file.Close()
			v = value(img)
		case "parent":
			v = value(map[string]any{"pid": st.ppid})
		case "start_time":
			if bt, ok := fs.bootTime(); ok {
				v = value(contract.TS(bt.Add(time.Duration(st.startTicks) * time.Second / clockTicks)))
			} else {
				v = map[string]any{"unavailable": "unreadable"}
			}
		case "cgroup":
			if b, err := p.read("cgroup", nil); err == nil {
				v = value(cgroupLines(b))
			} else {
				v = p.unavailableFor(err, id)
			}
		case "namespaces":
			nfd, names, err := p.fdNames("ns")
			if err != nil {
				v = p.unavailableFor(err, id)
				break
			}
			// Each link is its own read: another user's process lists its
			// ns directory but refuses the links (EACCES). An empty map
			// would read as "no namespaces", so a facet with no readable
			// link is unavailable, and one with some is listed with the
			// refused names in coverage.
			ns := map[string]any{}
			var nsErr error
			var refused []string
			for _, n := range names {
				if l, err := readlinkAt(nfd, n, buf); err == nil {
					ns[n] = string(l)
				} else {
					nsErr = err
					refused = append(refused, n)
				}
			}
			unix.Close(nfd)
			switch {
			case len(ns) == 0 && nsErr != nil:
				v = p.unavailableFor(nsErr, id)
			case nsErr != nil:
				c.Coverage["namespaces_unreadable"] = refused
				c.warn("some namespace links could not be read (" + unavailable(nsErr)["unavailable"].(string) + "); coverage.namespaces_unreadable names them")
				v = value(ns)
			default:
				v = value(ns)
			}
		case "ns_pid":
			// NSpid of status: the PID in each PID namespace, this
			// host's view first (sample.NamespaceSet)
			if b, err := p.read("status", nil); err == nil {
				if pids, ok := sample.ParseNSpid(b); ok {
					v = value(pids)
				} else {
					v = map[string]any{"unavailable": "unsupported"}
				}
			} else {
				v = p.unavailableFor(err, id)
			}
		case "container":
			// the container rule of the cgroup path (sample.ParseCgroup)
			if b, err := p.read("cgroup", nil); err == nil {
				ct := sample.ParseCgroup(b)
				opt := func(s string) any {
					if s == "" {
						return nil
					}
					return s
				}
				v = value(map[string]any{"runtime": ct.Runtime, "id": opt(ct.ID), "pod": opt(ct.Pod), "engine": opt(ct.Engine), "cgroup": opt(ct.Cgroup), "rule": opt(ct.Rule)})
			} else {
				v = p.unavailableFor(err, id)
			}
		case "command_line":
			if b, err := p.read("cmdline", nil); err == nil {
				pg := sample.PageArgv(b, o.CommandLineOffset, o.CommandLineLimit, true)
				v = value(pg.Args)
				extra = append(extra, Field{"command_line_truncated", pg.Truncated()})
				if pg.Truncated() {
					var next any
					if pg.Next < pg.Total {
						next = pg.Next
					}
					extra = append(extra, Field{"command_line_bytes", strconv.Itoa(pg.Bytes)}, Field{"command_line_sha256", pg.SHA256},
						Field{"command_line_arguments", pg.Total}, Field{"command_line_next_offset", next})
					msg := "command_line holds arguments " + strconv.Itoa(pg.Offset) + " to " + strconv.Itoa(pg.Next) + " of " + strconv.Itoa(pg.Total) +
						" (" + strconv.Itoa(pg.Bytes) + " bytes, a page of at most " + strconv.Itoa(o.CommandLineLimit) + " bytes"
					if pg.Cut {
						msg += "; argument " + strconv.Itoa(pg.Offset) + " is cut at the page size"
					}
					msg += ")"
					if next != nil {
						msg += "; the next page: command_line_offset " + strconv.Itoa(pg.Next)
					}
					c.warn(msg)
				}
			} else {
				v = p.unavailableFor(err, id)
			}
		case "user":
			if b, err := p.read("status", nil); err == nil {
				m := parseStatusFile(b)
				uids := strings.Fields(m["Uid"])
				if len(uids) > 0 {
					u, _ := strconv.ParseUint(uids[0], 10, 32)
					v = value(map[string]any{"uid": u, "name": sample.UserName(uint32(u))})
				} else {
					v = map[string]any{"unavailable": "unreadable"}
				}
			} else {
				v = p.unavailableFor(err, id)
			}
		default:
			v = map[string]any{"unavailable": "unsupported"}
		}
		row.Fields = append(row.Fields, Field{f, v})
		row.Fields = append(row.Fields, extra...)
		extra = extra[:0]
		if m, ok := v.(map[string]any); ok {
			if why, ok := m["unavailable"].(string); ok && why != "unsupported" && why != reasonKernelThread {
				missing[f] = why
			}
		}
	}
	if len(missing) > 0 {
		// A requested facet that could not be read (another user's
		// process: exe, cwd, image and namespaces are access_denied) makes
		// the row partial; coverage names each facet and why.
		c.Coverage["fields_unavailable"] = missing
		c.warn(strconv.Itoa(len(missing)) + " of " + strconv.Itoa(len(fields)) + " requested fields could not be read (coverage.fields_unavailable names each and why, e.g. access_denied for another user's process without the privilege to inspect it)")
	}
	c.Rows = append(c.Rows, row)
	c.Finished = time.Now()
	return finishTargeted(c, p, id, false)
}

// bootTime reads btime (seconds since the epoch) from /proc/stat.
func (fs FS) bootTime() (time.Time, bool) {
	b, err := os.ReadFile(fs.path("stat"))
	if err != nil {
		return time.Time{}, false
	}
	i := bytes.Index(b, []byte("\nbtime "))
	if i < 0 {
		return time.Time{}, false
	}
	rest := b[i+7:]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(v, 0), true
}
