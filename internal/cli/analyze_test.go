package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runAnalyzeCLI(t *testing.T, args ...string) (map[string]any, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v: output is not one JSON envelope (%v): %s %s", args, err, out.String(), errb.String())
	}
	return m, code
}

// TestAnalyzeCLI pages a file through `inquest analyze` by executing each
// next_page.argv, preserves it, and finds it with `inquest evidence`.
func TestAnalyzeCLI(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	p := filepath.Join(t.TempDir(), "a.csv")
	os.WriteFile(p, []byte("k,v\na,1\nb,2\nc,3\n"), 0o644)
	m, code := runAnalyzeCLI(t, "analyze", "preview_artifact", p, "--page-size", "2")
	if code != 0 {
		t.Fatalf("exit %d: %v", code, m)
	}
	d := m["data"].(map[string]any)
	if _, ok := d["analysis_id"]; ok {
		t.Fatal("CLI output carries the process-local analysis_id")
	}
	argv := d["next_page"].(map[string]any)["argv"].([]any)
	var next []string
	for _, a := range argv[1:] {
		next = append(next, a.(string))
	}
	m2, code := runAnalyzeCLI(t, next...)
	if code != 0 || m2["status"] != "complete" || len(m2["data"].(map[string]any)["rows"].([]any)) != 1 {
		t.Fatalf("next page via argv: %d %v", code, m2)
	}
	// --preserve: the result names its evidence and a resumable evidence argv.
	m3, code := runAnalyzeCLI(t, "analyze", "preview_artifact", p, "--page-size", "2", "--preserve")
	if code != 0 {
		t.Fatalf("preserve: %v", m3)
	}
	d3 := m3["data"].(map[string]any)
	evID := d3["preserved"].(map[string]any)["evidence_id"].(string)
	argv3 := d3["next_page"].(map[string]any)["argv"].([]any)
	if argv3[3] != "--evidence" || argv3[4] != evID {
		t.Fatalf("preserved argv %v", argv3)
	}
	var next3 []string
	for _, a := range argv3[1:] {
		next3 = append(next3, a.(string))
	}
	if m4, code := runAnalyzeCLI(t, next3...); code != 0 || m4["data"].(map[string]any)["rows"].([]any)[0].(map[string]any)["record"].(float64) != 2 {
		t.Fatalf("evidence continuation: %v", m4)
	}
	q, code := runAnalyzeCLI(t, "evidence", "query", "--operation", "preview_artifact")
	if code != 0 || len(q["data"].(map[string]any)["rows"].([]any)) != 1 {
		t.Fatalf("query: %v", q)
	}
	show, code := runAnalyzeCLI(t, "evidence", "show", evID)
	if code != 0 || !strings.Contains(mustJSONCLI(show), p) {
		t.Fatalf("show lacks the full provenance: %v", show)
	}
	loc, code := runAnalyzeCLI(t, "evidence", "location")
	if code != 0 || loc["data"].(map[string]any)["source"] != "INQUEST_DATA_DIR" || loc["data"].(map[string]any)["records"] != "1" {
		t.Fatalf("location: %v", loc)
	}
	if e, code := runAnalyzeCLI(t, "evidence", "show", "ev-"+strings.Repeat("a", 26)); code != 1 || e["error"].(map[string]any)["code"] != "EVIDENCE_NOT_FOUND" {
		t.Fatalf("show unknown: %v", e)
	}
	// A changed file cannot resume.
	os.WriteFile(p, []byte("k,v\na,1\nb,2\nc,4\n"), 0o644)
	if e, code := runAnalyzeCLI(t, next...); code != 1 || e["error"].(map[string]any)["code"] != "INPUT_CHANGED" {
		t.Fatalf("changed input: %v", e)
	}
}

func mustJSONCLI(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
