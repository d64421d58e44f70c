package perf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// TestDeepJSONIsLimitExceeded: nesting beyond maxJSONDepth is LIMIT_EXCEEDED
// naming the depth limit, in JSON, JSONL and traces; just within it works
// and encodes.
func TestDeepJSONIsLimitExceeded(t *testing.T) {
	e := newEnv(t)
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name, file, body, format string
		args                     map[string]any
		tool                     string
		code                     contract.Code
	}{
		{"json at limit", "ok.json", deep(maxJSONDepth), "json", nil, "preview_artifact", ""},
		{"json 10000", "d1.json", deep(10000), "json", nil, "preview_artifact", contract.CodeLimitExceeded},
		{"json 100000", "d2.json", deep(100000), "json", nil, "preview_artifact", contract.CodeLimitExceeded},
		{"object nest", "d3.json", strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600), "json", nil, "preview_artifact", contract.CodeLimitExceeded},
		{"jsonl", "d.jsonl", "1\n" + deep(1000) + "\n", "jsonl", nil, "preview_artifact", contract.CodeLimitExceeded},
		{"trace args", "t.json", `[{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":` + deep(1000) + `}]`, "chrome-trace", map[string]any{"start_ns": 0, "end_ns": 100000}, "inspect_trace_window", contract.CodeLimitExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"sources": []any{pathSrc(e.write(tc.file, tc.body), tc.format)}}
			for k, v := range tc.args {
				args[k] = v
			}
			m, code := e.call(tc.tool, args)
			if code != tc.code {
				t.Fatalf("code %q, want %q: %v", code, tc.code, m["error"])
			}
			if code == contract.CodeLimitExceeded {
				msg := m["error"].(map[string]any)["message"].(string)
				if !strings.Contains(msg, "depth limit of 512") {
					t.Fatalf("message does not name the depth limit: %s", msg)
				}
			}
		})
	}
}

// TestPerValueLimits: one CSV record, JSON string or trace name over the
// per-value limit is LIMIT_EXCEEDED, never returned whole.
func TestPerValueLimits(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("x", 3<<20)
	for _, tc := range []struct {
		name, file, body, format, tool string
		args                           map[string]any
	}{
		{"csv cell", "c.csv", "a,b\n1," + big + "\n", "csv", "preview_artifact", nil},
		{"csv header", "h.csv", big + "\n1\n", "csv", "preview_artifact", nil},
		{"text as csv", "t.txt", big, "csv", "preview_artifact", nil},
		{"json array string", "a.json", `["` + big + `"]`, "json", "preview_artifact", nil},
		{"json object string", "o.json", `{"k":"` + big + `"}`, "json", "preview_artifact", nil},
		{"json root string", "r.json", `"` + big + `"`, "json", "preview_artifact", nil},
		{"json number", "num.json", "[1" + strings.Repeat("0", 3<<20) + "]", "json", "preview_artifact", nil},
		{"trace args", "ta.json", `{"traceEvents":[{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":{"a":[` + strings.Repeat(`"xx",`, 400000) + `"x"]}}]}`, "chrome-trace", "inspect_trace_window", map[string]any{"start_ns": 0, "end_ns": 100000, "limits": map[string]any{"max_memory_bytes": 1 << 20}}},
		{"trace name", "n.json", `[{"name":"` + big + `","ph":"X","ts":1,"dur":1,"pid":1,"tid":1}]`, "chrome-trace", "inspect_trace_window", map[string]any{"start_ns": 0, "end_ns": 100000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"sources": []any{pathSrc(e.write(tc.file, tc.body), tc.format)}}
			for k, v := range tc.args {
				args[k] = v
			}
			m, code := e.call(tc.tool, args)
			if code != contract.CodeLimitExceeded {
				t.Fatalf("code %q, want LIMIT_EXCEEDED: %.300v", code, m)
			}
		})
	}
}

// TestPageByteBudget: a page of big rows stops before the call's row byte
// budget (tool.RowBudget: a default result fits 64 KiB delivered) with
// next_page and tool.BudgetWarning; following next_page returns every row
// exactly once.
func TestPageByteBudget(t *testing.T) {
	e := newEnv(t)
	pageBudget := tool.RowBudget(context.Background())
	line := strings.Repeat("y", 8<<10)
	var b strings.Builder
	for i := 0; i < 20; i++ {
		b.WriteString(line + "\n")
	}
	for _, tc := range []struct {
		name, format string
		body         string
		limits       map[string]any
		budget       int
	}{
		{"text", "text", b.String(), nil, pageBudget},
		{"text max_memory", "text", b.String(), map[string]any{"max_memory_bytes": 1 << 20}, pageBudget},
		{"jsonl", "jsonl", strings.ReplaceAll(b.String(), line, `"`+line+`"`), nil, pageBudget},
		{"csv", "csv", "h\n" + b.String(), nil, pageBudget},
		{"json", "json", "[" + strings.TrimSuffix(strings.ReplaceAll(b.String(), line+"\n", `"`+line+`",`), ",") + "]", nil, pageBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"sources": []any{pathSrc(e.write("f."+tc.format, tc.body), tc.format)}, "page_size": 20}
			if tc.limits != nil {
				args["limits"] = tc.limits
			}
			first := e.mustCall("preview_artifact", args)
			// The page ended early but holds all it covers: complete,
			// with more pages and the next call named.
			if first["next_action"] == nil || first["status"] != "complete" || data(first)["page"].(map[string]any)["more"] != true {
				t.Fatalf("20 rows of 8 KiB fit one page (status %v)", first["status"])
			}
			if !strings.Contains(mustJSON(first["warnings"]), tool.BudgetWarning) {
				t.Fatalf("warnings %v lack the budget warning", first["warnings"])
			}
			if cov := first["coverage"].(map[string]any); cov["page_ended_by"] != "byte_budget" || cov["complete"] != true || cov["more_pages"] != true {
				t.Fatalf("coverage %v", cov)
			}
			cur := first
			total := 0
			for {
				rows := data(cur)["rows"].([]any)
				if n := len(mustJSON(rows)); n > tc.budget || len(rows) < 2 && data(cur)["page"].(map[string]any)["more"] == true {
					t.Fatalf("page rows encode to %d bytes > %d", n, tc.budget)
				}
				total += len(rows)
				na, ok := cur["next_action"].(map[string]any)
				if !ok {
					break
				}
				cur = e.mustCall(na["tool"].(string), na["arguments"])
			}
			if total != 20 {
				t.Fatalf("%d rows over all pages, want 20", total)
			}
		})
	}
	// A single row bigger than the budget is a page of its own; one bigger
	// than the hard result limit is RESULT_TOO_LARGE.
	p := e.write("one.txt", strings.Repeat("z", 1000<<10)+"\n")
	if _, code := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "limits": map[string]any{"max_memory_bytes": 1 << 20}, "page_size": 5}); code != "" {
		// 1000 KiB fits the 1 MiB budget
		t.Fatalf("1000 KiB row under a 1 MiB budget: %s", code)
	}
	// A text line that passes the budget is split into fragments instead.
	p = e.write("ctl.txt", strings.Repeat("\x01", 1000<<10)+"\n") // encodes as \u0001: 6x
	if m, code := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}}); code != "" || data(m)["summary"].(map[string]any)["auto_fragment_chars"] == nil {
		t.Fatalf("a text line of 6 MB encoded: %s %v, want automatic fragments", code, m["error"])
	}
	// So is a JSONL record, into fragments of its bytes; one this large
	// cannot be delivered whole by any server, and the warning says so.
	p = e.write("lt.jsonl", `{"s":"`+strings.Repeat("<", 1000<<10-16)+`"}`+"\n") // encodes as \u003c: 6x
	m, code := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}})
	if code != "" || !strings.Contains(mustJSON(m["warnings"]), "no server delivers it whole") {
		t.Fatalf("a record of 6 MB encoded: %s %v, want fragments", code, m["warnings"])
	}
	if row := data(m)["rows"].([]any)[0].(map[string]any); row["fragment"] != float64(0) || row["bytes_total"] != float64(1000<<10-8) {
		t.Fatalf("first row %v", row["fragment"])
	}
}

// TestFoldedOverflow: totals beyond int64 are LIMIT_EXCEEDED naming the
// line, never negative totals reported as complete.
func TestFoldedOverflow(t *testing.T) {
	e := newEnv(t)
	p := e.write("of.folded", "main;a 9223372036854775807\nmain;b 9223372036854775807\n")
	m, code := e.call("summarize_profile", map[string]any{"sources": []any{pathSrc(p, "folded")}})
	if code != contract.CodeLimitExceeded || !strings.Contains(m["error"].(map[string]any)["message"].(string), "line 2") {
		t.Fatalf("%s %v", code, m["error"])
	}
	ok := e.write("ok.folded", "main;a 9223372036854775806\nmain;b 1\n")
	r := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(ok, "folded")}})
	if !strings.Contains(mustJSON(r), `"9223372036854775807"`) {
		t.Fatal("exact total at the int64 maximum missing")
	}
}

// TestOffsetReported: coverage.offset and data.page.offset are the
// requested offset on a first page.
func TestOffsetReported(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		b.WriteString(itoa(i) + "\n")
	}
	for _, tc := range []struct{ name, file, body, format string }{
		{"text", "a.txt", b.String(), "text"},
		{"jsonl", "a.jsonl", b.String(), "jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(e.write(tc.file, tc.body), tc.format)}, "offset": 5, "page_size": 2})
			if r["coverage"].(map[string]any)["offset"] != 5.0 || data(r)["page"].(map[string]any)["offset"] != 5.0 {
				t.Fatalf("offset reported as %v / %v", r["coverage"].(map[string]any)["offset"], data(r)["page"])
			}
			if first := data(r)["rows"].([]any)[0].(map[string]any); first["line"].(float64) != 6 {
				t.Fatalf("first row %v", first)
			}
		})
	}
}

// TestTraceStatusAgrees: an unclosed B event and sub-nanosecond ts/dur make
// the result partial with coverage.complete false and coverage.incomplete
// naming why, and no next_page.
func TestTraceStatusAgrees(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, body, key string }{
		{"unclosed B", `[{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1},{"name":"b","ph":"B","ts":1,"pid":1,"tid":1}]`, "unclosed_begin_events"},
		{"E without B", `[{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1},{"name":"b","ph":"E","ts":1,"pid":1,"tid":1}]`, "unmatched_begin_end"},
		{"sub ns", `[{"name":"a","ph":"X","ts":0.0001,"dur":0.0004,"pid":1,"tid":1}]`, "sub_ns_truncated_events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.mustCall("inspect_trace_window", map[string]any{"sources": []any{pathSrc(e.write("t.json", tc.body), "chrome-trace")}, "start_ns": 0, "end_ns": 100000})
			cov := r["coverage"].(map[string]any)
			if r["status"] != "partial" || cov["complete"] != false || cov["more_pages"] != false || cov[tc.key] != "1" || r["next_action"] != nil {
				t.Fatalf("status %v coverage %v", r["status"], cov)
			}
			if inc, _ := cov["incomplete"].([]any); len(inc) == 0 {
				t.Fatal("coverage.incomplete is empty")
			}
		})
	}
	// Three decimals of a microsecond are exact: complete.
	r := e.mustCall("inspect_trace_window", map[string]any{"sources": []any{pathSrc(e.write("x.json", `[{"name":"a","ph":"X","ts":1.5,"dur":0.001,"pid":1,"tid":1}]`), "chrome-trace")}, "start_ns": 0, "end_ns": 100000})
	if r["status"] != "complete" {
		t.Fatalf("exact trace: %v %v", r["status"], r["warnings"])
	}
}

// TestPreviewNumbers: integral values beyond ±(2^53-1) are exact decimal
// strings whatever their literal form; -0 stays negative zero.
func TestPreviewNumbers(t *testing.T) {
	e := newEnv(t)
	r := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(e.write("n.json", `[1e20, -0, 9007199254740992, 12345678901234567890.5, 1.5, 1e2]`), "json")}})
	got := mustJSON(data(r)["rows"])
	for _, want := range []string{`"value":"100000000000000000000"`, `"value":-0`, `"value":"9007199254740992"`, `"value":"12345678901234567890.5"`, `"value":1.5`, `"value":100}`} {
		if !strings.Contains(got, want) {
			t.Fatalf("rows %s lack %s", got, want)
		}
	}
}

// TestCorruptCursorKey: a short or empty cursor.key makes a paginated
// analysis REPOSITORY_CORRUPT with guidance instead of a dead next_page.
func TestCorruptCursorKey(t *testing.T) {
	for _, key := range []string{"12345", ""} {
		dir := filepath.Join(t.TempDir(), "store")
		e := newEnvAt(t, dir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cursor.key"), []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
		p := e.write("a.txt", "1\n2\n3\n")
		m, code := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "page_size": 1})
		if code != contract.CodeRepositoryCorrupt || !strings.Contains(m["error"].(map[string]any)["message"].(string), "Delete cursor.key") {
			t.Fatalf("key %q: %s %v", key, code, m["error"])
		}
	}
}

// TestEvidenceIDSchemaError: a malformed evidence_id is reported at
// /sources/0/evidence_id with its pattern, not at kind.
func TestEvidenceIDSchemaError(t *testing.T) {
	e := newEnv(t)
	m, code := e.call("preview_artifact", map[string]any{"sources": []any{map[string]any{"kind": "evidence", "evidence_id": "ev-nothere"}}})
	er := m["error"].(map[string]any)
	if code != contract.CodeInvalidArgument || er["field"] != "/sources/0/evidence_id" || !strings.Contains(mustJSON(er["expected"]), "^ev-[a-z2-7]{26}$") {
		t.Fatalf("%s %v", code, er)
	}
	m, _ = e.call("preview_artifact", map[string]any{"sources": []any{map[string]any{"kind": "nope", "path": "/x"}}})
	if m["error"].(map[string]any)["field"] != "/sources/0/kind" {
		t.Fatalf("bad kind: %v", m["error"])
	}
}

// TestProfilePageByteBudget: profile rows go through the same page byte
// budget: long function names end the page early with next_page, and every
// row arrives once.
func TestProfilePageByteBudget(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	for i := 0; i < 12; i++ {
		b.WriteString("main;" + strings.Repeat(string(rune('a'+i)), 500<<10) + " 1\n")
	}
	p := e.write("long.folded", b.String())
	first := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(p, "folded")}, "page_size": 100})
	if first["next_action"] == nil || first["coverage"].(map[string]any)["page_ended_by"] != "byte_budget" {
		t.Fatalf("12 rows of 500 KiB names in one page: %v", first["coverage"])
	}
	rows, _ := e.follow(first)
	if len(rows) != 13 { // 12 leaves + main
		t.Fatalf("%d rows", len(rows))
	}
}

// TestSectionElementsBoundedSeparately: under limits.max_memory_bytes a root
// object's large section array pages element by element; only one element
// larger than the limit is LIMIT_EXCEEDED.
func TestSectionElementsBoundedSeparately(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	b.WriteString(`{"name":"x","items":[`)
	for i := 0; i < 3000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"i":` + itoa(i) + `,"s":"` + strings.Repeat("p", 1000) + `"}`)
	}
	b.WriteString(`]}`)
	p := e.write("sec.json", b.String())
	lim := map[string]any{"max_memory_bytes": 1 << 20}
	rows, _ := e.follow(e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p, "json")}, "limits": lim, "page_size": 1000}))
	if len(rows) != 3001 {
		t.Fatalf("%d rows, want 3001", len(rows))
	}
	big := e.write("bigel.json", `{"items":[1,[`+strings.Repeat(`"pppppppp",`, 200000)+`1]]}`)
	if _, code := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(big, "json")}, "limits": lim}); code != contract.CodeLimitExceeded {
		t.Fatalf("a 2 MB element under a 1 MiB limit: %s", code)
	}
}
