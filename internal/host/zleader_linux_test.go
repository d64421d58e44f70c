//go:build linux

package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestZombieLeaderMetrics: a process whose leader called pthread_exit while
// a worker runs (ps "Zl") is listed live with state zombie_leader, and
// get_metrics answers for it with the RSS of its live task
// (/proc/PID/task/TID/statm, read in the same run).
func TestZombieLeaderMetrics(t *testing.T) {
	zl := testbuild.StartZombieLeader(t, filepath.Join(t.TempDir(), "held.log"))
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	ref := refOfPID(t, h, s, zl.PID)
	d, _ := mustCall(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"pid": zl.PID}, "projection": []string{"pid", "state", "lifecycle"}})
	rows, _ := d["rows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("list_processes rows %v", d)
	}
	if r := rows[0].(map[string]any); r["state"] != "zombie_leader" || r["lifecycle"] != "live" {
		t.Errorf("row %v, want state zombie_leader, lifecycle live", r)
	}
	d, _ = mustCall(t, h, s, "get_metrics", map[string]any{"metric_ids": []string{"rss_bytes", "threads"}, "targets": []any{map[string]any{"process_ref": ref}}})
	b, err := os.ReadFile("/proc/" + strconv.Itoa(zl.PID) + "/task/" + strconv.Itoa(zl.TID) + "/statm")
	if err != nil {
		t.Fatal(err)
	}
	var size, res uint64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil || res == 0 {
		t.Fatalf("statm %q %v", b, err)
	}
	want := strconv.FormatUint(res*uint64(os.Getpagesize()), 10)
	samples, _ := d["samples"].([]any)
	if len(samples) != 1 {
		t.Fatalf("get_metrics %v", d)
	}
	vals, _ := samples[0].(map[string]any)["values"].(map[string]any)
	if vals["rss_bytes"] != want || vals["threads"] != "2" {
		t.Errorf("get_metrics values %v, want rss_bytes %s (the live task's statm) and threads 2", vals, want)
	}
}
