//go:build linux

package perf

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/host"
)

// TestCaptureNamesExecutionsWithAHost: with a real proc host as the
// namer (its resolve_pid), every execution of an experiment is reported
// started then ended, in schedule order, with its case and block. The
// "wait" case blocks on a FIFO that the test writes only once its started
// event arrived, so that event always names a process_ref, which the host
// resolves to exactly the reported pid; the "quick" case (true) is named
// when the host happened to sample it, else null with the reason. The
// executions rows carry what the events said.
func TestCaptureNamesExecutionsWithAHost(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	h, err := host.New(host.Options{Version: "test", Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	s := h.NewSession()
	e := newCaptureEnv(t)
	e.rt.SetProcessNamer(func(ctx context.Context, pid int, startTicks uint64) (string, error) {
		args, _ := json.Marshal(map[string]any{"pid": pid, "start_ticks": startTicks})
		res, err := h.Dispatch(ctx, s, host.ResolvePIDMethod, args)
		if err != nil {
			return "", err
		}
		return res.Data.(map[string]any)["process_ref"].(string), nil
	}, "")

	fifo := filepath.Join(e.dir, "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []ExecutionEvent
	e.ctx = WithExecutionEvents(context.Background(), func(ev ExecutionEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
		if ev.Event == ExecutionStarted && ev.Case == "wait" {
			// Release the blocked workload (this open waits for its read).
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				t.Errorf("open fifo: %v", err)
				return
			}
			f.WriteString("x\n")
			f.Close()
		}
	})
	res := e.mustCall("capture_and_summarize_executions", map[string]any{
		"target": target(e.dir, "true"), "provider": map[string]any{"kind": "direct"},
		"experiment": map[string]any{"cases": []any{
			map[string]any{"name": "wait", "argv": []string{"sh", "-c", `read x < "$0"`, fifo}},
			map[string]any{"name": "quick"},
		}, "blocks": 2, "seed": 3},
	})
	rows := capt(res)["executions"].([]any)
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 8 || len(rows) != 4 {
		t.Fatalf("%d events, %d rows; want 8 and 4", len(events), len(rows))
	}
	sched := Schedule(2, 2, 3)
	for i, ev := range events {
		n := i/2 + 1
		block, pos := (n-1)/2, (n-1)%2
		wantCase := []string{"wait", "quick"}[sched[block][pos]]
		want := []string{ExecutionStarted, ExecutionEnded}[i%2]
		row := rows[n-1].(map[string]any)
		if ev.Event != want || ev.Execution != n || ev.Executions != 4 || ev.Case != wantCase || ev.Block != block || float64(ev.PID) != row["pid"] {
			t.Fatalf("event %d: %+v, row %v", i, ev, row)
		}
		switch {
		case ev.ProcessRef != nil:
			id, err := h.ParseRef(*ev.ProcessRef)
			if err != nil || int(id.PID) != ev.PID || row["process_ref"] != *ev.ProcessRef {
				t.Fatalf("event %d: ref %s names %+v (%v), row %v", i, *ev.ProcessRef, id, err, row)
			}
		case wantCase == "wait":
			t.Fatalf("event %d: the blocked workload was not named: %s", i, ev.ProcessRefReason)
		case ev.ProcessRefReason != endedFirst || row["process_ref"] != nil || row["process_ref_reason"] != endedFirst:
			t.Fatalf("event %d: %+v, row %v", i, ev, row)
		}
	}
}
