package host

import (
	"bufio"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/managed/jvmtest"
)

// jstatLine is one data line of `jstat -gc PID 1000`: when the test read
// it and its columns by name.
type jstatLine struct {
	at   time.Time
	cols map[string]string
}

// histPoint is one raw get_history row: its sample time and the values
// (decimal strings) of the metrics it has.
type histPoint struct {
	at   time.Time
	vals map[string]string
}

// seriesMetrics are the metrics compared with jstat -gc, with the jstat
// value each one is, spelled as jstat prints it (KiB with one decimal,
// seconds with three). Heap used is jstat's EU+S0U+S1U+OU: a sum of four
// values each rounded to 0.1 KiB, so it may differ from the rounded total
// by up to 0.2 KiB (tol); every other value is compared exactly.
var seriesMetrics = []struct {
	id    string
	heap  bool // a heap occupancy: compared only where no collection ran
	jstat func(t *testing.T, c map[string]string) string
	ours  func(v uint64) string
	tol   float64
}{
	{"jvm_heap_used_bytes", true, func(t *testing.T, c map[string]string) string { return sumKB(t, c["EU"], c["S0U"], c["S1U"], c["OU"]) }, kb, 0.2},
	{"jvm_eden_used_bytes", true, func(t *testing.T, c map[string]string) string { return c["EU"] }, kb, 0},
	{"jvm_survivor_used_bytes", true, func(t *testing.T, c map[string]string) string { return sumKB(t, c["S0U"], c["S1U"]) }, kb, 0},
	{"jvm_old_used_bytes", true, func(t *testing.T, c map[string]string) string { return c["OU"] }, kb, 0},
	{"jvm_young_gc_count", false, func(t *testing.T, c map[string]string) string { return c["YGC"] }, func(v uint64) string { return strconv.FormatUint(v, 10) }, 0},
	{"jvm_young_gc_time_ns", false, func(t *testing.T, c map[string]string) string { return c["YGCT"] }, secs, 0},
	{"jvm_old_gc_count", false, func(t *testing.T, c map[string]string) string { return c["FGC"] }, func(v uint64) string { return strconv.FormatUint(v, 10) }, 0},
	{"jvm_old_gc_time_ns", false, func(t *testing.T, c map[string]string) string { return c["FGCT"] }, secs, 0},
}

// sameValue reports whether got equals want, or, with tol > 0, whether
// both are numbers at most tol apart.
func sameValue(got, want string, tol float64) bool {
	if got == want {
		return true
	}
	if tol == 0 {
		return false
	}
	g, err1 := strconv.ParseFloat(got, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && math.Abs(g-w) <= tol+1e-9
}

// TestRuntimeHistoryMatchesJstatSeries: with collection authorized, 20 s
// of inquest's history of a JVM that allocates and collects now and then
// equals the lines `jstat -gc PID 1000` printed over the same 20 s in the
// same run. Each jstat line is matched to inquest's samples around the
// instant the test read it, within the skew of one sampling interval: a
// counter is compared where inquest's samples from one interval before
// that instant to the first one after it all agree (the counter did not
// change in between, so jstat read the same value); heap used only where
// neither collection count changed in that span either (heap used to
// jstat's rounding of its four columns; eden, survivor, old exactly). As root, a JVM of
// another (unprivileged) user is read the same way.
func TestRuntimeHistoryMatchesJstatSeries(t *testing.T) {
	jdk := jvmtest.Default(t)
	jstat := filepath.Join(filepath.Dir(jdk.Java), "jstat")
	if _, err := os.Stat(jstat); err != nil {
		t.Skipf("%s has no jstat", jdk.Name)
	}
	t.Run("own", func(t *testing.T) { jstatSeries(t, jdk, jstat, jvmtest.Start(t, jdk)) })
	t.Run("other_user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to run the JVM as another user")
		}
		const user = "inquest-jvm"
		if exec.Command("id", "-u", user).Run() != nil {
			if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user).CombinedOutput(); err != nil {
				t.Fatalf("useradd: %v\n%s", err, out)
			}
		}
		jstatSeries(t, jdk, jstat, jvmtest.StartAs(t, jdk, user))
	})
}

func jstatSeries(t *testing.T, jdk jvmtest.JDK, jstat string, p *jvmtest.Proc) {
	const interval = 500 * time.Millisecond // inquest's sampling interval
	h := testHost(t, interval, nil)
	s, console := h.NewSession(), h.NewSession()
	p.Do(t, "alloc 16")
	ref := refOfPID(t, h, s, p.PID)
	authorize(t, h, s, console, ref, "series-1")
	waitFor(t, 2*time.Minute, "collecting", func() bool { return runtimeState(t, h, s, ref)["state"] == "collecting" })

	// jstat prints a header, then one line a second for 21 seconds.
	cmd := exec.Command(jstat, "-gc", strconv.Itoa(p.PID), "1000", "21")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	type read struct {
		at   time.Time
		line string
		err  error
	}
	ch := make(chan read)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ch <- read{at: time.Now(), line: sc.Text()}
		}
		ch <- read{err: sc.Err()}
		close(ch)
	}()
	// The JVM allocates (young collections) and collects in full between
	// some lines, and is idle otherwise, so its counters change a few
	// times during the series and stand still in between.
	work := map[int]string{3: "alloc 48", 7: "gc", 11: "alloc 32", 14: "gc", 17: "alloc 48"}
	var header []string
	var lines []jstatLine
	hang := time.After(5 * time.Minute)
	for done := false; !done; {
		select {
		case r, ok := <-ch:
			if !ok || r.err != nil || r.line == "" && r.at.IsZero() {
				done = true
				break
			}
			f := strings.Fields(r.line)
			if header == nil {
				header = f
				continue
			}
			if len(f) != len(header) {
				t.Fatalf("jstat line %q under %q", r.line, header)
			}
			c := map[string]string{}
			for i := range f {
				c[header[i]] = f[i]
			}
			lines = append(lines, jstatLine{r.at, c})
			if cmd, ok := work[len(lines)]; ok {
				p.Do(t, cmd)
			}
		case <-hang:
			t.Fatal("jstat did not finish its 21 lines")
		}
	}
	if err := cmd.Wait(); err != nil || len(lines) != 21 {
		t.Fatalf("jstat: %v, %d lines", err, len(lines))
	}
	last := lines[len(lines)-1].at
	waitFor(t, 2*time.Minute, "a sample after the last jstat line", func() bool {
		return h.Sampler().Latest().Time.After(last.Add(2 * interval))
	})

	// inquest's raw history over the series, every page.
	ids := make([]string, len(seriesMetrics))
	for i, m := range seriesMetrics {
		ids[i] = m.id
	}
	args := map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": ids, "mode": "raw",
		"from": lines[0].at.Add(-5 * time.Second).UTC().Format(time.RFC3339Nano), "to": last.Add(5 * time.Second).UTC().Format(time.RFC3339Nano)}
	var pts []histPoint
	for {
		d, res := mustCall(t, h, s, "get_history", args)
		for _, r := range d["rows"].([]any) {
			row := r.(map[string]any)
			at, err := time.Parse(time.RFC3339Nano, row["at"].(string))
			if err != nil {
				t.Fatalf("history at %v", row["at"])
			}
			vals := map[string]string{}
			for k, v := range row["values"].(map[string]any) {
				vals[k], _ = v.(string)
			}
			pts = append(pts, histPoint{at, vals})
		}
		if res.NextAction == nil {
			break
		}
		args = map[string]any{"cursor": res.NextAction.Arguments["cursor"]}
	}
	if len(pts) < 20 {
		t.Fatalf("history holds %d samples over 20 s at %v", len(pts), interval)
	}

	// steady returns the value of id shared by every sample from the last
	// one at or before from to the first one at or after to, or false
	// when they differ or one is missing.
	steady := func(id string, from, to time.Time) (string, bool) {
		lo, hi := -1, -1
		for i, pt := range pts {
			if !pt.at.After(from) {
				lo = i
			}
			if hi < 0 && !pt.at.Before(to) {
				hi = i
			}
		}
		if lo < 0 || hi < 0 {
			return "", false
		}
		v, ok := pts[lo].vals[id]
		for _, pt := range pts[lo : hi+1] {
			if w, has := pt.vals[id]; !has || w != v {
				return "", false
			}
		}
		return v, ok && v != ""
	}
	// jstat read its sample at most one jstat interval (1 s) before the
	// test read the line.
	const skew = time.Second
	compared := map[string]int{}
	distinct := map[string]map[string]bool{}
	for n, l := range lines {
		from, to := l.at.Add(-skew-interval), l.at
		_, ygcSteady := steady("jvm_young_gc_count", from, to)
		_, fgcSteady := steady("jvm_old_gc_count", from, to)
		for _, m := range seriesMetrics {
			v, ok := steady(m.id, from, to)
			if !ok || m.heap && !(ygcSteady && fgcSteady) {
				continue
			}
			u, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("%s value %q", m.id, v)
			}
			got, want := m.ours(u), m.jstat(t, l.cols)
			if !sameValue(got, want, m.tol) {
				t.Errorf("jstat line %d: %s inquest %s, jstat %s", n+1, m.id, got, want)
			}
			compared[m.id]++
			if distinct[m.id] == nil {
				distinct[m.id] = map[string]bool{}
			}
			distinct[m.id][want] = true
		}
	}
	t.Logf("%d jstat lines, %d inquest samples; compared per metric %v; distinct values %v", len(lines), len(pts), compared, distinctCounts(distinct))
	for _, m := range seriesMetrics {
		if compared[m.id] < 5 {
			t.Errorf("%s compared on %d of 21 jstat lines; the counters never stood still long enough", m.id, compared[m.id])
		}
	}
	for _, id := range []string{"jvm_young_gc_count", "jvm_old_gc_count", "jvm_heap_used_bytes"} {
		if len(distinct[id]) < 2 {
			t.Errorf("%s compared at only %d value(s): the series saw no change", id, len(distinct[id]))
		}
	}
}

func distinctCounts(m map[string]map[string]bool) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}
