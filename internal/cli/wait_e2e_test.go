//go:build linux

package cli

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestCLIWaitExitNewPID runs the built binary against a served host:
// `inquest wait exit --pid P` of a process started just before it (newer
// than the host's latest sample, as `sleep 4 & inquest wait exit --pid $!`
// is) resolves the pid the way every tool taking pid does (the bridge
// waits for the next sample) instead of failing REFERENCE_INVALID, and
// reports the exit; a pid whose process is a zombie (exited, not reaped)
// is an exit at once; a pid with no process is PROCESS_EXITED at /pid.
func TestCLIWaitExitNewPID(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	if out, code := e.run("serve", "--detach"); code != 0 {
		t.Fatalf("serve: %d %s", code, out)
	}
	envelope := func(out string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("not an envelope: %v\n%s", err, out)
		}
		return m
	}

	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(child.Process.Pid)
	var out bytes.Buffer
	wait := exec.Command(e.bin, "wait", "exit", "--pid", pid, "--timeout", "60s")
	wait.Env, wait.Stdout = e.env, &out
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	// Whether the wait resolved the pid before or after this kill, it
	// reports an exit: of the live lifetime it holds, or of its zombie.
	child.Process.Kill()
	werr := wait.Wait()
	child.Wait()
	d, _ := envelope(out.String())["data"].(map[string]any)
	ev, _ := d["evidence"].(map[string]any)
	if werr != nil || d["state"] != "succeeded" || ev["exited"] != true {
		t.Fatalf("wait exit --pid of a new process: %v\n%s", werr, out.String())
	}

	// A zombie pid: exited at once, with the zombie evidence.
	z := exec.Command("sleep", "30")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	z.Process.Kill() // not reaped until Wait: a zombie
	defer z.Wait()
	zpid := strconv.Itoa(z.Process.Pid)
	for hostAlive(z.Process.Pid) {
		time.Sleep(10 * time.Millisecond)
	}
	zout, code := e.run("wait", "exit", "--json", "--pid", zpid, "--timeout", "60s")
	d, _ = envelope(zout)["data"].(map[string]any)
	ev, _ = d["evidence"].(map[string]any)
	if code != 0 || d["state"] != "succeeded" || ev["state"] != "zombie" {
		t.Fatalf("wait exit --pid of a zombie: %d\n%s", code, zout)
	}

	gone, code := e.run("wait", "exit", "--json", "--pid", "2147483647", "--timeout", "1s")
	ge, _ := envelope(gone)["error"].(map[string]any)
	if code != 1 || ge["code"] != "PROCESS_EXITED" || ge["field"] != "/pid" {
		t.Fatalf("wait exit --pid of no process: %d\n%s", code, gone)
	}
}
