//go:build linux

package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPsColumnsMatchPs runs `inquest ps -o pid,user,time,comm,args` and
// `ps -o pid,user,time,comm,args -p PID` on the same process (a sleep this
// test starts with arguments) in the same run: the row has the same PID,
// USER, TIME ([DD-]HH:MM:SS), COMMAND (comm) and command line.
func TestPsColumnsMatchPs(t *testing.T) {
	psBin, err := exec.LookPath("ps")
	if err != nil {
		t.Skip("ps is not installed")
	}
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	// GNU sleep sums its operands: two arguments for the command line.
	child := exec.Command(sleepBin, "300", "300")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pid := strconv.Itoa(child.Process.Pid)
	waitUntil(t, "the child runs sleep", func() bool {
		b, err := os.ReadFile("/proc/" + pid + "/comm")
		return err == nil && strings.TrimSpace(string(b)) == filepath.Base(sleepBin)
	})
	find := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == pid {
				return strings.Join(f, " ")
			}
		}
		return ""
	}
	var got string
	waitUntil(t, "inquest ps lists the child", func() bool {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), []string{"ps", "-o", "pid,user,time,comm,args", "--name", filepath.Base(sleepBin)}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("inquest ps: exit %d: %s", code, errb.String())
		}
		got = find(out.String())
		return got != ""
	})
	ref, err := exec.Command(psBin, "-o", "pid,user,time,comm,args", "-p", pid).Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	want := find(string(ref))
	if want == "" || got != want {
		t.Errorf("inquest ps -o: %q\nps -o:         %q", got, want)
	}
}

// TestWriteAligned: numbers right-aligned, text left-aligned, the last
// text column unpadded, as ps prints them.
func TestWriteAligned(t *testing.T) {
	var b bytes.Buffer
	writeAligned(&b, [][]string{{"PID", "RSS", "STATE", "NAME"}, {"1", "14.0M", "sleeping", "init"}, {"22209", "0B", "R", "kworker/0:1"}}, []bool{false, false, true, true})
	want := "  PID   RSS STATE    NAME\n    1 14.0M sleeping init\n22209    0B R        kworker/0:1\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
