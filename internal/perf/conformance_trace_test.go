package perf

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// The live trace importers the trace conformance test runs: speedscope
// (its npm release bundle, read through the importer its CLI uses) and
// Chrome DevTools' trace engine (@paulirish/trace_engine, read through
// the package's own file loader). testdata/trace/reference holds the
// pinned package.json and package-lock.json and the node harness.
var (
	traceRefOnce sync.Once
	traceRefDir  string
	traceRefErr  error
)

// traceReference installs the pinned importers with npm ci into a
// directory shared by the package's tests (cached, see cachedFixture) and
// returns it. It skips when node or npm is not installed (Debian: nodejs
// npm, which .ci/run installs).
func traceReference(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the trace importers (speedscope, DevTools' trace engine) run in node (Debian: nodejs npm)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: it installs the trace importers (Debian: npm)")
	}
	traceRefOnce.Do(func() {
		nodeVersion, err := exec.Command("node", "--version").Output()
		if err != nil {
			traceRefErr = fmt.Errorf("node --version: %v", err)
			return
		}
		files := []string{"package.json", "package-lock.json", "reference.mjs"}
		parts := []string{string(nodeVersion)}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join("testdata", "trace", "reference", f))
			if err != nil {
				traceRefErr = err
				return
			}
			parts = append(parts, f, string(b))
		}
		traceRefDir, traceRefErr = cachedFixture("trace-ref", func(dir string) error {
			for i, f := range files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(parts[2+2*i]), 0o644); err != nil {
					return err
				}
			}
			cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("npm ci of the trace importers: %v\n%s", err, out)
			}
			return nil
		}, parts...)
	})
	if traceRefErr != nil {
		t.Fatal(traceRefErr)
	}
	return traceRefDir
}

// refTrace is what the two importers built from one file.
type refTrace struct {
	File       string `json:"file"`
	Speedscope struct {
		Accepted bool     `json:"accepted"`
		Error    string   `json:"error"`
		Warnings []string `json:"warnings"`
		Profiles []struct {
			Name   string             `json:"name"`
			Frames map[string]float64 `json:"frames"` // frame name -> total weight (µs; samples for folded)
			Self   map[string]float64 `json:"self"`   // frame name -> self weight (µs; samples for folded)
			// Slices are the profile's calls in timeline order, on
			// its value axis (µs from the profile's first event).
			Slices []struct {
				Name  string  `json:"name"`
				Start float64 `json:"start"`
				End   float64 `json:"end"`
			} `json:"slices"`
		} `json:"profiles"`
	} `json:"speedscope"`
	Devtools struct {
		Accepted bool     `json:"accepted"`
		Error    string   `json:"error"`
		Errors   []string `json:"errors"`
		Threads  []struct {
			Pid   string `json:"pid"`
			Tid   string `json:"tid"`
			Names map[string]struct {
				Count int64   `json:"count"`
				Dur   float64 `json:"dur"` // µs
			} `json:"names"`
			// Slices are the thread's entries in the engine's order:
			// ts and dur in µs on the trace clock (dur null for
			// instants).
			Slices []struct {
				Name string   `json:"name"`
				Ts   float64  `json:"ts"`
				Dur  *float64 `json:"dur"`
				Ph   string   `json:"ph"`
			} `json:"slices"`
		} `json:"threads"`
	} `json:"devtools"`
}

// runTraceReference runs the node harness over files; args may start
// with the harness's --only=speedscope|devtools.
func runTraceReference(t *testing.T, dir string, files ...string) map[string]*refTrace {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(dir, "reference.mjs"), dir}, files...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("trace reference: %v\n%s", err, stderr.String())
	}
	var list []*refTrace
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("trace reference output: %v\n%s", err, out)
	}
	m := map[string]*refTrace{}
	for _, r := range list {
		m[r.File] = r
	}
	return m
}

// nameFacts are one name's slices on one thread: how many and their
// summed duration in ns.
type nameFacts struct {
	count int64
	ns    int64
}

// traceFacts are the facts of one trace both sides produce, keyed by
// "pid/tid" then name.
type traceFacts map[string]map[string]nameFacts

func (f traceFacts) add(th, name string, n int64, ns int64) {
	if f[th] == nil {
		f[th] = map[string]nameFacts{}
	}
	v := f[th][name]
	v.count += n
	v.ns += ns
	f[th][name] = v
}

func (f traceFacts) threads() []string {
	var ks []string
	for k := range f {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// usToNSExact converts a reference's float microseconds to ns; the
// inputs use binary-exact fractions, so anything else is a failure.
func usToNSExact(t *testing.T, us float64) int64 {
	t.Helper()
	ns := us * 1000
	if r := math.Round(ns); math.Abs(ns-r) > 1e-6 {
		t.Fatalf("reference duration %v µs is not a whole number of ns", us)
	}
	return int64(math.Round(ns))
}

var ssProfileRE = regexp.MustCompile(`pid ([^,)\s]+).*tid ([^,)\s]+)`)

// traceEvents are the events every accepted variant holds: nested X
// events on one thread, B/E pairs with names on another (not overlapping
// in time with other B/E pairs, since DevTools keeps one B/E stack for
// the whole trace), an X on a third, instants of every phase, a counter
// and thread/process names. Durations are binary-exact fractions.
var traceEvents = []string{
	`{"ph":"M","name":"process_name","pid":1,"tid":1,"args":{"name":"app"}}`,
	`{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}}`,
	`{"ph":"X","name":"task","cat":"sched","ts":10,"dur":100,"pid":1,"tid":1}`,
	`{"ph":"X","name":"parse","cat":"load","ts":20,"dur":30.5,"pid":1,"tid":1}`,
	`{"ph":"X","name":"layout","cat":"render","ts":60,"dur":40.25,"pid":1,"tid":1}`,
	`{"ph":"I","name":"mark","ts":70,"pid":1,"tid":1}`,
	`{"ph":"i","name":"tick","ts":80,"pid":1,"tid":1,"s":"t"}`,
	`{"ph":"C","name":"heap","ts":90,"pid":1,"tid":1,"args":{"bytes":4096}}`,
	`{"ph":"X","name":"task","cat":"sched","ts":200,"dur":50,"pid":1,"tid":1}`,
	`{"ph":"X","name":"gc","cat":"v8","ts":15,"dur":5.125,"pid":2,"tid":7}`,
	`{"ph":"B","name":"io","cat":"fs","ts":300,"pid":1,"tid":2}`,
	`{"ph":"B","name":"read","cat":"fs","ts":310,"pid":1,"tid":2}`,
	`{"ph":"E","name":"read","cat":"fs","ts":350.5,"pid":1,"tid":2}`,
	`{"ph":"E","name":"io","cat":"fs","ts":400,"pid":1,"tid":2}`,
}

func traceArray(events []string) string { return "[" + strings.Join(events, ",\n") }

// TestTraceConformance writes Chrome trace variants — closed, without
// the closing "]", with a trailing comma, trailing whitespace, a UTF-8
// byte-order mark, the object form, an X event without dur, and files no
// importer reads — and compares inspect_trace_window with speedscope and
// DevTools' trace engine run on the same files in the same run: which
// files each accepts, the thread set, and per thread and name the slice
// count (DevTools) and total duration (both).
func TestTraceConformance(t *testing.T) {
	ref := traceReference(t)
	e := newEnv(t)
	body := traceArray(traceEvents)
	closed := body + "]"
	noDur := append(append([]string{}, traceEvents...), `{"ph":"X","name":"pending","cat":"sched","ts":250,"pid":2,"tid":7}`)
	type variant struct {
		name, doc string
		// ours, speedscope, devtools: whether each accepts the file.
		ours, speedscope, devtools bool
		why                        string // why a reader rejects it
	}
	variants := []variant{
		{"closed.json", closed, true, true, true, ""},
		{"closed_trailing_whitespace.json", closed + "\n \t\n", true, true, true, ""},
		// A UTF-8 byte-order mark: speedscope's TextDecoder drops it;
		// DevTools' loader hands it to JSON.parse, which rejects it.
		{"bom.json", "\xef\xbb\xbf" + closed, true, true, false, "DevTools' trace engine loader keeps the byte-order mark"},
		{"object.json", `{"traceEvents":` + closed + `,"displayTimeUnit":"ms"}`, true, true, true, ""},
		// The Trace Event Format lets the array form end without "]";
		// speedscope (like catapult) supplies it. DevTools' trace engine
		// loader is JSON.parse and rejects these files.
		{"unterminated.json", body, true, true, false, "DevTools' trace engine loader parses the file with JSON.parse"},
		{"unterminated_newline.json", body + "\n", true, true, false, "as above"},
		{"trailing_comma.json", body + ",", true, true, false, "as above"},
		{"trailing_comma_whitespace.json", body + " ,\r\n  \n", true, true, false, "as above"},
		{"x_without_dur.json", traceArray(noDur) + "]", true, true, true, ""},
		// Rejected by every reader.
		{"trailing_comma_closed.json", body + ",]", false, false, false, "a comma before the closing ] is not JSON and no reader removes it"},
		{"two_commas.json", body + ",,", false, false, false, "only one trailing comma is dropped"},
		{"cut_in_event.json", body + `,{"ph":"X","ts":`, false, false, false, "an event cut in half"},
		{"object_unterminated.json", `{"traceEvents":` + body, false, false, false, "only the array form may be unterminated"},
		// Deliberate differences (docs/perf.md): an empty unterminated
		// array is an empty trace here; speedscope does not recognize an
		// empty event list as a trace and DevTools' JSON.parse rejects "[".
		{"empty_unterminated.json", "[", true, false, false, "speedscope recognizes a trace by its events; JSON.parse rejects it"},
	}
	var files []string
	for _, v := range variants {
		files = append(files, e.write(v.name, v.doc))
	}
	refs := runTraceReference(t, ref, files...)
	for i, v := range variants {
		t.Run(strings.TrimSuffix(v.name, ".json"), func(t *testing.T) {
			r := refs[v.name]
			if r == nil {
				t.Fatal("no reference result")
			}
			if r.Speedscope.Accepted != v.speedscope {
				t.Fatalf("speedscope accepted=%v (%s), the test expects %v (%s)", r.Speedscope.Accepted, r.Speedscope.Error, v.speedscope, v.why)
			}
			if r.Devtools.Accepted != v.devtools {
				t.Fatalf("DevTools accepted=%v (%s), the test expects %v (%s)", r.Devtools.Accepted, r.Devtools.Error, v.devtools, v.why)
			}
			args := map[string]any{"sources": []any{pathSrc(files[i], "chrome-trace")}, "start_ns": 0, "end_ns": "9223372036854775807", "page_size": 10000}
			m, code := e.call("inspect_trace_window", args)
			if !v.ours {
				if code != contract.CodeDecodeFailed {
					t.Fatalf("ours: %s %v, want DECODE_FAILED like the references (%s)", code, m["error"], v.why)
				}
				return
			}
			if code != "" {
				t.Fatalf("ours: %s %v", code, m["error"])
			}
			rows, _ := e.follow(m)
			ours := traceFacts{}
			instants := traceFacts{}
			dnf := map[string]bool{}
			for _, row := range rows {
				row := row.(map[string]any)
				th := row["pid"].(string) + "/" + row["tid"].(string)
				dur, _ := strconv.ParseInt(row["dur_ns"].(string), 10, 64)
				switch row["ph"] {
				case "X", "B/E":
					ours.add(th, row["name"].(string), 1, dur)
				case "I":
					instants.add(th, row["name"].(string), 1, 0)
				}
				if row["did_not_finish"] == true {
					dnf[th+"\x00"+row["name"].(string)] = true
				}
			}
			if v.name == "empty_unterminated.json" {
				if len(rows) != 0 || m["coverage"].(map[string]any)["array_unterminated"] != true {
					t.Fatalf("empty trace: rows %v coverage %v", rows, m["coverage"])
				}
				return
			}
			if v.name == "x_without_dur.json" {
				// Ours: the catapult importer's rule, the slice did not
				// finish and ends at the trace's last timestamp (the E
				// of io at 400 µs); speedscope and DevTools give it 0.
				cov := m["coverage"].(map[string]any)
				if cov["complete_events_without_dur"] != "1" || m["status"] != "partial" {
					t.Fatalf("X without dur not counted: coverage %v status %v", cov, m["status"])
				}
				if got := ours["2/7"]["pending"]; got != (nameFacts{1, 150_000}) || !dnf["2/7\x00pending"] {
					t.Fatalf("ours pending %+v did_not_finish %v, want 1 slice of 150000 ns", got, dnf)
				}
			}

			// speedscope: one profile per thread with slices; per
			// frame name the total weight (µs) is the summed duration
			// (no name nests within itself in these inputs).
			ss := traceFacts{}
			for _, p := range r.Speedscope.Profiles {
				mm := ssProfileRE.FindStringSubmatch(p.Name)
				if mm == nil {
					t.Fatalf("speedscope profile name %q names no pid/tid", p.Name)
				}
				for name, w := range p.Frames {
					ss.add(mm[1]+"/"+mm[2], name, 0, usToNSExact(t, w))
				}
			}
			if got, want := ours.threads(), ss.threads(); !equalStrings(got, want) {
				t.Errorf("threads with slices: ours %v, speedscope %v", got, want)
			}
			for th, names := range ss {
				for name, f := range names {
					o := ours[th][name]
					if dnf[th+"\x00"+name] {
						if f.ns != 0 {
							t.Errorf("%s %s: speedscope gives an X without dur %d ns, the test expects 0", th, name, f.ns)
						}
						continue
					}
					if o.ns != f.ns {
						t.Errorf("%s %s: total %d ns, speedscope %d ns", th, name, o.ns, f.ns)
					}
				}
				if len(names) != len(ours[th]) {
					t.Errorf("%s: names ours %v, speedscope %v", th, ours[th], names)
				}
			}
			if !r.Devtools.Accepted {
				return
			}
			// DevTools: a thread's entries are its X events, B/E pairs
			// (as one slice) and I instants; per name their count and
			// summed dur.
			dt := traceFacts{}
			dtInstants := traceFacts{}
			for _, th := range r.Devtools.Threads {
				for name, f := range th.Names {
					key := th.Pid + "/" + th.Tid
					if instants[key][name].count > 0 && f.Dur == 0 {
						dtInstants.add(key, name, f.Count, 0)
						continue
					}
					dt.add(key, name, f.Count, usToNSExact(t, f.Dur))
				}
			}
			if got, want := ours.threads(), dt.threads(); !equalStrings(got, want) {
				t.Errorf("threads with slices: ours %v, DevTools %v", got, want)
			}
			for th, names := range dt {
				for name, f := range names {
					o := ours[th][name]
					if o.count != f.count {
						t.Errorf("%s %s: %d slices, DevTools %d", th, name, o.count, f.count)
					}
					if dnf[th+"\x00"+name] {
						if f.ns != 0 {
							t.Errorf("%s %s: DevTools gives an X without dur %d ns, the test expects 0", th, name, f.ns)
						}
						continue
					}
					if o.ns != f.ns {
						t.Errorf("%s %s: total %d ns, DevTools %d ns", th, name, o.ns, f.ns)
					}
				}
				if len(names) != len(ours[th]) {
					t.Errorf("%s: names ours %v, DevTools %v", th, ours[th], names)
				}
			}
			for th, names := range instants {
				for name, f := range names {
					if dtInstants[th][name].count != f.count {
						t.Errorf("%s %s: %d I instants, DevTools %d", th, name, f.count, dtInstants[th][name].count)
					}
				}
			}
		})
	}
}

// TestTraceConformanceEndWithoutName: the Trace Event Format does not
// require a name on an E event (it closes the innermost B of its
// thread, as here and in the catapult importer); DevTools' trace engine
// fails on such a file and speedscope keeps the B open to the end of the
// thread's profile, with a warning. Both are documented differences.
func TestTraceConformanceEndWithoutName(t *testing.T) {
	ref := traceReference(t)
	e := newEnv(t)
	p := e.write("end_without_name.json", `[{"ph":"B","name":"io","ts":10,"pid":1,"tid":1},{"ph":"E","ts":30,"pid":1,"tid":1},{"ph":"X","name":"late","ts":40,"dur":10,"pid":1,"tid":1}]`)
	r := runTraceReference(t, ref, p)["end_without_name.json"]
	if r.Devtools.Accepted {
		t.Errorf("DevTools accepted an E without name; docs/perf.md says it fails")
	}
	if !r.Speedscope.Accepted || len(r.Speedscope.Profiles) != 1 || r.Speedscope.Profiles[0].Frames["io"] != 40 {
		t.Errorf("speedscope: %+v; docs/perf.md says io stays open to the profile's end (40 µs)", r.Speedscope)
	}
	m := e.mustCall("inspect_trace_window", map[string]any{"sources": []any{pathSrc(p)}, "start_ns": 0, "end_ns": 100000})
	for _, row := range data(m)["rows"].([]any) {
		if row := row.(map[string]any); row["name"] == "io" && row["dur_ns"] != "20000" {
			t.Errorf("ours: io %v, want 20000 ns (B at 10 µs, E at 30 µs)", row)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
