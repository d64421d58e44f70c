//go:build linux

package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPCancellationResetIsExplicit runs the built binary: an MCP client
// cancels one wait_condition call (notifications/cancelled) while another
// wait of the same connection runs. Seed 000 section 8: the bridge drops
// its host connection, which releases the other wait too; the next call
// says so (the connection was reset, why, and what was released).
func TestMCPCancellationResetIsExplicit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	b := e.bridge()
	m := b.mustCall("wait_condition", map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest", "timeout_ms": 60000, "wait_ms": 0})
	job, _ := dig(m, "data", "job_id").(string)
	if job == "" {
		t.Fatalf("no job: %v", m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_condition", Arguments: map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest", "timeout_ms": 60000, "wait_ms": 10000}})
		done <- err
	}()
	time.Sleep(time.Second)
	cancel()
	<-done
	// The bridge handles the cancellation by resetting its host
	// connection; poll until the job is gone (the deadline guards a hang).
	var isErr bool
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		m, isErr = b.call("get_job", map[string]any{"job_id": job})
		if isErr || time.Now().After(deadline) {
			break
		}
	}
	msg, _ := dig(m, "error", "message").(string)
	if !isErr || errCode(m) != "REFERENCE_INVALID" || !strings.Contains(msg, "previous host connection was reset because the MCP client cancelled wait_condition") {
		t.Fatalf("the job of the reset connection: %v", m)
	}
	if dig(m, "error", "details", "previous_connection_reset") == nil {
		t.Fatalf("no details.previous_connection_reset: %v", m)
	}
	m = b.mustCall("get_status", nil)
	if w, _ := m["warnings"].([]any); len(w) != 0 {
		t.Fatalf("the reset warning repeats: %v", w)
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
