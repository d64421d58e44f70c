//go:build linux

package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// nsKey identifies a namespace: the device and inode of its nsfs file
// (what stat of /proc/PID/ns/net reports; `lsns` and `ip netns identify`
// print the inode).
type nsKey struct{ dev, ino uint64 }

// netNS is one network namespace found through /proc/PID/ns/net.
type netNS struct {
	key nsKey
	// members are up to maxNSMembers processes found in it, in scan
	// order: its tables are read through the first that still runs there.
	members []int32
}

// maxNSMembers bounds the member processes remembered per namespace.
const maxNSMembers = 4

// nsOf stats the nsfs file name (e.g. "ns/net") under the directory dir.
func nsOf(dir int, name string) (nsKey, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, 0); err != nil {
		return nsKey{}, err
	}
	return nsKey{dev: st.Dev, ino: st.Ino}, nil
}

// inNetNS runs fn with the calling goroutine's OS thread in the network
// namespace of the nsfs descriptor nsfd (setns(2) CLONE_NEWNET), so
// sockets fn creates (a sock_diag netlink socket) belong to that
// namespace. fn runs on a new goroutine locked to its thread for its whole
// life and never unlocked: when it returns, the runtime ends that thread
// instead of handing a thread in a foreign namespace to other goroutines.
// The main thread is never used (see below). The error is setns's
// (EPERM without CAP_SYS_ADMIN over the namespace).
func inNetNS(nsfd int, fn func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Never the main thread: the runtime cannot end it (it would
			// be parked for good, still in the other namespace) and
			// /proc/self/ns/net follows it. Holding it locked here, the
			// nested call's goroutine runs on another thread.
			errc <- inNetNS(nsfd, fn)
			runtime.UnlockOSThread()
			return
		}
		// deliberately no UnlockOSThread: see above
		if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		fn()
		errc <- nil
	}()
	return <-errc
}

// Constants of the inet sock_diag interface (include/uapi/linux/inet_diag.h).
const (
	inetDiagReqSz       = 56 // sizeof(struct inet_diag_req_v2)
	inetDiagMsgSz       = 72 // sizeof(struct inet_diag_msg)
	inetDiagReqProtocol = 3  // INET_DIAG_REQ_PROTOCOL: u32 protocol wider than sdiag_protocol's u8
)

// inetDiagEntry is one inet socket as reported by sock_diag.
type inetDiagEntry struct {
	family        uint8
	state         uint8
	local, remote netip.AddrPort
	uid           uint32
	inode         uint64
	rq, wq        uint32
}

// errNoMPTCPDiag reports that the kernel's MPTCP sock_diag (mptcp_diag,
// Linux 5.9 and later) could not be used.
var errNoMPTCPDiag = errors.New("mptcp sock_diag unavailable")

// mptcpDiag is the MPTCP lister Network uses (a variable so tests can
// exercise the path of a kernel without mptcp_diag).
var mptcpDiag = mptcpDiagDump

// kernelAtLeast reports whether the running kernel's release is at least
// major.minor (unknown releases report false).
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	a, rest, _ := strings.Cut(rel, ".")
	b, _, _ := strings.Cut(rest, ".")
	b = strings.TrimRightFunc(b, func(r rune) bool { return r < '0' || r > '9' })
	ma, err1 := strconv.Atoi(a)
	mi, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// mptcpDiagDump lists the MPTCP sockets (IPPROTO_MPTCP, what `ss -M`
// prints) of the caller's network namespace for both address families:
// a SOCK_DIAG_BY_FAMILY dump with sdiag_protocol IPPROTO_TCP and the real
// protocol in an INET_DIAG_REQ_PROTOCOL attribute, as ss does. Kernels
// before 5.9 ignore that attribute and would answer with TCP sockets, so
// there the call fails with errNoMPTCPDiag without asking; so it does when
// the kernel has no MPTCP diag handler (netlink ENOENT).
func mptcpDiagDump() ([]inetDiagEntry, error) {
	if !kernelAtLeast(5, 9) {
		return nil, fmt.Errorf("%w: %v", errNoMPTCPDiag, errors.New("kernel older than 5.9 has no MPTCP sock_diag"))
	}
	var out []inetDiagEntry
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		es, err := inetDiagDump(fam, unix.IPPROTO_MPTCP)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errNoMPTCPDiag, err)
		}
		out = append(out, es...)
	}
	return out, nil
}

// inetDiagDump dumps the sockets of family and protocol in every state
// through NETLINK_SOCK_DIAG in the caller's network namespace.
func inetDiagDump(family uint8, protocol uint32) ([]inetDiagEntry, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	ne := binary.NativeEndian
	req := make([]byte, unix.NLMSG_HDRLEN+inetDiagReqSz+8)
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], 1)
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = family
	r[1] = unix.IPPROTO_TCP
	if protocol < 256 {
		r[1] = uint8(protocol)
	}
	ne.PutUint32(r[4:], 0xffffffff) // idiag_states: all
	a := r[inetDiagReqSz:]
	ne.PutUint16(a[0:], 8)
	ne.PutUint16(a[2:], inetDiagReqProtocol)
	ne.PutUint32(a[4:], protocol)
	if protocol < 256 {
		req = req[:len(req)-8]
		ne.PutUint32(req[0:], uint32(len(req)))
	}
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	var out []inetDiagEntry
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return nil, err
		}
		msgs, ok := splitNetlink(buf[:n])
		if !ok {
			return nil, errors.New("malformed netlink message")
		}
		for _, m := range msgs {
			switch m.typ {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				code := int32(0)
				if len(m.data) >= 4 {
					code = int32(ne.Uint32(m.data))
				}
				return nil, unix.Errno(-code)
			case unix.SOCK_DIAG_BY_FAMILY:
				e, ok := parseInetDiagMsg(m.data)
				if !ok {
					return nil, errors.New("short inet_diag_msg")
				}
				out = append(out, e)
			}
		}
	}
}

// parseInetDiagMsg decodes struct inet_diag_msg {u8 family, state, timer,
// retrans; struct inet_diag_sockid {be16 sport, dport; be32 src[4],
// dst[4]; u32 if; u32 cookie[2]}; u32 expires, rqueue, wqueue, uid,
// inode}: addresses and ports are in network byte order.
func parseInetDiagMsg(b []byte) (inetDiagEntry, bool) {
	if len(b) < inetDiagMsgSz {
		return inetDiagEntry{}, false
	}
	ne := binary.NativeEndian
	e := inetDiagEntry{family: b[0], state: b[1]}
	sport := binary.BigEndian.Uint16(b[4:])
	dport := binary.BigEndian.Uint16(b[6:])
	var src, dst netip.Addr
	switch e.family {
	case unix.AF_INET:
		src = netip.AddrFrom4([4]byte(b[8:12]))
		dst = netip.AddrFrom4([4]byte(b[24:28]))
	case unix.AF_INET6:
		src = netip.AddrFrom16([16]byte(b[8:24]))
		dst = netip.AddrFrom16([16]byte(b[24:40]))
	default:
		return inetDiagEntry{}, false
	}
	e.local = netip.AddrPortFrom(src, sport)
	e.remote = netip.AddrPortFrom(dst, dport)
	e.rq = ne.Uint32(b[56:])
	e.wq = ne.Uint32(b[60:])
	e.uid = ne.Uint32(b[64:])
	e.inode = uint64(ne.Uint32(b[68:]))
	return e, true
}
