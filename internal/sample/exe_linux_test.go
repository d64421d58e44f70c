//go:build linux

package sample

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExeLinkFollowsChanges: the collector re-reads a process's exe link
// only when its leader ran or its executable's link count or ctime
// changed (or every exeRecheck samples). Each step changes the
// executable of a process that does not run (a sleeping copy of sleep)
// or execs one that keeps its comm, and the collector's Exe and
// ExeDeleted must equal what /proc/PID/exe says (the reference, read in
// the same step) within the step's sample bound: one sample for a change
// of the file itself or an exec, exeRecheck+1 for a rename of a directory
// above it.
func TestExeLinkFollowsChanges(t *testing.T) {
	sleepBin, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	shBin, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write := func(p string, data []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := func(c *exec.Cmd) {
		t.Helper()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	// a sleeper whose file is renamed, linked and unlinked
	write(filepath.Join(root, "d1", "napper"), sleepBin)
	nap := exec.Command(filepath.Join(root, "d1", "napper"), "600")
	start(nap)
	// a sleeper in a directory that is renamed
	write(filepath.Join(root, "d2", "dozer"), sleepBin)
	doze := exec.Command(filepath.Join(root, "d2", "dozer"), "600")
	start(doze)
	// a shell named w that execs another w (same comm) when told to
	write(filepath.Join(root, "a", "w"), shBin)
	write(filepath.Join(root, "b", "w"), shBin)
	ex := exec.Command(filepath.Join(root, "a", "w"), "-c", "read x; exec "+filepath.Join(root, "b", "w")+" -c 'read y'")
	in, err := ex.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	start(ex)
	t.Cleanup(func() { in.Close() })

	col, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	snap, err := col.Collect(nil)
	if err != nil {
		t.Fatal(err)
	}
	// reference: the link as the kernel prints it, and whether it names
	// a deleted file (the suffix, with the live literal name ruled out)
	reference := func(pid int) (string, bool) {
		l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if err != nil {
			t.Fatalf("readlink exe of %d: %v", pid, err)
		}
		if s, ok := strings.CutSuffix(l, DeletedSuffix); ok {
			if _, err := os.Lstat(l); err != nil {
				return s, true
			}
		}
		return l, false
	}
	steps := []struct {
		name    string
		cmd     *exec.Cmd
		do      func() error
		samples int // the bound on samples until the collector agrees
	}{
		{"first sample", nap, func() error { return nil }, 1},
		{"rename of the file", nap, func() error {
			return os.Rename(filepath.Join(root, "d1", "napper"), filepath.Join(root, "d1", "napper2"))
		}, 1},
		{"a second hard link", nap, func() error {
			return os.Link(filepath.Join(root, "d1", "napper2"), filepath.Join(root, "d1", "napper3"))
		}, 1},
		{"unlink of one of two links", nap, func() error { return os.Remove(filepath.Join(root, "d1", "napper2")) }, 1},
		{"unlink of the last link", nap, func() error { return os.Remove(filepath.Join(root, "d1", "napper3")) }, 1},
		{"rename of the directory", doze, func() error {
			return os.Rename(filepath.Join(root, "d2"), filepath.Join(root, "d2moved"))
		}, exeRecheck + 1},
		{"exec with the same comm", ex, func() error { _, err := io.WriteString(in, "go\n"); return err }, 1},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		pid := s.cmd.Process.Pid
		if s.cmd == ex {
			// the exec has happened once the kernel's link names b/w
			waitFor(t, "the exec of "+filepath.Join(root, "b", "w"), func() bool {
				l, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
				return l == filepath.Join(root, "b", "w")
			})
		}
		wantExe, wantDel := reference(pid)
		var got *Process
		for i := 0; i < s.samples; i++ {
			if snap, err = col.Collect(snap); err != nil {
				t.Fatal(err)
			}
			if got = snap.Find(int32(pid)); got == nil {
				t.Fatalf("%s: pid %d not sampled", s.name, pid)
			}
			if got.Exe == wantExe && got.ExeDeleted == wantDel {
				break
			}
		}
		if got.Exe != wantExe || got.ExeDeleted != wantDel {
			t.Errorf("%s: after %d samples exe %q deleted %v; /proc/%d/exe says %q deleted %v", s.name, s.samples, got.Exe, got.ExeDeleted, pid, wantExe, wantDel)
		}
	}
}

// waitFor polls cond until it holds, failing after two minutes (a bound
// that only catches a hang).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 2 minutes", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
