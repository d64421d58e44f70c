//go:build linux

package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func runCaptureCLI(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// TestCaptureTablesEscapeControlCharacters: a process named
// $'x\ny\t\e[31mRED' holding a file named $'evil\n4 file ...' and a unix
// socket with an ESC in its path cannot inject rows or ANSI sequences into
// inquest lsof, fuser, threads or sockets; a listening unix socket shows
// LISTEN.
func TestCaptureTablesEscapeControlCharacters(t *testing.T) {
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	evilName := "x\ny\t\x1b[31mRED"
	bin := filepath.Join(dir, evilName)
	b, err := os.ReadFile(sleepBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	evilFile := filepath.Join(dir, "evil\n4     file  0  0  0  shadow")
	if err := os.WriteFile(evilFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s\x1b[31m.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	lf, err := l.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sh", "-c", `exec 7<"$1"; exec "$2" 30`, "sh", evilFile, bin)
	child.ExtraFiles = []*os.File{lf} // fd 3: the listening socket, held only by the child
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	lf.Close()
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	pid := strconv.Itoa(child.Process.Pid)
	// wait until the child has exec'ed the evil binary (2 s was a guess:
	// on a loaded machine the checks below would then read sh, whose
	// harmless name proves nothing)
	waitUntil(t, "the child to exec the evil binary", func() bool {
		c, _ := os.ReadFile("/proc/" + pid + "/comm")
		return strings.HasPrefix(string(c), "x\ny")
	})
	check := func(name, out string, wantEscaped ...string) {
		t.Helper()
		if strings.ContainsRune(out, 0x1b) {
			t.Fatalf("%s printed a raw ESC:\n%q", name, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "4 ") || strings.HasPrefix(line, "y") {
				t.Fatalf("%s: an injected row %q in\n%s", name, line, out)
			}
		}
		for _, w := range wantEscaped {
			if !strings.Contains(out, w) {
				t.Fatalf("%s: %q not shown escaped in\n%s", name, w, out)
			}
		}
	}
	out, errOut, code := runCaptureCLI("lsof", pid)
	if code != 0 {
		t.Fatalf("lsof %d: %s %s", code, out, errOut)
	}
	check("lsof", out, `evil\n4`)
	out, _, code = runCaptureCLI("fuser", evilFile)
	if code != 0 {
		t.Fatalf("fuser %d: %s", code, out)
	}
	check("fuser", out, `x\ny\t\x1b[31mRED`, `evil\n4`)
	out, _, code = runCaptureCLI("threads", pid)
	if code != 0 {
		t.Fatalf("threads %d: %s", code, out)
	}
	check("threads", out, `x\ny\t\x1b[31mRED`)
	out, _, code = runCaptureCLI("sockets", "--pid", pid)
	if code != 0 {
		t.Fatalf("sockets %d: %s", code, out)
	}
	check("sockets", out, `s\x1b[31m.sock`, `x\ny\t\x1b[31mRED`)
	listen := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "unix") && strings.Contains(line, `s\x1b[31m.sock`) && strings.Contains(line, "LISTEN") {
			listen = true
		}
	}
	if !listen {
		t.Fatalf("the listening unix socket is not LISTEN:\n%s", out)
	}
}

// TestCaptureCommandChecks: bad --pid values are rejected, a PID that never
// existed is "no process with pid N" (exit 1), and a partial result says so
// on stderr.
func TestCaptureCommandChecks(t *testing.T) {
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	for _, bad := range []string{"-3", "0"} {
		out, errOut, code := runCaptureCLI("sockets", "--pid", bad)
		if code == 0 || out != "" || !strings.Contains(errOut, "--pid must be a positive integer") {
			t.Fatalf("sockets --pid %s: exit %d stdout %q stderr %q", bad, code, out, errOut)
		}
	}
	out, errOut, code := runCaptureCLI("lsof", "4194303")
	if code != 1 || !strings.Contains(out+errOut, "no process with pid 4194303") || strings.Contains(out+errOut, "PROCESS_EXITED") {
		t.Fatalf("lsof of a PID that never existed: exit %d\n%s%s", code, out, errOut)
	}
	// a zombie makes a host-wide scan partial: the command says so
	z := exec.Command("true")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	defer z.Wait()
	waitUntil(t, "the child is a zombie", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", z.Process.Pid))
		i := bytes.LastIndexByte(b, ')')
		return err == nil && i > 0 && i+2 < len(b) && b[i+2] == 'Z'
	})
	path := filepath.Join(t.TempDir(), "nobody-holds-this")
	os.WriteFile(path, nil, 0o600)
	out, errOut, code = runCaptureCLI("fuser", path)
	if code != 0 || !strings.Contains(errOut, "warning:") || !strings.Contains(errOut, "PARTIAL result") {
		t.Fatalf("partial fuser: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}
