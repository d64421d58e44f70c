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
		waitFor(t, 5*time.Second, "zombie", func() bool {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(child.Process.Pid) + "/stat")
			i := strings.LastIndexByte(string(b), ')')
			return i > 0 && len(b) > i+2 && b[i+2] == 'Z'
		})
		d, _ := mustCall(t, h, s, "wait_condition", map[string]any{"condition": "process_exit", "process_ref": ref, "timeout_ms": 5000, "wait_ms": 5000})
		ev, _ := d["evidence"].(map[string]any)
		if d["state"] != "succeeded" || ev["state"] != "zombie" || ev["exited"] != true {
			t.Fatalf("zombie exit wait %v", d)
		}
	})

	t.Run("threshold target exits", func(t *testing.T) {
		child := exec.Command("sleep", "1")
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		go child.Wait()
		ref := refOfPID(t, h, s, child.Process.Pid)
		d, _, err := call(t, h, s, "wait_condition", map[string]any{"condition": "metric_threshold", "process_ref": ref, "metric_id": "rss_bytes", "comparison": ">", "threshold": "1000000000000000", "timeout_ms": 10000, "wait_ms": 10000})
		for err == nil && d["state"] == "running" {
			d, _, err = call(t, h, s, "wait_condition", map[string]any{"job_id": d["job_id"], "wait_ms": 10000})
		}
		if err == nil {
			// A finished job reports the failure under data.error.
			e, _ := d["error"].(map[string]any)
			if d["state"] != "failed" || e["code"] != string(contract.CodeProcessExited) {
				t.Fatalf("threshold on an exiting target %v", d)
			}
			det, _ := e["details"].(map[string]any)
			if last, _ := det["last_observation"].(map[string]any); last["value"] == nil {
				t.Fatalf("no last observation with a value: %v", d)
			}
			return
		}
		ce := wantCode(t, err, contract.CodeProcessExited)
		if last, _ := ce.Details["last_observation"].(map[string]any); last["value"] == nil {
			t.Fatalf("no last observation with a value: %+v", ce.Details)
		}
	})
}
