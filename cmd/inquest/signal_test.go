//go:build linux

package main

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestCaptureStopsOnSIGTERM: one SIGTERM ends `inquest capture` while its
// workload runs (the signal cancels the command, which kills the
// workload's process tree); the exit status is non-zero.
func TestCaptureStopsOnSIGTERM(t *testing.T) {
	cmd := exec.Command(binary, "capture", "--provider", "direct", "--verbose", "--cwd", t.TempDir(), "--", "sleep", "1000")
	cmd.Env = isolatedEnv(t)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	started := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "started") {
			started = true
			break
		}
	}
	if !started {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the workload never started")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // to EOF: every holder of stderr has exited
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("after SIGTERM: %v", err)
	}
}
