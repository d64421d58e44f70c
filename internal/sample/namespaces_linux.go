//go:build linux

package sample

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Namespaces reads the namespace set of pid now from /proc/PID/ns/* and
// the NSpid line of /proc/PID/status (see NamespaceSet). Unreadable facts
// carry their reason; it never fails as a whole.
func Namespaces(pid int) NamespaceSet {
	dir, err := unix.Open("/proc/"+strconv.Itoa(pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		var n NamespaceSet
		r := openReason(err)
		for i := range n.Reason {
			n.Reason[i] = r
		}
		n.NSpidReason = r
		return n
	}
	defer unix.Close(dir)
	return namespacesAt(dir)
}

// ContainerOf reads the container of pid now from /proc/PID/cgroup (see
// Container and ParseCgroup); an unreadable file is Runtime
// RuntimeUnknown with Reason set.
func ContainerOf(pid int) Container {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return Container{Runtime: RuntimeUnknown, Reason: openReason(err)}
	}
	return ParseCgroup(b)
}

// FactsOf reads both identity-time facts of pid now (Namespaces and
// ContainerOf through one open /proc/PID directory).
func FactsOf(pid int) *Facts {
	dir, err := unix.Open("/proc/"+strconv.Itoa(pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		r := openReason(err)
		f := &Facts{Container: Container{Runtime: RuntimeUnknown, Reason: r}}
		for i := range f.Namespaces.Reason {
			f.Namespaces.Reason[i] = r
		}
		f.Namespaces.NSpidReason = r
		return f
	}
	defer unix.Close(dir)
	return factsAt(dir)
}

// factsAt reads the facts of the process whose /proc/PID directory (or
// /proc/PID/task/TID of a live task) is open as dir.
func factsAt(dir int) *Facts {
	f := &Facts{Namespaces: namespacesAt(dir)}
	if b, err := readSmallAt(dir, "cgroup"); err == nil {
		f.Container = ParseCgroup(b)
	} else {
		f.Container = Container{Runtime: RuntimeUnknown, Reason: nsReason(err)}
	}
	return f
}

func namespacesAt(dir int) NamespaceSet {
	var n NamespaceSet
	var buf [64]byte
	for i, k := range NamespaceKinds {
		m, err := unix.Readlinkat(dir, "ns/"+k, buf[:])
		if err != nil {
			n.Reason[i] = nsReason(err)
			continue
		}
		v, ok := ParseNSLink(k, buf[:m])
		if !ok {
			n.Reason[i] = ReasonUnreadable
			continue
		}
		n.Inode[i] = v
	}
	if b, err := readSmallAt(dir, "status"); err != nil {
		n.NSpidReason = nsReason(err)
	} else if pids, ok := ParseNSpid(b); ok {
		n.NSpid = pids
	} else {
		n.NSpidReason = ReasonUnsupported
	}
	return n
}

// readSmallAt reads a small /proc file relative to dir (up to 64 KiB).
func readSmallAt(dir int, name string) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 4096)
	for len(buf) < 64<<10 {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		m, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		buf = buf[:len(buf)+m]
	}
	return buf, nil
}

// nsReason names why a /proc read failed.
func nsReason(err error) string {
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return ReasonAccessDenied
	case errors.Is(err, unix.ESRCH):
		return ReasonProcessExited
	case errors.Is(err, unix.ENOENT):
		// a missing /proc/PID is an exited process; a missing link in a
		// present directory is a kind the kernel lacks (callers reading
		// links of an open directory get ENOENT only for those)
		return ReasonUnsupported
	}
	return ReasonUnreadable
}

// openReason is nsReason for opening /proc/PID itself, where ENOENT
// means the process is gone.
func openReason(err error) string {
	if errors.Is(err, unix.ENOENT) {
		return ReasonProcessExited
	}
	return nsReason(err)
}
