//go:build linux

package cli

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSocketsMatchSs runs `inquest sockets --pid PID` and ss (-tan, -uan,
// -xan) on the sockets of one process in the same run: every TCP, UDP
// and unix socket of it has the same state, local and peer address as ss
// -n spells them (LISTEN 127.0.0.1:8080 0.0.0.0:*, ESTAB, UNCONN, [::1]).
// `inquest sockets --listen --proto tcp` lists its listeners as ss -ltn.
func TestSocketsMatchSs(t *testing.T) {
	ssBin, err := exec.LookPath("ss")
	if err != nil {
		t.Skip("ss is not installed")
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	pid := strconv.Itoa(fdHolder(t))
	out, errOut, code := runCaptureCLI("sockets", "--pid", pid)
	if code != 0 {
		t.Fatalf("inquest sockets: exit %d\n%s%s", code, out, errOut)
	}
	// ours: PROTO STATE LOCAL REMOTE PID OWNER
	ours := map[string]string{} // "LOCAL REMOTE" -> "STATE LOCAL REMOTE"
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 5 || f[4] != pid {
			t.Fatalf("row %q of another process in\n%s", l, out)
		}
		ours[f[2]+" "+f[3]] = strings.Join(f[1:4], " ")
	}
	if len(ours) < 6 {
		t.Fatalf("%d sockets listed:\n%s", len(ours), out)
	}
	ssRows := func(args ...string) map[string]string {
		b, err := exec.Command(ssBin, append([]string{"-H", "-n", "-a"}, args...)...).Output()
		if err != nil {
			t.Fatalf("ss %v: %v", args, err)
		}
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) >= 5 && (args[0] == "-t" || args[0] == "-u"): // State Recv-Q Send-Q Local Peer
				m[f[3]+" "+f[4]] = f[0] + " " + f[3] + " " + f[4]
			case len(f) >= 8 && args[0] == "-x": // Netid State Recv-Q Send-Q Local Inode Peer PeerInode
				if f[4] != "*" {
					m[f[4]+" "+f[6]] = f[1] + " " + f[4] + " " + f[6]
				}
			}
		}
		return m
	}
	ref := ssRows("-t")
	for k, v := range ssRows("-u") {
		ref[k] = v
	}
	for k, v := range ssRows("-x") {
		ref[k] = v
	}
	for local, got := range ours {
		want, ok := ref[local]
		if !ok {
			t.Errorf("ss does not list %s (%s)", local, got)
			continue
		}
		if got != want {
			t.Errorf("%s: inquest %q, ss %q", local, got, want)
		}
	}
	// --listen --proto tcp: the holder's listeners, both families, as
	// ss -ltn lists them.
	out, errOut, code = runCaptureCLI("sockets", "--pid", pid, "--listen", "--proto", "tcp")
	if code != 0 {
		t.Fatalf("inquest sockets --listen: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
	listen := ssRows("-t", "-l")
	n := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if key := f[2] + " " + f[3]; f[1] != "LISTEN" || listen[key] != "LISTEN "+key {
			t.Errorf("--listen row %q; ss -ltn: %q", l, listen[key])
		}
		n++
	}
	if n != 1 && n != 2 { // the IPv4 listener, and the IPv6 one where ::1 exists
		t.Errorf("--listen --proto tcp: %d rows:\n%s", n, out)
	}
}

// TestSocketsOwnersMatchSsProcess runs `inquest sockets --pid PID` and
// `ss -tanp`, `ss -uanp` and `ss -xlp` in the same run: each TCP and UDP
// socket, and each listening unix socket, of the holder is in ss's list
// with the same local and peer address, and ss's process column
// (users:(("NAME",pid=PID,fd=N))) names the same PID and command name as
// inquest's PID and OWNER.
func TestSocketsOwnersMatchSsProcess(t *testing.T) {
	ssBin, err := exec.LookPath("ss")
	if err != nil {
		t.Skip("ss is not installed")
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	pid := strconv.Itoa(fdHolder(t))
	out, errOut, code := runCaptureCLI("sockets", "--pid", pid)
	if code != 0 {
		t.Fatalf("inquest sockets: exit %d\n%s%s", code, out, errOut)
	}
	type owner struct{ pid, name string }
	// ss rows: "LOCAL PEER" -> the owners in its process column
	users := regexp.MustCompile(`\("([^"]*)",pid=(\d+),fd=\d+\)`)
	ss := func(args ...string) map[string][]owner {
		b, err := exec.Command(ssBin, append([]string{"-H", "-n"}, args...)...).Output()
		if err != nil {
			t.Fatalf("ss %v: %v", args, err)
		}
		m := map[string][]owner{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			var key string
			switch {
			case args[0] == "-xlp" && len(f) >= 8: // Netid State Recv-Q Send-Q Local Inode Peer PeerInode Process
				key = f[4] + " " + f[6]
			case args[0] != "-xlp" && len(f) >= 5: // State Recv-Q Send-Q Local Peer Process
				key = f[3] + " " + f[4]
			default:
				continue
			}
			for _, u := range users.FindAllStringSubmatch(l, -1) {
				m[key] = append(m[key], owner{u[2], u[1]})
			}
		}
		return m
	}
	ref := ss("-tanp")
	for k, v := range ss("-uanp") {
		ref[k] = v
	}
	for k, v := range ss("-xlp") {
		ref[k] = v
	}
	t.Logf("inquest sockets:\n%s", out)
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l) // PROTO STATE LOCAL REMOTE PID OWNER
		if f[0] == "unix" && f[1] != "LISTEN" {
			continue // ss -xlp lists the listening unix sockets
		}
		key := f[2] + " " + f[3]
		owners, ok := ref[key]
		if !ok {
			t.Errorf("ss does not list %s", l)
			continue
		}
		found := false
		for _, o := range owners {
			found = found || o == owner{f[4], f[5]}
		}
		if !found {
			t.Errorf("%s: inquest PID %s OWNER %s, ss process %v", key, f[4], f[5], owners)
		}
		n++
	}
	if n < 6 {
		t.Errorf("compared %d sockets, want the holder's TCP, UDP and unix listeners:\n%s", n, out)
	}
}
