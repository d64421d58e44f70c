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

// lsofRow is one row of `lsof -nP -p PID` or `inquest lsof PID`: FD,
// TYPE, DEVICE, SIZE/OFF, NODE and NAME (lsof leaves SIZE/OFF blank for
// a DEL row, so a row of 5 fields has none).
type lsofRow struct{ fd, typ, device, size, node, name string }

// lsofKey is a row's identity in both tables: the descriptor number, or
// FD and NAME for cwd/rtd/txt/mem/DEL rows (one per distinct file).
func lsofKey(fd, name string) string {
	n := strings.TrimRight(fd, "rwu")
	if _, err := strconv.Atoi(n); err == nil {
		return n
	}
	return fd + " " + name
}

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
			f = f[3:]
		}
		if len(f) < 5 {
			t.Fatalf("short row %q", line)
		}
		var r lsofRow
		if f[0] == "DEL" { // no SIZE/OFF
			r = lsofRow{f[0], f[1], f[2], "", f[3], strings.Join(f[4:], " ")}
		} else {
			if len(f) < 6 {
				t.Fatalf("short row %q", line)
			}
			r = lsofRow{f[0], f[1], f[2], f[3], f[4], strings.Join(f[5:], " ")}
		}
		rows[lsofKey(r.fd, r.name)] = r
	}
	return rows
}

// TestLsofMatchesLsof runs `inquest lsof PID` and `lsof -nP -p PID` on
// the same process in the same run: every row lsof lists — cwd, rtd,
// txt, each memory-mapped file (mem, and DEL for a mapped file the test
// deleted) and every file descriptor — is in inquest's table with the
// same FD (number and access mode), TYPE, DEVICE (files and devices),
// NODE, SIZE/OFF (files, directories, devices) and NAME (files, devices
// and sockets with their addresses), and inquest lists no other row.
func TestLsofMatchesLsof(t *testing.T) {
	lsofBin, err := exec.LookPath("lsof")
	if err != nil {
		t.Skip("lsof is not installed")
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	pid := fdHolder(t)
	mapped := mapHolder(t)
	for _, pid := range []int{pid, mapped} {
		out, errOut, code := runCaptureCLI("lsof", strconv.Itoa(pid))
		if code != 0 {
			t.Fatalf("inquest lsof: exit %d\n%s%s", code, out, errOut)
		}
		ref, err := exec.Command(lsofBin, "-nP", "-p", strconv.Itoa(pid)).Output()
		if err != nil {
			t.Fatalf("lsof: %v", err)
		}
		t.Logf("inquest lsof:\n%s\nlsof -nP:\n%s", out, ref)
		ours := parseLsofText(t, out, "FD")
		theirs := parseLsofText(t, string(ref), "COMMAND")
		kinds := map[string]int{}
		for key, want := range theirs {
			kinds[strings.TrimRight(want.fd, "0123456789rwu")]++
			got, ok := ours[key]
			if !ok {
				t.Errorf("%s (%v) missing from inquest lsof:\n%s", key, want, out)
				continue
			}
			if got.fd != want.fd || got.typ != want.typ || got.node != want.node {
				t.Errorf("%s: inquest %s %s node %s, lsof %s %s node %s", key, got.fd, got.typ, got.node, want.fd, want.typ, want.node)
			}
			switch want.typ {
			case "REG", "DIR", "CHR", "FIFO":
				if got.device != want.device || got.size != want.size {
					t.Errorf("%s: inquest DEVICE %s SIZE/OFF %s, lsof %s %s", key, got.device, got.size, want.device, want.size)
				}
			}
			switch want.typ {
			case "REG", "DIR", "CHR", "FIFO", "IPv4", "IPv6", "unix":
				if got.name != want.name {
					t.Errorf("%s NAME: inquest %q, lsof %q", key, got.name, want.name)
				}
			}
		}
		for key := range ours {
			if _, ok := theirs[key]; !ok {
				t.Errorf("inquest lists %s, lsof does not", key)
			}
		}
		if kinds["cwd"] != 1 || kinds["rtd"] != 1 || kinds["txt"] != 1 || kinds["mem"] == 0 || kinds[""] < 3 {
			t.Errorf("lsof rows by kind %v: want cwd, rtd, txt, mem and fds", kinds)
		}
		if pid == mapped && kinds["DEL"] != 1 {
			t.Errorf("lsof lists %d DEL rows, want the deleted mapping", kinds["DEL"])
		}
		if pid == mapped {
			continue
		}
		if len(theirs)-kinds["cwd"]-kinds["rtd"]-kinds["txt"]-kinds["mem"] < 11 {
			t.Fatalf("lsof lists too few fds:\n%s", ref)
		}
		for _, fd := range []string{"3", "4", "5"} {
			if theirs[fd].fd != fd+map[string]string{"3": "r", "4": "w", "5": "u"}[fd] {
				t.Errorf("fd %s: lsof says %q", fd, theirs[fd].fd)
			}
		}
	}
}

// mapHolder starts python3 mapping two files it wrote, one of them then
// deleted (lsof's DEL row), with its working directory in the test's
// directory, and returns its pid once both mappings are in place.
func mapHolder(t *testing.T) int {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	ready := filepath.Join(dir, "ready")
	script := `import mmap, os, sys, time
d = sys.argv[1]
with open(os.path.join(d, "gone.bin"), "wb") as f: f.write(b"x" * 8192)
with open(os.path.join(d, "gone.bin"), "r+b") as f: a = mmap.mmap(f.fileno(), 8192)
os.unlink(os.path.join(d, "gone.bin"))
with open(os.path.join(d, "kept.bin"), "wb") as f: f.write(b"y" * 5000)
with open(os.path.join(d, "kept.bin"), "rb") as f: b = mmap.mmap(f.fileno(), 5000, prot=mmap.PROT_READ)
open(sys.argv[2], "w").close()
time.sleep(600)
`
	child := exec.Command(py, "-c", script, dir, ready)
	child.Dir = dir
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	waitUntil(t, "python maps its files", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	return child.Process.Pid
}
