//go:build linux

package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// Constants of the AF_UNIX sock_diag interface (include/uapi/linux/unix_diag.h).
const (
	udiagShowName  = 0x1  // UDIAG_SHOW_NAME: attach UNIX_DIAG_NAME
	udiagShowPeer  = 0x4  // UDIAG_SHOW_PEER: attach UNIX_DIAG_PEER
	udiagShowIcons = 0x8  // UDIAG_SHOW_ICONS: attach UNIX_DIAG_ICONS
	udiagShowRqlen = 0x10 // UDIAG_SHOW_RQLEN: attach UNIX_DIAG_RQLEN
	unixDiagName   = 0    // UNIX_DIAG_NAME: rtattr holding the bound sun_path bytes
	unixDiagPeer   = 2    // UNIX_DIAG_PEER: u32 inode of the peer socket
	unixDiagIcons  = 3    // UNIX_DIAG_ICONS: u32 inodes of a listener's not yet accepted connections
	unixDiagRqlen  = 4    // UNIX_DIAG_RQLEN: struct unix_diag_rqlen {u32 rqueue, wqueue}
	unixDiagReqSz  = 24   // sizeof(struct unix_diag_req)
	unixDiagMsgSz  = 16   // sizeof(struct unix_diag_msg)
)

// unixDiagStates names the sk_state values unix_diag reports (TCP_* of
// include/net/tcp_states.h as used by af_unix) in the vocabulary of the
// /proc/net/unix rows: LISTEN, CONNECTED, CONNECTING, UNCONNECTED.
var unixDiagStates = map[uint8]string{1: "CONNECTED", 2: "CONNECTING", 7: "UNCONNECTED", 10: "LISTEN"}

// unixDiagEntry is one AF_UNIX socket as reported by sock_diag.
type unixDiagEntry struct {
	typ   uint8
	state string
	inode uint64
	path  string // "" when unbound; abstract names start with "@" (NULs printed as "@", like /proc/net/unix)
	// peer is the inode of the connected peer socket (UNIX_DIAG_PEER; 0
	// when not connected). A listener's connections not yet accepted are
	// icons (UNIX_DIAG_ICONS).
	peer  uint64
	icons []uint64
	// rq and wq are UNIX_DIAG_RQLEN, what ss prints as Recv-Q and Send-Q:
	// for a listener the count of connections waiting to be accepted and
	// the backlog; for other sockets the bytes queued to be read (for a
	// datagram socket: of the next datagram) and the bytes sent but not
	// yet read by the peer. hasQ says the attribute was present.
	rq, wq uint32
	hasQ   bool
}

// errNoUnixDiag reports that the sock_diag interface could not be used
// (module absent, socket family refused); callers fall back to /proc/net/unix.
var errNoUnixDiag = errors.New("unix sock_diag unavailable")

// unixDiag is the sock_diag lister Network uses (a variable so tests can
// exercise the /proc/net/unix fallback).
var unixDiag = unixDiagDump

// unixDiagDump lists every AF_UNIX socket of the caller's network
// namespace through NETLINK_SOCK_DIAG (SOCK_DIAG_BY_FAMILY request with a
// struct unix_diag_req for all states and UDIAG_SHOW_NAME). Names are the
// exact bytes of the UNIX_DIAG_NAME attribute, so a path containing a
// newline is neither cut nor able to fake another record. Errors wrap
// errNoUnixDiag when the interface is unusable.
func unixDiagDump() ([]unixDiagEntry, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, errors.Join(errNoUnixDiag, err)
	}
	defer unix.Close(fd)
	req := make([]byte, unix.NLMSG_HDRLEN+unixDiagReqSz)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], 1) // sequence
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = unix.AF_UNIX
	ne.PutUint32(r[4:], 0xffffffff) // udiag_states: all
	ne.PutUint32(r[12:], udiagShowName|udiagShowPeer|udiagShowIcons|udiagShowRqlen)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, errors.Join(errNoUnixDiag, err)
	}
	var out []unixDiagEntry
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return nil, errors.Join(errNoUnixDiag, err)
		}
		msgs, ok := splitNetlink(buf[:n])
		if !ok {
			return nil, errors.Join(errNoUnixDiag, errors.New("malformed netlink message"))
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
				return nil, errors.Join(errNoUnixDiag, errors.New("netlink error "+strconv.Itoa(int(-code))))
			case unix.SOCK_DIAG_BY_FAMILY:
				e, ok := parseUnixDiagMsg(m.data)
				if !ok {
					return nil, errors.Join(errNoUnixDiag, errors.New("short unix_diag_msg"))
				}
				out = append(out, e)
			}
		}
	}
}

// netlinkMsg is one message of a netlink datagram: nlmsg_type and payload.
type netlinkMsg struct {
	typ  uint16
	data []byte
}

// splitNetlink splits a datagram into messages by struct nlmsghdr
// (nlmsg_len includes the 16-byte header; messages are 4-byte aligned).
func splitNetlink(b []byte) ([]netlinkMsg, bool) {
	var out []netlinkMsg
	ne := binary.NativeEndian
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(ne.Uint32(b[0:]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return nil, false
		}
		out = append(out, netlinkMsg{typ: ne.Uint16(b[4:]), data: b[unix.NLMSG_HDRLEN:l]})
		adv := (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if adv >= len(b) {
			break
		}
		b = b[adv:]
	}
	return out, true
}

// parseUnixDiagMsg decodes struct unix_diag_msg {u8 family, type, state,
// pad; u32 ino; u32 cookie[2]} followed by rtattrs, taking the name from
// UNIX_DIAG_NAME (exact length from the attribute header), the peer from
// UNIX_DIAG_PEER, pending connections from UNIX_DIAG_ICONS and the queue
// lengths from UNIX_DIAG_RQLEN.
func parseUnixDiagMsg(b []byte) (unixDiagEntry, bool) {
	if len(b) < unixDiagMsgSz {
		return unixDiagEntry{}, false
	}
	ne := binary.NativeEndian
	e := unixDiagEntry{typ: b[1], inode: uint64(ne.Uint32(b[4:]))}
	e.state = unixDiagStates[b[2]]
	if e.state == "" {
		e.state = "STATE_" + strconv.Itoa(int(b[2]))
	}
	attrs := b[unixDiagMsgSz:]
	for len(attrs) >= unix.SizeofRtAttr {
		l := int(ne.Uint16(attrs[0:]))
		t := ne.Uint16(attrs[2:])
		if l < unix.SizeofRtAttr || l > len(attrs) {
			return e, false
		}
		val := attrs[unix.SizeofRtAttr:l]
		switch {
		case t == unixDiagPeer && len(val) >= 4:
			e.peer = uint64(ne.Uint32(val))
		case t == unixDiagIcons:
			for i := 0; i+4 <= len(val); i += 4 {
				e.icons = append(e.icons, uint64(ne.Uint32(val[i:])))
			}
		case t == unixDiagRqlen && len(val) >= 8:
			e.rq, e.wq, e.hasQ = ne.Uint32(val), ne.Uint32(val[4:]), true
		}
		if t == unixDiagName {
			name := attrs[unix.SizeofRtAttr:l]
			if len(name) > 0 && name[0] == 0 {
				abs := []byte(string(name))
				for i := range abs {
					if abs[i] == 0 {
						abs[i] = '@'
					}
				}
				e.path = string(abs)
			} else {
				// a pathname is a C string: the kernel stores the
				// terminating NUL in the address length
				if i := bytes.IndexByte(name, 0); i >= 0 {
					name = name[:i]
				}
				e.path = string(name)
			}
		}
		adv := (l + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1)
		if adv > len(attrs) {
			break
		}
		attrs = attrs[adv:]
	}
	return e, true
}

// sameNetNS reports whether /proc/PID/ns/net (relative to the pinned
// process directory) is the caller's network namespace, so that the
// caller's sock_diag socket sees that process's sockets.
func sameNetNS(p *pinned) bool {
	var self, other unix.Stat_t
	if err := unix.Stat(procRoot+"/self/ns/net", &self); err != nil { // called on the live /proc only
		return false
	}
	if p == nil {
		return true
	}
	if err := unix.Fstatat(p.tfd, "ns/net", &other, 0); err != nil {
		return false
	}
	return self.Dev == other.Dev && self.Ino == other.Ino
}
