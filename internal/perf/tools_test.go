package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// TestToolDeclarations walks the perf toolset as the registry receives it
// (Tools and CaptureTools): every tool is declared with tool.Define, its
// schema and its arguments struct agree, and the paged ones name a paging
// descriptor.
func TestToolDeclarations(t *testing.T) {
	rt := New(Config{Sessions: true})
	defer rt.Close()
	tools := append(Tools(rt), CaptureTools(rt)...)
	if len(tools) < len(Operations())+4 {
		t.Fatalf("%d perf tools", len(tools))
	}
	paged := 0
	for _, tl := range tools {
		if err := tool.CheckArgs(tl); err != nil {
			t.Error(err)
		}
		if tl.Paging != nil {
			paged++
			var s struct {
				Properties map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(tl.Input, &s); err != nil {
				t.Fatal(err)
			}
			for _, arg := range []string{tl.Paging.Token, tl.Paging.Limit} {
				if _, ok := s.Properties[arg]; !ok {
					t.Errorf("%s: paging argument %s is not in its schema", tl.Name, arg)
				}
			}
		}
	}
	if paged != len(Operations())+1 {
		t.Errorf("%d paged tools, want every analysis tool and query_evidence", paged)
	}
}

// TestPagedToolsReplay follows next_action of every paged perf tool over
// real inputs the test writes (a runtime/pprof CPU and heap profile, go
// test -bench results, text, JSON, JSONL, CSV, a Chrome trace, execution
// records, preserved evidence) with a small page size, until page.more is
// false: every page has the same page object, offsets advance by returned,
// next_action is data.next_page (query_evidence: the same call with
// cursor), and the rows of all pages are the rows of one large page,
// each exactly once, in order.
func TestPagedToolsReplay(t *testing.T) {
	e := newEnv(t)
	cases := pagedToolCases(t, e)

	big := tool.WithResultBudget(context.Background(), tool.HardResultBytes)
	for _, tl := range Tools(e.rt) {
		if tl.Paging == nil {
			continue
		}
		if len(cases[tl.Name]) == 0 {
			t.Errorf("%s is paged and has no replay case", tl.Name)
		}
		for i, args := range cases[tl.Name] {
			t.Run(fmt.Sprintf("%s/%d", tl.Name, i), func(t *testing.T) {
				all := clone(args)
				all[tl.Paging.Limit] = DefaultCeilings.MaxRows
				if tl.Name == "query_evidence" {
					all[tl.Paging.Limit] = 200
				}
				e.ctx = big
				whole := e.mustCall(tl.Name, all)
				e.ctx = nil
				if pageOf(t, whole)["more"] != false {
					t.Fatalf("reference page is not the whole listing: %v", data(whole)["page"])
				}
				want := data(whole)["rows"].([]any)
				if len(want) < 4 {
					t.Fatalf("%d rows: too few to page", len(want))
				}
				first := clone(args)
				first[tl.Paging.Limit] = 3
				cur := e.mustCall(tl.Name, first)
				var got []any
				pages := 0
				for {
					pages++
					pg := pageOf(t, cur)
					rows := data(cur)["rows"].([]any)
					wantOffset := float64(len(got))
					if off, ok := args["offset"]; ok {
						wantOffset += float64(off.(int))
					}
					if pg["offset"] != wantOffset || pg["returned"] != float64(len(rows)) || pg["size"] != 3.0 || len(rows) > 3 {
						t.Fatalf("page %d: %v with %d rows after %d", pages, pg, len(rows), len(got))
					}
					got = append(got, rows...)
					na, _ := cur["next_action"].(map[string]any)
					if pg["more"] == false {
						if na != nil || data(cur)["next_cursor"] != nil {
							t.Fatalf("last page names a next call: %v %v", na, data(cur)["next_cursor"])
						}
						break
					}
					if na == nil || na["tool"] != tl.Name {
						t.Fatalf("page %d: more without next_action: %v", pages, cur["next_action"])
					}
					nc, _ := data(cur)["next_cursor"].(string)
					if nc == "" || na["arguments"].(map[string]any)[tl.Paging.Token] != nc {
						t.Fatalf("next_cursor %q is not next_action's %s", nc, tl.Paging.Token)
					}
					if np, ok := data(cur)["next_page"]; ok && !reflect.DeepEqual(np, cur["next_action"]) {
						t.Fatalf("data.next_page %v differs from next_action %v", np, cur["next_action"])
					}
					cur = e.mustCall(na["tool"].(string), na["arguments"])
				}
				if pages < 2 {
					t.Fatalf("%d rows in one page of 3", len(got))
				}
				if mustJSON(got) != mustJSON(want) {
					t.Fatalf("%d rows over %d pages differ from the %d rows of one page", len(got), pages, len(want))
				}
			})
		}
	}
}

// pageOf returns data.page, checking it has exactly the page object's
// fields.
func pageOf(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	pg, ok := data(r)["page"].(map[string]any)
	if !ok {
		t.Fatalf("no page object: %v", data(r))
	}
	var keys []string
	for k := range pg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if k := strings.Join(keys, ","); k != "more,offset,returned,size,total" && k != "more,offset,returned,size" {
		t.Fatalf("page fields %s", k)
	}
	if _, ok := data(r)["next_cursor"]; !ok {
		t.Fatal("no next_cursor")
	}
	return pg
}

// pagedToolCases writes the inputs of every paged perf tool in e.dir (and
// preserves a few analyses for query_evidence) and returns each tool's
// calls: each lists at least 4 rows.
func pagedToolCases(t *testing.T, e *env) map[string][]map[string]any {
	cpu, heap := makeProfiles(t)
	base, cand := filepath.Join(e.dir, "base.bench"), filepath.Join(e.dir, "cand.bench")
	writeGoBenchFile(t, base, 12, 5, 1)
	writeGoBenchFile(t, cand, 12, 5, 2)
	var jsonl, csv, text strings.Builder
	csv.WriteString("id,name,value\n")
	for i := 0; i < 23; i++ {
		fmt.Fprintf(&jsonl, "{\"id\":%d,\"name\":\"n%d\"}\n", i, i)
		fmt.Fprintf(&csv, "%d,\"n,%d\",%d.5\n", i, i, i*3)
		fmt.Fprintf(&text, "line %d\n", i)
	}
	var execs strings.Builder
	for b := 0; b < 6; b++ {
		for c, name := range []string{"old", "new"} {
			code := 0
			rss := int64(1<<20 + b*4096)
			r := ExecutionRecord{Case: name, CaseIndex: c, Block: b, Position: c, Termination: "exited", ExitCode: &code, ExitOwner: "workload",
				WallTimeNS: int64(1000000 + c*50000 + b*1000), CPUTimeNS: 900000, MaxRSSBytes: &rss, Included: true}
			line, _ := json.Marshal(r)
			execs.Write(line)
			execs.WriteString("\n")
		}
	}
	src := func(p string, format string) []any { return []any{pathSrc(p, format)} }
	cases := map[string][]map[string]any{
		"preview_artifact": {
			{"sources": src(e.write("a.jsonl", jsonl.String()), "jsonl")},
			{"sources": src(e.write("a.csv", csv.String()), "csv")},
			{"sources": src(e.write("a.txt", text.String()), "text"), "offset": 2},
			{"sources": src(e.write("a.json", "["+strings.TrimSuffix(strings.ReplaceAll(jsonl.String(), "\n", ","), ",")+"]"), "json")},
		},
		"summarize_profile": {
			{"sources": src(cpu, "pprof")},
			{"sources": src(heap, "pprof"), "sort": "cum"},
		},
		"compare_profiles":     {{"sources": []any{pathSrc(cpu, "pprof"), pathSrc(cpu, "pprof")}}},
		"summarize_benchmarks": {{"sources": src(base, "gobench")}},
		"compare_benchmarks":   {{"sources": []any{pathSrc(base, "gobench"), pathSrc(cand, "gobench")}}},
		"inspect_trace_window": {
			{"sources": src(abs(t, "../trace/small.json"), "chrome-trace"), "start_ns": 0, "end_ns": "50000"},
			{"sources": src(abs(t, "../trace/small.json"), "chrome-trace"), "start_ns": "5000", "end_ns": 1e9},
		},
		"summarize_executions": {{"sources": src(e.write("x.jsonl", execs.String()), "inquest-executions")}},
	}
	// Preserve a few analyses so query_evidence lists several pages.
	for i := 0; i < 5; i++ {
		r := e.mustCall("preview_artifact", map[string]any{"sources": src(e.write(fmt.Sprintf("p%d.txt", i), text.String()), "text")})
		e.mustCall("preserve_evidence", map[string]any{"analysis_id": data(r)["analysis_id"]})
	}
	cases["query_evidence"] = []map[string]any{{}, {"toolset": "perf"}}
	return cases
}

// TestPagedToolsWithinBudget: at a 16 KiB result budget every page of
// every paged perf tool, at its default page size, is delivered (text
// block + structuredContent, tool.DeliveredBytes) within the budget; a
// page the budget ended says so (coverage.page_ended_by byte_budget and
// tool.BudgetWarning) and names its next page; following the pages
// yields every row of the listing.
func TestPagedToolsWithinBudget(t *testing.T) {
	const budget = 16384
	e := newEnv(t)
	cases := pagedToolCases(t, e)
	// Larger benchmark inputs (two configurations each) so that the
	// default page of the benchmark tools passes the budget.
	base, cand := filepath.Join(e.dir, "big-base.bench"), filepath.Join(e.dir, "big-cand.bench")
	writeGoBenchFile(t, base, 80, 5, 1)
	writeGoBenchFile(t, cand, 80, 5, 2)
	cases["compare_benchmarks"] = append(cases["compare_benchmarks"], map[string]any{"sources": []any{pathSrc(base, "gobench"), pathSrc(cand, "gobench")}})
	cases["summarize_benchmarks"] = append(cases["summarize_benchmarks"], map[string]any{"sources": []any{pathSrc(base, "gobench")}})
	ctx := tool.WithResultBudget(context.Background(), budget)
	byBytes := map[string]bool{}
	for _, tl := range Tools(e.rt) {
		if tl.Paging == nil {
			continue
		}
		for i, args := range cases[tl.Name] {
			t.Run(fmt.Sprintf("%s/%d", tl.Name, i), func(t *testing.T) {
				e.ctx = tool.WithResultBudget(context.Background(), tool.HardResultBytes)
				all := clone(args)
				all[tl.Paging.Limit] = DefaultCeilings.MaxRows
				if tl.Name == "query_evidence" {
					all[tl.Paging.Limit] = 200
				}
				want := data(e.mustCall(tl.Name, all))["rows"].([]any)
				e.ctx = nil
				var got []any
				raw, _ := json.Marshal(args)
				for pages := 1; ; pages++ {
					res, err := e.reg.Call(ctx, tl.Name, raw)
					if err != nil {
						t.Fatalf("page %d: %v", pages, err)
					}
					body, _ := contract.Marshal(res, nil)
					if n := tool.DeliveredBytes(body); n > budget {
						t.Fatalf("page %d is %d bytes as delivered, over the %d-byte budget: %s", pages, n, budget, body)
					}
					var m map[string]any
					if err := json.Unmarshal(body, &m); err != nil {
						t.Fatal(err)
					}
					got = append(got, data(m)["rows"].([]any)...)
					cov := m["coverage"].(map[string]any)
					warned := fmt.Sprint(m["warnings"]) != "" && strings.Contains(fmt.Sprint(m["warnings"]), tool.BudgetWarning)
					if (cov["page_ended_by"] == "byte_budget") != warned {
						t.Fatalf("page %d: page_ended_by %v but budget warning %v", pages, cov["page_ended_by"], warned)
					}
					if warned {
						byBytes[tl.Name] = true
						if m["next_action"] == nil {
							t.Fatalf("page %d ended by the budget names no next call", pages)
						}
					}
					na, _ := m["next_action"].(map[string]any)
					if na == nil {
						break
					}
					raw, _ = json.Marshal(na["arguments"])
				}
				if mustJSON(got) != mustJSON(want) {
					t.Fatalf("%d rows paged differ from the %d rows of one page", len(got), len(want))
				}
			})
		}
	}
	for _, name := range []string{"compare_benchmarks", "summarize_benchmarks"} {
		if !byBytes[name] {
			t.Errorf("%s: no page was ended by the budget; the test input is too small to check it", name)
		}
	}
}
