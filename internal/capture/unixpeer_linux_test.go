//go:build linux

package capture

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ssUnix is one `ss -xapn` row: state, Recv-Q, Send-Q, peer inode and the
// users column ("pid=N,fd=M" entries).
type ssUnix struct {
	state      string
	rq, wq     int64
	peer       string
	usersField string
}

// TestUnixPeersAndQueues: a listener with one accepted pair and one
// connection never accepted, compared row by row with `ss -xapn` in the
// same run: peer inode, Recv-Q/Send-Q (Recv-Q 1 on the listener: the
// pending connection), the listener's pending connection inode, and the
// peer's pid/fd.
func TestUnixPeersAndQueues(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("ss not installed (iproute2)")
	}
	path := filepath.Join(t.TempDir(), "peer.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c1, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	s1, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	c2, err := net.Dial("unix", path) // never accepted
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c1.Write([]byte("hello")); err != nil { // 5 bytes queued at s1
		t.Fatal(err)
	}
	self := os.Getpid()
	mine := map[string]bool{}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	c, err := Network(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ss", "-xapn").Output()
	if err != nil {
		t.Fatal(err)
	}
	ss := map[string]ssUnix{}
	for _, line := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		rq, _ := strconv.ParseInt(f[2], 10, 64)
		wq, _ := strconv.ParseInt(f[3], 10, 64)
		ss[f[5]] = ssUnix{state: f[1], rq: rq, wq: wq, peer: f[7], usersField: strings.Join(f[8:], " ")}
	}
	ssState := map[string]string{"LISTEN": "LISTEN", "ESTAB": "CONNECTED", "UNCONN": "UNCONNECTED"}
	checked, listeners := 0, 0
	for _, r := range c.Rows {
		if p, _ := r.Get("protocol"); p != "unix" {
			continue
		}
		inoV, _ := r.Get("inode")
		ino := inoV.(string)
		if !mine[ino] {
			continue
		}
		want, ok := ss[ino]
		if !ok {
			t.Errorf("socket %s not in ss output", ino)
			continue
		}
		checked++
		st, _ := r.Get("state")
		rq, _ := r.Get("receive_queue")
		wq, _ := r.Get("send_queue")
		remote, _ := r.Get("remote")
		if ssState[want.state] != st || rq != want.rq || wq != want.wq {
			t.Errorf("socket %s: state %v rq %v wq %v; ss: %s %d %d", ino, st, rq, wq, want.state, want.rq, want.wq)
		}
		rm, _ := remote.(map[string]any)
		switch {
		case want.peer == "0" && rm != nil:
			t.Errorf("socket %s: remote %v, ss says no peer", ino, rm)
		case want.peer != "0" && (rm == nil || rm["inode"] != want.peer):
			t.Errorf("socket %s: remote %v, ss says peer %s", ino, rm, want.peer)
		case rm != nil && mine[want.peer]:
			// the peer is ours too: its pid/fd are as ss lists for it
			fd, _ := rm["fd"].(int)
			if rm["pid"] != int32(self) || !strings.Contains(ss[want.peer].usersField, "pid="+strconv.Itoa(self)+",fd="+strconv.Itoa(fd)+")") {
				t.Errorf("socket %s: remote %v, ss lists the peer as %s", ino, rm, ss[want.peer].usersField)
			}
		}
		if st == "LISTEN" {
			listeners++
			pend, _ := r.Get("pending_connections")
			ps, _ := pend.([]string)
			if want.rq != 1 || len(ps) != 1 || ss[ps[0]].state == "" && !hasPeer(ss, ps[0]) {
				t.Errorf("listener %s: Recv-Q %d, pending %v", ino, want.rq, pend)
			}
		}
	}
	if checked < 4 || listeners != 1 {
		t.Errorf("checked %d of our unix sockets (want the listener, c1, its accepted end and c2), %d listeners", checked, listeners)
	}
}

// hasPeer reports whether some ss row names ino as its peer (a pending
// connection's embryo socket is held by no process, but the connecting
// side names it).
func hasPeer(ss map[string]ssUnix, ino string) bool {
	for _, r := range ss {
		if r.peer == ino {
			return true
		}
	}
	return false
}
