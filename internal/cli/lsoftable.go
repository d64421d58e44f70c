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
//	FD    TYPE  SIZE/OFF  NAME
//	3u    IPv4       0t0  TCP 127.0.0.1:8080 (LISTEN)
//	5w    REG          6  /tmp/out.log
//
// FD is the descriptor number and its access mode from the open flags
// (r read, w write, u read and write; the number alone when the flags are
// unknown). TYPE is lsof's: REG, DIR, CHR, BLK, FIFO, IPv4, IPv6, unix,
// a_inode, or sock for a socket whose endpoint the network capture did
// not list. SIZE/OFF is a regular file's size in bytes, else the offset
// as lsof prints it (0t0: decimal offset 0), "-" when unknown. NAME is the
// path ("(deleted)" appended for an unlinked file) or, for a socket, the
// protocol and addresses (TCP 127.0.0.1:8080->10.0.0.2:51000
// (ESTABLISHED); a unix socket's path with type=STREAM and its state).

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

// lsofSizeOff is the SIZE/OFF cell: a regular file's size, else its
// offset in lsof's 0tN form.
func lsofSizeOff(r map[string]any) string {
	if r["kind"] == "file" {
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

// socketName is lsof's NAME of a network row: "TCP 127.0.0.1:8080
// (LISTEN)", "TCP 10.0.0.1:5000->10.0.0.2:51000 (ESTABLISHED)", "UDP
// *:53", "/run/x.sock type=STREAM (LISTEN)".
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
	name := strings.ToUpper(strings.TrimSuffix(proto, "6")) + " " + lsofEndpoint(s["local"])
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
	fmt.Fprintln(tw, "FD\tTYPE\tSIZE/OFF\tNAME")
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
		switch {
		case r["deleted"] == true:
			name += " (deleted)"
		case strings.HasSuffix(name, " (deleted)"):
			// a name that itself ends in " (deleted)" (the file is
			// not deleted): escaped, so it cannot read as lsof's mark
			name = strings.TrimSuffix(name, " (deleted)") + `\x20(deleted)`
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", str(r["fd"])+fdMode(r["flags"]), lsofType(r, sock), lsofSizeOff(r), name)
	}
	tw.Flush()
}
