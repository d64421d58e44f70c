package host

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/jsonenc"
	"github.com/inquest-dev/inquest/internal/sample"
)

// The namespace and container row fields (ProcessFields):
//
//   - namespaces: {cgroup, ipc, mnt, net, pid, user, uts}: the inode of
//     each namespace (/proc/PID/ns/KIND; equal numbers are the same
//     namespace), null when unread, with unavailable {kind: reason}
//     beside them when any is (access_denied, process_exited,
//     unsupported, unreadable).
//   - ns_pid: {value: [pid, ...]}: the PID in each PID namespace the
//     process is visible in, this host's view first and its own
//     namespace's last (NSpid of /proc/PID/status), or {unavailable:
//     reason}.
//   - container: {runtime, id, pod, engine, cgroup, rule}
//     (sample.Container; id, pod, engine, rule null where they do not
//     apply), or with unavailable: reason when /proc/PID/cgroup was not
//     read.
//
// A lifetime known only from history has each as {unavailable:
// process_not_live}. The facts are read when the sampler first sees a
// lifetime and again after it execs.

// appendNamespaces appends the namespaces value of f (nil: unsupported).
func appendNamespaces(b []byte, f *sample.Facts) []byte {
	if f == nil {
		return append(b, `{"unavailable":"unsupported"}`...)
	}
	ns := &f.Namespaces
	// keys sorted: cgroup ipc mnt net pid unavailable user uts
	order := []int{sample.NSCgroup, sample.NSIpc, sample.NSMnt, sample.NSNet, sample.NSPid, -1, sample.NSUser, sample.NSUts}
	b = append(b, '{')
	for _, i := range order {
		if i == -1 {
			var un []int
			for j := range sample.NamespaceKinds {
				if !ns.Known(j) {
					un = append(un, j)
				}
			}
			if len(un) == 0 {
				continue
			}
			b = jsonenc.Key(b, "unavailable")
			b = append(b, '{')
			// reasons in sorted kind order
			sortKinds(un)
			for _, j := range un {
				b = jsonenc.Key(b, sample.NamespaceKinds[j])
				b = jsonenc.String(b, reasonOr(ns.Reason[j]))
			}
			b = append(b, '}')
			continue
		}
		b = jsonenc.Key(b, sample.NamespaceKinds[i])
		if ns.Known(i) {
			b = strconv.AppendUint(b, ns.Inode[i], 10)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}

func sortKinds(ix []int) {
	for i := 1; i < len(ix); i++ {
		for j := i; j > 0 && sample.NamespaceKinds[ix[j]] < sample.NamespaceKinds[ix[j-1]]; j-- {
			ix[j], ix[j-1] = ix[j-1], ix[j]
		}
	}
}

func reasonOr(r string) string {
	if r == "" {
		return sample.ReasonUnreadable
	}
	return r
}

// appendNSPid appends the ns_pid value of f.
func appendNSPid(b []byte, f *sample.Facts) []byte {
	if f == nil {
		return append(b, `{"unavailable":"unsupported"}`...)
	}
	if len(f.Namespaces.NSpid) == 0 {
		b = append(b, `{"unavailable":`...)
		b = jsonenc.String(b, reasonOr(f.Namespaces.NSpidReason))
		return append(b, '}')
	}
	b = append(b, `{"value":[`...)
	for i, p := range f.Namespaces.NSpid {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(p), 10)
	}
	return append(b, "]}"...)
}

// appendContainer appends the container value of f.
func appendContainer(b []byte, f *sample.Facts) []byte {
	if f == nil {
		return append(b, `{"runtime":"unknown","unavailable":"unsupported"}`...)
	}
	c := f.Container
	opt := func(b []byte, s string) []byte {
		if s == "" {
			return append(b, "null"...)
		}
		return jsonenc.String(b, s)
	}
	b = append(b, `{"cgroup":`...)
	b = opt(b, c.Cgroup)
	b = append(b, `,"engine":`...)
	b = opt(b, c.Engine)
	b = append(b, `,"id":`...)
	b = opt(b, c.ID)
	b = append(b, `,"pod":`...)
	b = opt(b, c.Pod)
	b = append(b, `,"rule":`...)
	b = opt(b, c.Rule)
	b = append(b, `,"runtime":`...)
	b = jsonenc.String(b, c.Runtime)
	if c.Reason != "" {
		b = append(b, `,"unavailable":`...)
		b = jsonenc.String(b, c.Reason)
	}
	return append(b, '}')
}

// containerFilter selects processes by container: runtime (a
// sample.Runtime* name: docker, podman, containerd, cri-o, kubernetes,
// systemd-nspawn, lxc, none, unknown; "any" is every container) and id
// (a prefix of the container id, at least 4 characters, or the whole
// name of an nspawn or lxc container; a kubernetes pod UID matches its
// containers).
type containerFilter struct {
	Runtime string `json:"runtime"`
	ID      string `json:"id"`
}

// containerRuntimes are the runtime filter values.
var containerRuntimes = []string{"any", sample.RuntimeDocker, sample.RuntimePodman, sample.RuntimeContainerd, sample.RuntimeCRIO, sample.RuntimeKubernetes, sample.RuntimeNspawn, sample.RuntimeLXC, sample.RuntimeNone, sample.RuntimeUnknown}

// match reports whether facts f fit the filter.
func (cf *containerFilter) match(f *sample.Facts) bool {
	c := sample.Container{Runtime: sample.RuntimeUnknown}
	if f != nil {
		c = f.Container
	}
	switch cf.Runtime {
	case "":
	case "any":
		if !c.InContainer() {
			return false
		}
	default:
		if c.Runtime != cf.Runtime {
			return false
		}
	}
	if cf.ID != "" {
		id := strings.ToLower(cf.ID)
		if !c.InContainer() || !(strings.HasPrefix(c.ID, id) || c.ID == cf.ID || c.Pod == id) {
			return false
		}
	}
	return true
}

// parseContainerFilter reads filter.container: a runtime
// (containerRuntimes), "runtime:id", or an id alone (a prefix of at
// least 4 characters of a container id, a pod UID or a container name);
// INVALID_ARGUMENT at /filter/container otherwise.
func parseContainerFilter(v string) (*containerFilter, error) {
	bad := func(msg string) error { return invalidAt("/filter/container", "%s", msg) }
	if slices.Contains(containerRuntimes, v) {
		return &containerFilter{Runtime: v}, nil
	}
	cf := &containerFilter{ID: v}
	if rt, id, ok := strings.Cut(v, ":"); ok {
		if !slices.Contains(containerRuntimes, rt) {
			return nil, bad("filter.container names runtime " + strconv.Quote(rt) + ": use one of " + strings.Join(containerRuntimes, ", ") + ", optionally :ID")
		}
		cf = &containerFilter{Runtime: rt, ID: id}
	}
	if len(cf.ID) < 4 || len(cf.ID) > 128 {
		return nil, bad("filter.container is a runtime (" + strings.Join(containerRuntimes, ", ") + "), runtime:ID or an ID: an id prefix of at least 4 characters (docker ps shows 12), a pod UID or a container name")
	}
	return cf, nil
}

// matchNSPid reports whether p is the process with PID nsPID in its own
// PID namespace pidNS (or, when pidNS is this host's own PID namespace,
// host PID nsPID).
func matchNSPid(p *sample.Process, nsPID int32, pidNS uint64, own uint64) bool {
	if pidNS == own && own != 0 {
		return p.PID == nsPID
	}
	if p.Facts == nil || p.Facts.Namespaces.Inode[sample.NSPid] != pidNS {
		return false
	}
	in, ok := p.Facts.Namespaces.InnerPID()
	return ok && in == nsPID
}

// ownPIDNS is the inode of this host process's PID namespace, 0 when
// unreadable.
var ownPIDNS = sync.OnceValue(func() uint64 { return sample.Namespaces(os.Getpid()).Inode[sample.NSPid] })

// resolveNSPid finds the process of the latest snapshot with PID nsPID in
// PID namespace pidNS: PROCESS_EXITED when none has, INVALID_ARGUMENT
// when more than one has (their host PIDs named).
func resolveNSPid(snap *sample.Snapshot, nsPID int32, pidNS uint64) (*sample.Process, error) {
	own := ownPIDNS()
	var found []*sample.Process
	for i := range snap.Procs {
		if matchNSPid(&snap.Procs[i], nsPID, pidNS, own) {
			found = append(found, &snap.Procs[i])
		}
	}
	switch len(found) {
	case 0:
		e := contract.Errorf(contract.CodeProcessExited, "no live process has pid %d in pid namespace %d (ns_pid of list_processes shows each process's PIDs; namespaces.pid its namespace)", nsPID, pidNS)
		e.Field = "/pid_ns"
		e.NextAction = &contract.Action{Tool: "list_processes", Arguments: map[string]any{"filter": map[string]any{"pid_ns": pidNS}, "projection": []string{"process_ref", "pid", "name", "ns_pid"}}}
		return nil, e
	case 1:
		return found[0], nil
	}
	pids := make([]string, len(found))
	for i, p := range found {
		pids[i] = strconv.Itoa(int(p.PID))
	}
	e := contract.Errorf(contract.CodeInvalidArgument, "pid %d in pid namespace %d is ambiguous: host pids %s hold it", nsPID, pidNS, strings.Join(pids, ", "))
	e.Field = "/pid_ns"
	return nil, e
}

// viewCoverage assesses snap against this host's /proc view
// (sample.ProcView): the proc_view coverage object and whether the view
// is restricted.
func viewCoverage(snap *sample.Snapshot) (map[string]any, bool, string) {
	var tasks int64
	for i := range snap.Procs {
		if snap.Procs[i].Has(sample.PThreads) {
			tasks += int64(snap.Procs[i].Vals[sample.PThreads])
		} else {
			tasks++
		}
	}
	v := sample.ReadProcView("")
	c := v.Assess(tasks, snap.Denied)
	m := c.Map()
	m["processes_listed"] = len(snap.Procs)
	if v.HidePID != "" {
		m["hidepid"] = v.HidePID
	} else {
		m["hidepid"] = nil
	}
	m["proc_mount_options"] = nilIfEmpty(v.Options)
	warn := ""
	if c.Restricted {
		warn = "this host's view of /proc is restricted, so processes are missing from the listing: " + strings.Join(c.Evidence, "; ") + " (coverage.proc_view)"
	}
	return m, c.Restricted, warn
}

// matchNS applies filter.container (cf, nil when absent) and
// filter.pid_ns (with filter.pid as the PID inside it) to r; a
// history-only row matches neither.
func (r *procRow) matchNS(f *filter, cf *containerFilter) bool {
	if cf == nil && f.PidNS == nil {
		return true
	}
	if r.p == nil {
		return false
	}
	if cf != nil && !cf.match(r.p.Facts) {
		return false
	}
	if f.PidNS != nil {
		if f.PID != nil {
			return matchNSPid(r.p, *f.PID, *f.PidNS, ownPIDNS())
		}
		return r.p.Facts != nil && r.p.Facts.Namespaces.Inode[sample.NSPid] == *f.PidNS
	}
	return true
}
