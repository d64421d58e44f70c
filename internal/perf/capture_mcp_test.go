//go:build linux

package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCaptureProgressOverMCP: a client that sends a progress token gets
// two progress notifications per execution of an experiment, started then
// ended, in schedule order, each naming the case, block and pid of the
// execution in words and in _meta["inquest/execution"]; progress counts
// executions (a started one is half done). This runtime has no proc host,
// so every process_ref is null with the reason; the executions rows name
// the same pids.
func TestCaptureProgressOverMCP(t *testing.T) {
	e := newCaptureEnv(t)
	srv := mcpserver.New(e.reg, mcpserver.Options{Version: "test"})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	client := mcp.NewClient(&mcp.Implementation{Name: "perf-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "capture_and_summarize_executions", Arguments: map[string]any{
		"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"},
		"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "blocks": 3, "seed": 7},
	}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	// Notifications may be handled after the result arrives; wait for
	// them (the cap only bounds a broken run, nothing is timed).
	for i := 0; i < 3000; i++ {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 12 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 12 {
		t.Fatalf("%d notifications, want 12 (started and ended of 6 executions)", len(got))
	}
	var data map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &data)
	rows := data["data"].(map[string]any)["capture"].(map[string]any)["executions"].([]any)
	sched := Schedule(2, 3, 7)
	for i, p := range got {
		n := i/2 + 1
		want := ExecutionStarted
		progress := float64(n) - 0.5
		if i%2 == 1 {
			want, progress = ExecutionEnded, float64(n)
		}
		var ev ExecutionEvent
		raw, _ := json.Marshal(p.Meta[ExecutionEventMetaKey])
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("notification %d: _meta %v: %v", i, p.Meta, err)
		}
		block, pos := (n-1)/2, (n-1)%2
		wantCase := []string{"a", "b"}[sched[block][pos]]
		row := rows[n-1].(map[string]any)
		if ev.Event != want || ev.Execution != n || ev.Executions != 6 || ev.Case != wantCase || ev.Block != block ||
			p.Progress != progress || p.Total != 6 || ev.PID <= 0 || float64(ev.PID) != row["pid"] || row["case"] != wantCase {
			t.Fatalf("notification %d: %+v progress %v/%v, row %v", i, ev, p.Progress, p.Total, row)
		}
		if ev.ProcessRef != nil || !strings.Contains(ev.ProcessRefReason, "no proc host") || row["process_ref"] != nil || row["process_ref_reason"] != ev.ProcessRefReason {
			t.Fatalf("notification %d names a process_ref without a proc host: %+v, row %v", i, ev, row)
		}
		if p.Message != ev.Message() || !strings.Contains(p.Message, fmt.Sprintf("execution %d/6 %s (case %s, block %d): pid %d", n, want, wantCase, block, ev.PID)) {
			t.Fatalf("notification %d: message %q", i, p.Message)
		}
		if want == ExecutionEnded && (ev.Termination != "exited" || ev.ExitCode == nil || *ev.ExitCode != 0 || !strings.Contains(p.Message, "exited 0 after")) {
			t.Fatalf("notification %d: %+v %q", i, ev, p.Message)
		}
	}
}

// TestCaptureCancelOverMCP: cancelling the client's call kills the
// running tree, including a setsid'd grandchild.
func TestCaptureCancelOverMCP(t *testing.T) {
	e := newCaptureEnv(t)
	srv := mcpserver.New(e.reg, mcpserver.Options{Version: "test"})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "perf-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	script := `setsid sh -c 'echo $$ > sid; exec sleep 1000' &
while [ ! -s sid ]; do sleep 0.01; done
echo $$ > root
sleep 1000`
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "capture_and_summarize_executions", Arguments: map[string]any{
			"target": target(e.dir, "sh", "-c", script), "provider": map[string]any{"kind": "direct"},
		}})
		done <- err
	}()
	var pids []int
	for len(pids) < 2 {
		pids = pids[:0]
		for _, f := range []string{"root", "sid"} {
			if b, err := os.ReadFile(filepath.Join(e.dir, f)); err == nil {
				if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					pids = append(pids, p)
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	// The server kills the tree when the cancellation arrives; wait for it
	// (bounded only to end a broken run).
	for i := 0; i < 3000; i++ {
		alive := 0
		for _, p := range pids {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("processes %v survived cancellation", pids)
}
