//go:build linux

package host

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// A zombie has exited (it only awaits reaping): process_exit on it is
// satisfied at once with evidence state zombie. A threshold wait whose
// target exits ends with PROCESS_EXITED carrying the last observation.
func TestWaitZombieAndExitedThreshold(t *testing.T) {
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()

	t.Run("zombie exit", func(t *testing.T) {
		child := exec.Command("sleep", "30")
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		defer child.Wait()
		ref := refOfPID(t, h, s, child.Process.Pid)
		child.Process.Kill() // not reaped: a zombie until Wait
		waitFor(t, 2*time.Minute, "zombie", func() bool {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(child.Process.Pid) + "/stat")
			i := strings.LastIndexByte(string(b), ')')
			return i > 0 && len(b) > i+2 && b[i+2] == 'Z'
		})
		d, _ := mustCall(t, h, s, "wait_condition", map[string]any{"condition": "process_exit", "process_ref": ref, "timeout_ms": 60000, "wait_ms": 5000})
		for d["state"] == "running" {
			d, _ = mustCall(t, h, s, "wait_condition", map[string]any{"job_id": d["job_id"], "wait_ms": 5000})
		}
		ev, _ := d["evidence"].(map[string]any)
		if d["state"] != "succeeded" || ev["state"] != "zombie" || ev["exited"] != true {
			t.Fatalf("zombie exit wait %v", d)
		}
	})

	t.Run("threshold target exits", func(t *testing.T) {
		// The child exits (is killed) only after the sampler published
		// samples newer than the wait's request while it lived, instead of
		// running "sleep 1" and hoping a loaded machine samples it within
		// that second. Whether the wait's goroutine read one of them
		// before the exit is still scheduling: a run whose last
		// observation says "no fresh sample yet" is checked and repeated.
		waitFor(t, 2*time.Minute, "an exit after a fresh observation", func() bool {
			child := exec.Command("sleep", "30")
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer child.Wait()
			defer child.Process.Kill()
			ref := refOfPID(t, h, s, child.Process.Pid)
			seq := h.Sampler().Latest().Seq
			d, _, err := call(t, h, s, "wait_condition", map[string]any{"condition": "metric_threshold", "process_ref": ref, "metric_id": "rss_bytes", "comparison": ">", "threshold": "1000000000000000", "timeout_ms": 60000, "wait_ms": 0})
			if err != nil || d["state"] != "running" {
				t.Fatalf("a live sleep met rss > huge: %v %v", d, err)
			}
			waitFor(t, 2*time.Minute, "samples after the request", func() bool { return h.Sampler().Latest().Seq >= seq+3 })
			child.Process.Kill()
			child.Wait()
			for err == nil && d["state"] == "running" {
				d, _, err = call(t, h, s, "wait_condition", map[string]any{"job_id": d["job_id"], "wait_ms": 10000})
			}
			var last map[string]any
			if err == nil {
				// A finished job reports the failure under data.error.
				e, _ := d["error"].(map[string]any)
				if d["state"] != "failed" || e["code"] != string(contract.CodeProcessExited) {
					t.Fatalf("threshold on an exiting target %v", d)
				}
				det, _ := e["details"].(map[string]any)
				last, _ = det["last_observation"].(map[string]any)
			} else {
				ce := wantCode(t, err, contract.CodeProcessExited)
				last, _ = ce.Details["last_observation"].(map[string]any)
			}
			if last["value"] != nil {
				return true
			}
			if last["note"] != "no fresh sample yet" {
				t.Fatalf("no last observation with a value: %v", last)
			}
			return false
		})
	})
}

// A zombie's process metrics (RSS 0, CPU stopped) are not observations of
// the live lifetime: a threshold wait whose target becomes a zombie ends
// PROCESS_EXITED whatever the comparison (rss < 1 would otherwise hold on
// the zombie's 0, and rss > huge would run to TIMEOUT on it), and the
// retained history holds no zombie sample. ps reads the same zombie as
// state Z with RSS 0; list_processes says state zombie.
func TestWaitThresholdOnZombie(t *testing.T) {
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	for _, tc := range []struct{ cmp, thr string }{{"<", "1"}, {">", "1000000000000000"}} {
		t.Run(tc.cmp, func(t *testing.T) {
			child := exec.Command("sleep", "30")
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer child.Wait()
			defer child.Process.Kill()
			pid := child.Process.Pid
			ref := refOfPID(t, h, s, pid)
			d, _ := mustCall(t, h, s, "wait_condition", map[string]any{"condition": "metric_threshold", "process_ref": ref, "metric_id": "rss_bytes", "comparison": tc.cmp, "threshold": tc.thr, "timeout_ms": 60000, "wait_ms": 0})
			if d["state"] != "running" {
				t.Fatalf("a live sleep met rss %s %s: %v", tc.cmp, tc.thr, d)
			}
			child.Process.Kill() // not reaped: a zombie until Wait
			waitFor(t, 2*time.Minute, "zombie", func() bool {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				i := strings.LastIndexByte(string(b), ')')
				return i > 0 && len(b) > i+2 && b[i+2] == 'Z'
			})
			var err error
			for err == nil && d["state"] == "running" {
				d, _, err = call(t, h, s, "wait_condition", map[string]any{"job_id": d["job_id"], "wait_ms": 5000})
			}
			var ce *contract.Error
			if err != nil {
				ce = wantCode(t, err, contract.CodeProcessExited)
			} else {
				e, _ := d["error"].(map[string]any)
				if d["state"] != "failed" || e["code"] != string(contract.CodeProcessExited) {
					t.Fatalf("threshold wait on a zombie: %v", d)
				}
				det, _ := e["details"].(map[string]any)
				ce = &contract.Error{Details: det}
			}
			if last, _ := ce.Details["last_observation"].(map[string]any); last["value"] == "0" {
				t.Fatalf("the zombie's RSS 0 is the last observation: %v", last)
			}

			// ps reads the zombie as state Z with RSS 0, the same /proc
			// facts; list_processes lists it as a zombie.
			out, perr := exec.Command("ps", "-o", "stat=,rss=", "-p", strconv.Itoa(pid)).Output()
			if f := strings.Fields(string(out)); perr != nil || len(f) != 2 || !strings.HasPrefix(f[0], "Z") || f[1] != "0" {
				t.Fatalf("ps of the zombie: %q %v", out, perr)
			}
			waitFor(t, 2*time.Minute, "the zombie in a snapshot", func() bool {
				l, _ := mustCall(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"pid": pid}})
				rows := l["rows"].([]any)
				return len(rows) == 1 && rows[0].(map[string]any)["state"] == "zombie"
			})
			hist, _ := mustCall(t, h, s, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "mode": "raw"})
			if hist["target"].(map[string]any)["lifecycle"] != "zombie" {
				t.Fatalf("history target %v", hist["target"])
			}
			for _, r := range hist["rows"].([]any) {
				if v := r.(map[string]any)["values"].(map[string]any)["rss_bytes"]; v == "0" {
					t.Fatalf("history holds the zombie's RSS 0 as a sample: %v", hist["rows"])
				}
			}
			_, _, err = call(t, h, s, "get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
			wantCode(t, err, contract.CodeProcessExited)
		})
	}
}
