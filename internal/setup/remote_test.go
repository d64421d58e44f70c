package setup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRemote(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Remote
		name string // DefaultName
		err  string // in the error; "" means valid
	}{
		{in: "db1", want: Remote{Host: "db1"}, name: "inquest-db1"},
		{in: "admin@db1.example.com", want: Remote{User: "admin", Host: "db1.example.com"}, name: "inquest-db1-example-com"},
		{in: "admin@db1:2222", want: Remote{User: "admin", Host: "db1", Port: 2222}, name: "inquest-db1"},
		{in: "10.0.0.7:22", want: Remote{Host: "10.0.0.7", Port: 22}, name: "inquest-10-0-0-7"},
		{in: "[2001:db8::1]:2200", want: Remote{Host: "2001:db8::1", Port: 2200}, name: "inquest-2001-db8--1"},
		{in: "u@[::1]", want: Remote{User: "u", Host: "::1"}, name: "inquest---1"},
		{in: "fe80::1", want: Remote{Host: "fe80::1"}, name: "inquest-fe80--1"},
		{in: "a.b@host_1", want: Remote{User: "a.b", Host: "host_1"}, name: "inquest-host_1"},
		{in: "", err: "host is empty"},
		{in: "u@", err: "host is empty"},
		{in: "@h", err: "user name before @ is empty"},
		{in: "h:", err: "not a number"},
		{in: "h:0", err: "1 to 65535"},
		{in: "h:70000", err: "1 to 65535"},
		{in: "h:ssh", err: "not a number"},
		{in: "-oProxyCommand=x", err: "may not start with '-'"},
		{in: "-x@h", err: "may not start with '-'"},
		{in: "h;rm", err: "not allowed"},
		{in: "h b", err: "not allowed"},
		{in: "[::1", err: "not closed"},
		{in: "[::1]x", err: "only :PORT"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseRemote(c.in)
			if c.err != "" {
				var re *RemoteError
				if !errors.As(err, &re) || re.Flag != "--remote" || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("ParseRemote(%q) = %+v, %v; want a --remote error with %q", c.in, got, err, c.err)
				}
				return
			}
			if err != nil || got.User != c.want.User || got.Host != c.want.Host || got.Port != c.want.Port {
				t.Fatalf("ParseRemote(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			}
			if n := got.DefaultName(); n != c.name || CheckName(n) != nil {
				t.Errorf("DefaultName %q (valid: %v), want %q", n, CheckName(n), c.name)
			}
		})
	}
}

func TestCheckNameAndOption(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{{"inquest-db1", true}, {"prod_db", true}, {"", false}, {"a.b", false}, {"a b", false}, {strings.Repeat("x", 65), false}} {
		if err := CheckName(c.name); (err == nil) != c.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", c.name, err, c.ok)
		}
	}
	for _, c := range []struct {
		opt string
		ok  bool
	}{{"IdentityFile=~/.ssh/id", true}, {"ProxyJump bastion", true}, {"Port=22", true}, {"", false}, {"=x", false}, {"-oX=y", false}, {"Id-File=x", false}, {"NoValue", false}, {"A=b\nc", false}} {
		err := CheckOption(c.opt)
		if (err == nil) != c.ok {
			t.Errorf("CheckOption(%q) = %v, want ok %v", c.opt, err, c.ok)
		}
		var re *RemoteError
		if err != nil && (!errors.As(err, &re) || re.Flag != "--ssh-option") {
			t.Errorf("CheckOption(%q): %v is not a --ssh-option error", c.opt, err)
		}
	}
}

// TestRemoteLauncher: the registered command line, and that the reader
// --check uses splits it back into the ssh part and the remote command.
func TestRemoteLauncher(t *testing.T) {
	r, err := ParseRemote("ops@db1.example.com:2222")
	if err != nil {
		t.Fatal(err)
	}
	r.Options = []string{"IdentityFile=/k/id ed", "ProxyJump bastion"}
	l := r.Launcher("", "/home/ops/my tools/inquest", []string{"mcp", "--toolsets", "proc,perf"})
	if l.Name != "inquest-db1-example-com" || filepath.Base(l.Command) != "ssh" {
		t.Fatalf("launcher %+v", l)
	}
	want := []string{"-T", "-o", "IdentityFile=/k/id ed", "-o", "ProxyJump bastion",
		"-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=30", "-p", "2222", "ops@db1.example.com",
		"'/home/ops/my tools/inquest'", "mcp", "--toolsets", "proc,perf"}
	if strings.Join(l.Args, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("args\n%q\nwant\n%q", l.Args, want)
	}
	sshPart, remote, ok := remoteCommand(append([]string{l.Command}, l.Args...))
	if !ok || sshPart[len(sshPart)-1] != "ops@db1.example.com" || remote[0] != "'/home/ops/my tools/inquest'" || len(remote) != 4 {
		t.Fatalf("remoteCommand: %q %q %v", sshPart, remote, ok)
	}
	if _, _, ok := remoteCommand([]string{"ssh", "-p", "22", "host"}); ok {
		t.Error("ssh without a remote command was split")
	}
	if n := r.Launcher("prod", "/x", nil).Name; n != "prod" {
		t.Errorf("--name gave %q", n)
	}
	// The remote shell gets back the words: sh reads the quoted path as
	// one argument.
	out, err := exec.Command("sh", "-c", "printf '%s|' "+strings.Join(l.Args[14:], " ")).Output()
	if err != nil || string(out) != "/home/ops/my tools/inquest|mcp|--toolsets|proc,perf|" {
		t.Errorf("sh reads the remote command as %q (%v)", out, err)
	}
}

// TestRemotePlanEachClient: a remote entry sits beside inquest's in every
// client's format, is read back by RegisteredAll, and is removed alone.
func TestRemotePlanEachClient(t *testing.T) {
	r, _ := ParseRemote("ops@db1.example.com")
	remote := r.Launcher("", "/usr/local/bin/inquest", []string{"mcp"})
	for _, c := range Clients {
		t.Run(c.Name, func(t *testing.T) {
			e := testEnv(t, nil)
			backups := filepath.Join(e.Home, "backups")
			for _, l := range []Launcher{testLauncher, remote} {
				ch, err := Plan(c, e, l)
				if err != nil {
					t.Fatal(err)
				}
				if ch.Name != l.serverName() || ch.Action != Add {
					t.Fatalf("plan %s: name %q action %s", l.serverName(), ch.Name, ch.Action)
				}
				if _, err := ch.Apply(backups, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			if again, err := Plan(c, e, remote); err != nil || again.Action != Unchanged {
				t.Fatalf("second remote plan: %v %v", again.Action, err)
			}
			regs, err := RegisteredAll(c, e)
			if err != nil || len(regs) != 2 || regs[0].Name != ServerName || regs[1].Name != "inquest-db1-example-com" || regs[0].Remote() || !regs[1].Remote() {
				t.Fatalf("RegisteredAll: %+v %v", regs, err)
			}
			if got := strings.Join(regs[1].Argv, " "); got != remote.Command+" "+strings.Join(remote.Args, " ") {
				t.Fatalf("remote argv %q", got)
			}
			rm, err := PlanRemoveNamed(c, e, "inquest-db1-example-com")
			if err != nil || rm.Action != Remove {
				t.Fatalf("remove: %v %v", rm, err)
			}
			if _, err := rm.Apply(backups, time.Now()); err != nil {
				t.Fatal(err)
			}
			regs, err = RegisteredAll(c, e)
			if err != nil || len(regs) != 1 || regs[0].Name != ServerName {
				t.Fatalf("after removing the remote entry: %+v %v", regs, err)
			}
		})
	}
}

// TestRegisteredAllSkipsOthers: a server named inquest-something that
// does not run ssh is not taken for a remote registration.
func TestRegisteredAllSkipsOthers(t *testing.T) {
	e := testEnv(t, nil)
	c := Lookup("cursor")
	os.MkdirAll(filepath.Join(e.Home, ".cursor"), 0o755)
	os.WriteFile(c.Locate(e), []byte(`{"mcpServers": {"inquest-docs": {"command": "npx", "args": ["docs"]}, "inquest-db1": {"command": "/usr/bin/ssh", "args": ["-T", "db1", "/usr/bin/inquest", "mcp"]}}}`), 0o600)
	regs, err := RegisteredAll(c, e)
	if err != nil || len(regs) != 1 || regs[0].Name != "inquest-db1" {
		t.Fatalf("RegisteredAll: %+v %v", regs, err)
	}
}

func TestExplainSSH(t *testing.T) {
	for _, c := range []struct {
		status int
		line   string
		want   string
	}{
		{255, "Host key verification failed.", "host key is not in known_hosts"},
		{255, "user@h: Permission denied (publickey).", "refused the login"},
		{255, "ssh: connect to host h port 22: Connection refused", "nothing accepts SSH connections"},
		{255, "ssh: connect to host 10.1.1.1 port 22: Connection timed out", "did not answer within the connect timeout"},
		{255, "ssh: Could not resolve hostname nope: Name or service not known", "does not resolve"},
		{255, "ssh: connect to host h port 22: No route to host", "unreachable"},
		{255, "kex_exchange_identification: Connection closed by remote host", "closed the SSH connection"},
		{255, "something new", "ssh failed before the remote command ran"},
		{127, "bash: line 1: /x/inquest: No such file or directory", "does not exist at that path"},
		{126, "bash: line 1: /x/inquest: Permission denied", "cannot be executed"},
		{1, "Error: unknown command", "remote command failed"},
	} {
		if got := explainSSH(c.status, c.line); !strings.Contains(got, c.want) {
			t.Errorf("explainSSH(%d, %q) = %q, want %q in it", c.status, c.line, got, c.want)
		}
	}
	if got := lastLine([]byte("Warning: Permanently added 'h' (ED25519) to the list of known hosts.\r\nuser@h: Permission denied (publickey).\r\n")); got != "user@h: Permission denied (publickey)." {
		t.Errorf("lastLine: %q", got)
	}
	if got := lastLine([]byte("user@h: Permission denied (publickey).\nWarning: Permanently added 'h' to the list of known hosts.\n")); got != "user@h: Permission denied (publickey)." {
		t.Errorf("lastLine skips the warning: %q", got)
	}
}

// FuzzParseRemote: any input is either refused with a --remote error or
// gives a destination ssh cannot read as an option, a valid server name,
// and the same Remote when written back.
func FuzzParseRemote(f *testing.F) {
	for _, s := range []string{"db1", "u@h:22", "[::1]:2", "fe80::1", "-oX", "u@[::1", "h:99999", "a@b@c", "h:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRemote(s)
		if err != nil {
			var re *RemoteError
			if !errors.As(err, &re) || re.Flag != "--remote" {
				t.Fatalf("ParseRemote(%q): %v is not a *RemoteError", s, err)
			}
			return
		}
		if r.Host == "" || strings.HasPrefix(r.Destination(), "-") || strings.ContainsAny(r.Destination(), " \t\n;'\"$`") {
			t.Fatalf("ParseRemote(%q) = %+v: unsafe destination %q", s, r, r.Destination())
		}
		if err := CheckName(r.DefaultName()); err != nil && len(r.DefaultName()) <= 64 {
			t.Fatalf("DefaultName of %q: %v", s, err)
		}
		h := r.Host
		if strings.Contains(h, ":") {
			h = "[" + h + "]"
		}
		back := h
		if r.User != "" {
			back = r.User + "@" + h
		}
		if r.Port != 0 {
			back += ":" + strconv.Itoa(r.Port)
		}
		r2, err := ParseRemote(back)
		if err != nil || r2.User != r.User || r2.Host != r.Host || r2.Port != r.Port {
			t.Fatalf("ParseRemote(%q) = %+v; written back %q gives %+v, %v", s, r, back, r2, err)
		}
	})
}
