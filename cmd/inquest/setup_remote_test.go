package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSetupRemoteFlags: --remote, --name, --ssh-option and --remote-path
// mistakes are usage errors (exit status 2) naming the flag typed, and no
// file is written.
func TestSetupRemoteFlags(t *testing.T) {
	env, home := setupEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--remote", "", "--client", "cursor", "--yes"}, "--remote is empty"},
		{[]string{"--remote", "-oProxyCommand=x", "--client", "cursor", "--yes"}, `--remote "-oProxyCommand=x": a host or user may not start with '-'`},
		{[]string{"--remote", "db1:99999", "--client", "cursor", "--yes"}, `--remote "db1:99999": port "99999" is not a number from 1 to 65535`},
		{[]string{"--remote", "db1", "--name", "db.1", "--client", "cursor", "--yes"}, `--name "db.1": '.' is not allowed`},
		{[]string{"--remote", "db1", "--ssh-option", "-F/x", "--client", "cursor", "--yes"}, `--ssh-option "-F/x": give one ssh option as Key=value`},
		{[]string{"--ssh-option", "Port=22", "--client", "cursor", "--yes"}, "--ssh-option and --remote-path need --remote"},
		{[]string{"--name", "x", "--client", "cursor", "--yes"}, "--name needs --remote"},
		{[]string{"--remote", "db1", "--remote-path", "bin/inquest", "--client", "cursor", "--yes"}, `--remote-path "bin/inquest": give the absolute path`},
		{[]string{"--remote", "db1.invalid", "--yes"}, "not on a terminal: name the clients with --client NAME"},
	} {
		cmd := exec.Command(binary, append([]string{"setup"}, c.args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("setup %q: %v\n%s\nwant exit status 2 and %q", c.args, err, out, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".cursor", "mcp.json")); err == nil {
		t.Error("a refused command wrote the Cursor configuration")
	}
}

// TestSetupRemoteCheckAndRemove: `setup --check` checks a remote entry
// (inquest-HOST, an ssh command) beside inquest's and reports an ssh
// failure in words with ssh's line and exit status; `--remove --remote`
// removes that entry alone.
func TestSetupRemoteCheckAndRemove(t *testing.T) {
	ssh, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ssh is not installed (Debian: openssh-client)")
		}
		t.Skip("ssh is not installed (Debian: openssh-client)")
	}
	env, home := setupEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // a closed port: connection refused
	cursor := filepath.Join(home, ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(cursor), 0o755)
	entry := `{"command": "` + ssh + `", "args": ["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-p", "` + strconv.Itoa(port) + `", "127.0.0.1", "/usr/local/bin/inquest", "mcp"]}`
	os.WriteFile(cursor, []byte(`{"mcpServers": {"other": {"command": "x"}, "inquest-127-0-0-1": `+entry+`}}`), 0o600)
	cmd := exec.Command(binary, "setup", "--client", "cursor", "--yes")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}

	cmd = exec.Command(binary, "setup", "--check", "--client", "cursor")
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	out := string(b)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("check: %v (want exit status 1)\n%s", err, out)
	}
	for _, w := range []string{"ok   cursor: ", "FAIL cursor inquest-127-0-0-1: ", "nothing accepts SSH connections at that address and port", "exit status 255", "Connection refused"} {
		if !strings.Contains(out, w) {
			t.Errorf("check output lacks %q:\n%s", w, out)
		}
	}

	cmd = exec.Command(binary, "setup", "--remove", "--remote", "127.0.0.1:"+strconv.Itoa(port), "--client", "cursor", "--yes")
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "remove inquest-127-0-0-1 from") {
		t.Fatalf("remove: %v\n%s", err, b)
	}
	after, _ := os.ReadFile(cursor)
	if strings.Contains(string(after), "inquest-127-0-0-1") || !strings.Contains(string(after), `"inquest"`) || !strings.Contains(string(after), `"other"`) {
		t.Fatalf("after --remove --remote:\n%s", after)
	}
}
