package cli

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCLIMutationAwaitsConfirmation runs the built binary: `inquest profile
// delete` keeps its host connection open while the delete awaits a local
// decision, `inquest confirm ID` from another process decides it, and the
// waiting command reports the outcome: exit 0 when confirmed, exit 1 when
// denied (the action did not happen).
func TestCLIMutationAwaitsConfirmation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	for _, name := range []string{"keep", "gone"} {
		if out, code := e.run("profile", "save-as", name); code != 0 {
			t.Fatalf("save-as %s: %d %s", name, code, out)
		}
	}
	for _, tc := range []struct {
		profile, opID string
		deny          bool
		wantCode      int
		wantOut       string
	}{
		{"gone", "cli-test-confirm", false, 0, "operation cli-test-confirm: succeeded"},
		{"keep", "cli-test-deny", true, 1, "operation cli-test-deny: failed (CANCELLED"},
	} {
		var out bytes.Buffer
		cmd := exec.Command(e.bin, "profile", "delete", tc.profile, "--operation-id", tc.opID)
		cmd.Env, cmd.Stdout, cmd.Stderr = e.env, &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The pending operation is listed while the requester waits.
		for deadline := time.Now().Add(15 * time.Second); ; {
			if list, _ := e.run("confirm"); strings.Contains(list, tc.opID) {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("%s never awaited confirmation: %s", tc.opID, out.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		args := []string{"confirm", tc.opID}
		if tc.deny {
			args = append(args, "--deny")
		}
		if dout, code := e.run(args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, dout)
		}
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) || !strings.Contains(out.String(), "inquest confirm "+tc.opID) {
			t.Fatalf("%s: exit %d\n%s", tc.opID, code, out.String())
		}
	}
	list, _ := e.run("profile", "list")
	if !strings.Contains(list, "keep") || strings.Contains(list, "gone") {
		t.Fatalf("profiles after confirm/deny:\n%s", list)
	}
}
