//go:build linux

package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
)

// socketChild starts `sleep` holding real sockets as descriptors 3..: a
// TCP listener on 127.0.0.1, one on [::1] when the machine has IPv6
// loopback, a unix stream listener, a UDP socket on 127.0.0.1 and an
// established TCP connection to the first listener. It returns the
// child's PID and a sampled host's TUI backend.
func socketChild(t *testing.T) (Backend, int) {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	var files []*os.File
	keep := func(f *os.File, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// plain TCP: Go listens with MPTCP where the kernel has it, and the
	// network capture lists /proc/net/tcp* sockets only
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ctx := context.Background()
	tl, err := lc.Listen(ctx, "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	keep(tl.(*net.TCPListener).File())
	if l6, err := lc.Listen(ctx, "tcp6", "[::1]:0"); err == nil {
		defer l6.Close()
		keep(l6.(*net.TCPListener).File())
	}
	ul, err := net.Listen("unix", filepath.Join(t.TempDir(), "inq.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	keep(ul.(*net.UnixListener).File())
	uc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	keep(uc.(*net.UDPConn).File())
	var dl net.Dialer
	dl.SetMultipathTCP(false)
	conn, err := dl.Dial("tcp4", tl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	keep(conn.(*net.TCPConn).File())
	child := exec.Command(sleep, "600")
	child.ExtraFiles = files
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	for _, f := range files {
		f.Close()
	}
	h, err := host.New(host.Options{Version: "test", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	if _, err := h.Sampler().Step(); err != nil {
		t.Fatal(err)
	}
	s := h.NewSession()
	host.MarkLocalFace(s)
	return BackendFunc(func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		return h.Dispatch(ctx, s, method, args)
	}), child.Process.Pid
}

// capturedRows opens the detail of pid and takes capture key k
// ("n" network, "f" open files); it returns the pane's rows.
func capturedRows(t *testing.T, d *driver, pid int, k string) [][]string {
	t.Helper()
	d.keys("f3")
	d.keys(strings.Split(strconv.Itoa(pid), "")...)
	d.keys("enter")
	if r := d.m.selected(); r == nil || r.PID != pid {
		t.Fatalf("child %d not selected:\n%s", pid, d.m.View())
	}
	if !d.m.detail {
		d.keys("enter")
	}
	d.keys(k)
	c := d.m.capture
	if c == nil || c.err != "" || c.loading {
		t.Fatalf("capture %s: %+v", k, c)
	}
	for c.next != "" {
		d.keys("end")
	}
	return c.rows
}

// The network pane reads as ss does and the open-files pane as lsof does,
// for the same sockets of a real process, each reference run in the same
// test: ss's Netid, State, Local and Peer Address:Port; lsof's FD, TYPE
// and NODE+NAME (sockets named by protocol and address, not
// socket:[inode]).
func TestSocketPanesMatchSsAndLsof(t *testing.T) {
	ssBin, err1 := exec.LookPath("ss")
	lsofBin, err2 := exec.LookPath("lsof")
	if err1 != nil || err2 != nil {
		t.Skip("ss or lsof is not installed")
	}
	b, pid := socketChild(t)
	d := newDriver(t, b)
	net := capturedRows(t, d, pid, "n")

	// ss: "Netid State Recv-Q Send-Q Local Peer Process" (unix: local is
	// "path inode", peer "* inode")
	out, err := exec.Command(ssBin, "-Hanp").CombinedOutput()
	if err != nil {
		t.Fatalf("ss: %v\n%s", err, out)
	}
	tag := "pid=" + strconv.Itoa(pid) + ","
	var want [][]string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.Contains(l, tag) {
			continue
		}
		f := strings.Fields(l)
		if strings.HasPrefix(f[0], "u_") {
			want = append(want, []string{f[0], f[1], f[4] + " " + f[5], "*"})
		} else {
			want = append(want, []string{f[0], f[1], f[4], f[5]})
		}
	}
	if len(want) < 4 {
		t.Fatalf("ss lists %d sockets of pid %d, want at least 4:\n%s", len(want), pid, out)
	}
	for _, w := range want {
		found := false
		for _, r := range net {
			if strings.Join(r, "|") == strings.Join(w, "|") {
				found = true
			}
		}
		if !found {
			t.Errorf("ss shows %q; the network pane has no such row:\n%s", w, d.m.View())
		}
	}
	if len(net) != len(want) {
		t.Errorf("network pane %d rows, ss %d: %q", len(net), len(want), net)
	}

	d.keys("esc")
	files := capturedRows(t, d, pid, "f")
	out, err = exec.Command(lsofBin, "-n", "-P", "-a", "-p", strconv.Itoa(pid), "-d", "3-9").CombinedOutput()
	if err != nil {
		t.Fatalf("lsof: %v\n%s", err, out)
	}
	lsof := map[string][2]string{} // FD -> TYPE, NODE NAME (inet) or NAME (unix)
	for _, l := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 9 {
			continue
		}
		name := strings.Join(f[8:], " ")
		if f[4] == "IPv4" || f[4] == "IPv6" {
			name = f[7] + " " + name
		}
		lsof[f[3]] = [2]string{f[4], name}
	}
	if len(lsof) < 4 {
		t.Fatalf("lsof lists %d sockets:\n%s", len(lsof), out)
	}
	for fd, w := range lsof {
		found := false
		for _, r := range files {
			if r[0] == fd {
				found = true
				if r[1] != w[0] || r[2] != w[1] {
					t.Errorf("fd %s: pane %q %q, lsof %q %q", fd, r[1], r[2], w[0], w[1])
				}
			}
		}
		if !found {
			t.Errorf("lsof fd %s not in the open-files pane: %q", fd, files)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("open files pane:\n%s\nlsof:\n%s", d.m.View(), out)
	}
}

// c shows command lines in COMMAND, as ps -o args shows them for the
// same process (read in the same run), with control characters escaped;
// c again shows names.
func TestCommandLineColumn(t *testing.T) {
	psBin, err := exec.LookPath("ps")
	if err != nil {
		t.Skip("ps is not installed")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	plain := exec.Command(sh, "-c", "sleep 600; :", "inqcmd", "plain-arg")
	tabbed := exec.Command(sh, "-c", "sleep 600; :", "inqcmd", "a\tb\x1b[2J")
	for _, c := range []*exec.Cmd{plain, tabbed} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	_, b, _ := liveFixture(t)
	d := newDriver(t, b)
	name := ""
	cell := func(pid int) string {
		t.Helper()
		for _, v := range d.m.rows {
			if v.r.PID == pid {
				name = v.r.Name
				return d.m.columns().command(v.r)
			}
		}
		t.Fatalf("pid %d not in the table", pid)
		return ""
	}
	if got := cell(plain.Process.Pid); got != name || strings.Contains(got, " ") {
		t.Fatalf("names first: %q", got)
	}
	d.keys("c")
	out, err := exec.Command(psBin, "-o", "args=", "-p", strconv.Itoa(plain.Process.Pid)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cell(plain.Process.Pid), strings.TrimSpace(string(out)); got != want {
		t.Fatalf("COMMAND %q, ps -o args %q", got, want)
	}
	if got, want := cell(tabbed.Process.Pid), sh+` -c sleep 600; : inqcmd a\tb\x1b[2J`; got != want {
		t.Fatalf("COMMAND %q, want %q", got, want)
	}
	d.keys("f3")
	d.keys(strings.Split(strconv.Itoa(plain.Process.Pid), "")...)
	d.keys("enter")
	if v := d.m.View(); !strings.Contains(v, sh+" -c sleep 600; : inqcmd plain-arg") || strings.Contains(v, "\x1b") {
		t.Fatalf("the table does not show the escaped command lines:\n%s", v)
	}
	d.keys("c")
	if got := cell(plain.Process.Pid); got != name {
		t.Fatalf("c again: %q", got)
	}
}

// USER and TIME+ say what ps says of the same process in the same run:
// ps -o user= and ps -o cputimes= (whole seconds of user+system time;
// TIME+ spells them M:SS.hh, as htop does). The process burns CPU and
// then sleeps, so its CPU time no longer changes when both read it.
func TestUserAndTimeMatchPs(t *testing.T) {
	psBin, err1 := exec.LookPath("ps")
	sh, err2 := exec.LookPath("sh")
	if err1 != nil || err2 != nil {
		t.Skip("no ps or sh")
	}
	c := exec.Command(sh, "-c", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sleep 600`)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	pid := c.Process.Pid
	deadline := time.Now().Add(5 * time.Minute)
	for {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(comm)) == "sleep" {
			break // the loop ended: its CPU time is final
		}
		if time.Now().After(deadline) {
			t.Fatal("the busy loop did not end within 5 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, b, _ := liveFixture(t)
	d := newDriver(t, b)
	out, err := exec.Command(psBin, "-o", "user=,cputimes=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		t.Fatalf("ps: %q", out)
	}
	secs, _ := strconv.Atoi(f[1])
	var row *Row
	for _, v := range d.m.rows {
		if v.r.PID == pid {
			row = v.r
		}
	}
	if row == nil || !row.CPUTimeOK {
		t.Fatalf("pid %d: %+v", pid, row)
	}
	tm := cpuTime(row.CPUTime)
	var min, sec, hs int
	if _, err := fmt.Sscanf(tm, "%d:%d.%d", &min, &sec, &hs); err != nil {
		t.Fatalf("TIME+ %q: %v", tm, err)
	}
	if row.User != f[0] || min*60+sec != secs {
		t.Fatalf("USER %q TIME+ %s; ps says %s and %d s", row.User, tm, f[0], secs)
	}
	// to the hundredth: utime+stime of /proc/PID/stat in clock ticks
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	sf := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	ut, _ := strconv.Atoi(sf[11])
	st, _ := strconv.Atoi(sf[12])
	hz := 100
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		hz, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if want := (ut + st) * 100 / hz; (min*60+sec)*100+hs != want {
		t.Fatalf("TIME+ %s; /proc/%d/stat utime+stime %d ticks at %d Hz", tm, pid, ut+st, hz)
	}
	t.Logf("pid %d: USER %s TIME+ %s; ps -o user,cputimes: %s %d; stat %d ticks", pid, row.User, tm, f[0], secs, ut+st)
}
