package perf

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// traceSlice is one slice of one thread as a reader built it: name,
// start and duration in ns, and whether it did not finish.
type traceSlice struct {
	name       string
	start, dur int64
	dnf        bool
}

func (s traceSlice) String() string {
	return fmt.Sprintf("%s@%d+%d%s", s.name, s.start, s.dur, map[bool]string{true: "(dnf)"}[s.dnf])
}

func sortSlices(list []traceSlice) {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.dur != b.dur {
			return a.dur > b.dur
		}
		return a.name < b.name
	})
}

// ourSlices reads the whole window [start, end) of path through
// inspect_trace_window (every page) and returns the slices (X and B/E
// rows) per "pid/tid", sorted, and the first page's result.
func ourSlices(t *testing.T, e *env, path string, start, end int64) (map[string][]traceSlice, map[string]any) {
	t.Helper()
	m := e.mustCall("inspect_trace_window", map[string]any{"sources": []any{pathSrc(path, "chrome-trace")},
		"start_ns": strconv.FormatInt(start, 10), "end_ns": strconv.FormatInt(end, 10), "page_size": 10000})
	rows, _ := e.follow(m)
	out := map[string][]traceSlice{}
	for _, r := range rows {
		row := r.(map[string]any)
		if row["ph"] != "X" && row["ph"] != "B/E" {
			continue
		}
		th := row["pid"].(string) + "/" + row["tid"].(string)
		ts, _ := strconv.ParseInt(row["ts_ns"].(string), 10, 64)
		dur, _ := strconv.ParseInt(row["dur_ns"].(string), 10, 64)
		out[th] = append(out[th], traceSlice{row["name"].(string), ts, dur, row["did_not_finish"] == true})
	}
	for _, l := range out {
		sortSlices(l)
	}
	return out, m
}

// devtoolsSlices are DevTools' trace engine's slice entries per thread
// (trace clock, ns); dur is -1 where the engine gives none.
func devtoolsSlices(t *testing.T, r *refTrace) map[string][]traceSlice {
	out := map[string][]traceSlice{}
	for _, th := range r.Devtools.Threads {
		key := th.Pid + "/" + th.Tid
		for _, s := range th.Slices {
			if s.Ph != "X" {
				continue // instants
			}
			d := int64(-1)
			if s.Dur != nil {
				d = usToNSExact(t, *s.Dur)
			}
			out[key] = append(out[key], traceSlice{name: s.Name, start: usToNSExact(t, s.Ts), dur: d})
		}
	}
	for _, l := range out {
		sortSlices(l)
	}
	return out
}

// speedscopeSlices are speedscope's calls per thread; starts are on its
// value axis, which begins at the thread's first event, so they are
// shifted by first[thread] (the trace-clock time of that event, ns).
func speedscopeSlices(t *testing.T, r *refTrace, first map[string]int64) map[string][]traceSlice {
	out := map[string][]traceSlice{}
	for _, p := range r.Speedscope.Profiles {
		mm := ssProfileRE.FindStringSubmatch(p.Name)
		if mm == nil {
			t.Fatalf("speedscope profile name %q names no pid/tid", p.Name)
		}
		key := mm[1] + "/" + mm[2]
		for _, s := range p.Slices {
			st := usToNSExact(t, s.Start)
			out[key] = append(out[key], traceSlice{name: s.Name, start: first[key] + st, dur: usToNSExact(t, s.End) - st})
		}
	}
	for _, l := range out {
		sortSlices(l)
	}
	return out
}

func threadKeys(m map[string][]traceSlice) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// compareSlices compares ours with a reference's slices thread by thread
// and slice by slice (name, start, duration). dnfDur says what the
// reference gives as a did-not-finish slice's duration: -2 accepts any
// value the reference gives (the test states the reference's rule
// separately), otherwise ours must equal it.
func compareSlices(t *testing.T, who string, ours, ref map[string][]traceSlice, dnfDur func(traceSlice) int64) {
	t.Helper()
	if got, want := threadKeys(ours), threadKeys(ref); !equalStrings(got, want) {
		t.Errorf("%s: threads ours %v, reference %v", who, got, want)
	}
	for th, want := range ref {
		got := ours[th]
		if len(got) != len(want) {
			t.Errorf("%s %s: ours %v, reference %v", who, th, got, want)
			continue
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.name != w.name || g.start != w.start {
				t.Errorf("%s %s slice %d: ours %v, reference %v", who, th, i, g, w)
				continue
			}
			if g.dnf {
				if d := dnfDur(g); d != -2 && w.dur != d {
					t.Errorf("%s %s slice %d (did not finish): reference duration %d ns, the test expects %d", who, th, i, w.dur, d)
				}
				continue
			}
			if g.dur != w.dur {
				t.Errorf("%s %s slice %d: ours %v, reference %v", who, th, i, g, w)
			}
		}
	}
}

func gzipBytes(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestTraceFidelityCases reads the cases of issue 35 items 1-4 with
// inspect_trace_window and, in the same run, with speedscope and
// DevTools' trace engine, and compares every thread's slices (name,
// start, duration, did-not-finish): a gzip-compressed trace, events
// before 0 on the trace clock, B events without E (one thread holds only
// such a slice), and an E whose name differs from its B.
func TestTraceFidelityCases(t *testing.T) {
	ref := traceReference(t)
	e := newEnv(t)
	plain := traceArray(traceEvents) + "]"
	// Twenty-two threads; the last one is inside two slices when the
	// trace stops (the trace's last timestamp, 330 µs, is on another
	// thread).
	var unclosed []string
	for i := 1; i <= 21; i++ {
		unclosed = append(unclosed, fmt.Sprintf(`{"ph":"X","name":"work%d","ts":%d,"dur":%d,"pid":1,"tid":%d}`, i, 10*i, 5+i, i))
	}
	unclosed = append(unclosed,
		`{"ph":"B","name":"outer","ts":100,"pid":1,"tid":50}`,
		`{"ph":"X","name":"inner","ts":110,"dur":20,"pid":1,"tid":50}`,
		`{"ph":"B","name":"stuck","ts":300,"pid":1,"tid":50}`,
		`{"ph":"X","name":"last","ts":310,"dur":15,"pid":1,"tid":50}`,
		`{"ph":"X","name":"tail","ts":290,"dur":40,"pid":1,"tid":3}`)
	negative := `[{"ph":"X","name":"early","ts":-50,"dur":20,"pid":1,"tid":1},` +
		`{"ph":"B","name":"be","ts":-40,"pid":1,"tid":2},{"ph":"E","name":"be","ts":-35,"pid":1,"tid":2},` +
		`{"ph":"i","name":"tick","ts":-5,"pid":1,"tid":1,"s":"t"},` +
		`{"ph":"X","name":"late","ts":10,"dur":5,"pid":1,"tid":1}]`
	mismatch := `[{"ph":"B","name":"alpha","ts":0,"pid":1,"tid":1},{"ph":"E","name":"beta","ts":10,"pid":1,"tid":1},` +
		`{"ph":"X","name":"x","ts":20,"dur":5,"pid":1,"tid":1}]`

	gzPath := filepath.Join(e.dir, "trace.json.gz")
	if err := os.WriteFile(gzPath, gzipBytes(t, []byte(plain)), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []string{
		e.write("plain.json", plain), gzPath,
		e.write("unclosed.json", traceArray(unclosed)+"]"),
		e.write("negative.json", negative),
		e.write("mismatch.json", mismatch),
	}
	refs := runTraceReference(t, ref, files...)
	firstOf := func(s map[string][]traceSlice) map[string]int64 {
		m := map[string]int64{}
		for th, l := range s {
			m[th] = l[0].start
		}
		return m
	}
	anyDur := func(traceSlice) int64 { return -2 }
	cov := func(m map[string]any) map[string]any { return m["coverage"].(map[string]any) }

	t.Run("gzip", func(t *testing.T) {
		r := refs["trace.json.gz"]
		if !r.Speedscope.Accepted || !r.Devtools.Accepted {
			t.Fatalf("references: speedscope %v (%s), DevTools %v (%s); both inflate gzip", r.Speedscope.Accepted, r.Speedscope.Error, r.Devtools.Accepted, r.Devtools.Error)
		}
		ours, m := ourSlices(t, e, gzPath, 0, maxNS)
		plainOurs, _ := ourSlices(t, e, files[0], 0, maxNS)
		if fmt.Sprint(ours) != fmt.Sprint(plainOurs) {
			t.Errorf("gzip %v, uncompressed %v", ours, plainOurs)
		}
		if data(m)["summary"].(map[string]any)["compression"] != "gzip" {
			t.Errorf("summary %v names no gzip", data(m)["summary"])
		}
		compareSlices(t, "DevTools", ours, devtoolsSlices(t, r), anyDur)
		compareSlices(t, "speedscope", ours, speedscopeSlices(t, r, firstOf(ours)), anyDur)
		// gzip inside gzip stays refused; a truncated stream is named.
		twice := filepath.Join(e.dir, "twice.json.gz")
		os.WriteFile(twice, gzipBytes(t, gzipBytes(t, []byte(plain))), 0o644)
		cut := filepath.Join(e.dir, "cut.json.gz")
		gz := gzipBytes(t, []byte(plain))
		os.WriteFile(cut, gz[:len(gz)/2], 0o644)
		for _, c := range []struct{ path, want string }{{twice, "gzip inside gzip"}, {cut, "could not be inflated"}} {
			m, code := e.call("inspect_trace_window", map[string]any{"sources": []any{pathSrc(c.path, "chrome-trace")}, "start_ns": 0, "end_ns": 1000000})
			if code != contract.CodeDecodeFailed || !strings.Contains(fmt.Sprint(m["error"]), c.want) {
				t.Errorf("%s: %s %v, want DECODE_FAILED naming %q", filepath.Base(c.path), code, m["error"], c.want)
			}
		}
	})

	t.Run("unclosed_begin", func(t *testing.T) {
		r := refs["unclosed.json"]
		ours, m := ourSlices(t, e, files[2], 0, maxNS)
		if len(ours) != 22 {
			t.Errorf("%d threads, want 22: %v", len(ours), threadKeys(ours))
		}
		// Both unclosed B events end at the trace's last timestamp
		// (tail's end at 330 µs), as X events without dur do.
		want := []traceSlice{{"outer", 100_000, 230_000, true}, {"inner", 110_000, 20_000, false}, {"stuck", 300_000, 30_000, true}, {"last", 310_000, 15_000, false}}
		if fmt.Sprint(ours["1/50"]) != fmt.Sprint(want) {
			t.Errorf("thread 1/50: %v, want %v", ours["1/50"], want)
		}
		c := cov(m)
		if c["unclosed_begin_events"] != "2" || c["unmatched_begin_end"] != "0" || m["status"] != "partial" {
			t.Errorf("coverage %v status %v, want 2 unclosed B events", c, m["status"])
		}
		// DevTools keeps such a slice with duration 0; speedscope closes
		// it at its thread's last timestamp (325 µs, the end of last)
		// and warns.
		compareSlices(t, "DevTools", ours, devtoolsSlices(t, r), func(traceSlice) int64 { return 0 })
		ssEnd := map[string]int64{"outer": 225_000, "stuck": 25_000}
		compareSlices(t, "speedscope", ours, speedscopeSlices(t, r, firstOf(ours)), func(s traceSlice) int64 { return ssEnd[s.name] })
		if !strings.Contains(strings.Join(r.Speedscope.Warnings, "\n"), `"outer" was still open`) {
			t.Errorf("speedscope warnings %v name no open frame", r.Speedscope.Warnings)
		}
	})

	t.Run("negative_timestamps", func(t *testing.T) {
		r := refs["negative.json"]
		ours, m := ourSlices(t, e, files[3], math.MinInt64, maxNS)
		compareSlices(t, "DevTools", ours, devtoolsSlices(t, r), anyDur)
		compareSlices(t, "speedscope", ours, speedscopeSlices(t, r, firstOf(ours)), anyDur)
		clock := data(m)["summary"].(map[string]any)["trace_clock"].(map[string]any)
		if clock["first_ns"] != "-50000" || clock["last_ns"] != "15000" {
			t.Errorf("trace_clock %v, want -50000..15000", clock)
		}
		// The window [0, max) leaves out the three events before 0 and
		// says so.
		_, m = ourSlices(t, e, files[3], 0, maxNS)
		if c := cov(m); c["events_outside_window"] != "3" || data(m)["summary"].(map[string]any)["events_in_window"] != "1" {
			t.Errorf("window [0,max): coverage %v summary %v, want 3 events outside", c, data(m)["summary"])
		}
	})

	t.Run("mismatched_end", func(t *testing.T) {
		r := refs["mismatch.json"]
		ours, m := ourSlices(t, e, files[4], 0, maxNS)
		want := []traceSlice{{"alpha", 0, 10_000, false}, {"x", 20_000, 5_000, false}}
		if fmt.Sprint(ours["1/1"]) != fmt.Sprint(want) {
			t.Errorf("ours %v, want %v (paired like catapult)", ours["1/1"], want)
		}
		if c := cov(m); c["mismatched_end_names"] != "1" || m["status"] != "partial" || !strings.Contains(fmt.Sprint(m["warnings"]), "another name") {
			t.Errorf("coverage %v warnings %v, want the mismatch counted and warned", c, m["warnings"])
		}
		// Both references flag the mismatch: DevTools pairs the events
		// (alpha at 0 µs) with an error, speedscope ignores the E.
		if !strings.Contains(strings.Join(r.Devtools.Errors, "\n"), "mismatch") {
			t.Errorf("DevTools errors %v", r.Devtools.Errors)
		}
		if !strings.Contains(strings.Join(r.Speedscope.Warnings, "\n"), `Tried to end "beta"`) {
			t.Errorf("speedscope warnings %v", r.Speedscope.Warnings)
		}
		dt := devtoolsSlices(t, r)["1/1"]
		if len(dt) != 2 || dt[0].name != "alpha" || dt[0].start != 0 || dt[1] != (traceSlice{"x", 20_000, 5_000, false}) {
			t.Errorf("DevTools slices %v", dt)
		}
	})
}
