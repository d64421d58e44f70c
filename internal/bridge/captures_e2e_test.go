//go:build linux

package bridge_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCapturesOverStdio runs the acceptance items end to end: the built
// inquest binary as `inquest mcp --in-process` over stdio with the Go SDK
// client, real child processes, files and sockets.
func TestCapturesOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "inquest")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/inquest").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	base := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + base, "XDG_RUNTIME_DIR=" + base, "XDG_CONFIG_HOME=" + base,
		"XDG_STATE_HOME=" + base, "XDG_DATA_HOME=" + base, "INQUEST_CONFIG=" + filepath.Join(base, "inquest.toml")}
	cmd := exec.Command(bin, "mcp", "--in-process")
	cmd.Env = env
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "capture-e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callTool := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		var env map[string]any
		if err := json.Unmarshal([]byte(text), &env); err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("%s: %s", name, text)
		}
		return env["data"].(map[string]any)
	}

	path := tempFile(t, "inquest-e2e-held.log")
	child := holder(t, path)
	// the test itself opens a TCP listener on 127.0.0.1 and a unix socket
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	sock := filepath.Join(t.TempDir(), "e2e.sock")
	ux, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ux.Close()

	var ref string
	for deadline := time.Now().Add(2 * time.Minute); ref == "" && time.Now().Before(deadline); {
		d := callTool("list_processes", map[string]any{"filter": map[string]any{"pid": child.Process.Pid}})
		if rs := rowsOf(d); len(rs) == 1 {
			ref = rs[0]["process_ref"].(string)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if ref == "" {
		t.Fatal("child never listed")
	}

	// file_users with a path read filter: exactly the child, in one call
	d := callTool("start_capture", map[string]any{"kind": "file_users", "read": map[string]any{"path": "inquest-e2e-held", "extension": ".log"}})
	rows := rowsOf(page(d))
	if len(rows) != 1 || int(rows[0]["pid"].(float64)) != child.Process.Pid || rows[0]["path"] != path || rows[0]["process_ref"] != ref {
		t.Fatalf("file_users: %v", d)
	}
	// open_files lists the file with its fd
	d = callTool("start_capture", map[string]any{"kind": "open_files", "process_ref": ref, "read": map[string]any{"path": path}})
	rows = rowsOf(page(d))
	if len(rows) != 1 {
		t.Fatalf("open_files: %v", d)
	}
	if l, _ := os.Readlink("/proc/" + itoa(child.Process.Pid) + "/fd/" + rows[0]["fd"].(string)); l != path {
		t.Fatalf("fd %v is not the file", rows[0]["fd"])
	}
	// modules: the child's binary and libc or the vdso
	d = callTool("start_capture", map[string]any{"kind": "modules", "process_ref": ref})
	exe, _ := os.Readlink("/proc/" + itoa(child.Process.Pid) + "/exe")
	var sawExe, sawLib bool
	for _, r := range rowsOf(page(d)) {
		name, _ := r["name"].(string)
		sawExe = sawExe || r["path"] == exe
		sawLib = sawLib || name == "[vdso]" || strings.HasPrefix(name, "libc")
	}
	if !sawExe || !sawLib {
		t.Fatalf("modules: exe %v lib %v", sawExe, sawLib)
	}
	// network: the test's TCP listener and unix socket, host-wide
	port := tcp.Addr().(*net.TCPAddr).Port
	d = callTool("start_capture", map[string]any{"kind": "network"})
	var sawTCP, sawUnix bool
	for _, r := range rowsOf(page(d)) {
		pid, _ := r["pid"].(float64)
		if int(pid) != os.Getpid() {
			continue
		}
		if l, ok := r["local"].(map[string]any); ok && r["protocol"] == "tcp" && l["address"] == "127.0.0.1" && int(l["port"].(float64)) == port && r["state"] == "LISTEN" {
			sawTCP = true
		}
		if l, ok := r["local"].(map[string]any); ok && r["protocol"] == "unix" && l["path"] == sock {
			sawUnix = true
		}
	}
	if !sawTCP || !sawUnix {
		t.Fatalf("network: tcp %v unix %v", sawTCP, sawUnix)
	}
	// threads of the (multi-threaded Go) child: at least every task it has
	d = callTool("start_capture", map[string]any{"kind": "threads", "process_ref": ref})
	tasks, _ := os.ReadDir("/proc/" + itoa(child.Process.Pid) + "/task")
	got := map[string]bool{}
	for _, r := range rowsOf(page(d)) {
		got[itoa(int(r["tid"].(float64)))] = true
	}
	if len(tasks) < 2 {
		t.Fatalf("child has %d threads", len(tasks))
	}
	for _, e := range tasks {
		if !got[e.Name()] {
			t.Fatalf("thread %s missing", e.Name())
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
