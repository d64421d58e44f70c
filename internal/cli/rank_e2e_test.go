//go:build linux

package cli

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultResultBudget is the size a default result must fit in (agents
// read it whole).
const defaultResultBudget = 64 << 10

// TestRankTop5Of1000Sleepers: on a host with 1,000 more processes (sleeps
// this test starts), one MCP call to the real `inquest mcp` answers "top 5
// by CPU over the last minute" with every lifetime considered, within the
// default result budget.
func TestRankTop5Of1000Sleepers(t *testing.T) {
	e := newHeEnv(t)
	b := e.bridge()
	b.mustCall("get_status", nil) // starts the host
	const n = 1000
	pids := map[int]bool{}
	for i := 0; i < n; i++ {
		c := exec.Command("sleep", "600")
		if err := c.Start(); err != nil {
			t.Fatalf("sleeper %d: %v", i, err)
		}
		pids[c.Process.Pid] = true
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	// Every sleeper is in a snapshot S (a listing of S holds them all),
	// and a later snapshot than S exists: each has two samples, so its
	// CPU time increase exists.
	var seq float64
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m := b.mustCall("list_processes", map[string]any{"projection": []string{"pid"}})
		k := 0
		for _, r := range dig(m, "data", "rows").([]any) {
			if pids[int(r.(map[string]any)["pid"].(float64))] {
				k++
			}
		}
		if k == n {
			seq = dig(m, "coverage", "snapshot_seq").(float64)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of the %d sleepers listed within 2 minutes", k, n)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for float64(b.status().seq) <= seq {
		if time.Now().After(deadline) {
			t.Fatal("no newer snapshot within 2 minutes")
		}
		time.Sleep(250 * time.Millisecond)
	}

	ctx := t.Context()
	res, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: "rank_processes", Arguments: map[string]any{"metric_id": "cpu_time_ns", "last_seconds": 60, "limit": 5}})
	if err != nil || res.IsError {
		t.Fatalf("rank_processes: %v %v", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	structured, _ := json.Marshal(res.StructuredContent)
	t.Logf("top 5 of %d processes: text %d bytes, structuredContent %d bytes", n, len(text), len(structured))
	if len(text) > defaultResultBudget {
		t.Fatalf("result is %d bytes, over the %d-byte default budget", len(text), defaultResultBudget)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	rows := dig(m, "data", "rows").([]any)
	if len(rows) != 5 {
		t.Fatalf("%d rows", len(rows))
	}
	var prev *float64
	for _, r := range rows {
		v, err := strconv.ParseFloat(r.(map[string]any)["value"].(string), 64)
		if err != nil || (prev != nil && v > *prev) {
			t.Fatalf("values not descending: %v", rows)
		}
		prev = &v
	}
	cov := dig(m, "coverage").(map[string]any)
	if withSamples := cov["lifetimes_with_samples"].(float64); withSamples < n {
		t.Errorf("lifetimes with samples %v, want at least %d", withSamples, n)
	}
	if ranked := cov["ranked"].(float64); ranked < n {
		t.Errorf("ranked %v, want at least %d", ranked, n)
	}
	// The ranking has more rows than the page: next_action is the next page.
	if na, _ := m["next_action"].(map[string]any); na == nil || na["tool"] != "rank_processes" || dig(na, "arguments", "cursor") != dig(m, "data", "next_cursor") {
		t.Errorf("next_action %v", m["next_action"])
	}

	// The CLI table over the same host.
	out, code := e.run("top", "--metric", "time", "-n", "5")
	if code != 0 || !strings.Contains(out, "cpu_time_ns increase over") || !strings.Contains(out, "RANK") {
		t.Fatalf("inquest top: %d\n%s", code, out)
	}
	if lines := strings.Count(strings.TrimSpace(out), "\n"); lines < 6 {
		t.Errorf("inquest top -n 5 printed %d lines:\n%s", lines, out)
	}
}
