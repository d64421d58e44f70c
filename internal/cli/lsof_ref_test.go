//go:build linux

package cli

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fdHolder starts `sleep` holding, besides 0-2: fd 3 a file read-only, 4
// the same write-only, 5 read-write; 6-10 a TCP listener on 127.0.0.1,
// both ends of a TCP connection to it, a UDP socket on the any address
// and a unix listener; 11 an IPv6 TCP listener when ::1 is available. It
// returns the pid once the child runs sleep.
func fdHolder(t *testing.T) int {
	t.Helper()
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	var files []*os.File
	keep := func(f interface{ File() (*os.File, error) }) {
		fl, err := f.File()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fl.Close() })
		files = append(files, fl)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := net.Dial("tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	u, err := net.ListenPacket("udp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	ul, err := net.Listen("unix", filepath.Join(dir, "holder.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	keep(l.(*net.TCPListener))
	keep(c.(*net.TCPConn))
	keep(s.(*net.TCPConn))
	keep(u.(*net.UDPConn))
	keep(ul.(*net.UnixListener))
	if l6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		t.Cleanup(func() { l6.Close() })
		keep(l6.(*net.TCPListener))
	} else {
		files = append(files, nil)
	}
	data := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(data, []byte("twelve bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	var opened []*os.File
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND, os.O_RDWR} {
		f, err := os.OpenFile(data, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		opened = append(opened, f)
	}
	child := exec.Command(sleepBin, "600")
	child.ExtraFiles = append(opened, files...)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pid := child.Process.Pid
	waitUntil(t, "the holder runs sleep", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return err == nil && strings.TrimSpace(string(b)) == filepath.Base(sleepBin)
	})
	return pid
}

// lsofRow is one row of `lsof -nP -p PID`: FD, TYPE and NAME (for a
// socket lsof puts the protocol in its NODE column; NAME here begins with
// it, as inquest's NAME does).
type lsofRow struct{ fd, typ, name string }

func parseLsofText(t *testing.T, out string, header string) map[string]lsofRow {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], header) {
		t.Fatalf("no %q header:\n%s", header, out)
	}
	rows := map[string]lsofRow{}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if header == "COMMAND" { // lsof: COMMAND PID USER FD TYPE DEVICE SIZE/OFF NODE NAME
			if len(f) < 9 {
				continue
			}
			name := strings.Join(f[8:], " ")
			if f[4] == "IPv4" || f[4] == "IPv6" {
				name = f[7] + " " + name
			}
			rows[strings.TrimRight(f[3], "rwu")] = lsofRow{f[3], f[4], name}
			continue
		}
		if len(f) < 4 { // inquest: FD TYPE SIZE/OFF NAME
			t.Fatalf("short row %q", line)
		}
		rows[strings.TrimRight(f[0], "rwu")] = lsofRow{f[0], f[1], strings.Join(f[3:], " ")}
	}
	return rows
}

// TestLsofMatchesLsof runs `inquest lsof PID` and `lsof -nP -p PID` on
// the same process in the same run: every file descriptor has the same
// FD (number and access mode), TYPE and, for files, devices and sockets
// with their protocol and addresses, the same NAME.
func TestLsofMatchesLsof(t *testing.T) {
	lsofBin, err := exec.LookPath("lsof")
	if err != nil {
		t.Skip("lsof is not installed")
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	pid := fdHolder(t)
	out, errOut, code := runCaptureCLI("lsof", strconv.Itoa(pid))
	if code != 0 {
		t.Fatalf("inquest lsof: exit %d\n%s%s", code, out, errOut)
	}
	ref, err := exec.Command(lsofBin, "-nP", "-a", "-p", strconv.Itoa(pid), "-d", "0-4096").Output()
	if err != nil {
		t.Fatalf("lsof: %v", err)
	}
	t.Logf("inquest lsof:\n%s\nlsof -nP:\n%s", out, ref)
	ours := parseLsofText(t, out, "FD")
	theirs := parseLsofText(t, string(ref), "COMMAND")
	if len(theirs) < 11 {
		t.Fatalf("lsof lists %d fds:\n%s", len(theirs), ref)
	}
	for fd, want := range theirs {
		got, ok := ours[fd]
		if !ok {
			t.Errorf("fd %s (%v) missing from inquest lsof:\n%s", fd, want, out)
			continue
		}
		if got.fd != want.fd || got.typ != want.typ {
			t.Errorf("fd %s: inquest %s %s, lsof %s %s", fd, got.fd, got.typ, want.fd, want.typ)
		}
		switch want.typ {
		case "REG", "CHR", "IPv4", "IPv6", "unix":
			if got.name != want.name {
				t.Errorf("fd %s NAME: inquest %q, lsof %q", fd, got.name, want.name)
			}
		}
	}
	for _, fd := range []string{"3", "4", "5"} {
		if theirs[fd].fd != fd+map[string]string{"3": "r", "4": "w", "5": "u"}[fd] {
			t.Errorf("fd %s: lsof says %q", fd, theirs[fd].fd)
		}
	}
	if len(ours) != len(theirs) {
		t.Errorf("inquest lists %d fds, lsof %d:\n%s\n%s", len(ours), len(theirs), out, ref)
	}
}
