//go:build linux

package sample

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCollectFindsChildWithMetrics(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	c, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // its kept /proc fds
	s := NewSampler(c, 0)
	first, err := s.Step()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	snap, err := s.Step()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Seq != first.Seq+1 || snap.BootID == "" {
		t.Fatalf("seq %d boot %q", snap.Seq, snap.BootID)
	}
	p := snap.Find(int32(cmd.Process.Pid))
	if p == nil {
		t.Fatal("child not in snapshot")
	}
	if p.Name != "sleep" || p.PPID != int32(os.Getpid()) || p.StartTicks == 0 {
		t.Fatalf("child %+v", p)
	}
	for _, slot := range []int{PRSS, PVirtual, PThreads, PFDs, PCPUTime, PVolCtx, PCPUPercent} {
		if !p.Has(slot) {
			t.Errorf("metric %s unavailable", ProcessMetrics[slot].ID)
		}
	}
	if p.Vals[PRSS] == 0 || p.Vals[PThreads] != 1 {
		t.Errorf("rss %d threads %d", p.Vals[PRSS], p.Vals[PThreads])
	}
	self := snap.Find(int32(os.Getpid()))
	if self == nil || self.Vals[PFDs] < 3 || self.Exe == "" {
		t.Fatalf("self %+v", self)
	}
	for _, slot := range []int{SMemTotal, SMemAvailable, SLoad1, SUptime, SCPUPercent, SProcesses} {
		if !snap.System.Has(slot) {
			t.Errorf("system metric %s unavailable", SystemMetrics[slot].ID)
		}
	}
	if len(snap.System.CoreCPUPercent) == 0 {
		t.Error("no per-core CPU")
	}
}

func TestParseStatOddNames(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"spaces and parens", "42 (a) b (c)) S 1 42 42 0 -1 4194560 10 0 2 0 3 4 0 0 20 0 3 0 99 1000 5 18446744073709551615", "a) b (c)"},
		{"plain", "7 (sleep) S 1 7 7 0 -1 0 1 0 0 0 0 0 0 0 20 0 1 0 5 4096 2 0", "sleep"},
	}
	for _, tt := range tests {
		var p Process
		comm, err := parseStat([]byte(tt.line), &p)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if string(comm) != tt.want || p.PPID != 1 {
			t.Fatalf("%s: %+v", tt.name, p)
		}
	}
	var p Process
	if _, err := parseStat([]byte("1 (x) S 1"), &p); err == nil {
		t.Fatal("short line accepted")
	}
}

// PF_EXITING (flags field 9, 0x4) marks a single-threaded process inside
// exit() as Exiting; a zombie, or a leader of several threads (whose own
// pthread_exit sets it), is not.
func TestParseStatExiting(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       bool
	}{
		{"running", "9 (w) R 1 9 9 0 -1 4194304 0 0 0 0 1 1 0 0 20 0 1 0 5 4096 0 0", false},
		{"exiting", "9 (w) R 1 9 9 0 -1 4194308 0 0 0 0 1 1 0 0 20 0 1 0 5 4096 0 0", true},
		{"exiting in D", "9 (w) D 1 9 9 0 -1 4194308 0 0 0 0 1 1 0 0 20 0 1 0 5 4096 0 0", true},
		{"zombie", "9 (w) Z 1 9 9 0 -1 4194308 0 0 0 0 1 1 0 0 20 0 1 0 5 0 0 0", false},
		{"leader of two threads", "9 (w) R 1 9 9 0 -1 4194308 0 0 0 0 1 1 0 0 20 0 2 0 5 4096 0 0", false},
	} {
		var p Process
		if _, err := parseStat([]byte(c.line), &p); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Exiting != c.want {
			t.Errorf("%s: Exiting %v, want %v", c.name, p.Exiting, c.want)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("7 (sleep) S 1 7 7 0 -1 0 1 0 0 0 0 0 0 0 20 0 1 0 5 4096 2 0"))
	f.Add([]byte("()"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Process
		_, _ = parseStat(b, &p)
		parseStatus(b, &p)
		parseIO(b, &p)
		if v, ok := parseSchedstat(b); ok && len(bytes.Fields(b)) < 3 {
			t.Fatalf("schedstat %q parsed as %v with fewer than 3 fields", b, v)
		}
		Dirents(b, func(name []byte) {
			if len(name) == 0 {
				t.Fatal("empty dirent name")
			}
		})
		parsePID(b)
	})
}

// TestCarriedFieldsEqualFreshReads: fields carried over for a leader that
// did not run (status, io) equal what re-reading the files gives, and a
// process that did run is re-read.
func TestCarriedFieldsEqualFreshReads(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The fields compared below hold still only once sleep has finished
	// starting (loading, mapping) and blocks in its nanosleep: wait for
	// that, not for 50 ms, which a loaded machine may spend before sleep
	// first runs.
	waitNanosleep(t, cmd.Process.Pid)
	c, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // its kept /proc fds
	prev, _ := c.Collect(nil)
	pid := int32(cmd.Process.Pid)
	for i := 0; i < 3; i++ {
		snap, err := c.Collect(prev)
		if err != nil {
			t.Fatal(err)
		}
		got := snap.Find(pid)
		var fresh Process
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/status")
		parseStatus(b, &fresh)
		b, _ = os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/io")
		parseIO(b, &fresh)
		for _, slot := range []int{PSwap, PVolCtx, PInvolCtx, PReadBytes, PWriteBytes} {
			if got.Has(slot) != fresh.Has(slot) || got.Vals[slot] != fresh.Vals[slot] {
				t.Fatalf("tick %d %s: collector %d (has %v), file %d", i, ProcessMetrics[slot].ID, got.Vals[slot], got.Has(slot), fresh.Vals[slot])
			}
		}
		if got.UID != uint32(os.Getuid()) || !got.UIDKnown {
			t.Fatalf("uid %d known %v", got.UID, got.UIDKnown)
		}
		prev = snap
	}
	// A shell that keeps waiting for children runs between samples: its
	// context switches are re-read and move on.
	busy := exec.Command("sh", "-c", "while :; do sleep 0.01; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer busy.Process.Kill()
	prev, _ = c.Collect(prev)
	bp := prev.Find(int32(busy.Process.Pid))
	if bp == nil {
		t.Fatal("busy shell not sampled")
	}
	before := bp.Vals[PVolCtx]
	// Wait until the shell has switched since that sample (its status
	// says so), not for 100 ms, which a loaded machine may not give it.
	var moved uint64
	for deadline := time.Now().Add(2 * time.Minute); moved <= before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the busy shell did not switch in 2 minutes (%d)", before)
		}
		var fresh Process
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(busy.Process.Pid) + "/status")
		parseStatus(b, &fresh)
		moved = fresh.Vals[PVolCtx]
	}
	snap, _ := c.Collect(prev)
	if after := snap.Find(int32(busy.Process.Pid)).Vals[PVolCtx]; after < moved {
		t.Fatalf("voluntary switches of a running leader were carried: %d -> %d, status already says %d", before, after, moved)
	}
}

// nanosleepCalls are the nanosleep and clock_nanosleep system call
// numbers by GOARCH, as /proc/PID/syscall prints them.
var nanosleepCalls = map[string]map[string]bool{"amd64": {"35": true, "230": true}, "arm64": {"101": true, "115": true}}

func readString(path string) string { b, _ := os.ReadFile(path); return string(b) }

// waitNanosleep waits until pid (a sleep(1)) blocks in its nanosleep:
// /proc/PID/wchan names the kernel function it sleeps in; where wchan is
// not available, /proc/PID/syscall gives the blocked system call number
// (x86-64 nanosleep 35, clock_nanosleep 230; arm64 101, 115).
func waitNanosleep(t *testing.T, pid int) {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if w, _ := os.ReadFile(dir + "wchan"); strings.Contains(string(w), "nanosleep") {
			return
		}
		if f := strings.Fields(readString(dir + "syscall")); len(f) > 0 && nanosleepCalls[runtime.GOARCH][f[0]] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never blocked in nanosleep", pid)
		}
	}
}
