package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/inquest-dev/inquest/internal/setup"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// setupEnv is isolatedEnv with HOME at a fresh directory (the client
// configurations live there) and the client overrides cleared.
func setupEnv(t *testing.T) ([]string, string) {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range isolatedEnv(t) {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home), home
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// registration reads what setup wrote for client, through the same reader
// --check uses.
func registration(t *testing.T, env []string, home, client string) *setup.Registration {
	t.Helper()
	e := setup.Env{Getenv: func(k string) string { return envValue(env, k) }, Home: home, Cwd: home, GOOS: "linux"}
	r, err := setup.Registered(setup.Lookup(client), e)
	if err != nil || r == nil {
		t.Fatalf("%s registration: %v %v", client, r, err)
	}
	return r
}

// TestSetupInteractive drives the multi-select prompt through a pty:
// nothing is preselected, the chosen client is written, the others not.
func TestSetupInteractive(t *testing.T) {
	env, home := setupEnv(t)
	for _, d := range []string{".cursor", ".codex"} {
		os.MkdirAll(filepath.Join(home, d), 0o755)
	}
	original := "{\n  // mine\n  \"mcpServers\": {}\n}\n"
	os.WriteFile(filepath.Join(home, ".cursor", "mcp.json"), []byte(original), 0o644)

	cmd := exec.Command(binary, "setup", "--toolsets", "proc")
	cmd.Env = env
	f, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer f.Close()
	var out lockedBuffer
	done := make(chan struct{})
	prompted := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		once := false
		for {
			n, err := f.Read(buf)
			out.Write(buf[:n])
			if !once && strings.Contains(out.String(), "Set up which?") {
				once = true
				close(prompted)
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-prompted:
	case <-done:
		t.Fatalf("no prompt:\n%s", out.String())
	}
	listing := out.String()
	// Cursor is the 5th client in prompt order; Claude Desktop and VS Code
	// are not listed because they are not detected.
	for _, want := range []string{"1) Claude Code", "2) Codex", "(detected)", "5) Cursor", filepath.Join(home, ".cursor", "mcp.json"), `{"command": "` + binary + `", "args": ["mcp", "--toolsets", "proc"]}`} {
		if !strings.Contains(listing, want) {
			t.Errorf("prompt lacks %q:\n%s", want, listing)
		}
	}
	if strings.Contains(listing, "VS Code") {
		t.Errorf("undetected optional client listed:\n%s", listing)
	}
	io.WriteString(f, "5\n")
	err = cmd.Wait()
	<-done // the reader drains the pty until the child's side is closed
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "cursor: wrote ") {
		t.Fatalf("output:\n%s", out.String())
	}
	b, _ := os.ReadFile(filepath.Join(home, ".cursor", "mcp.json"))
	want := "{\n  // mine\n  \"mcpServers\": {\n    \"inquest\": {\n      \"command\": \"" + binary + "\",\n      \"args\": [\"mcp\", \"--toolsets\", \"proc\"]\n    }\n  }\n}\n"
	if string(b) != want {
		t.Fatalf("mcp.json:\n%s\nwant\n%s", b, want)
	}
	if _, err := os.Stat(filepath.Join(home, ".codex", "config.toml")); err == nil {
		t.Fatal("codex was written without being chosen")
	}

	// An empty answer chooses nothing.
	cmd = exec.Command(binary, "setup")
	cmd.Env = env
	f2, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	// Answer only once the prompt is shown: input typed before the
	// program reads the terminal may be discarded when it sets the
	// terminal up, and the test would then wait forever.
	var out2 lockedBuffer
	done2 := make(chan struct{})
	prompted2 := make(chan struct{})
	go func() {
		defer close(done2)
		buf := make([]byte, 4096)
		once := false
		for {
			n, err := f2.Read(buf)
			out2.Write(buf[:n])
			if !once && strings.Contains(out2.String(), "Set up which?") {
				once = true
				close(prompted2)
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-prompted2:
	case <-done2:
		t.Fatalf("no prompt:\n%s", out2.String())
	}
	io.WriteString(f2, "\n")
	err = cmd.Wait()
	<-done2
	if all := out2.String(); err != nil || !strings.Contains(all, "nothing selected") {
		t.Fatalf("empty answer: %v\n%s", err, all)
	}
}

// lockedBuffer is a bytes.Buffer shared by the pty reader and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSetupCheckClients: the registered command line, as written into the
// client files, negotiates MCP with `setup --check` (the Go SDK client), the
// Go SDK client here, and the official TypeScript SDK client from npm.
func TestSetupCheckClients(t *testing.T) {
	env, home := setupEnv(t)
	run := func(args ...string) string {
		cmd := exec.Command(binary, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inquest %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("setup", "--client", "opencode", "--client", "claude-code", "--toolsets", "proc,perf", "--yes")
	out := run("setup", "--check")
	for _, c := range []string{"opencode", "claude-code"} {
		if !strings.Contains(out, "ok   "+c+": ") {
			t.Fatalf("check output lacks %s:\n%s", c, out)
		}
	}

	for _, c := range []string{"opencode", "claude-code"} {
		r := registration(t, env, home, c)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.Command(r.Argv[0], r.Argv[1:]...)
		cmd.Env = env
		client := mcp.NewClient(&mcp.Implementation{Name: "setup-e2e", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			t.Fatalf("%s: connect: %v", c, err)
		}
		tools, err := cs.ListTools(ctx, nil)
		cs.Close()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if cs.InitializeResult().ServerInfo.Name != "inquest" || !hasTool(tools.Tools, "list_processes") || hasTool(tools.Tools, "inspect_binary") {
			t.Fatalf("%s: Go SDK saw %s with %d tools", c, cs.InitializeResult().ServerInfo.Name, len(tools.Tools))
		}
	}

	// A registration of another build is reported by --check.
	other := filepath.Join(t.TempDir(), "inquest")
	os.WriteFile(other, []byte("#!/bin/sh\necho '{\"version\":\"9.9.9\"}'\n"), 0o755)
	cursor := filepath.Join(home, ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(cursor), 0o755)
	os.WriteFile(cursor, []byte(`{"mcpServers": {"inquest": {"command": "`+other+`", "args": ["mcp"]}}}`), 0o644)
	cmd := exec.Command(binary, "setup", "--check", "--client", "cursor")
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "FAIL cursor: ") || !strings.Contains(string(b), "is another build") {
		t.Fatalf("check of another build: %v\n%s", err, b)
	}

	nodeClient(t, env, registration(t, env, home, "opencode").Argv)
}

func hasTool(tools []*mcp.Tool, name string) bool {
	for _, tl := range tools {
		if tl.Name == name {
			return true
		}
	}
	return false
}

// nodeClient runs scripts/mcp-check.mjs (the official TypeScript SDK) on
// argv. It installs @modelcontextprotocol/sdk from npm into a temp dir and
// skips when node/npm are absent or the registry is unreachable.
func nodeClient(t *testing.T, env []string, argv []string) {
	if testing.Short() {
		t.Skip("npm install in -short mode")
	}
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		t.Skip("node/npm not installed: the TypeScript SDK check needs them")
	}
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "mcp-check.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "mcp-check.mjs"), script, 0o644)
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"inquest-setup-e2e","private":true,"type":"module"}`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "@modelcontextprotocol/sdk")
	inst.Dir = dir
	if out, err := inst.CombinedOutput(); err != nil {
		t.Skipf("npm install @modelcontextprotocol/sdk failed (registry unreachable?): %v %s", err, out)
	}
	a, _ := json.Marshal(argv)
	cmd := exec.CommandContext(ctx, node, "mcp-check.mjs", string(a))
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v %s", err, out)
	}
	var got struct {
		Server, Version string
		Tools           []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if pj, err := os.ReadFile(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		var v struct{ Version string }
		json.Unmarshal(pj, &v)
		t.Logf("@modelcontextprotocol/sdk %s: server %s %s, %d tools", v.Version, got.Server, got.Version, len(got.Tools))
	}
	has := false
	for _, n := range got.Tools {
		has = has || n == "list_processes"
	}
	if got.Server != "inquest" || !has {
		t.Fatalf("node client saw %+v", got)
	}
}
