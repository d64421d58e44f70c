//go:build linux

package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCancelledCallFreesItsJob runs the built binary over stdio, once for
// every tool that can run long: an MCP client cancels the call in flight
// (notifications/cancelled) and what the call held is freed at once, well
// before the call's own deadline (timeout_ms 60 s for a wait, a workload
// of 10 minutes for a capture): the cancelled wait's job ends CANCELLED
// (not TIMEOUT) and its wait slot takes a new wait; the cancelled
// capture's workload process is gone. Every wait is for an event (a poll
// for the fact), bounded only to catch a hang.
func TestCancelledCallFreesItsJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	absent := map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest", "timeout_ms": 60000}
	waits := []struct {
		name string
		args map[string]any
	}{
		{"wait_condition process_present", absent},
		{"wait_condition process_exit", map[string]any{"condition": "process_exit", "pid": sleeper.Process.Pid, "timeout_ms": 60000}},
		{"wait_condition metric_threshold", map[string]any{"condition": "metric_threshold", "system": true, "metric_id": "memory_total_bytes", "comparison": "<", "threshold": 0, "timeout_ms": 60000}},
	}
	for _, w := range waits {
		t.Run(w.name, func(t *testing.T) {
			b := e.bridge()
			b.t = t
			defer b.cs.Close()
			// Three waits of this connection held apart (wait_ms 0), so the
			// cancelled one is the fourth and last slot.
			kept := map[string]bool{}
			for i := 0; i < 3; i++ {
				m := b.mustCall("wait_condition", with(absent, "wait_ms", 0))
				id, _ := dig(m, "data", "job_id").(string)
				if id == "" {
					t.Fatalf("no job: %v", m)
				}
				kept[id] = true
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				r, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_condition", Arguments: with(w.args, "wait_ms", 10000)})
				if err == nil {
					err = fmt.Errorf("%s", r.Content[0].(*mcp.TextContent).Text)
				}
				done <- err
			}()
			// The event: the in-flight wait runs on the host. The host
			// numbers a connection's waits wait-1, wait-2, ...: the
			// in-flight one is the next after the three kept.
			next := 0
			for id := range kept {
				var n int
				if _, err := fmt.Sscanf(id, "wait-%d", &n); err != nil {
					t.Fatalf("wait id %q is not wait-N", id)
				}
				next = max(next, n+1)
			}
			job := fmt.Sprintf("wait-%d", next)
			poll(t, "the in-flight wait to reach the host", func() bool {
				select {
				case err := <-done:
					t.Fatalf("the in-flight wait ended before the cancel: %v", err)
				default:
				}
				m, isErr := b.call("get_job", map[string]any{"job_id": job, "wait_ms": 0})
				return !isErr && dig(m, "data", "state") == "running"
			})
			cancel()
			<-done
			var m map[string]any
			poll(t, "the cancelled wait to end", func() bool {
				m = b.mustCall("get_job", map[string]any{"job_id": job, "wait_ms": 0})
				return dig(m, "data", "state") != "running"
			})
			if dig(m, "data", "state") != "failed" || dig(m, "data", "result", "error", "code") != "CANCELLED" {
				t.Fatalf("the cancelled wait ended %v %v, want failed CANCELLED", dig(m, "data", "state"), dig(m, "data", "result", "error"))
			}
			// Its slot takes a new wait, and the three others still run.
			m = b.mustCall("wait_condition", with(absent, "wait_ms", 0))
			if dig(m, "data", "state") != "running" {
				t.Fatalf("the new wait: %v", m)
			}
			for id := range kept {
				if m := b.mustCall("get_job", map[string]any{"job_id": id, "wait_ms": 0}); dig(m, "data", "state") != "running" {
					t.Fatalf("wait %s after the cancel: %v", id, m)
				}
			}
		})
	}
	captures := []struct {
		tool string
		args map[string]any
	}{
		{"capture_and_summarize_executions", map[string]any{"provider": map[string]any{"kind": "direct"}}},
		{"capture_and_preview_artifact", map[string]any{"provider": map[string]any{"kind": "direct"}}},
	}
	for i, c := range captures {
		t.Run(c.tool, func(t *testing.T) {
			b := e.bridgeArgs("--toolsets", "proc,perf")
			b.t = t
			defer b.cs.Close()
			// A workload named by a unique argument so the test finds its
			// process and sees it end.
			mark := fmt.Sprintf("600.%d%d", os.Getpid(), i)
			args := with(c.args, "target", map[string]any{"argv": []string{"sleep", mark}, "cwd": "/tmp"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: args})
				done <- err
			}()
			var pid string
			poll(t, "the workload to start", func() bool {
				pid = findProcess("sleep\x00" + mark + "\x00")
				return pid != ""
			})
			cancel()
			<-done
			poll(t, "the cancelled workload to end", func() bool {
				b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
				return err != nil || !strings.Contains(string(b), mark)
			})
			// The bridge still serves the toolset on the same connection.
			b.mustCall("get_status", nil)
		})
	}
}

// with returns a copy of m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for key, val := range m {
		out[key] = val
	}
	out[k] = v
	return out
}

// poll calls cond every 50 ms until it holds, failing the test after 2
// minutes (a hang, not a timing bound).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 2 minutes for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// findProcess is the pid of a live process whose /proc/PID/cmdline is
// exactly cmdline, or "".
func findProcess(cmdline string) string {
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); err == nil && string(b) == cmdline {
			return d.Name()
		}
	}
	return ""
}
