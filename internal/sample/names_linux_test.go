//go:build linux

package sample

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCollectorNames: a copy of sleep whose name is longer than the
// kernel's 15-byte comm and holds a byte that is not UTF-8 gets the full
// name (the executable's base name) and its own comm; once the executable
// is unlinked, the next sample reports ExeDeleted with the path without
// the kernel's suffix, and the name is unchanged. A live file literally
// named "... (deleted)" is not deleted.
func TestCollectorNames(t *testing.T) {
	data, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	long := "averyveryverylongprocess\xffname-worker"
	literal := "sleeper (deleted)"
	run := func(name string) (*exec.Cmd, string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		c := exec.Command(p, "300")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c, p
	}
	a, pathA := run(long)
	b, pathB := run(literal)
	col, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close() // its kept /proc fds
	find := func(snap *Snapshot, c *exec.Cmd) *Process {
		p := snap.Find(int32(c.Process.Pid))
		if p == nil {
			t.Fatalf("pid %d not sampled", c.Process.Pid)
		}
		return p
	}
	snap, err := col.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(a.Process.Pid) + "/comm")
	pa := find(snap, a)
	if pa.Name != long || pa.Comm != strings.TrimSuffix(string(comm), "\n") || len(pa.Comm) != MaxComm || pa.Exe != pathA || pa.ExeDeleted {
		t.Fatalf("long name: %+v", pa)
	}
	pb := find(snap, b)
	if pb.Name != literal || pb.Exe != pathB || pb.ExeDeleted {
		t.Fatalf("literal (deleted) name: %+v", pb)
	}
	os.Remove(pathA)
	os.Remove(pathB)
	snap, err = col.Collect(snap)
	if err != nil {
		t.Fatal(err)
	}
	if pa := find(snap, a); pa.Name != long || pa.Exe != pathA || !pa.ExeDeleted {
		t.Fatalf("after unlink: %+v", pa)
	}
	if pb := find(snap, b); pb.Name != literal || pb.Exe != pathB || !pb.ExeDeleted {
		t.Fatalf("after unlink of the literal name: %+v", pb)
	}
}
