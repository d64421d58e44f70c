//go:build linux || darwin

package evidence

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

const sweepEnv = "INQUEST_EVIDENCE_SWEEP_HELPER"

// TestSweepHelper is the publishing process of the sweep tests. Mode
// "block" publishes one record and stops for good right after its object
// is renamed into place, before its manifest is written (printing
// "renamed SUM SIZE"), so the parent can kill it there. Mode "loop"
// publishes 10 records for each line it reads on its standard input,
// each artifact either fresh random bytes or one of the 16 contents
// poolData gives (deduplicated against an object that may be
// unreferenced), printing "step N" after each. It does nothing in a
// normal run.
func TestSweepHelper(t *testing.T) {
	mode := os.Getenv(sweepEnv)
	if mode == "" {
		t.Skip("helper process of the sweep tests")
	}
	s, err := Open(os.Getenv(sweepEnv + "_DIR"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	switch mode {
	case "block":
		testHookObjectPublished = func(sum string) {
			fi, err := os.Stat(s.objectPath(sum))
			if err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Fprintln(out, "renamed", sum, fi.Size())
			out.Flush()
			select {} // killed here
		}
		if _, err := publishBlob(s, 1<<20); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println("error published without stopping")
		os.Exit(2)
	case "loop":
		in := bufio.NewScanner(os.Stdin)
		for i := 0; ; i++ {
			if i%10 == 0 && !in.Scan() {
				os.Exit(0)
			}
			var data []byte
			if i%2 == 0 {
				data = poolData(mrand.IntN(16))
			} else {
				data = make([]byte, 1+mrand.IntN(64<<10))
				rand.Read(data)
			}
			_, err := s.Publish(context.Background(), Record{
				Toolset: "perf", Operation: "summarize_profile", Status: StatusComplete,
				Artifacts: []ArtifactInput{{Name: "source-0", Role: RoleAnalysisSource, Format: "pprof", Data: data}},
			})
			if err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Fprintln(out, "step", i)
			out.Flush()
		}
	}
}

// poolData is the k-th shared artifact content of the loop helper.
func poolData(k int) []byte { return []byte(fmt.Sprintf("pool content %d\n", k)) }

// startSweepHelper starts the helper in mode on dir and waits for "ready".
func startSweepHelper(t *testing.T, mode, dir string) (*exec.Cmd, *bufio.Scanner, io.Writer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), sweepEnv+"="+mode, sweepEnv+"_DIR="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("helper %s did not start: %q", mode, sc.Text())
	}
	return cmd, sc, stdin
}

// plantObject writes data as an object no manifest references (what a
// publisher killed after its rename leaves when it kept no marker), with
// modification time mtime, and returns its digest.
func plantObject(t *testing.T, dir string, data []byte, mtime time.Time) string {
	t.Helper()
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	p := filepath.Join(dir, "objects", "sha256", sum[:2], sum)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o400); err != nil && !os.IsPermission(err) {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return sum
}

func pendingFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), pendingPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func unreferencedOf(t *testing.T, s *Store) (int64, int64) {
	t.Helper()
	l, err := s.Location(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if l.UnreferencedObjects == nil || l.UnreferencedBytes == nil {
		t.Fatalf("location: unreferenced objects unknown")
	}
	return *l.UnreferencedObjects, *l.UnreferencedBytes
}

// verifyAll checks every manifest on disk: Get and every artifact's
// SHA-256. It returns how many records it checked.
func verifyAll(t *testing.T, s *Store) int {
	t.Helper()
	ids := manifestIDs(t, s.Dir())
	for _, id := range ids {
		m, err := s.Get(id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		for _, a := range m.Artifacts {
			if err := s.VerifyArtifact(context.Background(), m, a.Name); err != nil {
				t.Fatalf("verify %s/%s: %v", id, a.Name, err)
			}
		}
	}
	return len(ids)
}

// TestKilledPublishOrphanSwept: a publisher stopped right after renaming
// its object into place (before its manifest) holds the store so that
// neither Open nor SweepObjects removes the object while it lives, even
// with no grace period; Location counts the object as unreferenced. Once
// the publisher is killed with SIGKILL, Location reports the orphan's
// bytes, and the next Open removes it (its dead pending marker lists it)
// while every published record stays verifiable.
func TestKilledPublishOrphanSwept(t *testing.T) {
	if os.Getenv(sweepEnv) != "" {
		t.Skip("inside the helper")
	}
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, s, 5, "seed", "text")
	s.Close()

	cmd, sc, _ := startSweepHelper(t, "block", dir)
	if !sc.Scan() {
		t.Fatal("helper ended before renaming its object")
	}
	var sum string
	var size int64
	if _, err := fmt.Sscanf(sc.Text(), "renamed %s %d", &sum, &size); err != nil {
		t.Fatalf("helper: %q", sc.Text())
	}
	obj := filepath.Join(dir, "objects", "sha256", sum[:2], sum)

	// The publisher lives: nothing may remove its object.
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err = s.SweepObjects(ctx, 0, false)
	cancel()
	if c := contract.AsError(err).Code; err == nil || (c != contract.CodeTimeout && c != contract.CodeCancelled) {
		t.Fatalf("sweep beside a live publish: %v, want it to wait and give up", err)
	}
	if _, err := os.Stat(obj); err != nil {
		t.Fatalf("object of a live publish removed: %v", err)
	}
	if n, b := unreferencedOf(t, s); n != 1 || b != size {
		t.Fatalf("unreferenced beside a live publish: %d objects %d bytes, want 1, %d", n, b, size)
	}
	s.Close()

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if len(pendingFiles(t, dir)) != 1 {
		t.Fatalf("pending markers after the kill: %v, want the dead publisher's", pendingFiles(t, dir))
	}

	s, err = Open(dir) // sweeps the dead publish
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(obj); !os.IsNotExist(err) {
		t.Fatalf("orphan of the killed publish survived Open: %v", err)
	}
	if p := pendingFiles(t, dir); len(p) != 0 {
		t.Fatalf("pending markers survived Open: %v", p)
	}
	if n, b := unreferencedOf(t, s); n != 0 || b != 0 {
		t.Fatalf("unreferenced after Open: %d objects %d bytes", n, b)
	}
	if n := verifyAll(t, s); n != 5 {
		t.Fatalf("%d records verified, want 5", n)
	}
}

// TestSweepObjectsGraceAndDryRun: unreferenced objects of unknown origin
// (no pending marker) are removed only past the grace period; a dry run
// reports without removing; referenced objects are never touched; an
// unreadable manifest stops every removal.
func TestSweepObjectsGraceAndDryRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := publishN(t, s, 3, "seed", "text")
	old := time.Now().Add(-2 * time.Hour)
	oldSum := plantObject(t, dir, []byte("old orphan, 27 bytes long.\n"), old)
	newSum := plantObject(t, dir, []byte("new orphan\n"), time.Now())
	// A referenced object with an old mtime stays whatever the grace.
	refObj := s.objectPath(recs[0].Artifacts[0].SHA256)
	os.Chtimes(refObj, old, old)

	exists := func(sum string) bool {
		_, err := os.Stat(s.objectPath(sum))
		return err == nil
	}
	for _, tc := range []struct {
		name               string
		grace              time.Duration
		dry                bool
		removed, bytes     int64
		recent             int64
		oldLeft, newLeft   bool
		unreferencedBefore int64
	}{
		{"dry run, no grace", 0, true, 2, 27 + 11, 0, true, true, 2},
		{"grace 3h keeps both", 3 * time.Hour, false, 0, 0, 2, true, true, 2},
		{"grace 1h removes the old one", time.Hour, false, 1, 27, 1, false, true, 2},
		{"no grace removes the new one", 0, false, 1, 11, 0, false, false, 1},
		{"nothing left", 0, false, 0, 0, 0, false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n, _ := unreferencedOf(t, s); n != tc.unreferencedBefore {
				t.Fatalf("unreferenced before: %d, want %d", n, tc.unreferencedBefore)
			}
			rep, err := s.SweepObjects(context.Background(), tc.grace, tc.dry)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Removed != tc.removed || rep.RemovedBytes != tc.bytes || rep.Recent != tc.recent || rep.Referenced != 3 || rep.DryRun != tc.dry {
				t.Fatalf("report %+v, want removed %d (%d bytes), recent %d, referenced 3", rep, tc.removed, tc.bytes, tc.recent)
			}
			if exists(oldSum) != tc.oldLeft || exists(newSum) != tc.newLeft {
				t.Fatalf("old orphan present %v (want %v), new orphan present %v (want %v)", exists(oldSum), tc.oldLeft, exists(newSum), tc.newLeft)
			}
			if n := verifyAll(t, s); n != 3 {
				t.Fatalf("%d records verified, want 3", n)
			}
		})
	}

	// An unreadable manifest: nothing is removed, and the report says why.
	plantObject(t, dir, []byte("another orphan\n"), old)
	bad := filepath.Join(dir, "manifests", newID(time.Now())+".json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := s.SweepObjects(context.Background(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 0 || rep.UnreadableManifests != 1 || rep.Recent != 1 || rep.Reason == "" {
		t.Fatalf("report with an unreadable manifest: %+v", rep)
	}
	if l, err := s.Location(context.Background()); err != nil || l.UnreferencedObjects != nil {
		t.Fatalf("location with an unreadable manifest: %v, unreferenced %v (want unknown)", err, l.UnreferencedObjects)
	}
}

// TestSweepBesideLivePublishes: two processes publish records, ten per
// sweep so that their publishes overlap each sweep (half their artifacts
// shared contents, deduplicated against objects that may be unreferenced
// at that moment), while this process sweeps with no grace period in a
// loop, planting an unreferenced object before each
// sweep. Every sweep that runs must remove its planted object, and after
// the run every record on disk must verify: no object a record
// references was lost.
func TestSweepBesideLivePublishes(t *testing.T) {
	if os.Getenv(sweepEnv) != "" {
		t.Skip("inside the helper")
	}
	dir := filepath.Join(t.TempDir(), "ev")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Every shared content starts as an unreferenced object.
	for k := range 16 {
		plantObject(t, dir, poolData(k), time.Now().Add(-time.Hour))
	}
	type helper struct {
		cmd   *exec.Cmd
		steps chan int
		in    io.Writer
	}
	var hs []helper
	for range 2 {
		cmd, sc, in := startSweepHelper(t, "loop", dir)
		h := helper{cmd, make(chan int, 1024), in}
		go func() {
			defer close(h.steps)
			for sc.Scan() {
				var n int
				if _, err := fmt.Sscanf(sc.Text(), "step %d", &n); err == nil {
					select {
					case h.steps <- n:
					default:
					}
				} else {
					t.Errorf("helper: %s", sc.Text())
				}
			}
		}()
		hs = append(hs, h)
	}
	steps := make([]int, len(hs))
	sweeps, busy := 0, 0
	deadline := time.Now().Add(4 * time.Minute)
	for i := 0; ; i++ {
		for j, h := range hs {
		drain:
			for {
				select {
				case n, ok := <-h.steps:
					if !ok {
						t.Fatalf("helper %d ended after %d steps", j, steps[j])
					}
					steps[j] = n + 1
				default:
					break drain
				}
			}
		}
		if sweeps >= 20 && steps[0] >= 60 && steps[1] >= 60 {
			break
		}
		// Ten more publishes each, running while this sweep runs.
		for _, h := range hs {
			if _, err := io.WriteString(h.in, "go\n"); err != nil {
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 4 minutes: %d sweeps ran (%d busy), helpers at %v steps", sweeps, busy, steps)
		}
		canary := plantObject(t, dir, []byte(fmt.Sprintf("canary %d\n", i)), time.Now().Add(-time.Minute))
		rep, err := s.SweepObjects(context.Background(), 0, false)
		if err != nil && contract.AsError(err).Code == contract.CodeBusy {
			busy++
			continue
		}
		if err != nil {
			t.Fatalf("sweep %d: %v", i, err)
		}
		sweeps++
		if rep.Removed < 1 {
			t.Fatalf("sweep %d removed nothing: %+v", i, rep)
		}
		if _, err := os.Stat(s.objectPath(canary)); !os.IsNotExist(err) {
			t.Fatalf("sweep %d left its planted object: %v", i, err)
		}
	}
	for _, h := range hs {
		h.cmd.Process.Signal(syscall.SIGKILL)
		h.cmd.Wait()
	}
	n := verifyAll(t, s)
	t.Logf("%d sweeps (%d busy) beside helpers at %v steps; %d records verified", sweeps, busy, steps, n)
	if n < 120 {
		t.Fatalf("%d records on disk, want at least 120", n)
	}
}
