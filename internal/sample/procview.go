package sample

import (
	"bytes"
	"strconv"
	"strings"
)

// ProcView says how complete this process's view of /proc is: the proc
// mount's options, the PID namespace it shows, mounts that cover
// /proc/PID directories, and the kernel's own task count to compare a
// listing with. Read it with ReadProcView; Assess compares it with a
// listing.
type ProcView struct {
	// MountPoint is the proc mount read ("/proc"), Options its super
	// options ("rw,hidepid=invisible"); both "" when mountinfo was not
	// readable.
	MountPoint, Options string
	// HidePID is the hidepid option ("" when absent; the kernel prints
	// "invisible", "noaccess", "ptraceable", or 0/1/2/4 on older
	// kernels), and HideGID its gid= option (-1 when absent).
	HidePID string
	HideGID int64
	// HidePIDApplies says hidepid restricts this process: it is set to
	// something other than off, the process is not root and not in the
	// gid= group (the kernel then shows only processes it may ptrace).
	HidePIDApplies bool
	// SubsetPID says the mount has subset=pid (only PID directories).
	SubsetPID bool
	// NestedPIDNamespace says this process's PID namespace is not the
	// initial one (its NSpid has more than one entry): /proc shows that
	// namespace's processes only when mounted for it.
	NestedPIDNamespace bool
	// CoveredPIDs are /proc/PID directories with another mount on them
	// (a bind mount hides the process it covers).
	CoveredPIDs []string
	// KernelTasks is the task count of /proc/loadavg's fourth field (the
	// number after the slash: every thread of every process on the host,
	// whatever the PID namespace), -1 when unreadable.
	KernelTasks int64
}

// ViewCoverage is a listing's completeness against the kernel's counts:
// TasksListed (threads of the listed processes) + TasksNotListed =
// KernelTasks whenever the kernel count is known and not below the
// listed one (tasks start and end between the two reads, so the sum is
// as of the later read). Restricted says the view hides processes, and
// Evidence how that was detected.
type ViewCoverage struct {
	Restricted     bool
	Evidence       []string
	KernelTasks    int64
	TasksListed    int64
	TasksNotListed int64
	// Unreadable is the processes listed by /proc but not readable.
	Unreadable int
}

// countEvidenceRatio: a listing holding fewer than half the kernel's
// tasks is restricted by the count alone (a busy host starts and ends
// far fewer tasks than that between two reads).
const countEvidenceRatio = 2

// Assess compares a listing (its processes' thread counts summed as
// tasksListed, unreadable processes counted) with the view.
func (v ProcView) Assess(tasksListed int64, unreadable int) ViewCoverage {
	c := ViewCoverage{KernelTasks: v.KernelTasks, TasksListed: tasksListed, TasksNotListed: -1, Unreadable: unreadable}
	if v.HidePIDApplies {
		c.Evidence = append(c.Evidence, "mountinfo: "+v.MountPoint+" is mounted with hidepid="+v.HidePID+" and this process is not exempt (not root, not in its gid group): processes it may not ptrace are hidden")
	}
	if v.NestedPIDNamespace {
		c.Evidence = append(c.Evidence, "NSpid of /proc/self/status has more than one entry: this process runs in a nested PID namespace and /proc lists only the processes of the namespace it was mounted for")
	}
	if len(v.CoveredPIDs) > 0 {
		c.Evidence = append(c.Evidence, "mountinfo: mounts cover "+strings.Join(v.CoveredPIDs, ", ")+" (a mount on /proc/PID hides that process)")
	}
	if unreadable > 0 {
		c.Evidence = append(c.Evidence, strconv.Itoa(unreadable)+" /proc/PID directories could not be read (access denied)")
	}
	if v.KernelTasks >= 0 {
		c.TasksNotListed = max(0, v.KernelTasks-tasksListed)
		if tasksListed*countEvidenceRatio < v.KernelTasks {
			c.Evidence = append(c.Evidence, "/proc/loadavg counts "+strconv.FormatInt(v.KernelTasks, 10)+" tasks on the host; the listed processes hold "+strconv.FormatInt(tasksListed, 10))
		}
	}
	c.Restricted = len(c.Evidence) > 0
	return c
}

// Map is the coverage as a JSON object (the proc_view coverage field):
// restricted, evidence, kernel_tasks, tasks_listed, tasks_not_listed
// (null when the kernel count is unknown), processes_unreadable.
func (c ViewCoverage) Map() map[string]any {
	m := map[string]any{"restricted": c.Restricted, "evidence": nonNil(c.Evidence), "tasks_listed": c.TasksListed, "processes_unreadable": c.Unreadable,
		"kernel_tasks": nil, "tasks_not_listed": nil, "kernel_tasks_source": "/proc/loadavg"}
	if c.KernelTasks >= 0 {
		m["kernel_tasks"], m["tasks_not_listed"] = c.KernelTasks, c.TasksNotListed
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// parseProcMount finds the last mount at mountPoint in a
// /proc/self/mountinfo text (proc(5)) and returns its super options,
// plus the mount points of mounts directly on mountPoint/PID.
func parseProcMount(mountinfo []byte, mountPoint string) (opts string, found bool, covered []string) {
	for len(mountinfo) > 0 {
		i := bytes.IndexByte(mountinfo, '\n')
		line := mountinfo
		if i >= 0 {
			line, mountinfo = mountinfo[:i], mountinfo[i+1:]
		} else {
			mountinfo = nil
		}
		f := strings.Fields(string(line))
		if len(f) < 10 {
			continue
		}
		mp := unescapeMount(f[4])
		sep := -1
		for j := 6; j < len(f); j++ {
			if f[j] == "-" {
				sep = j
				break
			}
		}
		if sep < 0 || sep+3 >= len(f) {
			continue
		}
		if mp == mountPoint && f[sep+1] == "proc" {
			opts, found, covered = f[sep+3], true, nil
			continue
		}
		if rest, ok := strings.CutPrefix(mp, mountPoint+"/"); ok && found {
			if _, err := strconv.ParseUint(rest, 10, 31); err == nil {
				covered = append(covered, mp)
			}
		}
	}
	return opts, found, covered
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// optionValue returns the value of key= in a comma-separated option list.
func optionValue(opts, key string) (string, bool) {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, key+"="); ok {
			return v, true
		}
		if o == key {
			return "", true
		}
	}
	return "", false
}

// hidePIDOff reports a hidepid value that hides nothing.
func hidePIDOff(v string) bool { return v == "" || v == "0" || v == "off" }

// parseLoadavgTasks returns the total after the slash of /proc/loadavg's
// fourth field ("2/141").
func parseLoadavgTasks(b []byte) (int64, bool) {
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, false
	}
	_, tot, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(tot, 10, 64)
	return v, err == nil && v > 0
}

func parseGID(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
