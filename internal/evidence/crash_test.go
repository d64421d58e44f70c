package evidence

import (
	"bufio"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

const crashEnv = "INQUEST_EVIDENCE_CRASH_HELPER"

// TestCrashHelper is the process TestCrashConsistency kills: it publishes
// records (mode publish) or rebuilds the index (mode rebuild) in a loop,
// printing one line per completed step. It does nothing in a normal run.
func TestCrashHelper(t *testing.T) {
	mode := os.Getenv(crashEnv)
	if mode == "" {
		t.Skip("helper process of TestCrashConsistency")
	}
	dir := os.Getenv(crashEnv + "_DIR")
	s, err := Open(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	for i := 0; ; i++ {
		switch mode {
		case "publish":
			if _, err := publishBlob(s, 1+mrand.IntN(512<<10)); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
		case "rebuild":
			if err := s.rebuild(context.Background(), s.gen); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
		}
		fmt.Fprintln(out, "step", i)
		out.Flush()
	}
}

// TestCrashConsistency: 50 times, a process publishing records or
// rebuilding the index is killed with SIGKILL after a random number of
// completed steps (0-3, so the kill lands anywhere in the next step: mid
// object copy, between manifest and index entry, mid rebuild, between
// setting the old index aside and moving the new one in). After each
// kill a fresh open must list every manifest on disk, every listed record
// must verify, and no temp file or unreferenced object (an object renamed
// into place before the kill, its manifest never written) may survive
// the open. The kill point is
// random; the assertions hold at any point, so the outcome does not
// depend on timing.
func TestCrashConsistency(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL and flock(2) are Unix facilities")
	}
	if os.Getenv(crashEnv) != "" {
		t.Skip("inside the helper")
	}
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, s, 20, "seed", "text")
	s.Close()
	rng := mrand.New(mrand.NewPCG(uint64(os.Getpid()), 11))
	for i := range 50 {
		mode := "publish"
		if i%2 == 1 {
			mode = "rebuild"
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+mode, crashEnv+"_DIR="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		steps := rng.IntN(4)
		seen := -1 // "ready" is step -1
		for seen < steps && sc.Scan() {
			line := sc.Text()
			switch {
			case line == "ready", len(line) > 5 && line[:5] == "step ":
				seen++
			case len(line) > 6 && line[:6] == "error ":
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("iteration %d (%s): helper failed: %s", i, mode, line)
			}
		}
		// A random pause spreads the kill over the next step; the
		// assertions below hold wherever it lands.
		time.Sleep(time.Duration(rng.IntN(30_000)) * time.Microsecond)
		cmd.Process.Kill()
		cmd.Wait()
		left := len(tempFiles(t, dir))
		n := checkConsistent(t, dir)
		if s, err := Open(dir); err == nil {
			l, err := s.Location(context.Background())
			s.Close()
			if err != nil || l.UnreferencedObjects == nil || *l.UnreferencedObjects != 0 {
				t.Fatalf("iteration %d (%s): after the kill and an open: %v, unreferenced objects %v, want 0", i, mode, err, l.UnreferencedObjects)
			}
		}
		t.Logf("iteration %d: %s killed after %d steps; %d temp files left by the kill; %d records consistent", i, mode, steps, left, n)
	}
}
