package sample

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIdentityOf: a running child's identity is the one the collector
// records for it and Verify accepts; the same child as a zombie still
// reads (running false); reaped it is os.ErrNotExist.
func TestIdentityOf(t *testing.T) {
	child := exec.Command("sleep", "1000")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := false
	defer func() {
		if !reaped {
			child.Process.Kill()
			child.Wait()
		}
	}()
	pid := int32(child.Process.Pid)
	id, running, err := IdentityOf(pid)
	if err != nil || !running || id.PID != pid || id.StartTicks == 0 {
		t.Fatalf("running child: %+v %v %v", id, running, err)
	}
	c, err := NewLinuxCollector("/proc")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := snap.Find(pid); p == nil || p.ID() != id {
		t.Fatalf("the collector records %+v, IdentityOf %+v", p, id)
	}
	if Verify(id) != Alive {
		t.Fatal("Verify refuses the identity IdentityOf read")
	}

	child.Process.Kill()
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, int(pid), &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	zid, running, err := IdentityOf(pid)
	if err != nil || running || zid != id {
		t.Fatalf("zombie: %+v running=%v %v, want %+v not running", zid, running, err, id)
	}
	child.Wait()
	reaped = true
	if _, _, err := IdentityOf(pid); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reaped: %v, want os.ErrNotExist", err)
	}
}
