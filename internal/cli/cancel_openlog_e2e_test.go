//go:build linux

package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/recording"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeLoadRecording writes a valid recording of 2,000 processes whose
// values change every frame, until it holds at least size bytes.
func writeLoadRecording(t *testing.T, path string, size int64) {
	t.Helper()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w, err := recording.Create(path, recording.Header{CreatedAt: t0, IntervalMs: 1000, Tracked: []string{"svc"}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 1))
	procs := make([]sample.Process, 2000)
	for i := range procs {
		procs[i] = sample.Process{PID: int32(100 + i), PPID: 1, StartTicks: uint64(5000 + i), StartTime: t0.Add(-time.Hour), Name: "svc-" + strconv.Itoa(i%40), UID: 1000, UIDKnown: true}
	}
	for k := 0; k == 0 || w.Bytes() < size; k++ {
		snap := &sample.Snapshot{Seq: uint64(k + 1), Time: t0.Add(time.Duration(k) * time.Second)}
		ps := make([]*sample.Process, len(procs))
		for i := range procs {
			p := &procs[i]
			p.Set(sample.PRSS, uint64(rng.IntN(1<<30))&^4095)
			p.Set(sample.PCPUTime, uint64(k)*1e7+uint64(rng.IntN(1e7)))
			p.Set(sample.PReadBytes, uint64(rng.IntN(1<<40)))
			p.Set(sample.PWriteBytes, uint64(rng.IntN(1<<40)))
			ps[i] = p
		}
		snap.System.Set(sample.SMemTotal, 16<<30)
		if err := w.WriteSnapshot(snap, ps); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
}

// hostHasOpen reports whether process pid has path open (/proc/PID/fd).
func hostHasOpen(pid int, path string) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == path {
			return true
		}
	}
	return false
}

// TestCancelledOpenLogFreesItsSlot runs the built binary over stdio: a
// connection holds seven loaded logs (of the eight it may hold), then an
// open_log of a 30 MB recording is cancelled (notifications/cancelled)
// while the host is reading the file. The host stops reading (closes the
// file), and the slot is freed: the connection opens another log where
// an eighth held slot would answer RESOURCE_LIMIT, and it can hold eight
// again. Waits are for events (the host's open file), bounded only to
// catch a hang.
func TestCancelledOpenLogFreesItsSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	dir := recordingsDir(e)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.log")
	writeLoadRecording(t, big, 30<<20)
	small := filepath.Join(dir, "small-0.log")
	writeLoadRecording(t, small, 1)
	body, err := os.ReadFile(small)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < host.MaxLoadedLogs+1; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("small-%d.log", i)), body, 0o600)
	}
	b := e.bridge()
	defer b.cs.Close()
	ids := map[string]string{}
	for _, r := range dig(b.mustCall("list_logs", nil), "data", "rows").([]any) {
		row := r.(map[string]any)
		ids[row["name"].(string)] = row["log_id"].(string)
	}
	if len(ids) != host.MaxLoadedLogs+2 {
		t.Fatalf("list_logs: %v", ids)
	}
	for i := 0; i < host.MaxLoadedLogs-1; i++ {
		b.openLog(ids[fmt.Sprintf("small-%d.log", i)])
	}
	pid := e.hostPID()
	if pid == 0 {
		t.Fatal("no host pid")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		r, err := b.cs.CallTool(ctx, &mcp.CallToolParams{Name: "open_log", Arguments: map[string]any{"log_id": ids["big.log"], "wait_ms": 4000}})
		if err == nil {
			err = fmt.Errorf("answered: %s", r.Content[0].(*mcp.TextContent).Text)
		}
		done <- err
	}()
	// The event: the host is reading the file.
	for deadline := time.Now().Add(2 * time.Minute); !hostHasOpen(pid, big); {
		select {
		case err := <-done:
			t.Fatalf("open_log ended before the host was seen reading: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("waited 2 minutes for the host to open the recording")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	poll(t, "the host to stop reading the cancelled load", func() bool { return !hostHasOpen(pid, big) })

	// The cancelled load's slot is free: two more logs fit (the eighth
	// and, after closing one, another), the ninth is refused.
	ref := ""
	poll(t, "the cancelled load's slot to be freed", func() bool {
		m, isErr := b.call("open_log", map[string]any{"log_id": ids[fmt.Sprintf("small-%d.log", host.MaxLoadedLogs-1)], "wait_ms": 4000})
		if isErr {
			if errCode(m) != "RESOURCE_LIMIT" {
				t.Fatalf("open_log after the cancel: %v", m)
			}
			return false
		}
		for dig(m, "data", "state") == "running" {
			m = b.mustCall("open_log", map[string]any{"job_id": dig(m, "data", "job_id"), "wait_ms": 4000})
		}
		ref, _ = dig(m, "data", "log_ref").(string)
		return ref != ""
	})
	if m, isErr := b.call("open_log", map[string]any{"log_id": ids[fmt.Sprintf("small-%d.log", host.MaxLoadedLogs)]}); !isErr || errCode(m) != "RESOURCE_LIMIT" {
		t.Fatalf("a ninth log on the connection: %v, want RESOURCE_LIMIT", m)
	}
	// The logs loaded before the cancel still answer.
	if m := b.mustCall("list_processes", map[string]any{"source": "log", "log_ref": ref, "scope": "all"}); dig(m, "data", "rows") == nil {
		t.Fatalf("list_processes of a log: %v", m)
	}
}
