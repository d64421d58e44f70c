package tui

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escapeText makes text that came from processes (names, command lines,
// paths, socket addresses) safe to draw: C0 and C1 control characters,
// DEL, the Unicode bidirectional controls (U+061C, U+200E/F, U+202A–E,
// U+2066–9) and invalid UTF-8 bytes are shown escaped, as the CLI's tables
// spell them (\n, \t, \r, \x1b, \u0085, \u202e, \xff), so a name can
// neither move the cursor, change the terminal, nor reorder what is drawn
// after it. Text without any of them is returned unchanged.
func escapeText(s string) string {
	if printableASCII(s) {
		return s
	}
	ok := true
	for i, r := range s {
		if needsEscape(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// needsEscape reports a control character (Cc: C0, DEL, C1) or a
// bidirectional formatting character.
func needsEscape(r rune) bool {
	if unicode.IsControl(r) {
		return true
	}
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// cpuTime formats a CPU time in nanoseconds as htop's TIME+ column does:
// minutes:seconds.hundredths below an hour ("3:07.25"), hours h
// minutes:seconds below 100 hours ("12h04:05"), else days and hours
// ("5d03h").
func cpuTime(ns uint64) string {
	cs := ns / 1e7 // hundredths of a second
	sec := cs / 100
	switch {
	case sec < 3600:
		return fmt.Sprintf("%d:%02d.%02d", sec/60, sec%60, cs%100)
	case sec < 100*3600:
		return fmt.Sprintf("%dh%02d:%02d", sec/3600, sec/60%60, sec%60)
	}
	return fmt.Sprintf("%dd%02dh", sec/86400, sec/3600%24)
}

// endpoint is one end of a network capture row: an IP address and port,
// or a unix socket path.
type endpoint struct {
	Address *string `json:"address"`
	Port    *int    `json:"port"`
	Path    *string `json:"path"`
	// PathBytes is the exact path when it is not valid UTF-8
	// (base64 of the bytes, as every *_bytes field of the host).
	PathBytes *string `json:"path_bytes"`
}

// hostPort spells an address and port as ss does: "127.0.0.1:4567",
// "[::1]:80", and port 0 (no peer, or not bound) as "*".
func hostPort(addr string, port int) string {
	p := "*"
	if port != 0 {
		p = strconv.Itoa(port)
	}
	if strings.Contains(addr, ":") {
		return "[" + addr + "]:" + p
	}
	return addr + ":" + p
}

// endpointText is one end as ss shows it; "*" when there is none (an
// unbound unix socket, a unix peer). ok is false for a value that is not
// an endpoint at all.
func endpointText(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "*", true
	}
	var e endpoint
	if json.Unmarshal(raw, &e) != nil {
		return "", false
	}
	switch {
	case e.Address != nil && e.Port != nil:
		return hostPort(escapeText(*e.Address), *e.Port), true
	case e.Path != nil:
		return escapeText(*e.Path), true
	case e.PathBytes != nil:
		return "(path not UTF-8)", true
	case e.Address == nil && e.Port == nil:
		return "*", true
	}
	return "", false
}

// ssNetid is ss's Netid column for a capture row's protocol and unix
// socket type: tcp, udp (IPv6 too: ss tells them apart by the address),
// u_str, u_dgr, u_seq.
func ssNetid(proto, sockType string) string {
	switch proto {
	case "tcp", "tcp6":
		return "tcp"
	case "udp", "udp6":
		return "udp"
	case "unix":
		switch sockType {
		case "stream":
			return "u_str"
		case "dgram":
			return "u_dgr"
		case "seqpacket":
			return "u_seq"
		}
		return "unix"
	}
	return proto
}

// ssState is ss's spelling of a socket state: ESTAB, LISTEN, UNCONN,
// TIME-WAIT, SYN-SENT, CLOSE-WAIT...; "-" when the capture has none.
func ssState(state string) string {
	switch state {
	case "":
		return "-"
	case "ESTABLISHED", "CONNECTED":
		return "ESTAB"
	case "UNCONNECTED":
		return "UNCONN"
	case "SYN_RECV":
		return "SYN-RECV"
	case "CLOSE":
		return "UNCONN"
	}
	return strings.ReplaceAll(state, "_", "-")
}

// lsofSocket names a socket as lsof's TYPE and NODE+NAME columns do:
// "IPv4", "TCP 127.0.0.1:4567->127.0.0.1:39000 (ESTABLISHED)"; "IPv6",
// "UDP [::1]:53"; "unix", "/run/x.sock type=STREAM (LISTEN)".
func lsofSocket(proto, local, remote, state, sockType string) (typ, name string) {
	if proto == "unix" {
		name = local
		if name == "*" {
			name = "(unnamed)"
		}
		if sockType != "" {
			name += " type=" + strings.ToUpper(sockType)
		}
		if state == "LISTEN" || state == "CONNECTED" {
			name += " (" + state + ")"
		}
		return "unix", name
	}
	typ = "IPv4"
	if strings.HasSuffix(proto, "6") {
		typ = "IPv6"
	}
	p := strings.ToUpper(strings.TrimSuffix(proto, "6"))
	name = p + " " + local
	if remote != "" && !strings.HasSuffix(remote, ":*") {
		name += "->" + remote
	}
	if p == "TCP" && state != "" {
		name += " (" + state + ")"
	}
	return typ, name
}
