package cli

import (
	"testing"
)

// Agent-sized answers over the real `inquest mcp` bridge and host: each
// subtest is one question an agent asks, answered in one call.
func TestAgentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	a := e.bridge()

	// wait_ms covering timeout_ms: one call, the terminal outcome.
	t.Run("wait_to_terminal", func(t *testing.T) {
		for _, tc := range []struct{ timeout, wait int }{{1500, 1500}, {1200, 10000}} {
			m, isErr := a.call("wait_condition", map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest-agent", "timeout_ms": tc.timeout, "wait_ms": tc.wait})
			if !isErr || errCode(m) != "TIMEOUT" {
				t.Fatalf("timeout_ms %d wait_ms %d: want TIMEOUT in one call, got %v", tc.timeout, tc.wait, m)
			}
		}
		// A budget short of timeout_ms still hands back the running job.
		m := a.mustCall("wait_condition", map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest-agent", "timeout_ms": 60000, "wait_ms": 0})
		if dig(m, "data", "state") != "running" || dig(m, "next_action", "tool") != "wait_condition" {
			t.Fatalf("short budget: %v", m)
		}
		a.mustCall("cancel_job", map[string]any{"job_id": dig(m, "data", "job_id")})
	})
}
