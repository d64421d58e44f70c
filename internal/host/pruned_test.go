package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/history"
)

// Tracked lifetimes that identity pruning removed are not listed, and
// get_tracking and list_processes (scope all) say so: 300 tracked
// "shortlived" processes, each sampled live and then seen ended, leave the
// 128 most recently ended (history.MaxEndedTracked); both listings carry a
// warning naming the 172 pruned and the rule, are partial, and count them
// in coverage, so listed plus pruned is every lifetime.
func TestPrunedTrackedLifetimesAreWarned(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "shortlived")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "p-1", "expected_revision": revision(t, h, s), "action": "add", "process_name": "shortlived"})
	store := h.HistoryStore()
	liveTracked := func(pids []int) int {
		n := 0
		for _, l := range store.Tracked() {
			if !l.Ended && slices.Contains(pids, int(l.ID.PID)) {
				n++
			}
		}
		return n
	}
	const total, batch = 300, 50
	for started := 0; started < total; started += batch {
		var cmds []*exec.Cmd
		var pids []int
		for i := 0; i < batch; i++ {
			c := exec.Command(bin, "1000")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
			pids = append(pids, c.Process.Pid)
		}
		waitFor(t, 2*time.Minute, "the batch sampled live and tracked", func() bool { return liveTracked(pids) == batch })
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
		waitFor(t, 2*time.Minute, "the batch seen ended", func() bool { return liveTracked(pids) == 0 })
	}
	want := total - history.MaxEndedTracked
	waitFor(t, time.Minute, "pruning", func() bool { return store.PrunedLifetimes().Tracked == want })

	_, res := mustCall(t, h, s, "get_tracking", map[string]any{"limit": 10})
	cov := covOf(res)
	listed := int(cov["total"].(float64))
	if listed != history.MaxEndedTracked || int(cov["tracked_lifetimes_pruned"].(float64)) != want || res.Status != "partial" ||
		!slices.ContainsFunc(res.Warnings, func(w string) bool {
			return strings.Contains(w, itoa(want)+" ended tracked lifetimes were pruned") && strings.Contains(w, "128")
		}) {
		t.Fatalf("get_tracking: %d listed, coverage %v, status %s, warnings %v", listed, cov, res.Status, res.Warnings)
	}

	_, res = mustCall(t, h, s, "list_processes", map[string]any{"scope": "all", "filter": map[string]any{"name": "shortlived"}, "projection": []string{"pid"}})
	cov = covOf(res)
	pr, _ := cov["lifetimes_pruned"].(map[string]any)
	if int(cov["total"].(float64)) != history.MaxEndedTracked || pr == nil || int(pr["tracked"].(float64)) != want || res.Status != "partial" ||
		!slices.ContainsFunc(res.Warnings, func(w string) bool {
			return strings.Contains(w, itoa(want)+" tracked: at most 128") && strings.Contains(w, "512")
		}) {
		t.Fatalf("list_processes scope all: coverage %v, status %s, warnings %v", cov, res.Status, res.Warnings)
	}
}
