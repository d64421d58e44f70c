package sample

import (
	"bytes"
	"strconv"
)

// NamespaceKinds are the namespace kinds of a NamespaceSet, in its index
// order: the names of the links in /proc/PID/ns/ (namespaces(7)).
var NamespaceKinds = [NumNamespaces]string{"net", "mnt", "pid", "uts", "ipc", "user", "cgroup"}

// NumNamespaces is the number of namespace kinds a NamespaceSet holds.
const NumNamespaces = 7

// Index of each kind in NamespaceSet.Inode.
const (
	NSNet = iota
	NSMnt
	NSPid
	NSUts
	NSIpc
	NSUser
	NSCgroup
)

// Reasons a namespace fact is unknown (NamespaceSet.Reason,
// Container.Reason).
const (
	ReasonAccessDenied  = "access_denied"  // EACCES/EPERM: another user's process without the privilege
	ReasonProcessExited = "process_exited" // the process ended while it was read
	ReasonUnsupported   = "unsupported"    // the kernel has no such link (or not Linux)
	ReasonUnreadable    = "unreadable"     // any other read or parse failure
)

// NamespaceSet is the namespace membership of one process: for each kind
// of NamespaceKinds, the inode number of the namespace (the number in the
// /proc/PID/ns/KIND link, "net:[4026531840]"; two processes are in the
// same namespace exactly when the numbers are equal), and the process's
// PID in each PID namespace it is visible in (NSpid of /proc/PID/status:
// the PID in this host's view first, the innermost namespace's last).
// A fact that could not be read is not zero: Inode[i] is 0 and Reason[i]
// says why; NSpid is nil and NSpidReason says why.
type NamespaceSet struct {
	Inode  [NumNamespaces]uint64
	Reason [NumNamespaces]string
	// NSpid is the PID chain, outermost (this host's view) first.
	NSpid       []int32
	NSpidReason string
}

// Known reports whether the inode of kind index i was read.
func (n *NamespaceSet) Known(i int) bool { return n.Inode[i] != 0 }

// InnerPID returns the process's PID in its own (innermost) PID
// namespace, and false when NSpid is unknown.
func (n *NamespaceSet) InnerPID() (int32, bool) {
	if len(n.NSpid) == 0 {
		return 0, false
	}
	return n.NSpid[len(n.NSpid)-1], true
}

// PIDIn returns the process's PID in the PID namespace at depth d of its
// NSpid chain (0: this host's view).
func (n *NamespaceSet) PIDIn(d int) (int32, bool) {
	if d < 0 || d >= len(n.NSpid) {
		return 0, false
	}
	return n.NSpid[d], true
}

// ParseNSLink parses a namespace link text ("net:[4026531840]") of kind
// and returns its inode number; ok is false for any other text.
func ParseNSLink(kind string, link []byte) (uint64, bool) {
	if len(link) < len(kind)+4 || string(link[:len(kind)]) != kind || string(link[len(kind):len(kind)+2]) != ":[" || link[len(link)-1] != ']' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(link[len(kind)+2:len(link)-1]), 10, 64)
	if err != nil || v == 0 {
		return 0, false
	}
	return v, true
}

// ParseNSpid returns the PIDs of the NSpid line of a /proc/PID/status
// text (tab-separated decimals, outermost first; proc(5), Linux 4.1+);
// ok is false when the line is absent or malformed.
func ParseNSpid(status []byte) ([]int32, bool) {
	i := bytes.Index(status, []byte("\nNSpid:"))
	if i < 0 {
		if !bytes.HasPrefix(status, []byte("NSpid:")) {
			return nil, false
		}
		i = -1
	}
	line := status[i+1+len("NSpid:"):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	var out []int32
	for _, f := range bytes.Fields(line) {
		v, err := strconv.ParseInt(string(f), 10, 32)
		if err != nil || v <= 0 {
			return nil, false
		}
		out = append(out, int32(v))
	}
	if len(out) == 0 {
		return nil, false
	}
	return out, true
}

// Facts are the identity-time facts of one process lifetime that the
// collector reads once (when it first sees the lifetime, and again after
// an exec): its namespaces and its container. A Process shares one Facts
// across snapshots; it is never modified after it is published.
type Facts struct {
	Namespaces NamespaceSet
	Container  Container
}
