//go:build unix

package agents_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/setup"
)

// The remote tests start Debian's OpenSSH server (openssh-server, from
// .ci/run) on 127.0.0.1 for the user running the test: a host key and a
// user key made here with ssh-keygen, AuthorizedKeysFile and everything
// else in the test's directory. It serves the current user (root in CI,
// where sshd needs its privilege separation directory /run/sshd; a
// non-root sshd can log in only the user it runs as, which is this one).
//
// The session's HOME, PATH and XDG_RUNTIME_DIR come from sshd's SetEnv (no
// ForceCommand, no change to the user's real home): HOME is a directory of
// the test whose ~/.local/bin holds the inquest built for the test, so that
// setup's discovery finds it there (it is not on the minimal PATH of the
// non-login session), and
// XDG_RUNTIME_DIR is the test's own, so that the host the remote
// `inquest mcp` starts is this test's and not one another program of the
// same user runs. No terminal is allocated (ssh -T).

// remotePATH is the session's PATH: sshd's compiled-in default varies by
// build (and may hold /usr/local/bin, where a machine may have an inquest
// of its own), so the test sets a minimal one that holds neither the test's
// binary nor any other inquest.
const remotePATH = "/usr/bin:/bin"

// sshFixture is a running sshd and the keys and files around it.
type sshFixture struct {
	base       string
	port       int
	user       string
	key        string // private key in authorized_keys
	strangerID string // private key not in authorized_keys
	knownHosts string // holds sshd's host key for [127.0.0.1]:port
	remoteHome string // the session's HOME
	remoteRun  string // the session's XDG_RUNTIME_DIR
	remoteBin  string // remoteHome/.local/bin/inquest
}

// needTool skips without name unless CI=true, where a missing tool fails.
func needTool(t *testing.T, path, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(path)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (Debian: %s; .ci/run installs it)", path, pkg)
		}
		t.Skipf("%s is not installed (Debian: %s)", path, pkg)
	}
	return p
}

// startSSHD builds inquest into the remote home and starts sshd.
func startSSHD(t *testing.T, ctx context.Context) *sshFixture {
	t.Helper()
	sshd := needTool(t, "/usr/sbin/sshd", "openssh-server")
	keygen := needTool(t, "ssh-keygen", "openssh-client")
	needTool(t, "ssh", "openssh-client")
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	// sshd refuses keys and files in a directory others may write; the
	// temporary directory is 0700 already, StrictModes no covers the rest.
	f := &sshFixture{base: base, user: u.Username,
		key: filepath.Join(base, "id_user"), strangerID: filepath.Join(base, "id_stranger"),
		knownHosts: filepath.Join(base, "known_hosts"),
		remoteHome: filepath.Join(base, "remote-home"), remoteRun: filepath.Join(base, "remote-run")}
	f.remoteBin = filepath.Join(f.remoteHome, ".local", "bin", "inquest")
	for _, d := range []string{filepath.Dir(f.remoteBin), f.remoteRun, filepath.Join(f.remoteHome, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", f.remoteBin, "github.com/inquest-dev/inquest/cmd/inquest").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	hostKey := filepath.Join(base, "host_ed25519")
	for _, k := range []string{hostKey, f.key, f.strangerID} {
		if out, err := exec.CommandContext(ctx, keygen, "-q", "-t", "ed25519", "-N", "", "-C", "inquest-test", "-f", k).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, err := os.ReadFile(f.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(base, "authorized_keys")
	writeFile(t, auth, string(pub))
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// What the openssh-server package's service creates at boot.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A free port: sshd cannot report an ephemeral one, so one is taken
	// and released; should another program grab it meanwhile, sshd fails
	// to bind and another port is tried.
	for attempt := 0; ; attempt++ {
		f.port = freePort(t)
		cfg := filepath.Join(base, "sshd_config")
		writeFile(t, cfg, strings.Join([]string{
			"ListenAddress 127.0.0.1",
			"Port " + strconv.Itoa(f.port),
			"HostKey " + hostKey,
			"AuthorizedKeysFile " + auth,
			"StrictModes no",
			"PubkeyAuthentication yes",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"UsePAM no",
			"PermitRootLogin prohibit-password",
			"PidFile " + filepath.Join(base, "sshd.pid"),
			"LogLevel VERBOSE",
			fmt.Sprintf("SetEnv HOME=%s XDG_RUNTIME_DIR=%s TMPDIR=%s PATH=%s", f.remoteHome, f.remoteRun, filepath.Join(f.remoteHome, "tmp"), remotePATH),
			"",
		}, "\n"))
		cmd := exec.Command(sshd, "-D", "-e", "-f", cfg)
		log, err := os.Create(filepath.Join(base, "sshd.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			<-exited
			log.Close()
		})
		if waitBanner(t, f.port, exited) {
			break
		}
		b, _ := os.ReadFile(log.Name())
		if attempt == 4 {
			t.Fatalf("sshd did not start:\n%s", b)
		}
		t.Logf("sshd exited before listening (port %d taken?), trying another port:\n%s", f.port, b)
	}
	writeFile(t, f.knownHosts, fmt.Sprintf("[127.0.0.1]:%d %s", f.port, hostPub))
	t.Cleanup(func() { stopRemoteHost(t, f.remoteRun) })
	return f
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitBanner polls port until sshd answers with its SSH banner (true), or
// sshd exits (false). Bounded by minutes only: a hang is a failure.
func waitBanner(t *testing.T, port int, exited chan error) bool {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			return false
		default:
		}
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.SetReadDeadline(time.Now().Add(time.Minute))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "SSH-2.0-") {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("sshd did not listen within 3 minutes")
	return false
}

// stopRemoteHost ends the host the remote inquest mcp started (its pid is
// in host.lock) and waits for it to exit.
func stopRemoteHost(t *testing.T, runDir string) {
	b, err := os.ReadFile(filepath.Join(runDir, "inquest", "host.lock"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 1200; i++ {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// sshOptions are the --ssh-option values of the test: the test's key
// only, and its known_hosts checked strictly.
func (f *sshFixture) sshOptions(key string) []string {
	return []string{"IdentityFile=" + key, "IdentitiesOnly=yes", "UserKnownHostsFile=" + f.knownHosts, "StrictHostKeyChecking=yes", "GlobalKnownHostsFile=/dev/null"}
}

// clientEnv is the environment of the local side: a fresh HOME holding
// the client configurations, no client overrides, its own XDG dirs.
func clientEnv(t *testing.T) ([]string, string) {
	t.Helper()
	base := t.TempDir()
	home := filepath.Join(base, "home")
	os.MkdirAll(home, 0o700)
	var env []string
	for _, kv := range isolatedEnv(t, base) {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG", "SSH_AUTH_SOCK":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home), home
}

func envGet(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// installSDK runs npm ci when node_modules does not hold the pinned SDK,
// as TestAgentTasks does; it returns node.
func installSDK(t *testing.T, ctx context.Context) (node, here string) {
	t.Helper()
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node and npm are not installed (Debian: nodejs npm)")
		}
		t.Skip("node and npm are not installed: the TypeScript SDK client needs them (Debian: nodejs npm)")
	}
	here, _ = os.Getwd()
	if sdkVersion(t, filepath.Join(here, "node_modules", "@modelcontextprotocol", "sdk", "package.json")) != pinnedSDK(t, filepath.Join(here, "package.json")) {
		inst := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		inst.Dir = here
		if out, err := inst.CombinedOutput(); err != nil {
			t.Skipf("npm ci failed (registry unreachable?): %v\n%s", err, out)
		}
	}
	return node, here
}

// runRemoteMJS runs remote.mjs with cfg and decodes what it printed.
func runRemoteMJS(t *testing.T, ctx context.Context, node, here string, env []string, cfg map[string]any, out any) {
	t.Helper()
	b, _ := json.Marshal(cfg)
	cmd := exec.CommandContext(ctx, node, "remote.mjs", string(b))
	cmd.Dir = here
	cmd.Env = env
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("remote.mjs: %v\n%s", err, stdout)
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("remote.mjs printed %s: %v", stdout, err)
	}
}

// TestRemoteOverSSH: `inquest setup --remote` against a real sshd finds
// the remote inquest (in ~/.local/bin, off the session's PATH), checks it
// and registers `ssh -T -o BatchMode=yes ... inquest mcp` for Claude Code
// and Codex; `setup --check` passes through it; and the official
// TypeScript SDK client, started on the registered command line, runs an
// investigation (list_processes, get_history, file_users) whose answers
// match ps and the process this test started.
func TestRemoteOverSSH(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	node, here := installSDK(t, ctx)
	f := startSSHD(t, ctx)
	env, home := clientEnv(t)

	remote := fmt.Sprintf("%s@127.0.0.1:%d", f.user, f.port)
	args := []string{"setup", "--remote", remote, "--client", "claude-code", "--client", "codex", "--yes"}
	for _, o := range f.sshOptions(f.key) {
		args = append(args, "--ssh-option", o)
	}
	setupCmd := exec.CommandContext(ctx, f.remoteBin, args...)
	setupCmd.Env = env
	out, err := setupCmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inquest %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !strings.Contains(string(out), "found inquest on 127.0.0.1: "+f.remoteBin) {
		t.Errorf("setup did not report the discovered path %s:\n%s", f.remoteBin, out)
	}

	e := setup.Env{Getenv: func(k string) string { return envGet(env, k) }, Home: home, Cwd: home, GOOS: "linux"}
	var reg *setup.Registration
	for _, client := range []string{"claude-code", "codex"} {
		r, err := setup.RegisteredNamed(setup.Lookup(client), e, "inquest-127-0-0-1")
		if err != nil || r == nil {
			t.Fatalf("%s: no inquest-127-0-0-1 entry (%v); setup said:\n%s", client, err, out)
		}
		if reg != nil && strings.Join(r.Argv, "\x00") != strings.Join(reg.Argv, "\x00") {
			t.Errorf("%s registers %q, claude-code %q", client, r.Argv, reg.Argv)
		}
		reg = r
	}
	argv := strings.Join(reg.Argv, " ")
	wantArgs := []string{"-T", "-o BatchMode=yes", "-o ConnectTimeout=10", "-p " + strconv.Itoa(f.port), f.user + "@127.0.0.1 " + f.remoteBin + " mcp"}
	for _, w := range wantArgs {
		if !strings.Contains(argv, w) {
			t.Errorf("registered command %q lacks %q", argv, w)
		}
	}
	if filepath.Base(reg.Argv[0]) != "ssh" || !filepath.IsAbs(reg.Argv[0]) {
		t.Errorf("registered command %q does not start with ssh's absolute path", reg.Argv[0])
	}

	// setup --check starts every registration, the remote ones too.
	check := exec.CommandContext(ctx, f.remoteBin, "setup", "--check", "--client", "claude-code")
	check.Env = env
	cout, err := check.CombinedOutput()
	if err != nil || !strings.Contains(string(cout), "ok   claude-code inquest-127-0-0-1: ") {
		t.Fatalf("setup --check: %v\n%s", err, cout)
	}

	// The session the registration gets is a non-login one: no terminal,
	// and sshd's minimal PATH, which lacks the directory of the remote
	// inquest (found by setup in ~/.local/bin, and able to start its host
	// from there: it re-executes itself by os.Executable, not by PATH).
	sshPart := reg.Argv[:len(reg.Argv)-2] // up to the destination
	probe := exec.CommandContext(ctx, sshPart[0], append(append([]string{}, sshPart[1:]...), `sh -c 'echo "$PATH"; if [ -t 0 ] || [ -t 1 ] || [ -t 2 ]; then echo tty; else echo no-tty; fi'`)...)
	probe.Env = env
	pout, err := probe.Output()
	if err != nil {
		t.Fatalf("ssh probe: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(pout)), "\n")
	if len(lines) != 2 || lines[1] != "no-tty" || lines[0] != remotePATH {
		t.Errorf("the remote session printed %q: want its PATH %s (without %s), and no terminal", pout, remotePATH, filepath.Dir(f.remoteBin))
	}

	// stdout carries only MCP: every line the registered command writes
	// through a whole session (initialize, tools/list, a proc call that
	// starts the remote host, end of input) is a JSON-RPC 2.0 message.
	raw := exec.CommandContext(ctx, reg.Argv[0], reg.Argv[1:]...)
	raw.Env = env
	stdin, _ := raw.StdinPipe()
	stdout, _ := raw.StdoutPipe()
	if err := raw.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n"+
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_processes","arguments":{"limit":1}}}`+"\n")
	ids := map[float64]bool{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Errorf("stdout line %d is not a JSON-RPC message: %.200q", n, sc.Text())
			continue
		}
		if id, ok := m["id"].(float64); ok && m["result"] != nil {
			ids[id] = true
			if ids[2] && ids[3] {
				stdin.Close() // the end of the session: the rest is read to EOF
			}
		}
	}
	if err := raw.Wait(); err != nil || !ids[1] || !ids[2] || !ids[3] {
		t.Errorf("the raw session: exit %v, answered initialize %v, tools/list %v, list_processes %v", err, ids[1], ids[2], ids[3])
	}

	// The investigated process: a sleep that holds F open on its stdin.
	file := filepath.Join(t.TempDir(), "held over ssh.txt")
	writeFile(t, file, "held open by a sleeping process\n")
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	holder := start(t, exec.Command("sleep", "600"), fh)
	fh.Close()

	var r struct {
		SDK   string `json:"sdk"`
		Tools int    `json:"tools"`
		List  struct {
			Error json.RawMessage `json:"error"`
			Rows  []struct {
				PID  int    `json:"pid"`
				Name string `json:"name"`
				Ref  string `json:"process_ref"`
			} `json:"rows"`
		} `json:"list"`
		History struct {
			Error       json.RawMessage `json:"error"`
			ResolvedPID int             `json:"resolved_pid"`
			ProcessRef  string          `json:"process_ref"`
			Summary     struct {
				SampleCount int `json:"sample_count"`
				Last        struct {
					Value string `json:"value"`
				} `json:"last"`
			} `json:"summary"`
		} `json:"history"`
		FileUsers struct {
			Error   json.RawMessage `json:"error"`
			Holders []struct {
				PID  int    `json:"pid"`
				Name string `json:"name"`
			} `json:"holders"`
		} `json:"file_users"`
		BadFrames int    `json:"bad_frames"`
		Stderr    string `json:"stderr"`
	}
	runRemoteMJS(t, ctx, node, here, env, map[string]any{
		"mode": "investigate", "command": reg.Argv[0], "args": reg.Argv[1:],
		"pid": holder.Process.Pid, "file": file, "timeout_ms": 240000,
	}, &r)
	t.Logf("@modelcontextprotocol/sdk %s through %s: %d tools", r.SDK, argv, r.Tools)
	if r.Tools < 40 {
		t.Errorf("tools/list through ssh gave %d tools", r.Tools)
	}
	// stdout carried only MCP: the SDK reported no line it could not parse.
	if r.BadFrames != 0 {
		t.Errorf("%d non-MCP messages on the remote stdout; stderr:\n%s", r.BadFrames, r.Stderr)
	}
	if len(r.List.Error) > 0 || len(r.List.Rows) != 1 || r.List.Rows[0].PID != holder.Process.Pid || r.List.Rows[0].Name != "sleep" || r.List.Rows[0].Ref == "" {
		t.Errorf("list_processes pid %d: rows %+v, error %s", holder.Process.Pid, r.List.Rows, r.List.Error)
	}
	h := r.History
	if len(h.Error) > 0 || h.ResolvedPID != holder.Process.Pid || h.ProcessRef == "" || h.Summary.SampleCount < 2 {
		t.Fatalf("get_history: %+v", h)
	}
	// The reference: ps's resident set size (KiB) of the same process; a
	// sleeping sleep does not change it.
	psOut, err := exec.Command("ps", "-o", "rss=", "-p", strconv.Itoa(holder.Process.Pid)).Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(psOut)), 10, 64)
	if err != nil {
		t.Fatalf("ps printed %q", psOut)
	}
	if h.Summary.Last.Value != strconv.FormatInt(kib*1024, 10) {
		t.Errorf("get_history rss_bytes last %s, ps says %d KiB (%d bytes)", h.Summary.Last.Value, kib, kib*1024)
	}
	fu := r.FileUsers
	if len(fu.Error) > 0 || len(fu.Holders) != 1 || fu.Holders[0].PID != holder.Process.Pid || fu.Holders[0].Name != "sleep" {
		t.Errorf("file_users of %s: %+v, error %s; want the one sleep %d", file, fu.Holders, fu.Error, holder.Process.Pid)
	}

	// The host was started in the session's own runtime directory (no
	// host of another program was used) by the binary in ~/.local/bin,
	// although that directory is not on the session's PATH.
	if _, err := os.Stat(filepath.Join(f.remoteRun, "inquest", "host.lock")); err != nil {
		t.Errorf("no host in the remote session's runtime directory: %v", err)
	}
}

// TestRemoteSSHFailures: an unreachable machine (a closed port), a key the
// machine refuses, an unknown host key and a missing remote inquest each
// fail `setup --remote` with ssh's own line, the exit status and what it
// means (and nothing is written); the first three, started on the command
// line setup registers, fail the TypeScript SDK client's connect quickly
// (ssh exits: no wait for the client's timeout) with ssh's message on the
// server's stderr.
func TestRemoteSSHFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	node, here := installSDK(t, ctx)
	f := startSSHD(t, ctx)
	emptyKnown := filepath.Join(f.base, "known_hosts_empty")
	writeFile(t, emptyKnown, "")
	closed := freePort(t) // nothing listens there once freePort returns

	cases := []struct {
		name      string
		port      int
		opts      []string
		extra     []string // more setup flags
		sshLine   string   // in ssh's stderr line
		meaning   string   // setup's explanation
		status    string
		viaClient bool
	}{
		{"unreachable", closed, f.sshOptions(f.key), nil, "Connection refused", "nothing accepts SSH connections", "exit status 255", true},
		{"refused key", f.port, f.sshOptions(f.strangerID), nil, "Permission denied", "refused the login", "exit status 255", true},
		{"unknown host key", f.port, []string{"IdentityFile=" + f.key, "IdentitiesOnly=yes", "UserKnownHostsFile=" + emptyKnown, "GlobalKnownHostsFile=/dev/null", "StrictHostKeyChecking=yes"}, nil, "Host key verification failed", "host key is not in known_hosts", "exit status 255", true},
		{"remote inquest missing", f.port, f.sshOptions(f.key), []string{"--remote-path", "/nonexistent/inquest"}, "No such file or directory", "remote inquest executable does not exist at that path", "exit status 127", false},
	}
	t.Run("no inquest on the machine", func(t *testing.T) {
		// setup runs from a copy outside the remote HOME; the remote
		// HOME's binary is moved away for the discovery.
		local := filepath.Join(t.TempDir(), "inquest")
		if err := os.Link(f.remoteBin, local); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f.remoteBin, f.remoteBin+".off"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(f.remoteBin+".off", f.remoteBin)
		env, home := clientEnv(t)
		args := []string{"setup", "--remote", fmt.Sprintf("%s@127.0.0.1:%d", f.user, f.port), "--client", "claude-code", "--yes"}
		for _, o := range f.sshOptions(f.key) {
			args = append(args, "--ssh-option", o)
		}
		cmd := exec.CommandContext(ctx, local, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("setup: %v (want exit status 1)\n%s", err, out)
		}
		for _, w := range []string{"no inquest executable on 127.0.0.1", "~/.local/bin, ~/go/bin", "--remote-path", "exit status 127", "nothing was written"} {
			if !strings.Contains(string(out), w) {
				t.Errorf("setup's message lacks %q:\n%s", w, out)
			}
		}
		if _, err := os.Stat(filepath.Join(home, ".claude.json")); err == nil {
			t.Errorf("setup wrote the client configuration although no inquest was found")
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, home := clientEnv(t)
			remote := fmt.Sprintf("%s@127.0.0.1:%d", f.user, c.port)
			args := []string{"setup", "--remote", remote, "--client", "claude-code", "--yes", "--timeout", "2m"}
			for _, o := range c.opts {
				args = append(args, "--ssh-option", o)
			}
			args = append(args, c.extra...)
			cmd := exec.CommandContext(ctx, f.remoteBin, args...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("setup: %v (want exit status 1)\n%s", err, out)
			}
			for _, w := range []string{c.sshLine, c.meaning, c.status, "nothing was written", "command: "} {
				if !strings.Contains(string(out), w) {
					t.Errorf("setup's message lacks %q:\n%s", w, out)
				}
			}
			if _, err := os.Stat(filepath.Join(home, ".claude.json")); err == nil {
				t.Errorf("setup wrote the client configuration although the check failed")
			}
			if !c.viaClient {
				t.Logf("setup said: %s", out)
				return
			}
			r, err := setup.ParseRemote(remote)
			if err != nil {
				t.Fatal(err)
			}
			r.Options = c.opts
			l := r.Launcher("", f.remoteBin, []string{"mcp"})
			var got struct {
				Connected bool   `json:"connected"`
				TimedOut  bool   `json:"timed_out"`
				Error     string `json:"error"`
				Stderr    string `json:"stderr"`
			}
			runRemoteMJS(t, ctx, node, here, env, map[string]any{"mode": "fail", "command": l.Command, "args": l.Args, "timeout_ms": 120000}, &got)
			if got.Connected || got.TimedOut || got.Error == "" {
				t.Fatalf("the client's connect: %+v; want a failure before its timeout", got)
			}
			if !strings.Contains(got.Stderr, c.sshLine) {
				t.Errorf("the server's stderr the client saw lacks %q: %q (error %q)", c.sshLine, got.Stderr, got.Error)
			}
			t.Logf("the client saw: %s; stderr: %s", got.Error, strings.TrimSpace(got.Stderr))
			t.Logf("setup said: %s", out)
		})
	}
}
