//go:build linux

package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
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

// socketOwners maps socket inodes to the first process holding them, from
// /proc/PID/fd links "socket:[N]". With only >0, only that pinned process
// is scanned.
func (fs FS) socketOwners(ctx context.Context, only *pinned, onlyName string) (map[uint64]owner, int, error) {
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
			return out, 1, nil
		}
		return out, 0, nil
	}
	pids, err := fs.listPIDs()
	if err != nil {
		return nil, 0, err
	}
	unreadable := 0
	for i, pid := range pids {
		if i&15 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, 0, err
			}
		}
		p, err := fs.openPinned(pid)
		if err != nil {
			continue
		}
		st, err := p.stat()
		if err == nil && p.useLiveTask(st) && !scan(p, p.processName(st.name, buf)) {
			unreadable++
		}
		p.close()
	}
	return out, unreadable, nil
}

// Network lists the socket endpoints of the network namespace as seen
// from /proc/net (host-wide, target nil) or from the verified process's
// /proc/PID/net, restricted to sockets that process holds. Tables:
// tcp, tcp6, udp, udp6, unix. Rows: protocol, local and remote
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
// not be read for ownership), unix_source ("sock_diag" or
// "proc_net_unix"), unix_rows_ambiguous and unix_lines_unparsable.
func Network(ctx context.Context, target *sample.Identity) (*Capture, error) {
	return FS{}.Network(ctx, target)
}

// Network is the package's Network in the tree fs. Outside the live /proc
// unix sockets always come from the tree's net/unix (sock_diag answers
// about the live host only).
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
	owners, unreadable, err := fs.socketOwners(ctx, p, name)
	if err != nil {
		return nil, err
	}
	read := func(table string) ([]byte, error) {
		if p != nil {
			return p.read("net/"+table, nil)
		}
		return (&pinned{fd: unix.AT_FDCWD, tfd: unix.AT_FDCWD}).read(fs.path("net/"+table), nil)
	}
	tablesRead, tablesFailed := 0, 0
	emit := func(ino uint64, row Row) {
		o, held := owners[ino]
		if p != nil && !held {
			return // per-process capture: only this process's sockets
		}
		if held {
			row.Owner = o.name
			row.Fields = append(row.Fields, Field{"pid", o.pid})
			row.Fields = appendText(row.Fields, "owner_name", o.name)
		} else {
			row.Fields = append(row.Fields, Field{"pid", nil}, Field{"owner_name", nil})
		}
		c.Rows = append(c.Rows, row)
	}
	type unixRow struct {
		ino uint64
		row Row
	}
	var unixRows []unixRow
	seen := inodeSet{}
	ambiguous := map[uint64]bool{}
	unparsable := 0
	unixFallback := false
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
		}}})
	}
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6", "unix"} {
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		if proto == "unix" && fs.live() && sameNetNS(p) {
			entries, err := unixDiag()
			if err == nil {
				tablesRead++
				c.Coverage["unix_source"] = "sock_diag"
				for _, e := range entries {
					if e.path != "" {
						unixPaths[e.inode] = e.path
					}
				}
				for i := range entries {
					e := &entries[i]
					if !seen.add(e.inode) {
						ambiguous[e.inode] = true
					}
					addUnix(e.inode, e.path, e.state, unixTypes[uint64(e.typ)], e)
				}
				continue
			}
		}
		b, err := read(proto)
		if err != nil {
			tablesFailed++
			continue
		}
		tablesRead++
		if proto == "unix" {
			c.Coverage["unix_source"] = "proc_net_unix"
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
			var row Row
			var ino uint64
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
			} else {
				e, ok := parseInetLine(line)
				if !ok {
					continue
				}
				ino = e.inode
				seen.add(ino)
				state := tcpStates[e.state]
				if proto == "udp" || proto == "udp6" {
					state = "" // UDP has no connection state; the kernel reuses TCP codes
					if e.state == 1 {
						state = "ESTABLISHED"
					} else if e.state == 7 {
						state = "UNCONNECTED"
					}
				}
				row = Row{Fields: []Field{
					{"protocol", proto},
					{"local", map[string]any{"address": e.local.Addr().String(), "port": int(e.local.Port())}},
					{"remote", map[string]any{"address": e.remote.Addr().String(), "port": int(e.remote.Port())}},
					{"state", state}, {"inode", strconv.FormatUint(e.inode, 10)},
				}}
			}
			emit(ino, row)
		}
	}
	if unixFallback {
		// sockets of other families are not listed, but their inodes must
		// not be claimable by a forged unix line either
		for _, t := range []string{"raw", "raw6", "udplite", "udplite6", "netlink", "packet"} {
			if b, err := read(t); err == nil {
				for _, ino := range tableInodes(t, b) {
					if !seen.add(ino) {
						ambiguous[ino] = true
					}
				}
			}
		}
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
		emit(u.ino, u.row)
	}
	c.Coverage["unix_rows_ambiguous"] = dropped
	c.Coverage["unix_lines_unparsable"] = unparsable
	if dropped > 0 || (unixFallback && unparsable > 0) {
		c.warn(strconv.Itoa(dropped) + " unix socket rows with a duplicated inode and " + strconv.Itoa(unparsable) +
			" unparsable /proc/net/unix lines were dropped: a socket name containing a newline makes /proc/net/unix ambiguous")
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
