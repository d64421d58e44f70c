//go:build linux

package cli

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPCancellationKeepsConnection runs the built binary: an MCP client
// cancels one wait_condition call (notifications/cancelled, by pid, so
// the bridge resolves the pid first) while another wait of the same
// connection runs. The bridge's host calls for a wait are read-only and
// made with ipc.WithReplyOnCancel: the host ends the cancelled slice and
// answers, so the connection is kept and the other wait and a retained
// capture stay valid, with no reset warning on the next call.
func TestMCPCancellationKeepsConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	b := e.bridge()
	sleeper := exec.Command("sleep", "120")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	m := b.mustCall("wait_condition", map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest", "timeout_ms": 60000, "wait_ms": 0})
	job, _ := dig(m, "data", "job_id").(string)
	if job == "" {
		t.Fatalf("no job: %v", m)
	}
	m = b.mustCall("start_capture", map[string]any{"kind": "open_files", "pid": sleeper.Process.Pid, "retain_capture": true})
	capID, _ := dig(m, "data", "capture_id").(string)
	if capID == "" {
		t.Fatalf("no capture: %v", m)
	}
	for _, args := range []map[string]any{
		{"condition": "process_exit", "pid": sleeper.Process.Pid, "timeout_ms": 60000, "wait_ms": 10000},
		{"condition": "process_present", "process_name": "no-such-process-inquest", "timeout_ms": 60000, "wait_ms": 10000},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_condition", Arguments: args})
			done <- err
		}()
		// The cancel may land before or after dispatch; either way the
		// connection must survive.
		time.Sleep(1500 * time.Millisecond)
		cancel()
		<-done
		m = b.mustCall("get_job", map[string]any{"job_id": job, "wait_ms": 0})
		if dig(m, "data", "state") != "running" {
			t.Fatalf("%v: the other wait after the cancel: %v", args, m)
		}
		if w, _ := m["warnings"].([]any); len(w) != 0 {
			t.Fatalf("%v: a cancel reset the connection: %v", args, w)
		}
		m = b.mustCall("read_capture", map[string]any{"capture_id": capID, "limit": 1})
		if dig(m, "data", "page", "returned") != float64(1) {
			t.Fatalf("%v: the retained capture after the cancel: %v", args, m)
		}
	}
}

// TestLocalCLIBesideFourBridges: with four MCP bridges connected (the
// limit), local CLI commands still reach the host through their own
// allowance, and a fifth bridge gets BUSY.
func TestLocalCLIBesideFourBridges(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	for i := 0; i < 4; i++ {
		b := e.bridge()
		b.mustCall("get_status", nil)
	}
	fifth := e.bridge()
	if m, isErr := fifth.call("get_status", nil); !isErr || errCode(m) != "BUSY" {
		t.Fatalf("fifth bridge: %v", m)
	}
	if out, code := e.run("confirm"); code != 0 || !strings.Contains(out, "nothing awaits confirmation") {
		t.Fatalf("confirm beside 4 bridges: %d %s", code, out)
	}
	if out, code := e.run("call", "get_status"); code != 0 || !strings.Contains(out, `"bridge_connections": 4`) || !strings.Contains(out, `"local_connections": 1`) {
		t.Fatalf("get_status beside 4 bridges: %d %s", code, out)
	}
}
