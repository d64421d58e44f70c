//go:build linux

package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/spf13/cobra"
)

// TestCaptureCommandFilterFlags runs lsof --path/--extension, fuser
// --owner and sockets --path against a real child holding a .log and a
// .txt file and a unix listener of this process: only matching rows are
// listed.
func TestCaptureCommandFilterFlags(t *testing.T) {
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	logPath := filepath.Join(dir, "Alpha.log")
	txtPath := filepath.Join(dir, "beta.txt")
	for _, p := range []string{logPath, txtPath} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	child := exec.Command("sh", "-c", `exec 7<"$1" 8<"$2"; exec sleep 30`, "sh", logPath, txtPath)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	pid := strconv.Itoa(child.Process.Pid)
	// sh opens fds 7 and 8 before it execs sleep: wait for the exec, so
	// the filters below see both files open (not an sh yet to open them).
	waitUntil(t, "the holder to exec sleep", func() bool {
		b, _ := os.ReadFile("/proc/" + pid + "/comm")
		return string(b) == "sleep\n"
	})
	sock := filepath.Join(dir, "Filter-Me.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	var out, errs string
	var code int
	for i := 0; i < 20; i++ {
		if out, errs, code = run("lsof", "--extension", ".log", pid); code == 0 {
			break
		}
	}
	if code != 0 || !strings.Contains(out, logPath) || strings.Contains(out, txtPath) {
		t.Fatalf("lsof --extension .log (%d):\n%s%s", code, out, errs)
	}
	// --path is case-insensitive and all-term across repeated values
	out, errs, code = run("lsof", "--path", "BETA", "--path", dir, pid)
	if code != 0 || !strings.Contains(out, txtPath) || strings.Contains(out, logPath) {
		t.Fatalf("lsof --path (%d):\n%s%s", code, out, errs)
	}
	out, errs, code = run("fuser", "--owner", "nosuchexe", logPath)
	if code != 0 || strings.Contains(out, pid+" ") {
		t.Fatalf("fuser --owner nosuchexe (%d):\n%s%s", code, out, errs)
	}
	out, errs, code = run("fuser", "--owner", "SLEEP", logPath)
	if code != 0 || !strings.Contains(out, pid+" ") {
		t.Fatalf("fuser --owner SLEEP (%d):\n%s%s", code, out, errs)
	}
	out, errs, code = run("sockets", "--pid", strconv.Itoa(os.Getpid()), "--path", "filter-me")
	if code != 0 || !strings.Contains(out, sock) || strings.Count(out, "\n") != 2 {
		t.Fatalf("sockets --path (%d):\n%s%s", code, out, errs)
	}
}

// TestFilterHintNamesFlags checks that a RESULT_TOO_LARGE capture's
// filter_terms become the command's flags.
func TestFilterHintNamesFlags(t *testing.T) {
	tooLarge := contract.Errorf(contract.CodeResultTooLarge, "too large").WithDetail("filter_terms", []any{"path", "extension"})
	cases := []struct {
		cmd  func(*Env) *cobra.Command
		err  error
		want string
	}{
		{newLsofCmd, tooLarge, "--path TERM and/or --extension .EXT"},
		{newFuserCmd, contract.Errorf(contract.CodeResultTooLarge, "x").WithDetail("filter_terms", []string{"path", "extension", "owner_name"}), "--owner NAME"},
		{newSocketsCmd, contract.Errorf(contract.CodeResultTooLarge, "x").WithDetail("filter_terms", []string{"path", "extension", "owner_name"}), "--path TERM and/or --extension .EXT and/or --owner NAME"},
		{newLsofCmd, contract.Errorf(contract.CodeInvalidArgument, "x"), ""},
		{newThreadsCmd, contract.Errorf(contract.CodeResultTooLarge, "x").WithDetail("filter_terms", []string{"owner_name"}), ""},
	}
	for _, c := range cases {
		cmd := c.cmd(&Env{})
		got := filterHint(cmd, c.err)
		if c.want == "" && got != "" || c.want != "" && !strings.HasSuffix(got, "with "+c.want+" so only matching rows are collected") {
			t.Errorf("%s: hint %q, want flags %q", cmd.Name(), got, c.want)
		}
	}
}
