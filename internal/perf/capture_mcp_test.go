//go:build linux

package perf

import (
	"context"
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
// one progress notification per execution of an experiment.
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
	var got []float64
	var total float64
	client := mcp.NewClient(&mcp.Implementation{Name: "perf-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params.Progress)
			total = req.Params.Total
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
		"experiment": map[string]any{"cases": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "blocks": 3},
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
		if n >= 6 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 6 || total != 6 || got[5] != 6 {
		t.Fatalf("progress %v total %v", got, total)
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
