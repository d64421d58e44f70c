package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpdateRepointsRegistrations: `inquest update` re-points the existing
// inquest entries of a JSON (Cursor) and a TOML (Codex) configuration from
// an old executable to this one, keeping the entry's arguments and
// environment and every other byte of the files; it adds no entry to a
// client without one; --dry-run and --check write nothing, and --check
// tells an old registration from a current one by its exit status.
func TestUpdateRepointsRegistrations(t *testing.T) {
	env, home := setupEnv(t)
	old := filepath.Join(t.TempDir(), "inquest-old")
	if err := os.WriteFile(old, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cursor := filepath.Join(home, ".cursor", "mcp.json")
	codex := filepath.Join(home, ".codex", "config.toml")
	for p, body := range map[string]string{
		cursor: `{
  // mine
  "mcpServers": {
    "other": {"command": "/usr/bin/other", "args": ["x"]},
    "inquest": {"command": "` + old + `", "args": ["mcp", "--toolsets", "proc"], "env": {"K": "V"}}
  }
}
`,
		codex: `# my codex settings
model = "m"

[mcp_servers.inquest]
command = "` + old + `"
args = ["mcp", "--raw"]

[mcp_servers.other]
command = "/usr/bin/other"
`,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	beforeCursor, beforeCodex := read(cursor), read(codex)
	run := func(wantCode int, args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantCode {
			t.Fatalf("inquest %v: exit %d, want %d\n%s", args, code, wantCode, out)
		}
		return string(out)
	}
	out := run(1, "update", "--check")
	if !strings.Contains(out, "OLD  cursor: ") || !strings.Contains(out, "OLD  codex: ") {
		t.Fatalf("--check output:\n%s", out)
	}
	out = run(0, "update", "--dry-run")
	if !strings.Contains(out, "-    \"inquest\": {\"command\": \""+old) || !strings.Contains(out, "+command = \""+binary) {
		t.Fatalf("--dry-run diff:\n%s", out)
	}
	if read(cursor) != beforeCursor || read(codex) != beforeCodex {
		t.Fatal("--check or --dry-run wrote a file")
	}
	run(0, "update")
	afterCursor, afterCodex := read(cursor), read(codex)
	if want := strings.Replace(beforeCodex, `command = "`+old+`"`, `command = "`+binary+`"`, 1); afterCodex != want {
		t.Fatalf("codex config:\n%s\nwant:\n%s", afterCodex, want)
	}
	r := registration(t, env, home, "cursor")
	if r.Argv[0] != binary || strings.Join(r.Argv[1:], " ") != "mcp --toolsets proc" || r.Env["K"] != "V" {
		t.Fatalf("cursor registration %v env %v", r.Argv, r.Env)
	}
	if !strings.Contains(afterCursor, "// mine") || !strings.Contains(afterCursor, `"other": {"command": "/usr/bin/other", "args": ["x"]}`) {
		t.Fatalf("cursor config lost other bytes:\n%s", afterCursor)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude.json")); err == nil {
		t.Fatal("update added a registration to a client that had none")
	}
	out = run(0, "update", "--check")
	if !strings.Contains(out, "ok   cursor: ") || !strings.Contains(out, "ok   codex: ") {
		t.Fatalf("--check after update:\n%s", out)
	}
	if out = run(0, "update"); !strings.Contains(out, "already starts this inquest; unchanged") {
		t.Fatalf("second update:\n%s", out)
	}
	run(1, "update", "--client", "claude-code")
	run(2, "update", "--client", "nope")
	run(2, "update", "--check", "--dry-run")
}
