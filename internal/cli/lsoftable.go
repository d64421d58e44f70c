package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
)

// The lsof PID table, spelled as `lsof -nP -p PID` spells the same facts:
//
//	FD    TYPE  DEVICE  SIZE/OFF  NODE    NAME
//	cwd   DIR   254,0       4096  5308427 /work
//	txt   REG   254,0      43888  247766  /usr/bin/sleep
//	mem   REG   254,0    1926232  326269  /usr/lib/x86_64-linux-gnu/libc.so.6
//	3u    IPv4  -            0t0  TCP     127.0.0.1:8080 (LISTEN)
//	5w    REG   254,0          6  1234    /tmp/out.log
//
// FD is the descriptor number and its access mode from the open flags
// (r read, w write, u read and write; the number alone when the flags are
// unknown), or cwd, rtd (root directory), txt (executable), mem (a
// memory-mapped file) and DEL (a mapped file that was deleted). TYPE is
// lsof's: REG, DIR, CHR, BLK, FIFO, IPv4, IPv6, unix, a_inode, or sock for
// a socket whose endpoint the network capture did not list. DEVICE is
// major,minor in decimal (a device node's own number for CHR and BLK; "-"
// for a socket, where lsof prints a kernel address). SIZE/OFF is a regular
// file's or directory's size in bytes, else the offset as lsof prints it
// (0t0: decimal offset 0), "-" when unknown, blank for DEL. NODE is the
// inode, or the protocol (TCP, UDP) of an IP socket. NAME is the path
// ("(deleted)" appended for an unlinked descriptor) or, for a socket, its
// addresses (127.0.0.1:8080->10.0.0.2:51000 (ESTABLISHED); a unix
// socket's path with type=STREAM and its state).

// fdMode is lsof's access-mode letter for open flags in octal as the
// kernel prints them in /proc/PID/fdinfo ("" when unknown).
func fdMode(flags any) string {
	s, ok := flags.(string)
	if !ok || s == "" {
		return ""
	}
	n, err := strconv.ParseUint(s, 8, 64)
	if err != nil {
		return ""
	}
	switch n & 3 { // O_ACCMODE
	case 0:
		return "r"
	case 1:
		return "w"
	case 2:
		return "u"
	}
	return ""
}

// lsofType is lsof's TYPE for an open_files row; sock is the network
// row of a socket (nil when not listed).
func lsofType(r map[string]any, sock map[string]any) string {
	switch r["kind"] {
	case "file":
		return "REG"
	case "dir":
		return "DIR"
	case "pipe":
		return "FIFO"
	case "anon":
		return "a_inode"
	case "device":
		// open_files says "device" for both; the node still at the
		// path says which (the CLI runs on the host's machine).
		if p, ok := r["path"].(string); ok {
			if fi, err := os.Stat(p); err == nil {
				if fi.Mode()&os.ModeCharDevice != 0 {
					return "CHR"
				}
				if fi.Mode()&os.ModeDevice != 0 {
					return "BLK"
				}
			}
		}
		return "DEV"
	case "socket":
		switch p, _ := sock["protocol"].(string); p {
		case "tcp", "udp":
			return "IPv4"
		case "tcp6", "udp6":
			return "IPv6"
		case "unix":
			return "unix"
		}
		return "sock"
	}
	return str(r["kind"])
}

// lsofSizeOff is the SIZE/OFF cell: a regular file's or directory's
// size, else its offset in lsof's 0tN form; blank for a deleted mapping
// (lsof prints none).
func lsofSizeOff(r map[string]any) string {
	if r["fd"] == "DEL" {
		return ""
	}
	if r["kind"] == "file" || r["kind"] == "dir" {
		if s, ok := r["size_bytes"].(string); ok {
			return s
		}
		if f, ok := r["size_bytes"].(float64); ok {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	switch p := r["position"].(type) {
	case string:
		return "0t" + p
	case float64:
		return "0t" + strconv.FormatFloat(p, 'f', -1, 64)
	}
	return "-"
}

// lsofDevice is the DEVICE cell: the row's device ("major:minor" in hex,
// as open_files gives it) as lsof's decimal "major,minor"; "-" when
// unknown and for a socket.
func lsofDevice(r map[string]any) string {
	d, ok := r["device"].(string)
	if !ok || r["kind"] == "socket" {
		return "-"
	}
	a, b, ok := strings.Cut(d, ":")
	maj, err1 := strconv.ParseUint(a, 16, 32)
	mnr, err2 := strconv.ParseUint(b, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return "-"
	}
	return strconv.FormatUint(maj, 10) + "," + strconv.FormatUint(mnr, 10)
}

// lsofNode is the NODE cell: the protocol of an IP socket (TCP, UDP),
// else the inode ("-" when unknown).
func lsofNode(r map[string]any, sock map[string]any) string {
	if sock != nil {
		if p, _ := sock["protocol"].(string); p != "unix" && p != "" {
			return strings.ToUpper(strings.TrimSuffix(p, "6"))
		}
	}
	if s, ok := r["inode"].(string); ok {
		return s
	}
	if r["kind"] == "socket" {
		if p, ok := r["path"].(string); ok && strings.HasPrefix(p, "socket:[") {
			return strings.TrimSuffix(strings.TrimPrefix(p, "socket:["), "]")
		}
	}
	return "-"
}

// socketName is lsof's NAME of a network row: "127.0.0.1:8080
// (LISTEN)", "10.0.0.1:5000->10.0.0.2:51000 (ESTABLISHED)", "*:53" (the
// protocol is in NODE), "/run/x.sock type=STREAM (LISTEN)".
func socketName(s map[string]any) string {
	proto, _ := s["protocol"].(string)
	state, _ := s["state"].(string)
	if proto == "unix" {
		var parts []string
		if l, ok := s["local"].(map[string]any); ok {
			if _, ok := l["path"]; ok {
				parts = append(parts, textOf(l, "path"))
			}
		}
		if t, ok := s["socket_type"].(string); ok && t != "" {
			parts = append(parts, "type="+strings.ToUpper(cell(t)))
		}
		if state != "" {
			parts = append(parts, "("+cell(state)+")")
		}
		return strings.Join(parts, " ")
	}
	name := lsofEndpoint(s["local"])
	if remote, ok := s["remote"].(map[string]any); ok && !unspecified(remote) {
		name += "->" + lsofEndpoint(remote)
	}
	if state != "" && strings.HasPrefix(proto, "tcp") {
		name += " (" + cell(state) + ")"
	}
	return name
}

// unspecified reports whether an endpoint is the any address with port 0
// (a listening or unconnected socket's remote end).
func unspecified(m map[string]any) bool {
	a, _ := m["address"].(string)
	p, _ := m["port"].(float64)
	return (a == "0.0.0.0" || a == "::") && p == 0
}

// lsofEndpoint is an address:port as lsof -nP prints it: * for the any
// address, [addr] for IPv6.
func lsofEndpoint(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return "-"
	}
	a, _ := m["address"].(string)
	port := str(m["port"])
	switch {
	case a == "0.0.0.0" || a == "::":
		return "*:" + port
	case strings.Contains(a, ":"):
		return "[" + cell(a) + "]:" + port
	}
	return cell(a) + ":" + port
}

// renderLsof prints open_files rows as `lsof -nP -p PID` does; sockets
// maps a socket inode to its network row.
func renderLsof(w io.Writer, rows []map[string]any, sockets map[string]map[string]any) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FD\tTYPE\tDEVICE\tSIZE/OFF\tNODE\tNAME")
	for _, r := range rows {
		var sock map[string]any
		name := textOf(r, "path")
		if r["kind"] == "socket" {
			if p, ok := r["path"].(string); ok {
				ino := strings.TrimSuffix(strings.TrimPrefix(p, "socket:["), "]")
				if s, ok := sockets[ino]; ok {
					sock = s
					name = socketName(s)
				}
			}
		}
		if r["kind"] == "pipe" && strings.HasPrefix(name, "pipe:[") {
			name = "pipe" // lsof's NAME; the inode is in NODE
		}
		switch {
		case r["deleted"] == true && r["fd"] != "DEL":
			name += " (deleted)"
		case strings.HasSuffix(name, " (deleted)"):
			// a name that itself ends in " (deleted)" (the file is
			// not deleted): escaped, so it cannot read as lsof's mark
			name = strings.TrimSuffix(name, " (deleted)") + `\x20(deleted)`
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", str(r["fd"])+fdMode(r["flags"]), lsofType(r, sock), lsofDevice(r), lsofSizeOff(r), lsofNode(r, sock), name)
	}
	tw.Flush()
}
