//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCaptureCommands runs inquest lsof, fuser, sockets and threads over a
// host in this process against a real child (sleep with a file open on
// fd 7) and checks the tables name what the child and the test hold.
func TestCaptureCommands(t *testing.T) {
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	path := filepath.Join(dir, "held by sleep.txt")
	if err := os.WriteFile(path, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sh", "-c", `exec 7<"$1"; exec sleep 30`, "sh", path)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	pid := strconv.Itoa(child.Process.Pid)
	// sh holds fd 7 before it execs sleep: wait for the exec, so every
	// table below names sleep (the deadline only guards against a hang).
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.TrimSpace(string(b)) == "sleep" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the child never became sleep (comm %q)", b)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)

	run := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return out.String(), code
	}
	// the child may predate the host's first sample only by a little: retry
	var out string
	var code int
	for i := 0; i < 20; i++ {
		if out, code = run("lsof", pid); code == 0 {
			break
		}
	}
	if code != 0 || !regexp.MustCompile(`(?m)^7r\s+REG\s+\d+,\d+\s+5\s+\d+\s`).MatchString(out) || !strings.Contains(out, path) {
		t.Fatalf("lsof (%d):\n%s", code, out)
	}
	out, code = run("fuser", path)
	if code != 0 || !strings.Contains(out, pid+" ") || strings.Count(out, "\n") != 2 {
		t.Fatalf("fuser (%d):\n%s", code, out)
	}
	out, code = run("sockets", "--pid", strconv.Itoa(os.Getpid()))
	if code != 0 || !strings.Contains(out, "127.0.0.1:"+port) || !strings.Contains(out, "LISTEN") {
		t.Fatalf("sockets (%d):\n%s", code, out)
	}
	out, code = run("threads", pid)
	if code != 0 || !strings.Contains(out, pid+" ") || !strings.Contains(out, "sleep") {
		t.Fatalf("threads (%d):\n%s", code, out)
	}
	// --json prints the start_capture envelope with the first page
	out, code = run("lsof", "--json", pid)
	var env map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil || env["data"].(map[string]any)["rows"] == nil {
		t.Fatalf("lsof --json (%d):\n%s", code, out)
	}
	if _, code = run("lsof", "99999999"); code != 1 {
		t.Fatalf("lsof of a missing pid exited %d", code)
	}
}
