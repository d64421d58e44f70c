//go:build linux

package sample

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestParseStatm: resident is the second field of /proc/PID/statm; a
// line without it, or with a non-decimal one, is refused.
func TestParseStatm(t *testing.T) {
	tests := []struct {
		line string
		want uint64
		ok   bool
	}{
		{"16297 3580 2451 241 0 1322 0\n", 3580, true},
		{"0 0 0 0 0 0 0\n", 0, true}, // kernel thread, zombie
		{"1 18446744073709551 0 0 0 0 0", 18446744073709551, true},
		{"5 7\n", 7, true},
		{"5 7", 7, true},
		{"5\n", 0, false},
		{"5", 0, false},
		{"", 0, false},
		{" 7 0", 0, false},
		{"5  7 0", 0, false},
		{"5 -7 0", 0, false},
		{"5 7x 0", 0, false},
		{"5 99999999999999999999 0", 0, false}, // 20 digits: beyond the pages any machine has
	}
	for _, tt := range tests {
		got, ok := parseStatm([]byte(tt.line))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseStatm(%q) = %d, %v; want %d, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParseStatm: any bytes give a value or false, never a panic; a line
// formatted as the kernel does gives back its resident field.
func FuzzParseStatm(f *testing.F) {
	f.Add([]byte("16297 3580 2451 241 0 1322 0\n"), uint64(16297), uint64(3580))
	f.Add([]byte("0 0 0 0 0 0 0\n"), uint64(0), uint64(0))
	f.Add([]byte("5 "), uint64(1), uint64(1<<62))
	f.Fuzz(func(t *testing.T, b []byte, size, res uint64) {
		parseStatm(b)
		res %= 1e18
		line := fmt.Sprintf("%d %d 0 0 0 0 0\n", size, res)
		if got, ok := parseStatm([]byte(line)); !ok || got != res {
			t.Fatalf("parseStatm(%q) = %d, %v", line, got, ok)
		}
	})
}

// statmResident reads the resident field of /proc/PID/statm (pages).
func statmResident(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		t.Fatalf("statm %q", b)
	}
	v, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRSSMatchesPs: rss_bytes of a process that touched 64 MiB and then
// blocks reading its stdin equals `ps -o rss= -p PID` (procps, run here)
// times 1024. ps and the collector read at different instants, so the
// test reads statm resident itself before the snapshot and after ps: an
// idle process's count does not move, and when the two reads agree the
// collector and ps must give exactly that count. A moved count (memory
// reclaimed meanwhile) retries the round; no round depends on timing.
// The child is perl (perl-base is part of every Debian system), a single
// thread with no runtime of its own that could touch memory while idle.
func TestRSSMatchesPs(t *testing.T) {
	ps, err := exec.LookPath("ps")
	if err != nil {
		t.Skip("ps (procps) is not installed")
	}
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl is not installed")
	}
	const mib = 64
	child := exec.Command(perl, "-e", `my $x = "a" x (`+strconv.Itoa(mib)+` << 20); $| = 1; print "ready\n"; my $l = <STDIN>;`)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); child.Process.Kill(); child.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	pid := child.Process.Pid
	page := uint64(os.Getpagesize())
	c, err := NewLinuxCollector("")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // its kept /proc fds
	for round := 0; round < 20; round++ {
		before := statmResident(t, pid)
		snap, err := c.Collect(nil)
		if err != nil {
			t.Fatal(err)
		}
		psOut, err := exec.Command(ps, "-o", "rss=", "-p", strconv.Itoa(pid)).Output()
		if err != nil {
			t.Fatalf("ps: %v", err)
		}
		after := statmResident(t, pid)
		if before != after {
			t.Logf("round %d: statm resident moved %d -> %d pages; again", round, before, after)
			continue
		}
		kib, err := strconv.ParseUint(strings.TrimSpace(string(psOut)), 10, 64)
		if err != nil {
			t.Fatalf("ps output %q", psOut)
		}
		p := snap.Find(int32(pid))
		if p == nil || !p.Has(PRSS) {
			t.Fatalf("child %d not sampled with rss_bytes: %+v", pid, p)
		}
		var stat Process
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 21 {
				v, _ := strconv.ParseUint(f[21], 10, 64)
				stat.Set(PRSS, v*page)
			}
		}
		t.Logf("rss_bytes %d, ps %d KiB (%d bytes), statm %d pages, stat field 24 %d bytes", p.Vals[PRSS], kib, kib*1024, before, stat.Vals[PRSS])
		if kib*1024 != before*page {
			t.Errorf("ps %d KiB, statm resident %d pages of %d bytes", kib, before, page)
		}
		if p.Vals[PRSS] != kib*1024 {
			t.Errorf("rss_bytes %d, ps %d KiB x 1024 = %d", p.Vals[PRSS], kib, kib*1024)
		}
		if p.Vals[PRSS] < mib<<20 {
			t.Errorf("rss_bytes %d below the %d MiB the child touched", p.Vals[PRSS], mib)
		}
		return
	}
	t.Fatal("statm resident of the idle child moved in every round")
}
