//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests drive the built inquest binary: `inquest mcp` bridges over
// stdio with the Go SDK client, `inquest serve` hosts started by those
// bridges (or by the test), `inquest settings`. Each test has its own
// runtime, config, state and temp directories, and kills every host it
// started.

var (
	heOnce sync.Once
	heBin  string
	heErr  error
)

// heBinary builds cmd/inquest once per test run.
func heBinary(t testing.TB) string {
	t.Helper()
	heOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inquest-host-e2e")
		if err != nil {
			heErr = err
			return
		}
		heBin = filepath.Join(dir, "inquest")
		out, err := exec.Command("go", "build", "-o", heBin, "github.com/inquest-dev/inquest/cmd/inquest").CombinedOutput()
		if err != nil {
			heErr = &buildError{out: string(out), err: err}
		}
	})
	if heErr != nil {
		t.Fatal(heErr)
	}
	return heBin
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// heEnv is an isolated environment: private runtime/config/state/data/tmp
// directories; a cleanup kills whatever host holds this runtime dir's lock.
type heEnv struct {
	t    testing.TB
	base string
	run_ string // XDG_RUNTIME_DIR
	env  []string
	bin  string
}

func newHeEnv(t testing.TB) *heEnv {
	t.Helper()
	base := t.TempDir()
	e := &heEnv{t: t, base: base, bin: heBinary(t)}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "TMPDIR", "INQUEST_CONFIG", "INQUEST_IN_PROCESS", "INQUEST_DATA_DIR":
			continue
		}
		e.env = append(e.env, kv)
	}
	for _, d := range []string{"run", "config", "state", "data", "tmp"} {
		os.MkdirAll(filepath.Join(base, d), 0o700)
	}
	e.run_ = filepath.Join(base, "run")
	e.env = append(e.env,
		"XDG_RUNTIME_DIR="+e.run_,
		"XDG_CONFIG_HOME="+filepath.Join(base, "config"),
		"XDG_STATE_HOME="+filepath.Join(base, "state"),
		"XDG_DATA_HOME="+filepath.Join(base, "data"),
		"TMPDIR="+filepath.Join(base, "tmp"),
	)
	t.Cleanup(e.killHosts)
	return e
}

func (e *heEnv) runDir() string { return filepath.Join(e.run_, "inquest") }

// setRuntimeDir points XDG_RUNTIME_DIR at dir.
func (e *heEnv) setRuntimeDir(dir string) {
	for i, kv := range e.env {
		if strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			e.env[i] = "XDG_RUNTIME_DIR=" + dir
		}
	}
	e.run_ = dir
}

// hostPID returns the pid in the host lock file (0 when none).
func (e *heEnv) hostPID() int {
	b, err := os.ReadFile(filepath.Join(e.runDir(), "host.lock"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// hostAlive reports whether pid is a running (not zombie) process.
// processGone reports whether every thread of pid has exited, so its
// files (the host's sockets) are closed: /proc/pid is gone, or the thread
// group leader is a zombie with no other thread left. A zombie leader
// alone is not enough: after SIGKILL the leader can be a zombie while
// other threads still run their exit and hold the shared fd table.
func processGone(pid int) bool {
	if hostAlive(pid) {
		return false
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	return err != nil || len(tasks) <= 1
}

func hostAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

func (e *heEnv) killHosts() {
	for i := 0; i < 3; i++ {
		pid := e.hostPID()
		if !hostAlive(pid) {
			return
		}
		syscall.Kill(pid, syscall.SIGKILL)
		for j := 0; j < 100 && hostAlive(pid); j++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (e *heEnv) run(args ...string) (string, int) {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return string(out), code
}

// bridge is one `inquest mcp` process with an MCP client session.
type heBridge struct {
	t   testing.TB
	cmd *exec.Cmd
	cs  *mcp.ClientSession
}

func (e *heEnv) bridge() *heBridge { return e.bridgeArgs() }

// bridgeArgs starts `inquest mcp --toolsets proc ARGS...`.
func (e *heEnv) bridgeArgs(args ...string) *heBridge {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(e.bin, append([]string{"mcp", "--toolsets", "proc"}, args...)...)
	cmd.Env = e.env
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "host-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return &heBridge{t: e.t, cmd: cmd, cs: cs}
}

// call invokes a tool and returns its envelope and isError.
func (b *heBridge) call(name string, args any) (map[string]any, bool) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		b.t.Fatalf("%s: protocol error %v", name, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &m); err != nil {
		b.t.Fatalf("%s: %v", name, err)
	}
	return m, res.IsError
}

func (b *heBridge) mustCall(name string, args any) map[string]any {
	b.t.Helper()
	m, isErr := b.call(name, args)
	if isErr {
		b.t.Fatalf("%s: %v", name, m["error"])
	}
	return m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

type statusView struct {
	instance string
	pid      int
	conns    int
	sessions int
	listener string
	starts   int
	seq      int
}

func (b *heBridge) status() statusView {
	b.t.Helper()
	m := b.mustCall("get_status", nil)
	num := func(v any) int { f, _ := v.(float64); return int(f) }
	s, _ := m["backend_instance_id"].(string)
	l, _ := dig(m, "data", "mcp", "listener").(string)
	return statusView{instance: s, pid: num(dig(m, "data", "host", "pid")), conns: num(dig(m, "data", "mcp", "connections")),
		sessions: num(dig(m, "data", "sessions")), listener: l, starts: num(dig(m, "data", "mcp", "listener_starts")),
		seq: num(dig(m, "data", "sampling", "snapshot_seq"))}
}

// startChild runs a sleep child so there is a process of our own to track.
func startChild(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// refOf returns the process_ref of pid (a child this test started) once
// the host lists it past its exec: a child started after the host's
// latest sample is listed from the next one, and a sample taken between
// fork and exec names it after this test binary.
func (b *heBridge) refOf(pid int) string {
	b.t.Helper()
	var ref string
	waitUntil(b.t, "pid "+strconv.Itoa(pid)+" listed after its exec", func() bool {
		m := b.mustCall("list_processes", map[string]any{"filter": map[string]any{"pid": pid}})
		rows, _ := dig(m, "data", "rows").([]any)
		if len(rows) != 1 || rows[0].(map[string]any)["name"] == filepath.Base(os.Args[0]) {
			return false
		}
		ref = rows[0].(map[string]any)["process_ref"].(string)
		return true
	})
	return ref
}

// waitUntil polls cond until it holds. The 2-minute bound only ends a
// hang: a loaded 2-core machine running -race can stall a process for
// seconds, so it is never the time the fact "should" take.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within 2 minutes", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hostRecvQueued is the number of bytes queued unread on the Unix
// sockets process pid holds (ss -xpH, Recv-Q column, of the lines naming
// pid=PID): bytes sent to a stopped host wait there.
func hostRecvQueued(t *testing.T, pid int) int {
	t.Helper()
	out, err := exec.Command("ss", "-xpH").Output()
	if err != nil {
		t.Skipf("ss (iproute2) is needed to see a request queued at the host: %v", err)
	}
	n, tag := 0, "pid="+strconv.Itoa(pid)+","
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 3 && strings.Contains(line, tag) {
			q, _ := strconv.Atoi(f[2])
			n += q
		}
	}
	return n
}

// TestHostLazyStart: initialize, tools/list, ping and a schema-invalid call
// start no host; the first valid proc call starts one in the background.
func TestHostLazyStart(t *testing.T) {
	e := newHeEnv(t)
	b := e.bridge()
	ctx := context.Background()
	if _, err := b.cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	m, isErr := b.call("list_processes", map[string]any{"limit": 0})
	if !isErr || errCode(m) != "INVALID_ARGUMENT" {
		t.Fatalf("invalid call: %v", m)
	}
	if e.hostPID() != 0 {
		t.Fatal("a host was started before any valid proc call")
	}
	st := b.status()
	if !hostAlive(st.pid) || st.pid != e.hostPID() || st.listener != "listening" || st.conns != 1 {
		t.Fatalf("after the first call: %+v (lock pid %d)", st, e.hostPID())
	}
	if st.pid == b.cmd.Process.Pid {
		t.Fatal("the host runs inside the bridge")
	}
	// Detached: its own session and process group.
	sid, pgid := statField(t, st.pid, 6), statField(t, st.pid, 5)
	if sid != strconv.Itoa(st.pid) || pgid != strconv.Itoa(st.pid) {
		t.Fatalf("host session %s, group %s, want both %d", sid, pgid, st.pid)
	}
	if fi, err := os.Stat(filepath.Join(e.base, "state", "inquest", "serve.log")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("serve.log: %v", err)
	}
}

// statField returns field n (1-based, as in proc(5)) of /proc/PID/stat.
func statField(t *testing.T, pid, n int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	return f[n-3]
}

// TestTwoBridgesShareHost: two bridges share one host (same instance id),
// keep independent cursors, and killing one bridge leaves the host and the
// retained history intact for the other.
func TestTwoBridgesShareHost(t *testing.T) {
	e := newHeEnv(t)
	child := startChild(t)
	a, b := e.bridge(), e.bridge()
	sa, sb := a.status(), b.status()
	if sa.instance == "" || sa.instance != sb.instance || sa.pid != sb.pid {
		t.Fatalf("bridges see different hosts: %+v %+v", sa, sb)
	}
	if st := a.status(); st.conns != 2 || st.sessions != 2 {
		t.Fatalf("host counts %+v, want 2 connections", st)
	}
	// Independent cursors: A's cursor is not valid on B.
	pa := a.mustCall("list_processes", map[string]any{"limit": 1})
	b.mustCall("list_processes", map[string]any{"limit": 1})
	cur, _ := dig(pa, "data", "next_cursor").(string)
	if cur == "" {
		t.Fatal("no cursor")
	}
	if m, isErr := b.call("list_processes", map[string]any{"limit": 1, "cursor": cur}); !isErr || errCode(m) != "CURSOR_INVALID" {
		t.Fatalf("A's cursor on B: %v", m)
	}
	a.mustCall("list_processes", map[string]any{"limit": 1, "cursor": cur})
	// Independent captures: a capture A retained is not readable from B.
	capA := a.mustCall("start_capture", map[string]any{"kind": "threads", "process_ref": a.refOf(child.Process.Pid), "retain_capture": true, "read": map[string]any{"limit": 1}})
	capID, _ := dig(capA, "data", "capture_id").(string)
	if capID == "" {
		raw, _ := json.Marshal(capA["data"])
		t.Fatalf("no capture_id in %s", raw)
	}
	if m, isErr := b.call("read_capture", map[string]any{"capture_id": capID}); !isErr || errCode(m) != "REFERENCE_INVALID" {
		t.Fatalf("A's capture read from B: %v", m)
	}
	a.mustCall("read_capture", map[string]any{"capture_id": capID})

	// History of a process, observed through A.
	ref := a.refOf(child.Process.Pid)
	hist := func(br *heBridge) int {
		m := br.mustCall("get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}})
		n, ok := dig(m, "data", "metrics", "rss_bytes", "sample_count").(float64)
		if !ok {
			raw, _ := json.Marshal(m["data"])
			t.Fatalf("no sample_count in %s", raw)
		}
		return int(n)
	}
	waitUntil(t, "two samples of the child", func() bool { return hist(a) >= 2 })
	before := hist(a)

	// Kill bridge A outright.
	a.cmd.Process.Kill()
	waitUntil(t, "bridge A gone", func() bool { return processGone(a.cmd.Process.Pid) })
	waitUntil(t, "host notices the dead bridge", func() bool { return b.status().conns == 1 })
	st := b.status()
	if st.instance != sa.instance || st.pid != sa.pid || !hostAlive(sa.pid) {
		t.Fatalf("host changed after a bridge died: %+v vs %+v", st, sa)
	}
	// The history A's agent built stays with the host: B reads it with the
	// same process_ref and it kept growing.
	waitUntil(t, "history keeps growing", func() bool { return hist(b) > before })
}

// TestHostKilledMidCall: the in-flight call gets OUTCOME_UNKNOWN; the next
// call starts a fresh host with a new instance id; old refs are
// REFERENCE_INVALID.
func TestHostKilledMidCall(t *testing.T) {
	e := newHeEnv(t)
	child := startChild(t)
	b := e.bridge()
	st := b.status()
	ref := b.refOf(child.Process.Pid)
	// Freeze the host so the next call is certainly in flight, then kill it.
	if st.pid <= 0 {
		t.Fatalf("no host pid in get_status: %+v", st)
	}
	syscall.Kill(st.pid, syscall.SIGSTOP)
	// Signal delivery is asynchronous: wait until the kernel reports the
	// host stopped, so the call below cannot be answered before the kill.
	waitUntil(t, "host stopped", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(st.pid) + "/stat")
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(b, ')')
		return i > 0 && i+2 < len(b) && b[i+2] == 'T'
	})
	// The call is in flight once its request sits unread in the stopped
	// host's socket: wait for ss to show those bytes queued, not for
	// 500 ms (on a loaded machine the bridge may not have written it yet,
	// and a kill before the write is a different case: a restart).
	queued0 := hostRecvQueued(t, st.pid)
	done := make(chan map[string]any, 1)
	go func() {
		m, _ := b.call("get_status", nil)
		done <- m
	}()
	waitUntil(t, "the request queued at the stopped host", func() bool { return hostRecvQueued(t, st.pid) > queued0 })
	syscall.Kill(st.pid, syscall.SIGKILL)
	m := <-done
	if errCode(m) != "OUTCOME_UNKNOWN" {
		t.Fatalf("in-flight call: %v", m)
	}
	waitUntil(t, "old host gone", func() bool { return processGone(st.pid) })
	st2 := b.status()
	if st2.instance == "" || st2.instance == st.instance || st2.pid == st.pid || !hostAlive(st2.pid) {
		t.Fatalf("after restart: %+v, before %+v", st2, st)
	}
	m, isErr := b.call("get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
	if !isErr || errCode(m) != "REFERENCE_INVALID" {
		t.Fatalf("old ref on the new host: %v", m)
	}
}

// TestNoInetSockets: during a session neither the bridge nor the host has
// an inet socket; their sockets are unix sockets.
func TestNoInetSockets(t *testing.T) {
	e := newHeEnv(t)
	b := e.bridge()
	st := b.status()
	for _, pid := range []int{b.cmd.Process.Pid, st.pid} {
		inodes := socketInodes(t, pid)
		if len(inodes) == 0 {
			t.Fatalf("pid %d has no sockets at all; the check would be vacuous", pid)
		}
		inet := tableInodes(t, pid, "tcp", "tcp6", "udp", "udp6", "raw", "raw6")
		unix := tableInodes(t, pid, "unix")
		for ino := range inodes {
			if inet[ino] {
				t.Errorf("pid %d holds inet socket inode %s", pid, ino)
			}
			if !unix[ino] {
				t.Errorf("pid %d holds socket inode %s that is not a unix socket", pid, ino)
			}
		}
	}
}

func socketInodes(t *testing.T, pid int) map[string]bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, en := range ents {
		l, err := os.Readlink(filepath.Join(dir, en.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			out[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	return out
}

// tableInodes collects the inode column of /proc/PID/net/<table>.
func tableInodes(t *testing.T, pid int, tables ...string) map[string]bool {
	out := map[string]bool{}
	for _, tb := range tables {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/net/" + tb)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan()
		col := 9
		if tb == "unix" {
			col = 6
		}
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) > col {
				out[fs[col]] = true
			}
		}
		f.Close()
	}
	return out
}

// TestSettingsToggle: saved disabled means a bridge starts no host; at
// runtime, disabling closes the running host's listener and connections
// (no second host is started), enabling reopens it for fresh connections.
func TestSettingsToggle(t *testing.T) {
	e := newHeEnv(t)
	if out, code := e.run("settings", "set", "mcp_connections_disabled", "true"); code != 0 || !strings.Contains(out, "= true") {
		t.Fatalf("settings set: %d %s", code, out)
	}
	b := e.bridge()
	m, _ := b.call("get_status", nil)
	if errCode(m) != "BACKEND_UNAVAILABLE" || !strings.Contains(dig(m, "error", "message").(string), "disabled") {
		t.Fatalf("saved disabled: %v", m)
	}
	if e.hostPID() != 0 {
		t.Fatal("a host was started although MCP connections are disabled")
	}
	// A manually started host with the saved setting opens no listener.
	if out, code := e.run("serve", "--detach"); code != 0 {
		t.Fatalf("serve --detach: %s", out)
	}
	if _, err := os.Lstat(filepath.Join(e.runDir(), "mcp.v1.sock")); err == nil {
		t.Fatal("a listener exists although disabled was saved")
	}
	hostPID := e.hostPID()
	if out, code := e.run("settings", "set", "mcp_connections_disabled", "false"); code != 0 || !strings.Contains(out, "opened its MCP listener") {
		t.Fatalf("enable: %d %s", code, out)
	}
	st := b.status()
	if st.pid != hostPID || st.listener != "listening" || st.conns != 1 {
		t.Fatalf("after enabling: %+v", st)
	}
	// Disable at runtime: the connection closes. Nothing was in flight, so
	// the next call is not OUTCOME_UNKNOWN: it tries to reconnect, finds
	// the listener closed and starts nothing.
	if out, code := e.run("settings", "set", "mcp_connections_disabled", "true"); code != 0 || !strings.Contains(out, "closed its MCP listener") {
		t.Fatalf("disable: %d %s", code, out)
	}
	if m, _ := b.call("get_status", nil); errCode(m) != "BACKEND_UNAVAILABLE" || !strings.Contains(dig(m, "error", "message").(string), "disabled") {
		t.Fatalf("first call after disabling: %v", m)
	}
	// The answer names the disabled listener (read from listener.state),
	// not the startup deadline: checked by content, not by wall clock.
	if m, _ := b.call("get_status", nil); errCode(m) != "BACKEND_UNAVAILABLE" || !strings.Contains(dig(m, "error", "message").(string), "disabled") ||
		strings.Contains(dig(m, "error", "message").(string), "within") {
		t.Fatalf("call while disabled: %v", m)
	}
	if e.hostPID() != hostPID || !hostAlive(hostPID) {
		t.Fatal("the host changed while disabled")
	}
	if out, code := e.run("settings", "set", "mcp_connections_disabled", "false"); code != 0 {
		t.Fatalf("re-enable: %s", out)
	}
	st2 := b.status()
	if st2.pid != hostPID || st2.starts != 2 || st2.conns != 1 {
		t.Fatalf("after re-enabling: %+v", st2)
	}
	if out, _ := e.run("settings", "get", "mcp_connections_disabled"); strings.TrimSpace(out) != "mcp_connections_disabled = false" {
		t.Fatalf("settings get: %q", out)
	}
}

// TestServeSingleInstance: one host per user.
func TestServeSingleInstance(t *testing.T) {
	e := newHeEnv(t)
	out, code := e.run("serve", "--detach")
	if code != 0 || !strings.Contains(out, "started") {
		t.Fatalf("first: %d %s", code, out)
	}
	pid := e.hostPID()
	out, code = e.run("serve", "--detach")
	if code != 0 || !strings.Contains(out, "already running (pid "+strconv.Itoa(pid)+")") {
		t.Fatalf("second --detach: %d %s", code, out)
	}
	out, code = e.run("serve")
	if code == 0 || !strings.Contains(out, "already running") {
		t.Fatalf("foreground second host: %d %s", code, out)
	}
	// CLI commands go through the same host.
	out, code = e.run("call", "get_status")
	if code != 0 || !strings.Contains(out, `"pid": `+strconv.Itoa(pid)) {
		t.Fatalf("inquest call: %d %s", code, out)
	}
	// Removing the runtime directory stops the host.
	os.RemoveAll(e.runDir())
	waitUntil(t, "host exits without its runtime dir", func() bool { return processGone(pid) })
}

// TestSquattedRuntimeDirBinary: a runtime directory pre-created by another
// user makes `inquest serve` and the bridge fail closed; nothing starts.
func TestSquattedRuntimeDirBinary(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to create the squatter as nobody")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	e := newHeEnv(t)
	run, err := os.MkdirTemp("", "inquest-squat-run")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	os.Chmod(run, 0o777)
	e.setRuntimeDir(run)
	if out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "mkdir", "-m", "0700", e.runDir()).CombinedOutput(); err != nil {
		t.Fatalf("squatter: %v %s", err, out)
	}
	out, code := e.run("serve")
	if code == 0 || !strings.Contains(out, "owned by uid 65534") {
		t.Fatalf("serve in a squatted dir: %d %s", code, out)
	}
	b := e.bridge()
	m, _ := b.call("get_status", nil)
	if errCode(m) != "BACKEND_UNAVAILABLE" || !strings.Contains(dig(m, "error", "message").(string), "security check") {
		t.Fatalf("bridge with a squatted dir: %v", m)
	}
	if _, err := os.Stat(filepath.Join(e.base, "state", "inquest", "serve.log")); err == nil {
		t.Fatal("a host launch was attempted")
	}
}

// TestNodeSDKClient: the official TypeScript SDK (an independent MCP client)
// lists tools and calls list_processes through `inquest mcp` and the host.
// It installs @modelcontextprotocol/sdk from npm into a temp dir and skips
// when node/npm are absent or the registry is unreachable.
func TestNodeSDKClient(t *testing.T) {
	if testing.Short() {
		t.Skip("npm install in -short mode")
	}
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		t.Skip("node/npm not installed: the independent-client check needs them")
	}
	e := newHeEnv(t)
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "mcp-e2e.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "mcp-e2e.mjs"), script, 0o644)
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"inquest-e2e","private":true,"type":"module"}`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "@modelcontextprotocol/sdk")
	inst.Dir = dir
	if out, err := inst.CombinedOutput(); err != nil {
		t.Skipf("npm install @modelcontextprotocol/sdk failed (registry unreachable?): %v %s", err, out)
	}
	cmd := exec.CommandContext(ctx, node, "mcp-e2e.mjs", e.bin)
	cmd.Dir = dir
	cmd.Env = e.env
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v %s", err, out)
	}
	var got struct {
		Server       string   `json:"server"`
		Tools        []string `json:"tools"`
		StatusError  bool     `json:"status_error"`
		Instance     string   `json:"backend_instance_id"`
		HostPID      int      `json:"host_pid"`
		Listener     string   `json:"mcp_listener"`
		ListError    bool     `json:"list_error"`
		ListInstance string   `json:"list_instance"`
		Rows         int      `json:"rows"`
		Next         string   `json:"next_action"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if pj, err := os.ReadFile(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		var v struct{ Version string }
		json.Unmarshal(pj, &v)
		t.Logf("@modelcontextprotocol/sdk %s, node %s", v.Version, nodeVersion(node))
	}
	t.Logf("node SDK client saw: %s", out)
	hasList := false
	for _, n := range got.Tools {
		hasList = hasList || n == "list_processes"
	}
	if got.Server != "inquest" || !hasList || got.StatusError || got.ListError || got.Rows != 5 || got.Next != "list_processes" {
		t.Fatalf("node client result %+v", got)
	}
	if got.Instance == "" || got.ListInstance != got.Instance || got.HostPID != e.hostPID() || !hostAlive(got.HostPID) || got.Listener != "listening" {
		t.Fatalf("calls did not go through the host: %+v (lock pid %d)", got, e.hostPID())
	}
}

func nodeVersion(node string) string {
	out, _ := exec.Command(node, "--version").Output()
	return strings.TrimSpace(string(out))
}

// TestBridgeEOF: client EOF exits the bridge; the host outlives it.
func TestBridgeEOF(t *testing.T) {
	e := newHeEnv(t)
	b := e.bridge()
	st := b.status()
	b.cs.Close() // closes the bridge's stdin
	waitUntil(t, "bridge exits on stdin EOF", func() bool { return processGone(b.cmd.Process.Pid) })
	if !hostAlive(st.pid) {
		t.Fatal("the host died with its bridge")
	}
	b2 := e.bridge()
	if st2 := b2.status(); st2.instance != st.instance || st2.pid != st.pid {
		t.Fatalf("a new bridge found another host: %+v vs %+v", st2, st)
	}
}

// TestIdleConnectionLoss: a host killed while the bridge is idle had
// nothing in flight, so the next call is not OUTCOME_UNKNOWN: the bridge
// starts a fresh host as at first use and the call succeeds there, warning
// that the old connection's objects were released.
func TestIdleConnectionLoss(t *testing.T) {
	e := newHeEnv(t)
	b := e.bridge()
	st := b.status()
	syscall.Kill(st.pid, syscall.SIGKILL)
	waitUntil(t, "host gone", func() bool { return processGone(st.pid) })
	m, isErr := b.call("get_status", nil)
	if isErr {
		t.Fatalf("first call after the host died: %v", m)
	}
	ws, _ := m["warnings"].([]any)
	if len(ws) != 1 || !strings.Contains(ws[0].(string), "lost between calls") {
		t.Fatalf("no reset warning on the first call after the host died: %v", m)
	}
	st2 := b.status()
	if st2.instance == st.instance || !hostAlive(st2.pid) {
		t.Fatalf("after reconnect: %+v", st2)
	}
}
