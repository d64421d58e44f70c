package tui

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestContainerColumn: a process that moved itself into a nested cgroup
// docker/<id> the test creates shows docker:<12 digits of id> in the
// CONTAINER column C opens, and the filter typed as that id keeps only
// it; C again hides the column.
func TestContainerColumn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	base, line := "", ""
	for _, l := range strings.Split(string(self), "\n") {
		if p := strings.SplitN(l, ":", 3); len(p) == 3 && p[1] == "pids" {
			base, line = "/sys/fs/cgroup/pids", p[2]
		}
	}
	if base == "" {
		for _, l := range strings.Split(string(self), "\n") {
			if p := strings.SplitN(l, ":", 3); len(p) == 3 && p[0] == "0" {
				base, line = "/sys/fs/cgroup", p[2]
			}
		}
	}
	var rb [32]byte
	rand.Read(rb[:])
	id := hex.EncodeToString(rb[:])
	top := filepath.Join(base, line, "inquest-tuitest-"+id[:8])
	dir := filepath.Join(top, "docker", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Minute)
		for _, d := range []string{dir, filepath.Join(top, "docker"), top} {
			for os.Remove(d) != nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	h, b, _ := liveFixture(t)
	cmd := exec.Command("sh", "-c", "echo $$ > "+filepath.Join(dir, "cgroup.procs")+" && exec sleep 600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	deadline := time.Now().Add(2 * time.Minute)
	for {
		// the fixture's sampler steps by hand
		if _, err := h.Sampler().Step(); err != nil {
			t.Fatal(err)
		}
		if p := h.Sampler().Latest().Find(int32(pid)); p != nil && p.Comm == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never sampled as sleep", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	d := newDriver(t, b)
	d.keys("C")
	want := "docker:" + id[:12]
	cell := func() string {
		for _, v := range d.m.rows {
			if v.r.PID == pid {
				return strings.TrimSpace(d.m.columns().contCell(v.r))
			}
		}
		return "(not listed)"
	}
	if got := cell(); got != want {
		t.Fatalf("CONTAINER of %d: %q, want %q", pid, got, want)
	}
	if v := d.m.View(); !strings.Contains(v, "CONTAINER") {
		t.Fatalf("the table does not show the column:\n%s", v)
	}
	d.keys("/")
	d.keys(strings.Split(id[:12], "")...)
	d.keys("enter")
	if len(d.m.rows) != 1 || d.m.rows[0].r.PID != pid {
		t.Fatalf("filter %s keeps %d rows", id[:12], len(d.m.rows))
	}
	d.keys("C")
	if v := d.m.View(); strings.Contains(v, "CONTAINER") {
		t.Fatalf("C again still shows the column:\n%s", v)
	}
}
