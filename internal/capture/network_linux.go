//go:build linux

package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// tcpStates names the kernel TCP states (include/net/tcp_states.h).
var tcpStates = map[uint64]string{
	1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1", 5: "FIN_WAIT2", 6: "TIME_WAIT",
	7: "CLOSE", 8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN", 11: "CLOSING", 12: "NEW_SYN_RECV",
}

// unixStates names socket states of /proc/net/unix (SS_* in linux/net.h).
var unixStates = map[uint64]string{0: "FREE", 1: "UNCONNECTED", 2: "CONNECTING", 3: "CONNECTED", 4: "DISCONNECTING"}

// soAcceptCon is __SO_ACCEPTCON (include/linux/net.h), set in the Flags
// column of /proc/net/unix for a socket that listen(2) was called on.
const soAcceptCon = 0x10000

var unixTypes = map[uint64]string{1: "stream", 2: "dgram", 5: "seqpacket"}

// inetEntry is one parsed /proc/net/{tcp,udp}[6] line.
type inetEntry struct {
	local, remote netip.AddrPort
	state         uint64
	uid           uint64
	inode         uint64
}

// parseHexAddr decodes "0100007F:1F90" (IPv4) or a 32-hex-digit IPv6
// address with port. The kernel prints each 32-bit word of the address
// in host byte order.
func parseHexAddr(b []byte) (netip.AddrPort, bool) {
	a, p, ok := bytes.Cut(b, []byte(":"))
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(string(p), 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw := make([]byte, hex.DecodedLen(len(a)))
	if _, err := hex.Decode(raw, a); err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	out := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		w := binary.BigEndian.Uint32(raw[i:])
		binary.NativeEndian.PutUint32(out[i:], w)
	}
	addr, _ := netip.AddrFromSlice(out)
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// parseInetLine parses one data line of /proc/net/tcp, tcp6, udp or udp6:
// "sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...".
func parseInetLine(line []byte) (inetEntry, bool) {
	var e inetEntry
	f := bytes.Fields(line)
	if len(f) < 10 {
		return e, false
	}
	var ok bool
	if e.local, ok = parseHexAddr(f[1]); !ok {
		return e, false
	}
	if e.remote, ok = parseHexAddr(f[2]); !ok {
		return e, false
	}
	var err error
	if e.state, err = strconv.ParseUint(string(f[3]), 16, 8); err != nil {
		return e, false
	}
	if e.uid, err = strconv.ParseUint(string(f[7]), 10, 32); err != nil {
		return e, false
	}
	if e.inode, err = strconv.ParseUint(string(f[9]), 10, 64); err != nil {
		return e, false
	}
	return e, true
}

// unixEntry is one parsed /proc/net/unix line.
type unixEntry struct {
	flags, typ, state, inode uint64
	path                     string
}

// stateName is the row state of e: LISTEN for a listening socket (the
// kernel prints it as UNCONNECTED with __SO_ACCEPTCON in Flags), else the
// SS_* name.
func (e unixEntry) stateName() string {
	if e.flags&soAcceptCon != 0 {
		return "LISTEN"
	}
	return unixStates[e.state]
}

// parseUnixLine parses "Num RefCount Protocol Flags Type St Inode [Path]".
func parseUnixLine(line []byte) (unixEntry, bool) {
	var e unixEntry
	f := bytes.Fields(line)
	if len(f) < 7 {
		return e, false
	}
	var err error
	if e.flags, err = strconv.ParseUint(string(f[3]), 16, 64); err != nil {
		return e, false
	}
	if e.typ, err = strconv.ParseUint(string(f[4]), 16, 16); err != nil {
		return e, false
	}
	if e.state, err = strconv.ParseUint(string(f[5]), 16, 8); err != nil {
		return e, false
	}
	if e.inode, err = strconv.ParseUint(string(f[6]), 10, 64); err != nil {
		return e, false
	}
	if len(f) > 7 {
		// the path is the rest of the line (it may contain spaces)
		i := bytes.Index(line, f[7])
		e.path = string(bytes.TrimRight(line[i:], "\n"))
	}
	return e, true
}

// inodeSet records socket inodes seen; add reports whether ino was new.
type inodeSet map[uint64]struct{}

func (s inodeSet) add(ino uint64) bool {
	if _, ok := s[ino]; ok {
		return false
	}
	s[ino] = struct{}{}
	return true
}

// tableInodes lists the socket inodes of a /proc/net table other than
// unix: the last column of netlink and packet lines, the tenth field of
// the tcp-formatted raw and udplite tables. Header and malformed lines
// are skipped.
func tableInodes(table string, b []byte) []uint64 {
	var out []uint64
	lines := bytes.Split(b, []byte("\n"))
	for _, line := range lines[min(1, len(lines)):] {
		f := bytes.Fields(line)
		var col []byte
		switch table {
		case "netlink", "packet":
			if len(f) > 0 {
				col = f[len(f)-1]
			}
		default:
			if len(f) >= 10 {
				col = f[9]
			}
		}
		if ino, err := strconv.ParseUint(string(col), 10, 64); err == nil && ino != 0 {
			out = append(out, ino)
		}
	}
	return out
}

type owner struct {
	pid  int32
	fd   int
	name string
}

// ownerScan is what socketOwners found: the socket inodes held by
// readable fd tables, the processes whose fd table could not be read, and
// (host-wide scan of the live /proc) the distinct network namespaces of
// the processes scanned, in first-seen order, with nsUnknown the
// processes whose /proc/PID/ns/net could not be examined.
type ownerScan struct {
	owners     map[uint64]owner
	unreadable int
	namespaces []*netNS
	nsUnknown  int
}

// socketOwners maps socket inodes to the first process holding them, from
// /proc/PID/fd links "socket:[N]". With only >0, only that pinned process
// is scanned.
func (fs FS) socketOwners(ctx context.Context, only *pinned, onlyName string) (ownerScan, error) {
	out := map[uint64]owner{}
	buf := make([]byte, 256)
	scan := func(p *pinned, name string) bool {
		dfd, names, err := p.fdNames("fd")
		if err != nil {
			return false
		}
		defer unix.Close(dfd)
		deniedLinks := 0
		for _, n := range names {
			link, err := readlinkAt(dfd, n, buf)
			if err != nil && denied(err) {
				deniedLinks++
			}
			if err != nil || !bytes.HasPrefix(link, []byte("socket:[")) || link[len(link)-1] != ']' {
				continue
			}
			ino, err := strconv.ParseUint(string(link[8:len(link)-1]), 10, 64)
			if err != nil {
				continue
			}
			if _, ok := out[ino]; !ok {
				fdn, _ := strconv.Atoi(n)
				out[ino] = owner{pid: p.pid, fd: fdn, name: name}
			}
		}
		return deniedLinks == 0 || deniedLinks < len(names)
	}
	if only != nil {
		if !scan(only, onlyName) {
			return ownerScan{owners: out, unreadable: 1}, nil
		}
		return ownerScan{owners: out}, nil
	}
	pids, err := fs.listPIDs()
	if err != nil {
		return ownerScan{}, err
	}
	res := ownerScan{owners: out}
	byNS := map[nsKey]*netNS{}
	for i, pid := range pids {
		if i&15 == 0 {
			if err := ctxErr(ctx); err != nil {
				return ownerScan{}, err
			}
		}
		p, err := fs.openPinned(pid)
		if err != nil {
			continue
		}
		st, err := p.stat()
		if err == nil && p.useLiveTask(st) {
			if !scan(p, p.processName(st.name, buf)) {
				res.unreadable++
			}
			if fs.live() {
				if k, err := nsOf(p.tfd, "ns/net"); err == nil {
					ns := byNS[k]
					if ns == nil {
						ns = &netNS{key: k}
						byNS[k] = ns
						res.namespaces = append(res.namespaces, ns)
					}
					if len(ns.members) < maxNSMembers {
						ns.members = append(ns.members, pid)
					}
				} else if !gone(err) {
					res.nsUnknown++
				}
			}
		}
		p.close()
	}
	return res, nil
}

// Network lists socket endpoints: host-wide (target nil) those of every
// network namespace a process is in (ours from /proc/net, each other one
// through a member's /proc/PID/net and, for sock_diag, a thread that
// joined it: see inNetNS), or those the verified process holds, from its
// /proc/PID/net. Every row carries net_ns, the inode of its namespace
// (null when unknown), and container, the container of its owner
// (sample.Container.Label of the owner's cgroup path: "runtime:id", "none"
// or "unknown"; null without an owner or from a recorded tree). Tables: tcp, tcp6, udp, udp6, unix, and MPTCP
// sockets from sock_diag (protocol mptcp, both families; their TCP
// subflows stay tcp rows of the same inode). Rows: protocol, local and remote
// ({address, port} for inet; {path} for unix, path null when unnamed or
// abstract names are printed with a leading "@"), state, inode, pid and
// owner_name of the first process holding the socket (null when no
// readable fd table holds it) and, for unix, socket_type. A listening unix
// socket's state is LISTEN (Flags has __SO_ACCEPTCON), like a TCP listener.
// From sock_diag a unix row also carries what `ss -xp` shows: remote
// {inode, path, pid, fd} of the connected peer (UNIX_DIAG_PEER; pid and
// fd of the first process holding the peer, null when none readable
// does; remote null when not connected), receive_queue and send_queue
// (UNIX_DIAG_RQLEN, ss's Recv-Q and Send-Q: for a listener the connections
// waiting to be accepted and the backlog, else bytes queued) and, for a
// listener, pending_connections (the inodes of connections not yet
// accepted, UNIX_DIAG_ICONS); from /proc/net/unix these are null. No DNS, no
// connection attempts. Unix sockets come from the sock_diag netlink
// interface (exact names, newlines included) when the target shares our
// network namespace; otherwise from /proc/net/unix, where a name holding a
// newline can print a line mimicking another socket's record, so unix rows
// whose inode is not unique across the tables read are dropped and lines
// that do not parse are counted, with a warning (partial). Coverage:
// tables_read, tables_failed, processes_unreadable (fd tables that could
// not be read for ownership), unix_source ("sock_diag", "proc_net_unix"
// or "mixed"), unix_rows_ambiguous, unix_lines_unparsable, mptcp_source
// and mptcp_unavailable; host-wide also net_namespaces_found, _read,
// _unreadable (found = read + unreadable), net_namespaces_unreadable_detail
// ({net_ns, reason}, at most 16) and processes_net_ns_unknown.
func Network(ctx context.Context, target *sample.Identity) (*Capture, error) {
	return FS{}.Network(ctx, target)
}

// netSource is one network namespace's socket tables: read returns a
// /proc/net table ("tcp", "unix", ...) of it; diag, when non-nil, runs a
// function where a new sock_diag socket sees that namespace (directly
// for ours, in a setns thread for another); label is the namespace's
// inode (nil when unknown).
type netSource struct {
	label any
	read  func(table string) ([]byte, error)
	diag  func(fn func()) error
}

// maxNSDetail bounds net_namespaces_unreadable_detail.
const maxNSDetail = 16

// Network is the package's Network in the tree fs. Outside the live /proc
// unix sockets always come from the tree's net/unix (sock_diag answers
// about the live host only) and the tree's own net/ tables are the only
// namespace read.
func (fs FS) Network(ctx context.Context, target *sample.Identity) (*Capture, error) {
	c := &Capture{Kind: KindNetwork, Started: time.Now(), Coverage: map[string]any{}}
	var p *pinned
	var err error
	name := ""
	if target != nil {
		var st statInfo
		p, st, err = fs.pinIdentity(*target)
		if err != nil {
			return nil, err
		}
		defer p.close()
		name = p.processName(st.name, make([]byte, 256))
	}
	scan, err := fs.socketOwners(ctx, p, name)
	if err != nil {
		return nil, err
	}
	owners, unreadable := scan.owners, scan.unreadable
	direct := func(fn func()) error { fn(); return nil }
	treeRead := func(table string) ([]byte, error) {
		return (&pinned{fd: unix.AT_FDCWD, tfd: unix.AT_FDCWD}).read(fs.path("net/"+table), nil)
	}
	var sources []netSource
	var closers []func()
	defer func() {
		for _, f := range closers {
			f()
		}
	}()
	// throughMember reads a namespace's tables through the pinned process
	// q in it: /proc/PID/net follows the process's namespace, and sock_diag
	// runs in a thread that joined it through /proc/PID/ns/net.
	throughMember := func(q *pinned, label any, same bool) netSource {
		src := netSource{label: label, read: func(t string) ([]byte, error) { return q.read("net/"+t, nil) }}
		if same {
			src.diag = direct
		} else {
			src.diag = func(fn func()) error {
				fd, err := unix.Openat(q.tfd, "ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
				return inNetNS(fd, fn)
			}
		}
		return src
	}
	var self nsKey
	selfKnown := false
	if fs.live() {
		if k, err := nsOf(unix.AT_FDCWD, procRoot+"/self/ns/net"); err == nil {
			self, selfKnown = k, true
		}
	}
	type nsProblem struct {
		ino    uint64
		reason string
	}
	var problems []nsProblem
	nsRead := 0
	switch {
	case p != nil:
		var label any
		same := fs.live() && sameNetNS(p)
		if fs.live() {
			if k, err := nsOf(p.tfd, "ns/net"); err == nil {
				label = k.ino
			}
		}
		src := throughMember(p, label, same)
		if !fs.live() {
			src.diag = nil
		}
		sources = append(sources, src)
	case !fs.live():
		sources = append(sources, netSource{read: treeRead})
	default:
		var label any
		if selfKnown {
			label = self.ino
		}
		sources = append(sources, netSource{label: label, read: treeRead, diag: direct})
		nsRead++ // counted as read; a failed table is in tables_failed
		for _, ns := range scan.namespaces {
			if !selfKnown {
				// without our own namespace's identity, another's
				// cannot be told from ours: read ours only
				break
			}
			if ns.key == self {
				continue
			}
			reason := "exited"
			var src *netSource
			for _, pid := range ns.members {
				q, err := fs.openPinned(pid)
				if err != nil {
					continue
				}
				if k, err := nsOf(q.tfd, "ns/net"); err != nil || k != ns.key {
					if err != nil && denied(err) {
						reason = "access_denied"
					}
					q.close()
					continue
				}
				closers = append(closers, q.close)
				s := throughMember(q, ns.key.ino, false)
				src = &s
				break
			}
			if src == nil {
				problems = append(problems, nsProblem{ns.key.ino, reason})
				continue
			}
			sources = append(sources, *src)
		}
	}
	tablesRead, tablesFailed := 0, 0
	var label any // the namespace of the source being read
	// The container of each owner, read once per pid from its cgroup
	// path (sample.ContainerOf: "runtime:id", "none" or "unknown").
	containers := map[int]string{}
	containerOf := func(pid int) string {
		l, ok := containers[pid]
		if !ok {
			l = sample.ContainerOf(pid).Label()
			containers[pid] = l
		}
		return l
	}
	emit := func(ino uint64, row Row, label any) {
		o, held := owners[ino]
		if p != nil && !held {
			return // per-process capture: only this process's sockets
		}
		var container any
		if held {
			row.Owner = o.name
			row.Fields = append(row.Fields, Field{"pid", o.pid})
			row.Fields = appendText(row.Fields, "owner_name", o.name)
			if fs.live() {
				// a recorded /proc tree holds no cgroup files of its own
				container = containerOf(int(o.pid))
			}
		} else {
			row.Fields = append(row.Fields, Field{"pid", nil}, Field{"owner_name", nil})
		}
		row.Fields = append(row.Fields, Field{"net_ns", label}, Field{"container", container})
		c.Rows = append(c.Rows, row)
	}
	type unixRow struct {
		ino   uint64
		row   Row
		label any
	}
	var unixRows []unixRow
	seen := inodeSet{}
	ambiguous := map[uint64]bool{}
	unparsable := 0
	unixFallback, unixDiagUsed := false, false
	unixPaths := map[uint64]string{}
	addUnix := func(ino uint64, pathStr, state, typ string, d *unixDiagEntry) {
		local := map[string]any{"path": nil}
		if pathStr != "" {
			sample.TextFields("path", pathStr, func(k string, v any) { local[k] = v })
		}
		// remote, the queues and pending connections come from sock_diag
		// only (/proc/net/unix has none of them: unknown, null)
		var remote, rq, wq, pending any
		if d != nil {
			if d.peer != 0 {
				r := map[string]any{"inode": strconv.FormatUint(d.peer, 10), "path": nil, "pid": nil, "fd": nil}
				if pp := unixPaths[d.peer]; pp != "" {
					sample.TextFields("path", pp, func(k string, v any) { r[k] = v })
				}
				if o, ok := owners[d.peer]; ok {
					r["pid"], r["fd"] = o.pid, o.fd
				}
				remote = r
			}
			if d.hasQ {
				rq, wq = int64(d.rq), int64(d.wq)
			}
			if state == "LISTEN" {
				ps := make([]string, len(d.icons))
				for i, ic := range d.icons {
					ps[i] = strconv.FormatUint(ic, 10)
				}
				pending = ps
			}
		}
		unixRows = append(unixRows, unixRow{ino, Row{Path: pathStr, Fields: []Field{
			{"protocol", "unix"}, {"local", local}, {"remote", remote},
			{"state", state}, {"socket_type", typ}, {"inode", strconv.FormatUint(ino, 10)},
			{"receive_queue", rq}, {"send_queue", wq}, {"pending_connections", pending},
		}}, label})
	}
	mptcpRead, mptcpUnread := 0, 0
	var mptcpWhy string
	mptcpSeen := inodeSet{}
	for si, src := range sources {
		label = src.label
		readBefore, failedBefore := tablesRead, tablesFailed
		// sock_diag of this namespace: unix sockets and MPTCP sockets
		var uents []unixDiagEntry
		var uerr, merr error = errNoUnixDiag, nil
		var ments []inetDiagEntry
		if src.diag != nil {
			derr := src.diag(func() {
				uents, uerr = unixDiag()
				ments, merr = mptcpDiag()
			})
			if derr != nil {
				uerr = derr
				merr = fmt.Errorf("%w: %v", errNoMPTCPDiag, errors.New("cannot join the namespace: "+derr.Error()))
			}
		} else {
			merr = fmt.Errorf("%w: %v", errNoMPTCPDiag, errors.New("not the live /proc"))
		}
		if merr != nil {
			mptcpUnread++
			if mptcpWhy == "" {
				mptcpWhy = merr.Error()
			}
		} else {
			mptcpRead++
			for _, e := range ments {
				if !mptcpSeen.add(e.inode) && e.inode != 0 {
					continue
				}
				emit(e.inode, Row{Fields: []Field{
					{"protocol", "mptcp"}, // both address families, as ss -M
					{"local", map[string]any{"address": e.local.Addr().String(), "port": int(e.local.Port())}},
					{"remote", map[string]any{"address": e.remote.Addr().String(), "port": int(e.remote.Port())}},
					{"state", tcpStates[uint64(e.state)]}, {"inode", strconv.FormatUint(e.inode, 10)},
				}}, label)
			}
		}
		for _, proto := range []string{"tcp", "tcp6", "udp", "udp6", "unix"} {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
			if proto == "unix" && uerr == nil {
				tablesRead++
				unixDiagUsed = true
				for _, e := range uents {
					if e.path != "" {
						unixPaths[e.inode] = e.path
					}
				}
				for i := range uents {
					e := &uents[i]
					if !seen.add(e.inode) {
						ambiguous[e.inode] = true
					}
					addUnix(e.inode, e.path, e.state, unixTypes[uint64(e.typ)], e)
				}
				continue
			}
			b, err := src.read(proto)
			if err != nil {
				tablesFailed++
				continue
			}
			tablesRead++
			if proto == "unix" {
				unixFallback = true
			}
			first := true
			for len(b) > 0 {
				line := b
				if i := bytes.IndexByte(b, '\n'); i >= 0 {
					line, b = b[:i], b[i+1:]
				} else {
					b = nil
				}
				if first { // header
					first = false
					continue
				}
				if proto == "unix" {
					e, ok := parseUnixLine(line)
					if !ok {
						// a line that does not parse may be the tail of a
						// name holding a newline: nothing after it can be
						// told apart from a forged record by the text alone
						unparsable++
						continue
					}
					if !seen.add(e.inode) {
						ambiguous[e.inode] = true
					}
					addUnix(e.inode, e.path, e.stateName(), unixTypes[e.typ], nil)
					continue
				}
				e, ok := parseInetLine(line)
				if !ok {
					continue
				}
				seen.add(e.inode)
				state := tcpStates[e.state]
				if proto == "udp" || proto == "udp6" {
					state = "" // UDP has no connection state; the kernel reuses TCP codes
					if e.state == 1 {
						state = "ESTABLISHED"
					} else if e.state == 7 {
						state = "UNCONNECTED"
					}
				}
				emit(e.inode, Row{Fields: []Field{
					{"protocol", proto},
					{"local", map[string]any{"address": e.local.Addr().String(), "port": int(e.local.Port())}},
					{"remote", map[string]any{"address": e.remote.Addr().String(), "port": int(e.remote.Port())}},
					{"state", state}, {"inode", strconv.FormatUint(e.inode, 10)},
				}}, label)
			}
		}
		if unixFallback {
			// sockets of other families are not listed, but their inodes must
			// not be claimable by a forged unix line either
			for _, t := range []string{"raw", "raw6", "udplite", "udplite6", "netlink", "packet"} {
				if b, err := src.read(t); err == nil {
					for _, ino := range tableInodes(t, b) {
						if !seen.add(ino) {
							ambiguous[ino] = true
						}
					}
				}
			}
		}
		if si > 0 {
			// another namespace: read when any of its tables was; none
			// means its member ended before they could be read
			if tablesRead > readBefore {
				nsRead++
			} else {
				tablesFailed = failedBefore
				k, _ := src.label.(uint64)
				problems = append(problems, nsProblem{k, "exited"})
			}
		}
	}
	switch {
	case unixDiagUsed && unixFallback:
		c.Coverage["unix_source"] = "mixed"
	case unixDiagUsed:
		c.Coverage["unix_source"] = "sock_diag"
	case unixFallback:
		c.Coverage["unix_source"] = "proc_net_unix"
	}
	// unix rows whose inode is not unique (across every socket table
	// read) cannot be trusted: a bound name holding a newline can print
	// a line that looks like another socket's record
	dropped := 0
	for _, u := range unixRows {
		if ambiguous[u.ino] {
			dropped++
			continue
		}
		emit(u.ino, u.row, u.label)
	}
	c.Coverage["unix_rows_ambiguous"] = dropped
	c.Coverage["unix_lines_unparsable"] = unparsable
	if dropped > 0 || (unixFallback && unparsable > 0) {
		c.warn(strconv.Itoa(dropped) + " unix socket rows with a duplicated inode and " + strconv.Itoa(unparsable) +
			" unparsable /proc/net/unix lines were dropped: a socket name containing a newline makes /proc/net/unix ambiguous")
	}
	// MPTCP: read through sock_diag in every namespace, else why not
	if mptcpUnread == 0 {
		c.Coverage["mptcp_source"] = "sock_diag"
		c.Coverage["mptcp_unavailable"] = nil
	} else {
		c.Coverage["mptcp_source"] = nil
		if mptcpRead > 0 {
			c.Coverage["mptcp_source"] = "sock_diag"
		}
		c.Coverage["mptcp_unavailable"] = strconv.Itoa(mptcpUnread) + " of " + strconv.Itoa(mptcpRead+mptcpUnread) + " namespaces: " + mptcpWhy
		if fs.live() && mptcpKernel() {
			c.warn("MPTCP sockets were not listed for " + strconv.Itoa(mptcpUnread) + " network namespaces (" + mptcpWhy + "); their TCP subflows are listed as tcp")
		}
	}
	if fs.live() && p == nil {
		found := len(scan.namespaces)
		switch {
		case !selfKnown:
			found = 1 // only ours was read (see above)
			c.warn("this process's network namespace could not be identified: only its sockets are listed")
		case !scan.hasNS(self):
			found++ // ours, read through /proc/net although no process scanned is in it
		}
		c.Coverage["net_namespaces_found"] = found
		c.Coverage["net_namespaces_read"] = nsRead
		c.Coverage["net_namespaces_unreadable"] = len(problems)
		detail := []map[string]any{}
		for i, pr := range problems {
			if i == maxNSDetail {
				break
			}
			detail = append(detail, map[string]any{"net_ns": pr.ino, "reason": pr.reason})
		}
		c.Coverage["net_namespaces_unreadable_detail"] = detail
		c.Coverage["processes_net_ns_unknown"] = scan.nsUnknown
		if len(problems) > 0 {
			c.warn(strconv.Itoa(len(problems)) + " network namespaces could not be read (net_namespaces_unreadable_detail says why): their sockets are not listed")
		}
		if scan.nsUnknown > 0 {
			c.warn(strconv.Itoa(scan.nsUnknown) + " processes' network namespaces could not be examined: sockets of namespaces only they are in are not listed")
		}
	}
	c.Finished = time.Now()
	c.Coverage["tables_read"] = tablesRead
	c.Coverage["tables_failed"] = tablesFailed
	c.Coverage["processes_unreadable"] = unreadable
	if tablesFailed > 0 {
		c.warn(strconv.Itoa(tablesFailed) + " socket tables could not be read")
	}
	if unreadable > 0 && p == nil {
		c.warn(strconv.Itoa(unreadable) + " processes' fd tables could not be read, so some sockets have no owner")
	}
	if p != nil {
		return finishTargeted(c, p, *target, false)
	}
	return c, nil
}

// hasNS reports whether the scan found namespace k.
func (s ownerScan) hasNS(k nsKey) bool {
	for _, ns := range s.namespaces {
		if ns.key == k {
			return true
		}
	}
	return false
}

// mptcpKernel reports whether the running kernel has MPTCP
// (/proc/sys/net/mptcp exists), so MPTCP sockets may exist.
func mptcpKernel() bool {
	var st unix.Stat_t
	return unix.Stat(procRoot+"/sys/net/mptcp", &st) == nil
}
