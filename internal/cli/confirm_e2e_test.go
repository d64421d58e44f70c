//go:build linux

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
		// The pending operation is listed while the requester waits (it
		// expires 60 s after submission: the bound stays under that).
		for deadline := time.Now().Add(50 * time.Second); ; {
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

// TestCLIConfirmBesideBusyLocalAllowance runs the built binary: with a
// profile delete awaiting its decision and two `inquest wait` commands
// holding the local CLI allowance (2 connections), `inquest confirm ID`
// still gets through on its reserved allowance and the delete succeeds.
func TestCLIConfirmBesideBusyLocalAllowance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	if out, code := e.run("profile", "save-as", "p3"); code != 0 {
		t.Fatalf("save-as: %d %s", code, out)
	}
	start := func(args ...string) (*exec.Cmd, *bytes.Buffer) {
		var out bytes.Buffer
		cmd := exec.Command(e.bin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = e.env, &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, &out
	}
	del, delOut := start("profile", "delete", "p3", "--operation-id", "busy-confirm")
	for deadline := time.Now().Add(50 * time.Second); ; {
		if list, _ := e.run("confirm"); strings.Contains(list, "busy-confirm") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delete never awaited confirmation: %s", delOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The delete holds one local CLI connection; a long wait takes the
	// second. The host releases a closed connection asynchronously, so the
	// long wait itself may be refused (BUSY) while an earlier command's
	// connection is still counted: it is started again until it holds.
	holder := func() (chan struct{}, *bytes.Buffer) {
		out := &bytes.Buffer{}
		cmd := exec.Command(e.bin, "wait", "present", "nonexist-inquest-test", "--timeout", "60s")
		cmd.Env, cmd.Stdout, cmd.Stderr = e.env, out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-done })
		return done, out
	}
	held, heldOut := holder()
	for deadline := time.Now().Add(50 * time.Second); ; {
		select {
		case <-held:
			if !strings.Contains(heldOut.String(), "BUSY") {
				t.Fatalf("the long wait ended: %s", heldOut.String())
			}
			held, heldOut = holder()
			continue
		default:
		}
		out, _ := e.run("wait", "present", "nonexist-inquest-test", "--timeout", "1ms")
		if strings.Contains(out, "BUSY") {
			break // the local CLI allowance is full
		}
		if time.Now().After(deadline) {
			t.Fatalf("local CLI allowance never filled: %s\nlong wait: %s", out, heldOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, code := e.run("confirm", "busy-confirm"); code != 0 || !strings.Contains(out, "succeeded") {
		t.Fatalf("confirm beside a full local CLI allowance: exit %d\n%s", code, out)
	}
	err := del.Wait()
	if err != nil || !strings.Contains(delOut.String(), "operation busy-confirm: succeeded") {
		t.Fatalf("delete: %v\n%s", err, delOut.String())
	}
}

// TestCLIPipedConfirmationAnswer runs the built binary with an answer
// piped on standard input (not a terminal): "n" denies at once (exit 1,
// the profile stays), "y" confirms (exit 0, the profile is gone); neither
// prints the interactive prompt nor waits for the 60 s deadline.
func TestCLIPipedConfirmationAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	if out, code := e.run("profile", "save-as", "p3"); code != 0 {
		t.Fatalf("save-as: %d %s", code, out)
	}
	for _, tc := range []struct {
		answer   string
		wantCode int
		wantOut  string
		kept     bool
	}{
		{"n\n", 1, "CANCELLED", true},
		{"y\n", 0, "succeeded", false},
	} {
		var out bytes.Buffer
		cmd := exec.Command(e.bin, "profile", "delete", "p3")
		cmd.Env, cmd.Stdout, cmd.Stderr = e.env, &out, &out
		cmd.Stdin = strings.NewReader(tc.answer)
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) || strings.Contains(out.String(), "[y/N]") || !strings.Contains(out.String(), "answer read from standard input") {
			t.Fatalf("answer %q: exit %d\n%s", tc.answer, code, out.String())
		}
		list, _ := e.run("profile", "list")
		if strings.Contains(list, "p3") != tc.kept {
			t.Fatalf("answer %q: profiles\n%s", tc.answer, list)
		}
	}
}
