package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func runAnalyzeCLI(t *testing.T, args ...string) (map[string]any, int) {
	t.Helper()
	var out, errb bytes.Buffer
	// --json: a failure's envelope is stdout too (text mode tells it on
	// stderr only). Given before any "--" so it stays a flag.
	if len(args) > 0 && !slices.Contains(args, "--json") && !slices.Contains(args, "--") {
		args = append(slices.Clone(args), "--json")
	}
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
	if code != 0 || loc["data"].(map[string]any)["source"] != "INQUEST_DATA_DIR" || loc["data"].(map[string]any)["records"] != float64(1) {
		t.Fatalf("location: %v", loc)
	}
	if d := loc["data"].(map[string]any); d["unreferenced_objects"] != float64(0) || d["unreferenced_bytes"] != float64(0) {
		t.Fatalf("location counts unreferenced objects in a clean store: %v", loc)
	}
	// An object no record references (what a preserve killed after its
	// object rename leaves): location reports it, sweep removes it once
	// older than --older-than, and the record stays readable.
	store := os.Getenv("INQUEST_DATA_DIR")
	orphan := filepath.Join(store, "objects", "sha256", "ab", "ab"+strings.Repeat("0", 62))
	os.MkdirAll(filepath.Dir(orphan), 0o700)
	os.WriteFile(orphan, []byte("12345"), 0o400)
	loc, _ = runAnalyzeCLI(t, "evidence", "location")
	if d := loc["data"].(map[string]any); d["unreferenced_objects"] != float64(1) || d["unreferenced_bytes"] != float64(5) || len(loc["warnings"].([]any)) != 1 {
		t.Fatalf("location with an orphan: %v", loc)
	}
	sw, code := runAnalyzeCLI(t, "evidence", "sweep")
	if d := sw["data"].(map[string]any); code != 0 || d["removed_objects"] != float64(0) || d["recent_unreferenced_objects"] != float64(1) {
		t.Fatalf("sweep of a new orphan with the default --older-than: %v", sw)
	}
	sw, code = runAnalyzeCLI(t, "evidence", "sweep", "--older-than", "0")
	if d := sw["data"].(map[string]any); code != 0 || d["removed_objects"] != float64(1) || d["removed_bytes"] != float64(5) || d["referenced_objects"] != float64(1) {
		t.Fatalf("sweep --older-than 0: %v", sw)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphan survived the sweep: %v", err)
	}
	// A store a newer inquest wrote is refused with its own code.
	fmtFile := filepath.Join(store, "format.json")
	if b, err := os.ReadFile(fmtFile); err != nil || string(b) != "{\"format_version\":1}\n" {
		t.Fatalf("format.json: %q %v", b, err)
	}
	os.WriteFile(fmtFile, []byte(`{"format_version": 2}`), 0o600)
	if e, code := runAnalyzeCLI(t, "evidence", "location"); code != 1 || e["error"].(map[string]any)["code"] != "REPOSITORY_FORMAT_UNSUPPORTED" {
		t.Fatalf("location of a format 2 store: %v", e)
	}
	os.WriteFile(fmtFile, []byte(`{"format_version": 1}`), 0o600)
	if e, code := runAnalyzeCLI(t, "evidence", "sweep", "--older-than", "-1s"); code != 1 || e["error"].(map[string]any)["code"] != "INVALID_ARGUMENT" {
		t.Fatalf("negative --older-than: %v", e)
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

func TestAnalyzeCLIRescueAndUsage(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	p := filepath.Join(t.TempDir(), "a.txt")
	os.WriteFile(p, []byte("1\n2\n3\n"), 0o644)
	dest := filepath.Join(t.TempDir(), "rescued")
	m, code := runAnalyzeCLI(t, "analyze", "preview_artifact", p, "--page-size", "1", "--rescue-to", dest)
	if code != 0 {
		t.Fatalf("rescue: %v", m)
	}
	np := m["data"].(map[string]any)["next_page"].(map[string]any)
	resc := m["data"].(map[string]any)["rescued"].(map[string]any)
	if resc["environment"].(map[string]any)["INQUEST_DATA_DIR"] != dest || np["argv"].([]any)[3] != "--evidence" {
		t.Fatalf("rescue handoff: %v %v", resc, np)
	}
	// The handoff works once INQUEST_DATA_DIR names the rescued store:
	// next_page.environment says so.
	env, _ := np["environment"].(map[string]any)
	if env["INQUEST_DATA_DIR"] != dest {
		t.Fatalf("next_page has no environment for the rescued store: %v", np)
	}
	t.Setenv("INQUEST_DATA_DIR", env["INQUEST_DATA_DIR"].(string))
	var argv []string
	for _, a := range np["argv"].([]any)[1:] {
		argv = append(argv, a.(string))
	}
	if r, code := runAnalyzeCLI(t, argv...); code != 0 || r["data"].(map[string]any)["rows"].([]any)[0].(map[string]any)["line"].(float64) != 2 {
		t.Fatalf("rescued continuation: %v", r)
	}
	// Usage errors.
	for _, args := range [][]string{
		{"analyze", "preview_artifact", p, "--preserve", "--rescue-to", filepath.Join(t.TempDir(), "x")},
		{"analyze", "preview_artifact", "--evidence", "ev-" + strings.Repeat("a", 26), "--format", "text"},
		{"analyze", "no_such_operation", p},
		{"analyze", "preview_artifact"},
		{"analyze", "preview_artifact", p, "--rescue-to", "relative"},
	} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), args, strings.NewReader(""), &out, &errb); code == 0 {
			t.Errorf("%v succeeded", args)
		}
	}
	// evidence query pages with an executable argv.
	for i := 0; i < 3; i++ {
		runAnalyzeCLI(t, "analyze", "preview_artifact", p, "--preserve")
	}
	q, code := runAnalyzeCLI(t, "evidence", "query", "--page-size", "2")
	if code != 0 {
		t.Fatalf("query: %v", q)
	}
	qargv := q["data"].(map[string]any)["next_page"].(map[string]any)["argv"].([]any)
	var qa []string
	for _, a := range qargv[1:] {
		qa = append(qa, a.(string))
	}
	q2, code := runAnalyzeCLI(t, qa...)
	if code != 0 || len(q2["data"].(map[string]any)["rows"].([]any)) != 2 {
		t.Fatalf("query page 2: %v", q2)
	}
}

// TestAnalyzeCLIFlagsAndEvidence: --page-size below 1 and sources (or other
// flag-owned fields) in --arguments are usage errors; --evidence expands a
// record into all its analysis sources; evidence show verifies artifact
// SHA-256s like inspect_evidence.
func TestAnalyzeCLIFlagsAndEvidence(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	t.Setenv("INQUEST_DATA_DIR", store)
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	os.WriteFile(p, []byte("1\n2\n3\n"), 0o644)
	for _, args := range [][]string{
		{"analyze", "preview_artifact", p, "--page-size", "0"},
		{"analyze", "preview_artifact", p, "--page-size", "-3"},
		{"analyze", "preview_artifact", p, "--arguments", `{"sources":[{"kind":"path","path":"/etc/passwd"}]}`},
		{"analyze", "preview_artifact", p, "--arguments", `null`},
	} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), args, strings.NewReader(""), &out, &errb); code == 0 {
			t.Errorf("%v succeeded: %s", args, out.String())
		}
	}
	// A two-source comparison, preserved, replays with --evidence.
	old := filepath.Join(dir, "old.txt")
	cur := filepath.Join(dir, "new.txt")
	os.WriteFile(old, []byte("BenchmarkX-2 \t 100\t 1000 ns/op\nBenchmarkX-2 \t 100\t 1010 ns/op\n"), 0o644)
	os.WriteFile(cur, []byte("BenchmarkX-2 \t 100\t 800 ns/op\nBenchmarkX-2 \t 100\t 810 ns/op\n"), 0o644)
	m, code := runAnalyzeCLI(t, "analyze", "compare_benchmarks", old, cur, "--preserve")
	if code != 0 {
		t.Fatalf("compare: %v", m)
	}
	id := m["data"].(map[string]any)["preserved"].(map[string]any)["evidence_id"].(string)
	r, code := runAnalyzeCLI(t, "analyze", "compare_benchmarks", "--evidence", id)
	if code != 0 || len(r["data"].(map[string]any)["sources"].([]any)) != 2 {
		t.Fatalf("replay with --evidence: %v", r)
	}
	// Flip bytes of one object (same size): show is REPOSITORY_CORRUPT.
	objs, _ := filepath.Glob(filepath.Join(store, "objects", "sha256", "*", "*"))
	if len(objs) == 0 {
		t.Fatal("no objects")
	}
	os.Chmod(objs[0], 0o600)
	b, _ := os.ReadFile(objs[0])
	b[0] ^= 1
	os.WriteFile(objs[0], b, 0o600)
	if e, code := runAnalyzeCLI(t, "evidence", "show", id); code != 1 || e["error"].(map[string]any)["code"] != "REPOSITORY_CORRUPT" {
		t.Fatalf("show of a corrupt object: %v", e)
	}
	// A garbage manifest is listed with a problem, partial, counted.
	mans, _ := filepath.Glob(filepath.Join(store, "manifests", "*.json"))
	os.WriteFile(mans[0], []byte("garbage"), 0o600)
	q, _ := runAnalyzeCLI(t, "evidence", "query")
	if q["status"] != "partial" || q["coverage"].(map[string]any)["unreadable_manifests"].(float64) != 1 || len(q["warnings"].([]any)) == 0 {
		t.Fatalf("query with a garbage manifest: %v", q)
	}
	// An index overwritten with garbage is rebuilt to the same answer, and
	// location counts every manifest file, saying how many are unreadable.
	os.Remove(filepath.Join(store, "index.sqlite-wal"))
	os.Remove(filepath.Join(store, "index.sqlite-shm"))
	os.WriteFile(filepath.Join(store, "index.sqlite"), []byte("garbage"), 0o600)
	q2, _ := runAnalyzeCLI(t, "evidence", "query")
	rows1, _ := json.Marshal(q["data"].(map[string]any)["rows"])
	rows2, _ := json.Marshal(q2["data"].(map[string]any)["rows"])
	if string(rows1) != string(rows2) || q2["status"] != "partial" ||
		q2["coverage"].(map[string]any)["unreadable_manifests"].(float64) != 1 {
		t.Fatalf("query after the rebuild:\n%v\nbefore:\n%v", q2, q)
	}
	loc, _ := runAnalyzeCLI(t, "evidence", "location")
	ld := loc["data"].(map[string]any)
	if ld["records"] != float64(len(mans)) || ld["unreadable_manifests"] != float64(1) || loc["status"] != "partial" {
		t.Fatalf("location: %v (%d manifests)", loc, len(mans))
	}
}

// TestAnalyzeCLIContinuationRerun: the original command re-run with
// --continuation TOKEN resumes (the token binds the effective page size
// and limits, however they were spelled), and a changed field is
// CURSOR_INVALID.
func TestAnalyzeCLIContinuationRerun(t *testing.T) {
	t.Setenv("INQUEST_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	p := filepath.Join(t.TempDir(), "a.txt")
	os.WriteFile(p, []byte("1\n2\n3\n"), 0o644)
	m, code := runAnalyzeCLI(t, "analyze", "preview_artifact", p, "--page-size", "1")
	if code != 0 {
		t.Fatalf("first page: %v", m)
	}
	tok := m["data"].(map[string]any)["next_page"].(map[string]any)["arguments"].(map[string]any)["continuation"].(string)
	for _, extra := range [][]string{
		{"--page-size", "1"},
		{"--limits", `{"max_rows":1}`},
	} {
		args := append([]string{"analyze", "preview_artifact", p}, extra...)
		args = append(args, "--continuation", tok)
		r, code := runAnalyzeCLI(t, args...)
		if code != 0 || r["data"].(map[string]any)["rows"].([]any)[0].(map[string]any)["line"].(float64) != 2 {
			t.Fatalf("%v: %v", extra, r)
		}
	}
	r, code := runAnalyzeCLI(t, "analyze", "preview_artifact", p, "--page-size", "2", "--continuation", tok)
	if code == 0 || r["error"].(map[string]any)["code"] != "CURSOR_INVALID" {
		t.Fatalf("changed page size resumed: %v", r)
	}
}
