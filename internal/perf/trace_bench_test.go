package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// writeLargeTrace writes a deterministic Chrome trace of n events (array
// form, one event a line, as Chrome and Perfetto write them): on 16
// threads of 4 processes, repeating units of a task X event with three
// nested X children, a B/E pair with a nested X, an instant and a
// counter, plus thread_name metadata. ts/dur are microseconds with up to
// three decimals. It returns the byte size.
func writeLargeTrace(tb testing.TB, path string, n int) int64 {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("[\n")
	written := 0
	emit := func(s string) {
		if written > 0 {
			w.WriteString(",\n")
		}
		w.WriteString(s)
		written++
	}
	const threads = 16
	for t := 0; t < threads && written < n; t++ {
		emit(fmt.Sprintf(`{"ph":"M","name":"thread_name","pid":%d,"tid":%d,"args":{"name":"worker-%d"}}`, 100+t%4, 1000+t, t))
	}
	// Names and categories of an application's own tracing, not the
	// Chrome event names DevTools' trace engine interprets (a trace with
	// those is read as a web page's, whose args it expects).
	names := []string{"job.run", "job.parse", "job.plan", "job.emit", "lib.compile", "lib.gc", "lib.call", "lib.eval"}
	cats := []string{"app", "app.io", "lib", "lib,detail"}
	ts := make([]int64, threads) // ns
	for i := 0; written < n; i++ {
		t := i % threads
		pid, tid := 100+t%4, 1000+t
		base := ts[t]
		us := func(ns int64) string {
			s := strconv.FormatInt(ns/1000, 10)
			if r := ns % 1000; r != 0 {
				s += "." + fmt.Sprintf("%03d", r)
			}
			return s
		}
		nm := names[i%len(names)]
		cat := cats[i%len(cats)]
		// A 100.5 µs task with three children.
		emit(fmt.Sprintf(`{"ph":"X","name":"%s","cat":"%s","ts":%s,"dur":100.5,"pid":%d,"tid":%d,"args":{"seq":%d}}`, nm, cat, us(base), pid, tid, i))
		for c := int64(0); c < 3 && written < n; c++ {
			emit(fmt.Sprintf(`{"ph":"X","name":"%s","cat":"%s","ts":%s,"dur":20.125,"pid":%d,"tid":%d}`, names[(i+int(c)+1)%len(names)], cat, us(base+1000+c*30000), pid, tid))
		}
		if written < n {
			emit(fmt.Sprintf(`{"ph":"B","name":"io","cat":"fs","ts":%s,"pid":%d,"tid":%d}`, us(base+110_000), pid, tid))
		}
		if written < n {
			emit(fmt.Sprintf(`{"ph":"X","name":"read","cat":"fs","ts":%s,"dur":5,"pid":%d,"tid":%d}`, us(base+111_000), pid, tid))
		}
		if written < n {
			emit(fmt.Sprintf(`{"ph":"E","name":"io","cat":"fs","ts":%s,"pid":%d,"tid":%d}`, us(base+130_250), pid, tid))
		}
		if written < n {
			emit(fmt.Sprintf(`{"ph":"i","name":"mark","cat":"blink","ts":%s,"pid":%d,"tid":%d,"s":"t"}`, us(base+131_000), pid, tid))
		}
		if written < n {
			emit(fmt.Sprintf(`{"ph":"C","name":"heap","ts":%s,"pid":%d,"tid":%d,"args":{"bytes":%d}}`, us(base+132_000), pid, tid, 4096+i))
		}
		ts[t] = base + 150_000
	}
	w.WriteString("\n]\n")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	st, _ := f.Stat()
	f.Close()
	return st.Size()
}

// largeTraceEvents is the event count of the trace figure.
const largeTraceEvents = 1_500_000

var (
	largeTraceOnce sync.Once
	largeTracePath string
	largeTraceSize int64
)

func largeTrace(tb testing.TB) (string, int64) {
	largeTraceOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inquest-trace-bench-")
		if err != nil {
			tb.Fatal(err)
		}
		largeTracePath = filepath.Join(dir, "large.json")
		largeTraceSize = writeLargeTrace(tb, largeTracePath, largeTraceEvents)
	})
	return largeTracePath, largeTraceSize
}

// traceHelperEnv names the trace file traceHelperMain reads: when it is
// set, TestMain runs traceHelperMain instead of the tests.
const traceHelperEnv = "INQUEST_TRACE_HELPER_FILE"

// traceHelperMain makes one inspect_trace_window call (events view, the
// whole trace) over the file traceHelperEnv names, in a fresh process
// whose peak RSS the kernel reports to the trace benchmark, and prints
// the summary's event counts. It returns the exit code.
func traceHelperMain() int {
	path := os.Getenv(traceHelperEnv)
	dir, err := os.MkdirTemp("", "inquest-trace-helper-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	rt := New(Config{Sessions: true, OpenStore: func() (*evidence.Store, error) { return evidence.Open(filepath.Join(dir, "store")) }})
	defer rt.Close()
	reg := tool.NewRegistry()
	if err := reg.Add(Tools(rt)...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	raw, _ := json.Marshal(map[string]any{"sources": []any{pathSrc(path, "chrome-trace")}, "start_ns": 0, "end_ns": "9223372036854775807", "page_size": 100})
	res, err := reg.Call(context.Background(), "inspect_trace_window", raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sum := res.Data.(map[string]any)["summary"].(map[string]any)
	fmt.Printf("trace_events=%v events_in_window=%v\n", sum["trace_events"], sum["events_in_window"])
	return 0
}

// runMeasured runs cmd and returns its wall time, peak RSS (bytes, from
// the kernel's rusage of the finished process; -1 when unknown) and
// output.
func runMeasured(b *testing.B, cmd *exec.Cmd) (time.Duration, int64, []byte) {
	b.Helper()
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(t0)
	if err != nil {
		b.Fatalf("%s: %v\n%s", cmd.Args, err, out)
	}
	return wall, peakRSS(cmd.ProcessState), out
}

// BenchmarkTraceWindow1_5M reads a generated trace of 1.5 million events
// (135 MB) with inspect_trace_window, in this process (ns/op, B/op) and
// in a fresh process (wall time and peak RSS, hashing the file included),
// and in the same run reads the same file with the reference importers
// (speedscope and DevTools' trace engine, through the node harness of the
// conformance test) when node and npm are installed. Metrics: ours_s,
// ours_rss_MB, speedscope_s, speedscope_rss_MB, devtools_s,
// devtools_rss_MB (each per op), ratio_speedscope and ratio_devtools (our
// wall time / theirs). speedscope takes minutes on this file (its
// importer shifts events off the front of large arrays).
func BenchmarkTraceWindow1_5M(b *testing.B) {
	path, size := largeTrace(b)
	b.SetBytes(size)
	for _, view := range []string{"events", "threads"} {
		b.Run(view, func(b *testing.B) {
			e := newEnv(b)
			raw, _ := json.Marshal(map[string]any{"sources": []any{pathSrc(path, "chrome-trace")}, "start_ns": 0, "end_ns": "9223372036854775807", "view": view, "page_size": 100})
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := e.reg.Call(context.Background(), "inspect_trace_window", raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("process_vs_reference", func(b *testing.B) {
		var refDir string
		if _, err := exec.LookPath("node"); err == nil {
			if _, err := exec.LookPath("npm"); err == nil {
				refDir = traceReference(b)
			}
		}
		var ours, ss, dt time.Duration
		oursRSS, ssRSS, dtRSS := int64(-1), int64(-1), int64(-1)
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), traceHelperEnv+"="+path)
			w, rss, out := runMeasured(b, cmd)
			if !bytes.Contains(out, []byte("trace_events=1500000")) {
				b.Fatalf("helper did not read every event: %s", out)
			}
			ours += w
			oursRSS = max(oursRSS, rss)
			if refDir == "" {
				continue
			}
			for _, side := range []string{"speedscope", "devtools"} {
				cmd := exec.Command("node", "--max-old-space-size=16384", filepath.Join(refDir, "reference.mjs"), refDir, "--only="+side, path)
				w, rss, out := runMeasured(b, cmd)
				var res []*refTrace
				if err := json.Unmarshal(lastLine(out), &res); err != nil || len(res) != 1 {
					b.Fatalf("%s: %v %.300s", side, err, out)
				}
				if side == "speedscope" {
					if !res[0].Speedscope.Accepted {
						b.Fatalf("speedscope rejected the trace: %s", res[0].Speedscope.Error)
					}
					ss += w
					ssRSS = max(ssRSS, rss)
				} else {
					if !res[0].Devtools.Accepted {
						b.Fatalf("DevTools rejected the trace: %s", res[0].Devtools.Error)
					}
					dt += w
					dtRSS = max(dtRSS, rss)
				}
			}
		}
		n := float64(b.N)
		b.ReportMetric(ours.Seconds()/n, "ours_s")
		if oursRSS >= 0 {
			b.ReportMetric(float64(oursRSS)/(1<<20), "ours_rss_MB")
		}
		if refDir != "" {
			b.ReportMetric(ss.Seconds()/n, "speedscope_s")
			if ssRSS >= 0 {
				b.ReportMetric(float64(ssRSS)/(1<<20), "speedscope_rss_MB")
				b.ReportMetric(float64(dtRSS)/(1<<20), "devtools_rss_MB")
			}
			b.ReportMetric(dt.Seconds()/n, "devtools_s")
			b.ReportMetric(float64(ours)/float64(ss), "ratio_speedscope")
			b.ReportMetric(float64(ours)/float64(dt), "ratio_devtools")
		}
	})
}

// lastLine is the last non-empty line of out.
func lastLine(out []byte) []byte {
	end := len(out)
	for end > 0 && (out[end-1] == '\n' || out[end-1] == '\r') {
		end--
	}
	start := end
	for start > 0 && out[start-1] != '\n' {
		start--
	}
	return out[start:end]
}
