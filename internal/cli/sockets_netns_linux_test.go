//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSocketsNetns: inquest sockets lists a listener in a network
// namespace made by unshare -n, --netns INODE keeps only that
// namespace's rows (what nsenter ss -ltn prints there), and -o shows the
// NETNS column.
func TestSocketsNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare -n needs root")
	}
	for _, tool := range []string{"unshare", "nsenter", "ss", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required under CI: %v", tool, err)
			}
			t.Skipf("%s not installed", tool)
		}
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	py := "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',45676)); s.listen(); print('ready',flush=True); time.sleep(3600)"
	cmd := exec.Command("unshare", "-n", "sh", "-c", "ip link set lo up; exec python3 -c \""+py+"\"")
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "ready\n" {
		if strings.Contains(stderr.String(), "not permitted") {
			t.Skipf("the kernel refuses a network namespace: %s", stderr.String())
		}
		t.Fatalf("listener: %q %v %s", l, err, stderr.String())
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+pid+"/ns/net", &st); err != nil {
		t.Fatal(err)
	}
	ns := strconv.FormatUint(st.Ino, 10)
	run := func(args ...string) string {
		t.Helper()
		var o, e bytes.Buffer
		if code := Run(context.Background(), args, strings.NewReader(""), &o, &e); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, o.String(), e.String())
		}
		return o.String()
	}
	got := run("sockets", "--listen", "--proto", "tcp", "--netns", ns)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	ref, err := exec.Command("nsenter", "-t", pid, "-n", "ss", "-ltnH").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(ref)), "\n")
	if strings.Contains(lines[0], "NETNS") || len(lines)-1 != len(want) {
		t.Fatalf("sockets --netns %s:\n%s\nnsenter ss -ltn:\n%s", ns, got, ref)
	}
	for i, w := range want {
		f, g := strings.Fields(w), strings.Fields(lines[i+1])
		if len(g) < 5 || g[1] != f[0] || g[2] != f[3] || g[3] != f[4] || g[4] != pid {
			t.Fatalf("row %q, ss %q", lines[i+1], w)
		}
	}
	got = run("sockets", "--listen", "--netns", ns, "-o", "proto,local,pid,netns")
	if ls := strings.Split(strings.TrimSpace(got), "\n"); len(ls) != 2 || strings.Join(strings.Fields(ls[0]), " ") != "PROTO LOCAL PID NETNS" ||
		strings.Join(strings.Fields(ls[1]), " ") != "tcp 127.0.0.1:45676 "+pid+" "+ns {
		t.Fatalf("sockets -o proto,local,pid,netns:\n%s", got)
	}
	// host-wide, the rows span this and the listener's namespace: NETNS shown
	if got = run("sockets", "--listen", "--proto", "tcp"); !strings.Contains(got, "NETNS") || !strings.Contains(got, ns) {
		t.Fatalf("sockets --listen:\n%s", got)
	}
}
