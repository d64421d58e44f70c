//go:build linux

package sample

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestZombieLeaderIsLive: a process whose main thread called pthread_exit
// while a worker holds a file open is a zombie leader (ps STAT "Zl"); the
// collector reports it live, with the worker's state, and reads its RSS,
// fd count and executable through the live task, compared with ps and
// /proc/PID/task/TID read in the same run.
func TestZombieLeaderIsLive(t *testing.T) {
	zl := testbuild.StartZombieLeader(t, filepath.Join(t.TempDir(), "held.log"))
	if _, err := exec.LookPath("ps"); err != nil {
		t.Skip("ps not installed")
	}
	psOut, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(zl.PID)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(psOut)); !strings.HasPrefix(got, "Z") || !strings.Contains(got, "l") {
		t.Fatalf("ps stat %q, want Zl (the fixture did not make a zombie leader)", got)
	}
	c, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // its kept /proc fds
	snap, err := c.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := snap.Find(int32(zl.PID))
	if p == nil {
		t.Fatal("zombie leader not in the snapshot")
	}
	task := "/proc/" + strconv.Itoa(zl.PID) + "/task/" + strconv.Itoa(zl.TID)
	statm, err := os.ReadFile(task + "/statm")
	if err != nil {
		t.Fatal(err)
	}
	res, ok := parseStatm(statm)
	if !ok {
		t.Fatalf("statm %q", statm)
	}
	fds, err := os.ReadDir(task + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink(task + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if !p.LeaderExited || p.State == 'Z' || p.StateName() != "zombie_leader" {
		t.Errorf("leader_exited %v state %c %s, want a live zombie_leader", p.LeaderExited, p.State, p.StateName())
	}
	if !p.Has(PRSS) || p.Vals[PRSS] != res*uint64(os.Getpagesize()) || res == 0 {
		t.Errorf("rss %d (known %v), task statm says %d pages", p.Vals[PRSS], p.Has(PRSS), res)
	}
	if !p.Has(PFDs) || p.Vals[PFDs] != uint64(len(fds)) {
		t.Errorf("fd_count %d, task fd dir has %d", p.Vals[PFDs], len(fds))
	}
	if p.Exe != exe || p.Name != "zleader" || p.Vals[PThreads] != 2 {
		t.Errorf("exe %q name %q threads %d, want %q zleader 2", p.Exe, p.Name, p.Vals[PThreads], exe)
	}
	if v := Verify(p.ID()); v != Alive {
		t.Errorf("Verify = %v, want Alive", v)
	}
	if _, running, err := IdentityOf(int32(zl.PID)); err != nil || !running {
		t.Errorf("IdentityOf running=%v %v", running, err)
	}
}
