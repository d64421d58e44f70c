package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// toolError returns the error object of a tools/call response m, failing
// the test when it is not an isError result.
func toolError(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	e, _ := sc["error"].(map[string]any)
	if res["isError"] != true || e == nil {
		t.Fatalf("want an isError result, got %v", m)
	}
	return e
}

// TestMCPBinCursorErrors drives list_symbols over the real `inquest mcp`:
// a cursor followed with another argument changed is CURSOR_INVALID whose
// message names next_action (bin results have no next_page), and a cursor
// followed after its file was deleted is INPUT_CHANGED naming /path (the
// file vanished between the calls), while the same path without a cursor
// is INVALID_ARGUMENT.
func TestMCPBinCursorErrors(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "copy")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, b, 0o755); err != nil {
		t.Fatal(err)
	}
	send, await := rawMCP(t, isolatedEnv(t), "--in-process", "--toolsets", "bin")
	send(initializeLine)
	await("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := func(id int, args map[string]any) map[string]any {
		t.Helper()
		a, _ := json.Marshal(args)
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_symbols","arguments":%s}}`, id, a))
		return await(fmt.Sprint(id))
	}
	m := call(2, map[string]any{"path": target, "limit": 1})
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	na, _ := sc["next_action"].(map[string]any)
	if res["isError"] == true || na == nil {
		t.Fatalf("first page: %v", m)
	}
	next := na["arguments"].(map[string]any)

	changed := map[string]any{}
	for k, v := range next {
		changed[k] = v
	}
	changed["limit"] = 2
	e := toolError(t, call(3, changed))
	if msg, _ := e["message"].(string); e["code"] != "CURSOR_INVALID" || e["field"] != "/cursor" || !strings.Contains(msg, "next_action") || strings.Contains(msg, "next_page") {
		t.Fatalf("changed arguments with the cursor: %v", e)
	}

	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	e = toolError(t, call(4, next))
	if e["code"] != "INPUT_CHANGED" || e["field"] != "/path" || e["retryable"] != false {
		t.Fatalf("cursor after the file was deleted: %v", e)
	}
	e = toolError(t, call(5, map[string]any{"path": target}))
	if e["code"] != "INVALID_ARGUMENT" || e["field"] != "/path" {
		t.Fatalf("a missing file without a cursor: %v", e)
	}
}

// TestBinUnreadableFileNamesField: `inquest bin inspect --json` on a file
// the user may not read (mode 0000) is PERMISSION_DENIED, not retryable,
// with field /path. Root reads every file, so the binary runs as uid
// 65534 (setpriv).
func TestBinUnreadableFileNamesField(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the check as another user (setpriv --reuid=65534)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is required for this test")
	}
	stage, err := os.MkdirTemp("", "inquest-perm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stage) })
	os.Chmod(stage, 0o1777)
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(stage, "inquest")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(stage, "unreadable")
	if err := os.WriteFile(unreadable, b[:4096], 0o000); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + stage, "PATH=/usr/bin:/bin"}
	for _, d := range []string{"run", "config", "state", "data"} {
		p := filepath.Join(stage, d)
		os.Mkdir(p, 0o700)
		os.Chown(p, 65534, 65534)
	}
	env = append(env, "XDG_RUNTIME_DIR="+filepath.Join(stage, "run"), "XDG_CONFIG_HOME="+filepath.Join(stage, "config"), "XDG_STATE_HOME="+filepath.Join(stage, "state"), "XDG_DATA_HOME="+filepath.Join(stage, "data"))
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", exe, "bin", "inspect", "--json", unreadable)
	cmd.Env = env
	out, _ := cmd.Output()
	var m struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("not JSON: %s", out)
	}
	if m.Error["code"] != "PERMISSION_DENIED" || m.Error["field"] != "/path" || m.Error["retryable"] != false {
		t.Fatalf("unreadable file: %v", m.Error)
	}
}
