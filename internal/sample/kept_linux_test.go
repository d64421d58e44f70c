//go:build linux

package sample

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// fdCount is the number of fds this process has open.
func fdCount(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// A collector that keeps each process's files open across ticks reads
// the same values as one that opens every file each tick; a process that
// exits loses its kept files at the next tick, an exec is seen through
// the kept stat file, and Close returns every kept fd.
func TestKeptFilesMatchFreshOpens(t *testing.T) {
	before := fdCount(t)
	kept, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	if kept.kept.max == 0 {
		t.Skip("RLIMIT_NOFILE leaves no room for kept files")
	}
	fresh, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	fresh.kept.max = 0 // every file opened per tick, as before kept files
	// a sleeper that will exec into another program, and one that exits
	sh := exec.Command("sh", "-c", "read x; exec sleep 600")
	w, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	short := exec.Command("sleep", "600")
	for _, c := range []*exec.Cmd{sh, short} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer sh.Process.Kill()
	defer short.Process.Kill()
	kprev, _ := kept.Collect(nil)
	if kept.kept.m[int32(sh.Process.Pid)] == nil {
		t.Fatal("the first tick kept no files for a child")
	}
	compare := func(step string, pid int) {
		t.Helper()
		var k, f *Process
		for try := 0; try < 50; try++ { // a pair of ticks that agree (values may move between the two reads)
			ks, err := kept.Collect(kprev)
			if err != nil {
				t.Fatal(err)
			}
			kprev = ks
			fs, err := fresh.Collect(nil)
			if err != nil {
				t.Fatal(err)
			}
			k, f = ks.Find(int32(pid)), fs.Find(int32(pid))
			if k == nil || f == nil {
				t.Fatalf("%s: pid %d kept %v fresh %v", step, pid, k != nil, f != nil)
			}
			same := k.Name == f.Name && k.Comm == f.Comm && k.Exe == f.Exe && k.State == f.State && k.UID == f.UID
			for _, slot := range []int{PRSS, PVirtual, PThreads, PFDs, PMinorFaults, PVolCtx} {
				same = same && k.Has(slot) == f.Has(slot) && k.Vals[slot] == f.Vals[slot]
			}
			if same {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s: kept %s/%s rss %d fds %d, fresh %s/%s rss %d fds %d", step, k.Name, k.Comm, k.Vals[PRSS], k.Vals[PFDs], f.Name, f.Comm, f.Vals[PRSS], f.Vals[PFDs])
	}
	compare("before exec", sh.Process.Pid)
	w.Write([]byte("go\n"))
	for deadline := time.Now().Add(time.Minute); ; {
		s, _ := kept.Collect(kprev)
		kprev = s
		if p := s.Find(int32(sh.Process.Pid)); p != nil && p.Comm == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exec was never seen through the kept files")
		}
		time.Sleep(20 * time.Millisecond)
	}
	compare("after exec", sh.Process.Pid)
	short.Process.Kill()
	short.Wait()
	s, _ := kept.Collect(kprev)
	if s.Find(int32(short.Process.Pid)) != nil || kept.kept.m[int32(short.Process.Pid)] != nil {
		t.Fatal("an exited process is still listed or keeps its files")
	}
	kept.Close()
	fresh.Close()
	sh.Process.Kill()
	sh.Wait()
	if n := fdCount(t); n > before {
		t.Fatalf("%d fds open after Close, %d before the collectors", n, before)
	}
}

// keptBudget leaves half the fd limit to everything else.
func TestKeptBudget(t *testing.T) {
	for _, tt := range []struct {
		cur  uint64
		want int
	}{{0, 0}, {9, 0}, {1024, 73}, {20000, 1428}, {1 << 40, 1 << 16}} {
		if got := keptBudget(tt.cur); got != tt.want {
			t.Errorf("keptBudget(%d) = %d, want %d", tt.cur, got, tt.want)
		}
	}
}

// The kept-file budget is one for the whole process: a second collector
// keeps nothing once the first holds it, and Close gives it back.
func TestKeptBudgetSharedByCollectors(t *testing.T) {
	base := keptProcs.Load()
	a, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	if a.kept.max == 0 {
		t.Skip("RLIMIT_NOFILE leaves no room for kept files")
	}
	if _, err := a.Collect(nil); err != nil {
		t.Fatal(err)
	}
	held := keptProcs.Load()
	if held <= base || int(held-base) != len(a.kept.m) {
		t.Fatalf("kept count %d (was %d) for %d kept processes", held, base, len(a.kept.m))
	}
	b, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	b.kept.max = int(held) // the budget the first collector filled
	s, err := b.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.kept.m) != 0 || len(s.Procs) == 0 {
		t.Fatalf("second collector kept %d processes of %d over a full budget", len(b.kept.m), len(s.Procs))
	}
	a.Close()
	b.Close()
	if n := keptProcs.Load(); n != base {
		t.Fatalf("kept count %d after Close, %d before", n, base)
	}
}

// The kept status fd of a process that runs is re-read with pread: its
// voluntary context switches (from status) grow tick by tick through the
// one fd opened at the first tick.
func TestKeptStatusFresh(t *testing.T) {
	c, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.kept.max == 0 {
		t.Skip("RLIMIT_NOFILE leaves no room for kept files")
	}
	// a shell that sleeps (a voluntary switch) each time it reads a line
	sh := exec.Command("sh", "-c", "while read x; do sleep 0.01; done")
	w, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer sh.Process.Kill()
	pid := int32(sh.Process.Pid)
	prev, err := c.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	kp := c.kept.m[pid]
	if kp == nil || kp.lazy[kpStatus] == 0 {
		t.Fatal("the first tick kept no status fd")
	}
	fd := kp.lazy[kpStatus]
	last := prev.Find(pid).Vals[PVolCtx]
	for i := 0; i < 3; i++ {
		w.Write([]byte("x\n"))
		var p *Process
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			s, err := c.Collect(prev)
			if err != nil {
				t.Fatal(err)
			}
			prev = s
			if p = s.Find(pid); p != nil && p.Vals[PVolCtx] > last {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("voluntary switches stayed %d through the kept status fd", last)
			}
		}
		last = p.Vals[PVolCtx]
		if got := c.kept.m[pid].lazy[kpStatus]; got != fd {
			t.Fatalf("status fd changed %d -> %d", fd-1, got-1)
		}
	}
	w.Close()
	sh.Wait()
}
