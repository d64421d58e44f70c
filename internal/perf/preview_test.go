package perf

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

func abs(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", "preview", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPreviewGolden pages through every preview format with small pages and
// compares the concatenated rows with golden files: continuations must
// reproduce exactly the rows of one big page.
func TestPreviewGolden(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		format string
		extra  map[string]any
	}{
		{"text_lines", "lines.txt", "", nil},
		{"text_fragments", "lines.txt", "text", map[string]any{"text_fragment_chars": 7}},
		{"text_offset", "lines.txt", "", map[string]any{"offset": 2}},
		{"json_object", "doc.json", "", nil},
		{"json_array", "array.json", "", nil},
		{"json_scalar", "scalar.json", "", nil},
		{"jsonl", "records.jsonl", "", nil},
		{"csv", "table.csv", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			args := map[string]any{"sources": []any{pathSrc(abs(t, tt.file))}, "page_size": 2}
			if tt.format != "" {
				args["sources"] = []any{pathSrc(abs(t, tt.file), tt.format)}
			}
			for k, v := range tt.extra {
				args[k] = v
			}
			first := e.mustCall("preview_artifact", args)
			paged, pages := e.follow(first)
			delete(args, "page_size")
			args["page_size"] = 1000
			whole := e.mustCall("preview_artifact", args)
			if whole["status"] != "complete" || whole["next_action"] != nil {
				t.Fatalf("one big page is not complete: %v", whole["status"])
			}
			if got, want := mustJSON(paged), mustJSON(data(whole)["rows"]); got != want {
				t.Fatalf("paged rows differ from one page:\n%s\n%s", got, want)
			}
			if len(paged) > 2 && pages < 2 {
				t.Fatal("page_size 2 did not page")
			}
			golden(t, "preview/"+tt.name+".golden.json", map[string]any{"summary": data(whole)["summary"], "rows": paged})
		})
	}
}

func TestPreviewErrors(t *testing.T) {
	tests := []struct {
		name  string
		args  map[string]any
		want  contract.Code
		field string
	}{
		{"duplicate csv header", map[string]any{"sources": []any{pathSrc(abs(t, "dup_header.csv"))}}, contract.CodeDecodeFailed, "/sources/0"},
		{"ragged csv", map[string]any{"sources": []any{pathSrc(abs(t, "ragged.csv"))}}, contract.CodeDecodeFailed, "/sources/0"},
		{"blank jsonl line", map[string]any{"sources": []any{pathSrc(abs(t, "blank.jsonl"))}}, contract.CodeDecodeFailed, "/sources/0"},
		{"invalid utf-8 jsonl", map[string]any{"sources": []any{pathSrc(abs(t, "badutf8.jsonl"))}}, contract.CodeDecodeFailed, "/sources/0"},
		{"malformed json", map[string]any{"sources": []any{pathSrc(abs(t, "broken.json"))}}, contract.CodeDecodeFailed, "/sources/0"},
		{"offset at end", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "offset": 5}, contract.CodeInvalidArgument, "/offset"},
		{"offset beyond end", map[string]any{"sources": []any{pathSrc(abs(t, "table.csv"))}, "offset": 99}, contract.CodeInvalidArgument, "/offset"},
		{"negative offset", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "offset": -1}, contract.CodeInvalidArgument, "/offset"},
		{"string offset", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "offset": "1"}, contract.CodeInvalidArgument, "/offset"},
		{"fragments on csv", map[string]any{"sources": []any{pathSrc(abs(t, "table.csv"))}, "text_fragment_chars": 4}, contract.CodeInvalidArgument, "/text_fragment_chars"},
		{"fragment size too big", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "text_fragment_chars": 4097}, contract.CodeInvalidArgument, "/text_fragment_chars"},
		{"format preview cannot read", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"), "pprof")}}, contract.CodeInvalidArgument, "/sources/0"},
		{"relative path", map[string]any{"sources": []any{pathSrc("testdata/preview/lines.txt")}}, contract.CodeInvalidArgument, "/sources/0/path"},
		{"missing path", map[string]any{"sources": []any{pathSrc("/nonexistent/x.txt")}}, contract.CodeInvalidArgument, "/sources/0/path"},
		{"two sources", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt")), pathSrc(abs(t, "lines.txt"))}}, contract.CodeInvalidArgument, "/sources"},
		{"expected digest differs", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": abs(t, "lines.txt"), "expected_sha256": strings.Repeat("0", 64)}}}, contract.CodeInputChanged, "/sources/0"},
		{"page_size disagrees with max_rows", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "page_size": 2, "limits": map[string]any{"max_rows": 3}}, contract.CodeInvalidArgument, "/page_size"},
		{"limit above ceiling", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "limits": map[string]any{"max_rows": 10001}}, contract.CodeInvalidArgument, "/limits/max_rows"},
		{"input above max_input_bytes", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "limits": map[string]any{"max_input_bytes": 10}}, contract.CodeLimitExceeded, "/sources/0"},
		{"unknown field", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "rows": 3}, contract.CodeInvalidArgument, "/rows"},
		{"forged continuation", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "continuation": "abc.def"}, contract.CodeCursorInvalid, ""},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, code := e.call("preview_artifact", tt.args)
			if code != tt.want {
				t.Fatalf("got %s %v, want %s", code, m["error"], tt.want)
			}
			errObj := m["error"].(map[string]any)
			if tt.field != "" {
				if f, _ := errObj["field"].(string); !strings.HasPrefix(f, tt.field) {
					t.Fatalf("field %q, want prefix %q", f, tt.field)
				}
			}
		})
	}
	// The schema rejection of an unreadable format lists the accepted ones.
	m, _ := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"), "pprof")}})
	if !strings.Contains(mustJSON(m["error"]), `"csv"`) {
		t.Fatalf("accepted formats missing: %v", m["error"])
	}
	// Integral 2.0 is a valid integer.
	if _, code := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(abs(t, "lines.txt"))}, "page_size": 2.0}); code != "" {
		t.Fatal("page_size 2.0 rejected")
	}
}

func TestContinuationBinding(t *testing.T) {
	e := newEnv(t)
	p := e.write("a.txt", strings.Repeat("row\n", 10))
	first := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "page_size": 3})
	next := first["next_action"].(map[string]any)["arguments"].(map[string]any)
	// A changed argument cannot reuse the token.
	changed := clone(next)
	changed["offset"] = 1
	if _, code := e.call("preview_artifact", changed); code != contract.CodeCursorInvalid {
		t.Fatalf("changed argument: %s", code)
	}
	// Another tool cannot use it.
	other := map[string]any{"sources": next["sources"], "continuation": next["continuation"]}
	if _, code := e.call("summarize_profile", other); code == "" {
		t.Fatal("token accepted by another tool")
	}
	// A changed input without expected_sha256 is INPUT_CHANGED too.
	e.write("a.txt", strings.Repeat("row\n", 11))
	noDigest := clone(next)
	noDigest["sources"] = []any{pathSrc(p, "text")}
	if _, code := e.call("preview_artifact", noDigest); code != contract.CodeInputChanged {
		t.Fatalf("changed input: %s", code)
	}
}

func clone(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func abs2(t *testing.T, rel string) string {
	p, err := filepath.Abs(filepath.Join("testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPagingWithoutStore: when the evidence store cannot be opened, a
// complete single page still works, but a result that needs a next_page
// fails with the store's error rather than issuing a token sealed with a
// process-local key that no later process could resume (defect: dead
// next_page tokens).
func TestPagingWithoutStore(t *testing.T) {
	rt := New(Config{Sessions: true, OpenStore: func() (*evidence.Store, error) {
		return nil, contract.Errorf(contract.CodeRepositoryCorrupt, "store unavailable")
	}})
	reg := tool.NewRegistry()
	reg.MustAdd(Tools(rt)...)
	e := &env{t: t, dir: t.TempDir(), rt: rt, reg: reg}
	p := e.write("a.txt", "1\n2\n3\n")
	if _, code := e.call("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "page_size": 1}); code != contract.CodeRepositoryCorrupt {
		t.Fatalf("paging without a store: %s, want REPOSITORY_CORRUPT", code)
	}
	r := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}})
	if r["status"] != "complete" || len(data(r)["rows"].([]any)) != 3 {
		t.Fatalf("complete page without a store: %v", r["status"])
	}
	if _, code := e.call("preserve_evidence", map[string]any{"analysis_id": data(r)["analysis_id"]}); code != contract.CodeRepositoryCorrupt {
		t.Fatalf("preserve without a store: %s", code)
	}
}

// TestJSONArrayResumeBySeek pages a root array whose continuations seek to
// the byte after the last returned element.
func TestJSONArrayResumeBySeek(t *testing.T) {
	e := newEnv(t)
	// Pages ended by page_size, not by the default 64 KiB result budget.
	e.ctx = tool.WithResultBudget(context.Background(), tool.HardResultBytes)
	var b strings.Builder
	b.WriteString(" [\n")
	for i := 0; i < 5000; i++ {
		if i > 0 {
			b.WriteString(" ,\r\n\t")
		}
		b.WriteString(`{"i":` + itoa(i) + `,"s":"x, ] y"}`)
	}
	b.WriteString("\n]\n")
	p := e.write("big.json", b.String())
	first := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(p)}, "page_size": 700})
	if !strings.Contains(mustJSON(first["next_action"]), "continuation") {
		t.Fatal("no continuation")
	}
	rows, pages := e.follow(first)
	if len(rows) != 5000 || pages != 8 {
		t.Fatalf("%d rows in %d pages", len(rows), pages)
	}
	for i, r := range rows {
		m := r.(map[string]any)
		if int(m["index"].(float64)) != i || int(m["value"].(map[string]any)["i"].(float64)) != i {
			t.Fatalf("row %d: %v", i, m)
		}
	}
	// Trailing garbage after the array is found by the last page.
	bad := e.write("bad.json", `[1,2,3] x`)
	res := e.mustCall("preview_artifact", map[string]any{"sources": []any{pathSrc(bad)}, "page_size": 2})
	na := res["next_action"].(map[string]any)
	if _, code := e.call("preview_artifact", na["arguments"]); code != contract.CodeDecodeFailed {
		t.Fatalf("trailing data: %s", code)
	}
}
