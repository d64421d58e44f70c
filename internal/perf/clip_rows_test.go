package perf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// followBudget follows a result to its last page, failing when a page
// delivers more than budget bytes, and returns every row.
func followBudget(t *testing.T, e *env, first map[string]any, budget int) []map[string]any {
	t.Helper()
	var rows []map[string]any
	cur := first
	for pages := 1; ; pages++ {
		body, _ := json.Marshal(cur)
		if n := tool.DeliveredBytes(body); n > budget {
			t.Fatalf("page %d delivers %d bytes, over %d", pages, n, budget)
		}
		for _, r := range data(cur)["rows"].([]any) {
			rows = append(rows, r.(map[string]any))
		}
		na, _ := cur["next_action"].(map[string]any)
		if na == nil {
			return rows
		}
		cur = e.mustCall(na["tool"].(string), na["arguments"])
	}
}

// wholeString checks that row states s under key, whole or clipped: a
// clipped one is a prefix of s with key_truncated, key_bytes and
// key_sha256 identifying s. It reports whether s was clipped.
func wholeString(t *testing.T, row map[string]any, key, s string) bool {
	t.Helper()
	got, _ := row[key].(string)
	if row[key+"_truncated"] != true {
		if got != s {
			t.Fatalf("%s: %d bytes, want %d whole", key, len(got), len(s))
		}
		return false
	}
	sum := sha256.Sum256([]byte(s))
	if !strings.HasPrefix(s, got) || len(got) == 0 || row[key+"_sha256"] != hex.EncodeToString(sum[:]) || row[key+"_bytes"] != float64(len(s)) {
		t.Fatalf("%s clipped to %d bytes: bytes %v sha256 %v do not identify the %d-byte string", key, len(got), row[key+"_bytes"], row[key+"_sha256"], len(s))
	}
	return true
}

// TestLongNamesClipped: a pprof function and file name of 200 KB, written
// with google/pprof/profile, are clipped in summarize_profile rows at
// 16 KiB and at the default budget (every page fits), with bytes and
// sha256 of the name go tool pprof -top prints in the same run and the
// same flat and cum; a 60 KB benchmark name likewise against benchstat;
// a 200 KB one is LIMIT_EXCEEDED, as benchstat refuses the line too.
func TestLongNamesClipped(t *testing.T) {
	dir := t.TempDir()
	long := "main.long" + strings.Repeat("é<x>", 50000)
	file := "/src/" + strings.Repeat("d/", 100000) + "f.go"
	fMain := &profile.Function{ID: 1, Name: "main.main", Filename: "/src/main.go"}
	fLong := &profile.Function{ID: 2, Name: long, Filename: file}
	lMain := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fMain, Line: 3}}}
	lLong := &profile.Location{ID: 2, Address: 0x2000, Line: []profile.Line{{Function: fLong, Line: 7}}}
	prof := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{lLong, lMain}, Value: []int64{10}},
			{Location: []*profile.Location{lMain}, Value: []int64{5}},
		},
		Location: []*profile.Location{lMain, lLong},
		Function: []*profile.Function{fMain, fLong},
	}
	pf, err := os.Create(filepath.Join(dir, "long.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := prof.Write(pf); err != nil {
		t.Fatal(err)
	}
	pf.Close()
	want, _ := pprofTopRows(t, pf.Name(), "-sample_index=samples")

	benchName := "Benchmark" + strings.Repeat("Q", 60000)
	var bench strings.Builder
	bench.WriteString("goos: linux\ngoarch: amd64\npkg: x\n")
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&bench, "%s-8\t100\t%d ns/op\nBenchmarkSmall-8\t100\t%d ns/op\n", benchName, 120+i, 50+i)
	}
	bf := filepath.Join(dir, "bench.txt")
	os.WriteFile(bf, []byte(bench.String()), 0o644)
	bsRows, _ := runBenchstat(t, nil, bf)

	for _, budget := range []int{16 << 10, tool.DefaultResultBytes} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			e := newEnv(t)
			e.ctx = tool.WithResultBudget(context.Background(), budget)
			// pprof
			first := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(pf.Name(), "pprof")}, "sample_type": "samples"})
			rows := followBudget(t, e, first, budget)
			if len(rows) != len(want) {
				t.Fatalf("%d rows, pprof %d", len(rows), len(want))
			}
			clipped := false
			for i, r := range rows {
				if wholeString(t, r, "function", want[i].name) {
					clipped = true
					if want[i].name != long {
						t.Fatalf("pprof prints %d bytes for the long name, written %d", len(want[i].name), len(long))
					}
				}
				if atoi(t, r["flat"]) != want[i].flat || atoi(t, r["cum"]) != want[i].cum {
					t.Fatalf("row %d flat %v cum %v, pprof %d %d", i, r["flat"], r["cum"], want[i].flat, want[i].cum)
				}
				if f, ok := r["file"]; ok && r["file_truncated"] != true && len(f.(string)) > budget {
					t.Fatalf("file of %d bytes whole", len(f.(string)))
				}
			}
			if !clipped || !strings.Contains(mustJSON(first["warnings"]), "function") || first["status"] != "partial" {
				t.Fatalf("long function name not clipped with a warning: %v %v", first["status"], first["warnings"])
			}
			// benchmarks
			first = e.mustCall("summarize_benchmarks", map[string]any{"sources": []any{pathSrc(bf, "gobench")}})
			rows = followBudget(t, e, first, budget)
			if len(rows) != len(bsRows)-1 { // benchstat adds a geomean row
				t.Fatalf("%d rows, benchstat %d", len(rows), len(bsRows)-1)
			}
			clipped = false
			for i, r := range rows {
				w := bsRows[i]
				if wholeString(t, r, "benchmark", w.label) {
					clipped = true
				}
				if centerString(r["center"]) != w.cells[0].center {
					t.Fatalf("row %d center %v, benchstat %s", i, r["center"], w.cells[0].center)
				}
			}
			if !clipped {
				t.Fatal("the 60 KB benchmark name was not clipped")
			}
		})
	}
	// A 200 KB benchmark line is more than benchfmt reads.
	big := filepath.Join(dir, "big.txt")
	os.WriteFile(big, []byte("pkg: x\nBenchmark"+strings.Repeat("Q", 200000)+"-8\t1\t1 ns/op\n"), 0o644)
	e := newEnv(t)
	m, code := e.call("summarize_benchmarks", map[string]any{"sources": []any{pathSrc(big, "gobench")}})
	if code != contract.CodeLimitExceeded || m["error"].(map[string]any)["details"].(map[string]any)["line"] != float64(2) {
		t.Fatalf("200 KB benchmark line: %s %v", code, m["error"])
	}
}

// TestLongTraceNamesClipped: a Chrome trace event name and thread name of
// 200 KB are clipped in inspect_trace_window rows (events and threads
// views) at 16 KiB and the default budget; every page fits and the
// clipped names carry their bytes and sha256.
func TestLongTraceNamesClipped(t *testing.T) {
	name := "ev" + strings.Repeat("漢<", 50000)
	thread := "th" + strings.Repeat("t", 200000)
	evs := []map[string]any{
		{"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": map[string]any{"name": thread}},
		{"name": name, "cat": "c", "ph": "X", "ts": 1, "dur": 5, "pid": 1, "tid": 1},
		{"name": "short", "cat": "c", "ph": "X", "ts": 2, "dur": 1, "pid": 1, "tid": 1},
	}
	b, _ := json.Marshal(evs)
	for _, budget := range []int{16 << 10, tool.DefaultResultBytes} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			e := newEnv(t)
			e.ctx = tool.WithResultBudget(context.Background(), budget)
			p := e.write("t.json", string(b))
			for _, view := range []string{"events", "threads"} {
				first := e.mustCall("inspect_trace_window", map[string]any{"sources": []any{pathSrc(p, "chrome-trace")}, "start_ns": 0, "end_ns": 100000, "view": view})
				rows := followBudget(t, e, first, budget)
				clipped := false
				for _, r := range rows {
					for k, v := range r {
						if s, ok := v.(string); ok && len(s) > budget {
							t.Fatalf("%s row: %s of %d bytes whole", view, k, len(s))
						}
					}
					switch {
					case r["name"] == "short":
					case view == "events":
						clipped = wholeString(t, r, "name", name)
					case view == "threads":
						for k := range r {
							if strings.HasSuffix(k, "_truncated") {
								clipped = wholeString(t, r, strings.TrimSuffix(k, "_truncated"), thread)
							}
						}
					}
				}
				if !clipped {
					t.Fatalf("%s view: no clipped name in %d rows", view, len(rows))
				}
			}
		})
	}
}
