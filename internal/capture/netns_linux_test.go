//go:build linux

package capture

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// needTool skips (or, under CI=true, fails) when a reference tool is absent.
func needTool(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required under CI (.ci/run installs it): %v", n, err)
			}
			t.Skipf("%s not installed", n)
		}
	}
}

// nsListener is a process listening on 127.0.0.1:port in a network
// namespace of its own.
type nsListener struct {
	cmd *exec.Cmd
	pid int32
}

// pyListen is the listener's program: bind, listen, say ready, sleep.
func pyListen(port int) string {
	return fmt.Sprintf("import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',%d)); s.listen(); print('ready',flush=True); time.sleep(3600)", port)
}

// startNSListener runs argv (which ends by exec'ing python3 with a
// listener) and waits for its "ready" line; the returned pid is the
// listener's (sh exec'ed into it).
func startNSListener(t *testing.T, argv ...string) *nsListener {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		msg := stderr.String()
		if strings.Contains(msg, "Operation not permitted") || strings.Contains(msg, "Permission denied") {
			t.Skipf("the kernel refuses a new network namespace: %s", msg)
		}
		t.Fatalf("%v: %q %v: %s", argv, line, err, msg)
	}
	return &nsListener{cmd: cmd, pid: int32(cmd.Process.Pid)}
}

// ssListeners runs `nsenter -t PID -n ss -ltnpHe` and returns "addr:port
// inode pid" of every TCP listener in that process's network namespace
// (pid "-" when ss names no process).
func ssListeners(t *testing.T, pid int32) []string {
	t.Helper()
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(int(pid)), "-n", "ss", "-ltnpHe").Output()
	if err != nil {
		t.Fatalf("nsenter ss: %v", err)
	}
	var rows []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		ino, owner := "", "-"
		for _, x := range f {
			if strings.HasPrefix(x, "ino:") {
				ino = strings.TrimPrefix(x, "ino:")
			}
			if i := strings.Index(x, ",pid="); i >= 0 {
				owner, _, _ = strings.Cut(x[i+5:], ",")
			}
		}
		local := strings.Trim(f[3], "[]")
		if i := strings.LastIndex(f[3], ":"); i >= 0 {
			local = strings.Trim(f[3][:i], "[]") + ":" + f[3][i+1:]
		}
		rows = append(rows, local+" "+ino+" "+owner)
	}
	sort.Strings(rows)
	return rows
}

// nsInode is the inode of /proc/PID/ns/net.
func nsInode(t *testing.T, pid int32) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(int(pid))+"/ns/net", &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// ourListeners are the "addr:port inode pid" of the capture's tcp/tcp6
// LISTEN rows labelled with namespace ns (what ss -ltn lists there).
func ourListeners(t *testing.T, c *Capture, ns uint64) []string {
	var rows []string
	for _, r := range c.Rows {
		if v, _ := r.Get("net_ns"); v != ns {
			continue
		}
		proto := field(t, r, "protocol")
		if (proto != "tcp" && proto != "tcp6") || field(t, r, "state") != "LISTEN" {
			continue
		}
		l := field(t, r, "local").(map[string]any)
		owner := "-"
		if p := field(t, r, "pid"); p != nil {
			owner = fmt.Sprint(p)
		}
		rows = append(rows, fmt.Sprintf("%v:%v %v %s", l["address"], l["port"], field(t, r, "inode"), owner))
	}
	sort.Strings(rows)
	return rows
}

// TestNetworkEveryNamespace is case 1 of the container issue: listeners in
// a namespace made by unshare -n and in one made by ip netns add, both on
// 127.0.0.1:45678, appear in the host-wide capture labelled with their own
// namespace, with the pid that holds them, and each namespace's listeners
// are exactly what ss lists inside it (nsenter).
func TestNetworkEveryNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating network namespaces needs root")
	}
	needTool(t, "unshare", "nsenter", "ss", "ip", "python3")
	const port = 45678
	a := startNSListener(t, "unshare", "-n", "sh", "-c", "ip link set lo up; exec python3 -c \""+pyListen(port)+"\"")
	name := "inqtest" + strconv.Itoa(os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add refused: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v %s", err, out)
	}
	b := startNSListener(t, "ip", "netns", "exec", name, "python3", "-c", pyListen(port))
	nsA, nsB := nsInode(t, a.pid), nsInode(t, b.pid)
	self := nsInode(t, int32(os.Getpid()))
	if nsA == self || nsB == self || nsA == nsB {
		t.Fatalf("namespaces not distinct: %d %d ours %d", nsA, nsB, self)
	}

	c, err := Network(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		l    *nsListener
		ns   uint64
	}{{"unshare -n", a, nsA}, {"ip netns", b, nsB}} {
		// the listener row, with its owner
		found := false
		for _, r := range c.Rows {
			if v, _ := r.Get("net_ns"); v != tc.ns || field(t, r, "protocol") != "tcp" {
				continue
			}
			l := field(t, r, "local").(map[string]any)
			if l["port"] == port && field(t, r, "state") == "LISTEN" {
				if pid := field(t, r, "pid"); pid != tc.l.pid {
					t.Fatalf("%s: listener pid %v, want %d", tc.name, pid, tc.l.pid)
				}
				found = true
			}
		}
		if !found {
			t.Fatalf("%s: no LISTEN row for 127.0.0.1:%d in namespace %d (coverage %v)", tc.name, port, tc.ns, c.Coverage)
		}
		want := ssListeners(t, tc.l.pid)
		got := ourListeners(t, c, tc.ns)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: listeners %v, nsenter ss -ltn %v", tc.name, got, want)
		}
		t.Logf("%s (net_ns %d): capture %v, nsenter ss -ltnp %v", tc.name, tc.ns, got, want)
	}
	// never double-counted: one row per (protocol, socket inode), and a
	// socket is in one namespace only
	byRow := map[string]bool{}
	nsOfInode := map[string]any{}
	for _, r := range c.Rows {
		ino := field(t, r, "inode").(string)
		if ino == "0" {
			continue // TIME_WAIT and other sockets without a file
		}
		k := fmt.Sprint(field(t, r, "protocol"), " ", ino)
		if byRow[k] {
			t.Fatalf("socket %s listed twice", k)
		}
		byRow[k] = true
		ns, _ := r.Get("net_ns")
		if prev, ok := nsOfInode[ino]; ok && prev != ns {
			t.Fatalf("socket inode %s in namespaces %v and %v", ino, prev, ns)
		}
		nsOfInode[ino] = ns
	}
	found := c.Coverage["net_namespaces_found"].(int)
	read := c.Coverage["net_namespaces_read"].(int)
	bad := c.Coverage["net_namespaces_unreadable"].(int)
	if found < 3 || read+bad != found {
		t.Fatalf("namespace coverage found %d read %d unreadable %d", found, read, bad)
	}
	t.Logf("namespaces found %d read %d unreadable %d", found, read, bad)
}

// TestNetworkMPTCP: a Go listener (MPTCP by default since Go 1.24) is
// listed as protocol mptcp, with its owner, exactly as `ss -M -tan` lists
// the MPTCP sockets of our namespace; its TCP subflow stays a tcp row.
func TestNetworkMPTCP(t *testing.T) {
	needTool(t, "ss")
	if !mptcpKernel() {
		t.Skip("this kernel has no MPTCP (/proc/sys/net/mptcp absent)")
	}
	if b, err := os.ReadFile("/proc/sys/net/mptcp/enabled"); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Skip("MPTCP is disabled (net.mptcp.enabled)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	c, err := Network(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Coverage["mptcp_source"] != "sock_diag" {
		t.Fatalf("mptcp coverage %v %v", c.Coverage["mptcp_source"], c.Coverage["mptcp_unavailable"])
	}
	self := nsInode(t, int32(os.Getpid()))
	var got []string
	mine := false
	for _, r := range c.Rows {
		p := field(t, r, "protocol")
		if v, _ := r.Get("net_ns"); p != "mptcp" || v != self {
			continue
		}
		lo := field(t, r, "local").(map[string]any)
		got = append(got, fmt.Sprintf("%v %v:%v %v", field(t, r, "state"), lo["address"], lo["port"], field(t, r, "inode")))
		if lo["port"] == port && field(t, r, "state") == "LISTEN" && field(t, r, "pid") == int32(os.Getpid()) {
			mine = true
		}
	}
	if !mine {
		t.Fatalf("no mptcp LISTEN row of ours for port %d in %v (does this Go default to MPTCP listeners?)", port, got)
	}
	// reference: ss -M (MPTCP only) in the same namespace, listening and not
	out, err := exec.Command("ss", "-MtnaHe").Output()
	if err != nil {
		t.Fatalf("ss -M: %v", err)
	}
	var want []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "mptcp" {
			continue
		}
		ino := ""
		for _, x := range f {
			if strings.HasPrefix(x, "ino:") {
				ino = strings.TrimPrefix(x, "ino:")
			}
		}
		state := map[string]string{"LISTEN": "LISTEN", "ESTAB": "ESTABLISHED", "CLOSE-WAIT": "CLOSE_WAIT", "TIME-WAIT": "TIME_WAIT", "UNCONN": "CLOSE", "SYN-SENT": "SYN_SENT", "FIN-WAIT-1": "FIN_WAIT1", "FIN-WAIT-2": "FIN_WAIT2", "LAST-ACK": "LAST_ACK", "CLOSING": "CLOSING"}[f[1]]
		i := strings.LastIndex(f[4], ":")
		want = append(want, fmt.Sprintf("%s %s:%s %s", state, strings.Trim(f[4][:i], "[]"), f[4][i+1:], ino))
	}
	sort.Strings(got)
	sort.Strings(want)
	// other programs' MPTCP sockets may come and go between the two
	// reads: ours must be in both, and both must agree on it
	mineIn := func(rows []string) string {
		for _, r := range rows {
			if strings.HasPrefix(r, "LISTEN 127.0.0.1:"+strconv.Itoa(port)+" ") {
				return r
			}
		}
		return ""
	}
	if g, w := mineIn(got), mineIn(want); g == "" || g != w {
		t.Fatalf("our listener: capture %q, ss -M %q\ncapture %v\nss -M %v", g, w, got, want)
	}
	t.Logf("capture mptcp %q, ss -M %q", mineIn(got), mineIn(want))
}

// TestNetworkMPTCPUnavailable: on a kernel without MPTCP sock_diag the
// capture says so in coverage (mptcp_unavailable names why) and, when the
// kernel has MPTCP, is partial with a warning; the TCP rows are still
// there.
func TestNetworkMPTCPUnavailable(t *testing.T) {
	saved := mptcpDiag
	mptcpDiag = func() ([]inetDiagEntry, error) {
		return nil, fmt.Errorf("%w: %v", errNoMPTCPDiag, unix.ENOENT)
	}
	defer func() { mptcpDiag = saved }()
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := Network(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	why, _ := c.Coverage["mptcp_unavailable"].(string)
	if !strings.Contains(why, "mptcp sock_diag unavailable") || !strings.Contains(why, unix.ENOENT.Error()) {
		t.Fatalf("mptcp_unavailable %q", why)
	}
	if mptcpKernel() && !c.Partial {
		t.Fatalf("kernel has MPTCP but the capture without its sockets is complete: %v", c.Warnings)
	}
	port := l.Addr().(*net.TCPAddr).Port
	for _, r := range c.Rows {
		lo := field(t, r, "local").(map[string]any)
		if field(t, r, "protocol") == "tcp" && lo["port"] == port {
			return
		}
	}
	t.Fatalf("the TCP listener (or its MPTCP subflow) on %d is missing", port)
}

// TestInNetNSDiscardsThread: a goroutine that joined another namespace
// never hands its thread back: our own thread's namespace is unchanged
// after many joins.
func TestInNetNSDiscardsThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setns needs CAP_SYS_ADMIN")
	}
	needTool(t, "unshare", "ip", "python3")
	l := startNSListener(t, "unshare", "-n", "sh", "-c", "ip link set lo up; exec python3 -c \""+pyListen(45677)+"\"")
	want := nsInode(t, l.pid)
	self := nsInode(t, int32(os.Getpid()))
	fd, err := unix.Open("/proc/"+strconv.Itoa(int(l.pid))+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// the main thread is the one most likely to run a new goroutine
	// while the test goroutine is locked to it
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i := 0; i < 20; i++ {
		var in uint64
		if err := inNetNS(fd, func() {
			var st unix.Stat_t
			if unix.Stat("/proc/thread-self/ns/net", &st) == nil {
				in = st.Ino
			}
		}); err != nil {
			t.Fatal(err)
		}
		if in != want {
			t.Fatalf("inside: namespace %d, want %d", in, want)
		}
	}
	// every goroutine's thread, now: none may be in the other namespace
	done := make(chan uint64, 50)
	for i := 0; i < 50; i++ {
		go func() {
			var st unix.Stat_t
			unix.Stat("/proc/thread-self/ns/net", &st)
			done <- st.Ino
		}()
	}
	for i := 0; i < 50; i++ {
		if got := <-done; got != self {
			t.Fatalf("a pooled thread is in namespace %d, ours is %d", got, self)
		}
	}
	// the main thread (what /proc/self/ns/net shows) never joins
	if got := nsInode(t, int32(os.Getpid())); got != self {
		t.Fatalf("/proc/self/ns/net is now %d, was %d", got, self)
	}
}

// FuzzParseInetDiagMsg: any bytes either fail or give an entry whose
// addresses are of the message's family; never a panic.
func FuzzParseInetDiagMsg(f *testing.F) {
	seed := make([]byte, inetDiagMsgSz)
	seed[0], seed[1] = unix.AF_INET, 10
	seed[4], seed[5] = 0x1f, 0x90
	copy(seed[8:], []byte{127, 0, 0, 1})
	f.Add(seed)
	six := append([]byte(nil), seed...)
	six[0] = unix.AF_INET6
	f.Add(six)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := parseInetDiagMsg(b)
		if !ok {
			return
		}
		if len(b) < inetDiagMsgSz {
			t.Fatalf("short message of %d bytes accepted", len(b))
		}
		if e.local.Addr().Is4() != (e.family == unix.AF_INET) || e.remote.Addr().Is4() != (e.family == unix.AF_INET) {
			t.Fatalf("family %d with addresses %v %v", e.family, e.local, e.remote)
		}
	})
}

// TestParseInetDiagMsg decodes a message laid out as the kernel sends it.
func TestParseInetDiagMsg(t *testing.T) {
	b := make([]byte, inetDiagMsgSz)
	b[0], b[1] = unix.AF_INET, 10
	b[4], b[5] = 0xb2, 0x6e // sport 45678, network order
	b[6], b[7] = 0, 0
	copy(b[8:], []byte{127, 0, 0, 1})
	ne := binary.NativeEndian
	ne.PutUint32(b[56:], 3)
	ne.PutUint32(b[60:], 4096)
	ne.PutUint32(b[64:], 1000)
	ne.PutUint32(b[68:], 1925339)
	e, ok := parseInetDiagMsg(b)
	if !ok || e.local.String() != "127.0.0.1:45678" || e.remote.String() != "0.0.0.0:0" || e.state != 10 || e.inode != 1925339 || e.uid != 1000 || e.rq != 3 || e.wq != 4096 {
		t.Fatalf("%+v %v", e, ok)
	}
	if _, ok := parseInetDiagMsg(b[:inetDiagMsgSz-1]); ok {
		t.Fatal("short message accepted")
	}
}

// networkCoverageMain (CAPTURE_NETWORK_COVERAGE set): run the host-wide
// network capture and print its coverage, partial flag and warnings as
// JSON.
func networkCoverageMain() {
	c, err := Network(context.Background(), nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	b, _ := json.Marshal(map[string]any{"coverage": c.Coverage, "partial": c.Partial, "warnings": c.Warnings})
	fmt.Println(string(b))
	os.Exit(0)
}

// TestNetworkUnprivilegedCoverage: run as nobody (setpriv), the host-wide
// capture cannot examine root's processes' namespaces (a listener in a
// namespace of its own among them): it says how many, and is partial,
// instead of presenting our namespace's sockets as all there are; the
// namespace counts still add up.
func TestNetworkUnprivilegedCoverage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start the listener and drop to nobody")
	}
	needTool(t, "unshare", "setpriv", "ip", "python3")
	startNSListener(t, "unshare", "-n", "sh", "-c", "ip link set lo up; exec python3 -c \""+pyListen(45675)+"\"")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "inquest-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "capture.test")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin)
	cmd.Env = append(os.Environ(), "CAPTURE_NETWORK_COVERAGE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("as nobody: %v %s", err, out)
	}
	var res struct {
		Coverage map[string]any `json:"coverage"`
		Partial  bool           `json:"partial"`
		Warnings []string       `json:"warnings"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cov := res.Coverage
	unknown, _ := cov["processes_net_ns_unknown"].(float64)
	found, _ := cov["net_namespaces_found"].(float64)
	read, _ := cov["net_namespaces_read"].(float64)
	bad, _ := cov["net_namespaces_unreadable"].(float64)
	if unknown < 1 || !res.Partial || found != read+bad || found < 1 {
		t.Fatalf("as nobody: coverage %v partial %v warnings %q", cov, res.Partial, res.Warnings)
	}
	t.Logf("as nobody: processes_net_ns_unknown %v, namespaces found %v read %v unreadable %v", unknown, found, read, bad)
	warned := false
	for _, w := range res.Warnings {
		if strings.Contains(w, "network namespaces could not be examined") {
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no warning about unexamined namespaces: %q", res.Warnings)
	}
}
