package bin

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/perf"
	"github.com/inquest-dev/inquest/internal/tool"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// registry returns the bin tools over a local continuation key and, when
// dir is not empty, the perf evidence lifecycle tools (preserve_evidence,
// inspect_evidence) over an evidence store in dir, which retain every bin
// result by analysis_id.
func registry(t testing.TB, dir string) *tool.Registry {
	t.Helper()
	cont := evidence.NewContinuations([]byte("test-key"))
	env := Env{Continuations: func(context.Context) *evidence.Continuations { return cont }}
	r := tool.NewRegistry()
	if dir != "" {
		prt := perf.New(perf.Config{Sessions: true, OpenStore: func() (*evidence.Store, error) { return evidence.Open(dir) }})
		prt.SetReplayer(tool.Bin, Replay)
		t.Cleanup(func() { prt.Close() })
		env.Analyses = prt
		if err := r.Add(perf.Tools(prt)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Add(Tools(env)...); err != nil {
		t.Fatal(err)
	}
	return r
}

func call(t testing.TB, r *tool.Registry, name string, args any) (map[string]any, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, err := r.Call(context.Background(), name, raw)
	if err != nil {
		return nil, err
	}
	body, isErr := contract.Marshal(res, nil)
	if isErr {
		t.Fatalf("result does not encode: %s", body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

func mustCall(t testing.TB, r *tool.Registry, name string, args any) map[string]any {
	t.Helper()
	m, err := call(t, r, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

func data(m map[string]any) map[string]any { return m["data"].(map[string]any) }

func rows(m map[string]any) []any { return data(m)["rows"].([]any) }

// TestCompareBinariesOneFunctionChanged: two -trimpath builds differing in
// one function's constant report that symbol changed and the others equal.
func TestCompareBinariesOneFunctionChanged(t *testing.T) {
	buildCorpus(t)
	r := registry(t, "")
	args := map[string]any{"left": corpus["go-linux-amd64"], "right": corpus["go-linux-amd64-changed"], "kinds": []string{"symbol"}, "limit": 1000}
	var all []map[string]any
	for {
		m := mustCall(t, r, "compare_binaries", args)
		for _, x := range rows(m) {
			all = append(all, x.(map[string]any))
		}
		next, _ := data(m)["next_cursor"].(string)
		if next == "" {
			break
		}
		args["cursor"] = next
	}
	verdict := map[string]string{}
	for _, d := range all {
		verdict[d["name"].(string)] = d["verdict"].(string)
		if p := d["proof"].(map[string]any); p["correspondence"] == "" || p["content"] == "" {
			t.Errorf("%s: proof lacks correspondence or content: %v", d["name"], p)
		}
	}
	if verdict["main.compute"] != CmpChanged {
		t.Errorf("main.compute = %q, want changed", verdict["main.compute"])
	}
	for _, n := range []string{"main.other", "main.main", "runtime.main", "fmt.Fprintln"} {
		if verdict[n] != CmpEqual {
			t.Errorf("%s = %q, want equal", n, verdict[n])
		}
	}
	// Every other function symbol is equal: the change moved nothing.
	_, lin := inspectPath(t, corpus["go-linux-amd64"])
	f, _ := ReadFile(context.Background(), corpus["go-linux-amd64"], "/left", MaxInputBytes)
	funcs := 0
	for _, s := range loadSymbols(lin, f.Data).syms {
		if s.isFunc && s.Table == TableSymtab && s.size > 0 {
			funcs++
			if s.Name != "main.compute" && verdict[s.Name] != CmpEqual {
				t.Errorf("function %s = %q, want equal", s.Name, verdict[s.Name])
			}
		}
	}
	if funcs < 500 {
		t.Errorf("only %d function symbols compared", funcs)
	}
	// The section holding the change is changed; its peers' proofs name
	// sha256 of the section bytes.
	m := mustCall(t, r, "compare_binaries", map[string]any{"left": corpus["go-linux-amd64"], "right": corpus["go-linux-amd64-changed"], "kinds": []string{"section"}})
	secs := map[string]string{}
	for _, x := range rows(m) {
		d := x.(map[string]any)
		secs[d["name"].(string)] = d["verdict"].(string)
	}
	if secs[".text"] != CmpChanged || secs[".noptrbss"] != CmpEqual {
		t.Errorf("sections %v", secs)
	}
	// Identical inputs: nothing changed, added or removed; what is not
	// comparable is so only because a symbol has no size (no extent).
	m = mustCall(t, r, "compare_binaries", map[string]any{"left": corpus["go-linux-amd64"], "right": corpus["go-linux-amd64"], "verdicts": []string{"changed", "added", "removed", "not_comparable"}, "limit": 1000})
	for _, x := range rows(m) {
		d := x.(map[string]any)
		if d["verdict"] != CmpNotComparable || !strings.Contains(d["proof"].(map[string]any)["content"].(string), "no size") {
			t.Errorf("a file compared with itself: %v", d)
		}
	}
}

// TestPagingAndCursors: cursors page through every row, a changed argument
// is CURSOR_INVALID and a changed file INPUT_CHANGED.
func TestPagingAndCursors(t *testing.T) {
	buildCorpus(t)
	r := registry(t, "")
	dir := t.TempDir()
	p := filepath.Join(dir, "prog")
	orig, _ := os.ReadFile(corpus["go-linux-amd64"])
	os.WriteFile(p, orig, 0o755)
	full := mustCall(t, r, "list_symbols", map[string]any{"path": p, "limit": 1000, "name_contains": "runtime.a"})
	want := len(rows(full))
	args := map[string]any{"path": p, "limit": 7, "name_contains": "runtime.a"}
	got := 0
	var cursor string
	for i := 0; ; i++ {
		m := mustCall(t, r, "list_symbols", args)
		got += len(rows(m))
		next, _ := data(m)["next_cursor"].(string)
		if next == "" {
			if m["next_action"] != nil {
				t.Error("last page has a next_action")
			}
			break
		}
		if na := m["next_action"].(map[string]any); na["tool"] != "list_symbols" || na["arguments"].(map[string]any)["cursor"] != next {
			t.Errorf("next_action %v", na)
		}
		cursor = next
		args["cursor"] = next
		if i > 1000 {
			t.Fatal("paging does not end")
		}
	}
	if got != want || want < 8 {
		t.Fatalf("paged %d rows, one page %d", got, want)
	}
	_, err := call(t, r, "list_symbols", map[string]any{"path": p, "limit": 8, "name_contains": "runtime.a", "cursor": cursor})
	if contract.CodeOf(err) != contract.CodeCursorInvalid {
		t.Errorf("changed limit: %v, want CURSOR_INVALID", err)
	}
	_, err = call(t, r, "search_strings", map[string]any{"path": p, "limit": 7, "name_contains": "runtime.a", "cursor": cursor})
	if contract.CodeOf(err) != contract.CodeInvalidArgument {
		t.Errorf("unknown argument: %v, want INVALID_ARGUMENT", err)
	}
	changed, _ := os.ReadFile(corpus["go-linux-amd64-changed"])
	os.WriteFile(p, changed, 0o755)
	_, err = call(t, r, "list_symbols", map[string]any{"path": p, "limit": 7, "name_contains": "runtime.a", "cursor": cursor})
	if contract.CodeOf(err) != contract.CodeInputChanged {
		t.Errorf("changed file: %v, want INPUT_CHANGED", err)
	}
	// Strings and disassembly page the same way.
	for _, tc := range []struct {
		tool string
		args map[string]any
		size string
	}{
		{"search_strings", map[string]any{"path": p, "section": ".rodata", "min_length": 6}, "limit"},
		{"disassemble", map[string]any{"path": p, "symbol": "runtime.main"}, "max_instructions"},
	} {
		one := mustCall(t, r, tc.tool, mergeArgs(tc.args, map[string]any{tc.size: 1000}))
		var wantRows []any
		wantRows = append(wantRows, rows(one)...)
		args := mergeArgs(tc.args, map[string]any{tc.size: 3})
		var gotRows []any
		for n := 0; n < 400; n++ {
			m := mustCall(t, r, tc.tool, args)
			gotRows = append(gotRows, rows(m)...)
			next, _ := data(m)["next_cursor"].(string)
			if next == "" {
				break
			}
			args["cursor"] = next
		}
		if len(gotRows) < 3 {
			t.Fatalf("%s: %d rows", tc.tool, len(gotRows))
		}
		a, _ := json.Marshal(gotRows[:min(len(gotRows), len(wantRows))])
		b, _ := json.Marshal(wantRows[:min(len(gotRows), len(wantRows))])
		if string(a) != string(b) {
			t.Errorf("%s: paged rows differ from one page", tc.tool)
		}
	}
}

func mergeArgs(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestDisassembleSymbolizesTargets: main.main calls main.compute, and the
// call's target is symbolized; arm64 decodes too.
func TestDisassembleSymbolizesTargets(t *testing.T) {
	buildCorpus(t)
	r := registry(t, "")
	for _, name := range []string{"go-linux-amd64", "go-linux-arm64", "go-linux-386", "go-darwin-arm64", "go-windows-amd64.exe"} {
		// Mach-O keeps the "_" the Go linker adds, as nm and
		// llvm-objdump print it.
		prefix := ""
		if strings.HasPrefix(name, "go-darwin") {
			prefix = "_"
		}
		m := mustCall(t, r, "disassemble", map[string]any{"path": corpus[name], "symbol": prefix + "main.main", "max_instructions": 500})
		found, withSource := false, 0
		for i, x := range rows(m) {
			row := x.(map[string]any)
			if row["error"] != nil {
				t.Errorf("%s: undecodable instruction at %v", name, row["address"])
			}
			if row["target_symbol"] == prefix+"main.compute" {
				found = true
			}
			// main.main's first instruction is in main.go (fmt.Println is
			// inlined, so later ones may not be); COFF sizes are derived,
			// so padding after the function may have no line.
			src, _ := row["source"].(string)
			if src != "" || row["text"] == "int3" {
				withSource++
			}
			if i == 0 && !strings.HasSuffix(strings.Split(src, ":")[0], "main.go") {
				t.Errorf("%s: first instruction has source %q", name, src)
			}
		}
		if !found {
			t.Errorf("%s: no call to main.compute symbolized", name)
		}
		if n := len(rows(m)); withSource != n {
			t.Errorf("%s: only %d of %d instructions have a DWARF line or are int3 padding", name, withSource, n)
		}
	}
	_, err := call(t, r, "disassemble", map[string]any{"path": corpus["go-linux-amd64"], "symbol": "no.such.symbol"})
	if e := contract.AsError(err); e == nil || e.Code != contract.CodeInvalidArgument || e.Field != "/symbol" {
		t.Errorf("unknown symbol: %v", err)
	}
	_, err = call(t, r, "disassemble", map[string]any{"path": corpus["go-linux-amd64"], "symbol": "main.main", "start": "0x401000"})
	if contract.CodeOf(err) != contract.CodeInvalidArgument {
		t.Errorf("symbol and start together: %v", err)
	}
}

// TestSearchStrings finds an ASCII and a UTF-16LE string at their offsets.
func TestSearchStrings(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "blob")
	var b []byte
	b = append(b, 0, 1, 2)
	b = append(b, "hello, inquest"...)
	b = append(b, 0, 0)
	for _, c := range "wide string" {
		b = append(b, byte(c), 0)
	}
	b = append(b, 0xff, 'a', 'b', 0)
	os.WriteFile(p, b, 0o644)
	r := registry(t, "")
	m := mustCall(t, r, "search_strings", map[string]any{"path": p})
	got := rows(m)
	if len(got) != 2 {
		t.Fatalf("rows %v", got)
	}
	a, w := got[0].(map[string]any), got[1].(map[string]any)
	if a["text"] != "hello, inquest" || a["offset"] != "3" || a["encoding"] != "ascii" {
		t.Errorf("ascii row %v", a)
	}
	if w["text"] != "wide string" || w["offset"] != "19" || w["encoding"] != "utf16le" || w["length"] != "11" {
		t.Errorf("utf16 row %v", w)
	}
	m = mustCall(t, r, "search_strings", map[string]any{"path": p, "regex": "^wide", "encodings": []string{"utf16le"}})
	if len(rows(m)) != 1 {
		t.Errorf("regex filter: %v", rows(m))
	}
	_, err := call(t, r, "search_strings", map[string]any{"path": p, "regex": "("})
	if e := contract.AsError(err); e == nil || e.Field != "/regex" {
		t.Errorf("bad regex: %v", err)
	}
	_, err = call(t, r, "inspect_binary", map[string]any{"path": p})
	if contract.CodeOf(err) != contract.CodeUnsupportedFormat {
		t.Errorf("blob inspect: %v", err)
	}
	_, err = call(t, r, "inspect_binary", map[string]any{"path": filepath.Join(dir, "missing")})
	if e := contract.AsError(err); e == nil || e.Code != contract.CodeInvalidArgument || e.Field != "/path" || strings.Contains(e.Message, dir) {
		t.Errorf("missing file: %v", err)
	}
}

// TestPreserve: a bin result's analysis_id is accepted by
// preserve_evidence, which publishes the file and every row of the
// selection (all pages, not only the page delivered); inspect_evidence
// names a replay that works and returns the same rows.
func TestPreserve(t *testing.T) {
	store := t.TempDir()
	r := registry(t, store)
	p, _ := filepath.Abs("testdata/hello-hardened.elf")
	m := mustCall(t, r, "list_symbols", map[string]any{"path": p, "limit": 2})
	id, _ := data(m)["analysis_id"].(string)
	if !strings.HasPrefix(id, "an-") {
		t.Fatalf("no analysis_id: %v", data(m))
	}
	pres := mustCall(t, r, "preserve_evidence", map[string]any{"analysis_id": id})
	ev := data(pres)["evidence_id"].(string)
	st, err := evidence.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	man, err := st.Get(ev)
	if err != nil {
		t.Fatal(err)
	}
	fh, _, err := st.OpenArtifact(man, "result")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.NewDecoder(fh).Decode(&out); err != nil {
		t.Fatal(err)
	}
	full := mustCall(t, r, "list_symbols", map[string]any{"path": p, "limit": 1000})
	if len(out.Rows) != len(rows(full)) || len(out.Rows) <= 2 || fmt.Sprint(man.Coverage["rows"]) != fmt.Sprint(len(out.Rows)) {
		t.Errorf("preserved %d rows (coverage %v), tool has %d", len(out.Rows), man.Coverage, len(rows(full)))
	}
	if src, ok := man.Artifact("binary"); !ok || src.SHA256 != data(full)["file"].(map[string]any)["sha256"] {
		t.Errorf("source artifact %+v", src)
	}
	if again := mustCall(t, r, "preserve_evidence", map[string]any{"analysis_id": id}); data(again)["evidence_id"] != ev {
		t.Errorf("preserving twice made a second record: %v", data(again)["evidence_id"])
	}
	// inspect_evidence's next_action replays the record on its stored
	// artifact: the same rows.
	ie := mustCall(t, r, "inspect_evidence", map[string]any{"evidence_id": ev})
	next, _ := ie["next_action"].(map[string]any)
	if next == nil || next["tool"] != "list_symbols" {
		t.Fatalf("inspect_evidence names no replay: %v", ie["next_action"])
	}
	replay := mustCall(t, r, "list_symbols", next["arguments"])
	if fmt.Sprint(rows(replay)) != fmt.Sprint(rows(m)) {
		t.Errorf("replay rows differ from the live rows:\n%v\n%v", rows(replay), rows(m))
	}
	// Without a perf runtime there is no analysis_id to preserve.
	if _, ok := data(mustCall(t, registry(t, ""), "inspect_binary", map[string]any{"path": p}))["analysis_id"]; ok {
		t.Error("analysis_id without a runtime that retains it")
	}
}

// TestInspectGolden pins inspect_binary's status, warnings, coverage (the
// envelope's, per facet) and data for the committed stripped hardened
// fixture (-update rewrites testdata/golden/).
// The default call computes no digests and says so, and returns the
// header facts, hardening and counts with no facet rows (next_action asks
// for them); digests true adds the file and section sha256 and entropy,
// and with every facet the rows hold every list.
func TestInspectGolden(t *testing.T) {
	r := registry(t, "")
	for _, tc := range []struct {
		args   map[string]any
		golden string
	}{
		{map[string]any{"path": "testdata/hello-hardened.elf", "digests": true, "facets": ListFacets}, "inspect_hello_hardened.json"},
		{map[string]any{"path": "testdata/hello-hardened.elf"}, "inspect_hello_hardened_no_digests.json"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			m := mustCall(t, r, "inspect_binary", tc.args)
			d := data(m)
			delete(d["file"].(map[string]any), "modified_at")
			got, _ := json.MarshalIndent(map[string]any{"status": m["status"], "warnings": m["warnings"], "coverage": m["coverage"], "data": d}, "", "  ")
			golden(t, tc.golden, got)
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden %s; run with -update", path)
	}
	if strings.TrimSpace(string(want)) != strings.TrimSpace(string(got)) {
		t.Errorf("%s differs from the golden file; review and run with -update\n%s", name, got)
	}
}
