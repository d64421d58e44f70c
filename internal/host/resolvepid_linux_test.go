package host

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// TestResolvePIDStartTicks: resolve_pid with start_ticks answers only for
// that lifetime: the running child gets the ref of exactly its identity
// (pid and /proc/PID/stat start time); other start ticks, the same child
// as a zombie, and the reaped child are PROCESS_EXITED at /pid.
func TestResolvePIDStartTicks(t *testing.T) {
	h, s := captureHost(t)
	child := exec.Command("sleep", "1000")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			child.Process.Kill()
			child.Wait()
		}
	})
	id, running, err := sample.IdentityOf(int32(child.Process.Pid))
	if err != nil || !running || id.StartTicks == 0 {
		t.Fatalf("IdentityOf(child) = %+v %v %v", id, running, err)
	}
	d, _, err := dispatch(t, h, s, ResolvePIDMethod, map[string]any{"pid": id.PID, "start_ticks": id.StartTicks})
	if err != nil {
		t.Fatalf("resolve_pid with the child's start ticks: %v", err)
	}
	got, err := h.ParseRef(d["process_ref"].(string))
	if err != nil || got != id {
		t.Fatalf("the ref names %+v (%v), want %+v", got, err, id)
	}
	exited := func(name string, args map[string]any) {
		t.Helper()
		_, _, err := dispatch(t, h, s, ResolvePIDMethod, args)
		e := contract.AsError(err)
		if err == nil || e.Code != contract.CodeProcessExited || e.Field != "/pid" {
			t.Fatalf("%s: %v, want PROCESS_EXITED at /pid", name, err)
		}
		if _, ok := args["start_ticks"]; ok && !strings.Contains(e.Message, "clock tick") {
			t.Fatalf("%s: message %q does not name the lifetime", name, e.Message)
		}
	}
	exited("other start ticks", map[string]any{"pid": id.PID, "start_ticks": id.StartTicks + 1})

	// A zombie (killed, not yet reaped) has ended its lifetime.
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Wait for the exit without reaping (WNOWAIT): the child is a zombie.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, child.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}
	exited("zombie", map[string]any{"pid": id.PID, "start_ticks": id.StartTicks})
	child.Wait()
	reaped = true
	exited("reaped", map[string]any{"pid": id.PID, "start_ticks": id.StartTicks})
}
