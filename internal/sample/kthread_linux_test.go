//go:build linux

package sample

import (
	"reflect"
	"testing"
)

// A kernel thread's exe link (which it never has: ENOENT) is read once
// per lifetime: over 40 ticks, with each one's kernel threads that ran
// and the every-16-ticks re-check that other processes get, the link
// reads of kernel threads are at most the kernel-thread lifetimes first
// seen in each tick. What is reported for them is what a new collector
// reads at its first tick.
func TestKernelThreadExeReadOnce(t *testing.T) {
	c, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prev, err := c.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	kthreads := 0
	for _, p := range prev.Procs {
		if p.kthread {
			kthreads++
		}
	}
	if kthreads == 0 {
		t.Skip("no kernel threads visible (a PID namespace)")
	}
	for tick := 0; tick < 40; tick++ {
		before := c.kthreadLinkReads
		snap, err := c.Collect(prev)
		if err != nil {
			t.Fatal(err)
		}
		fresh := uint64(0)
		for _, p := range snap.Procs {
			if p.kthread && prev.Lookup(p.ID()) == nil {
				fresh++
			}
		}
		if n := c.kthreadLinkReads - before; n > fresh {
			t.Fatalf("tick %d: %d exe link reads of kernel threads, %d new kernel-thread lifetimes", tick, n, fresh)
		}
		prev = snap
	}
	other, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	first, err := other.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, p := range prev.Procs {
		q := first.Lookup(p.ID())
		if !p.kthread || q == nil || q.Comm != p.Comm {
			continue
		}
		compared++
		if p.Name != q.Name || p.Exe != q.Exe || p.ExeDeleted != q.ExeDeleted || p.Argv0 != q.Argv0 || !reflect.DeepEqual(p.Facts, q.Facts) {
			t.Errorf("kernel thread %d %q: name %q exe %q argv0 %q facts %+v; a new collector: %q %q %q %+v",
				p.PID, p.Comm, p.Name, p.Exe, p.Argv0, p.Facts, q.Name, q.Exe, q.Argv0, q.Facts)
		}
	}
	if compared == 0 {
		t.Fatal("no kernel thread to compare")
	}
}
