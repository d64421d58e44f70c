package bin

import (
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inquest-dev/inquest/internal/bin/har"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// TestDeclarations walks bin.Tools: every tool is declared with
// tool.Define (its schema and arguments struct agree), is read-only,
// idempotent and not destructive, takes no preserve argument, and pages
// with cursor through the bin paging descriptor.
func TestDeclarations(t *testing.T) {
	tools := Tools(Env{})
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		if err := tool.CheckArgs(tl); err != nil {
			t.Error(err)
		}
		if a := tl.Annotations; !a.ReadOnly || !a.Idempotent || a.Destructive || a.OpenWorld {
			t.Errorf("%s: annotations %+v, want read-only and idempotent", tl.Name, a)
		}
		if tl.Toolset != tool.Bin {
			t.Errorf("%s: toolset %q", tl.Name, tl.Toolset)
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tl.Input, &s); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Properties["preserve"]; ok {
			t.Errorf("%s: still takes preserve (preserve_evidence does)", tl.Name)
		}
		if tl.Paging == nil || tl.Paging.Token != "cursor" {
			t.Errorf("%s: paging %+v, want cursor paging", tl.Name, tl.Paging)
			continue
		}
		for _, arg := range []string{tl.Paging.Token, tl.Paging.Limit} {
			if _, ok := s.Properties[arg]; !ok {
				t.Errorf("%s: paging argument %q is not in the schema", tl.Name, arg)
			}
		}
	}
	want := []string{"inspect_binary", "list_symbols", "search_strings", "disassemble", "compare_binaries", "inspect_http_capture", "compare_http_captures"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("Tools() = %v, want %v", names, want)
	}
}

// TestHTTPVerdictEnum: compare_http_captures' verdicts enum is the har
// package's verdict list.
func TestHTTPVerdictEnum(t *testing.T) {
	for _, tl := range Tools(Env{}) {
		if tl.Name != "compare_http_captures" {
			continue
		}
		var s struct {
			Properties struct {
				Verdicts struct {
					Items struct {
						Enum []string `json:"enum"`
					} `json:"items"`
				} `json:"verdicts"`
			} `json:"properties"`
		}
		_ = json.Unmarshal(tl.Input, &s)
		got := s.Properties.Verdicts.Items.Enum
		if !reflect.DeepEqual(got, har.Verdicts) {
			t.Errorf("verdicts enum %v, har.Verdicts %v", got, har.Verdicts)
		}
	}
}

// writeHAR writes a HAR capture with n distinct request groups.
func writeHAR(t testing.TB, n int) string {
	t.Helper()
	var entries []string
	for i := range n {
		entries = append(entries, fmt.Sprintf(`{"request":{"method":"GET","url":"https://x.test/%d"},"response":{"status":200,"content":{"size":1,"mimeType":"text/plain","text":"x"}},"time":1}`, i))
	}
	p := filepath.Join(t.TempDir(), "c.har")
	if err := os.WriteFile(p, []byte(`{"log":{"version":"1.2","creator":{"name":"t"},"entries":[`+strings.Join(entries, ",")+`]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// follow calls name with args and follows next_action while the page
// says more, checking each page's shape; it returns every row in order.
func follow(t *testing.T, ctx context.Context, r *tool.Registry, name string, args map[string]any) (rows []string, pages int, warnings []string) {
	t.Helper()
	var offset float64
	for pages = 1; ; pages++ {
		raw, _ := json.Marshal(args)
		res, err := r.Call(ctx, name, raw)
		if err != nil {
			t.Fatalf("%s page %d: %v", name, pages, err)
		}
		body, _ := contract.Marshal(res, nil)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		d := data(m)
		pg, ok := d["page"].(map[string]any)
		if !ok {
			t.Fatalf("%s: no data.page: %v", name, d)
		}
		var keys []string
		for k := range pg {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if k := strings.Join(keys, ","); k != "more,offset,returned,size" && k != "more,offset,returned,size,total" {
			t.Fatalf("%s: page keys %s", name, k)
		}
		if pages == 1 {
			offset = pg["offset"].(float64) // a resumed listing starts past 0
		}
		if pg["offset"] != offset {
			t.Fatalf("%s page %d: offset %v, want %v", name, pages, pg["offset"], offset)
		}
		rs := d["rows"].([]any)
		if int(pg["returned"].(float64)) != len(rs) {
			t.Fatalf("%s: page.returned %v for %d rows", name, pg["returned"], len(rs))
		}
		for _, row := range rs {
			b, _ := json.Marshal(row)
			rows = append(rows, string(b))
		}
		offset += float64(len(rs))
		for _, w := range m["warnings"].([]any) {
			warnings = append(warnings, w.(string))
		}
		if pg["more"] != true {
			if tot, ok := pg["total"]; ok && tot != offset {
				t.Fatalf("%s: page.total %v, rows %v", name, tot, offset)
			}
			if _, ok := d["analysis_id"].(string); !ok {
				t.Errorf("%s: no analysis_id", name)
			}
			return rows, pages, warnings
		}
		next, _ := m["next_action"].(map[string]any)
		if next == nil || next["tool"] != name || d["next_cursor"] == nil {
			t.Fatalf("%s: more rows but next_action %v next_cursor %v", name, m["next_action"], d["next_cursor"])
		}
		args = next["arguments"].(map[string]any)
		if args["cursor"] != d["next_cursor"] {
			t.Fatalf("%s: next_action cursor is not data.next_cursor", name)
		}
		if pages > 10000 {
			t.Fatalf("%s: no end after %d pages", name, pages)
		}
	}
}

// TestNextActionReplaysEveryPage: for every bin tool, on binaries and a
// HAR capture the test builds, following next_action from a small page
// until page.more is false yields exactly the rows of one large page, in
// the same order, each once; every page has the same page shape.
func TestNextActionReplaysEveryPage(t *testing.T) {
	buildCorpus(t)
	har := writeHAR(t, 23)
	side := map[string]any{"path": har}
	bin, changed := corpus["go-linux-amd64"], corpus["go-linux-amd64-changed"]
	r := registry(t, t.TempDir())
	covered := map[string]bool{}
	cases := []struct {
		name  string
		args  map[string]any
		small map[string]any
		big   map[string]any
	}{
		{name: "inspect_binary", args: map[string]any{"path": bin, "facets": ListFacets}, small: map[string]any{"limit": 7}, big: map[string]any{"limit": 1000}},
		{name: "list_symbols", args: map[string]any{"path": bin, "name_contains": "main."}, small: map[string]any{"limit": 3}, big: map[string]any{"limit": 1000}},
		{name: "search_strings", args: map[string]any{"path": bin, "regex": "^runtime\\.[a-z]+$"}, small: map[string]any{"limit": 40}, big: map[string]any{"limit": 1000}},
		{name: "disassemble", args: map[string]any{"path": bin, "symbol": "main.main"}, small: map[string]any{"max_instructions": 5}, big: map[string]any{"max_instructions": 5000}},
		{name: "compare_binaries", args: map[string]any{"left": bin, "right": changed, "kinds": []string{"section", "import"}}, small: map[string]any{"limit": 4}, big: map[string]any{"limit": 1000}},
		{name: "inspect_http_capture", args: map[string]any{"path": har}, small: map[string]any{"limit": 5}, big: map[string]any{"limit": 1000}},
		{name: "compare_http_captures", args: map[string]any{"left": side, "right": side}, small: map[string]any{"limit": 5}, big: map[string]any{"limit": 1000}},
	}
	for _, c := range cases {
		covered[c.name] = true
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			with := func(extra map[string]any) map[string]any {
				m := map[string]any{}
				for k, v := range c.args {
					m[k] = v
				}
				for k, v := range extra {
					m[k] = v
				}
				return m
			}
			want, _, _ := follow(t, context.Background(), r, c.name, with(c.big))
			got, pages, _ := follow(t, context.Background(), r, c.name, with(c.small))
			if pages < 2 {
				t.Fatalf("only %d page(s) of %d rows: the test does not page", pages, len(got))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%d rows over %d pages differ from the %d rows of one page", len(got), pages, len(want))
			}
			seen := map[string]bool{}
			for _, row := range got {
				if seen[row] {
					t.Fatalf("row delivered twice: %s", row)
				}
				seen[row] = true
			}
		})
	}
	for _, tl := range Tools(Env{}) {
		if !covered[tl.Name] {
			t.Errorf("%s is not covered by the next_action loop", tl.Name)
		}
	}
}

// TestByteBudgetEndsPage: a page whose rows pass the call's result byte
// budget ends early (row-complete), says bytes ended it, and names the
// next call; following it yields every row once.
func TestByteBudgetEndsPage(t *testing.T) {
	buildCorpus(t)
	r := registry(t, t.TempDir())
	args := map[string]any{"path": corpus["go-linux-amd64"], "limit": 1000}
	want, _, _ := follow(t, context.Background(), r, "list_symbols", args)
	if len(want) < 1000 {
		t.Fatalf("only %d symbols", len(want))
	}
	ctx := tool.WithResultBudget(context.Background(), 24<<10)
	got, pages, warnings := follow(t, ctx, r, "list_symbols", map[string]any{"path": corpus["go-linux-amd64"], "limit": 1000})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("budgeted pages delivered %d rows, want %d", len(got), len(want))
	}
	if pages <= (len(want)+999)/1000 || !strings.Contains(strings.Join(warnings, "\n"), tool.BudgetWarning) {
		t.Fatalf("%d pages, warnings %v: the byte budget did not end a page", pages, warnings)
	}
	// A default result fits the default budget (text and structured
	// content together).
	raw, _ := json.Marshal(map[string]any{"path": corpus["go-linux-amd64"], "limit": 1000})
	res, err := r.Call(context.Background(), "list_symbols", raw)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := contract.Marshal(res, nil)
	if 2*len(body) > tool.DefaultResultBytes {
		t.Errorf("a default page is %d bytes, twice that passes the %d-byte budget", len(body), tool.DefaultResultBytes)
	}
}

// TestInspectDefaultFitsBudget: inspect_binary without facets returns the
// header facts, hardening and counts only, within the default budget, and
// names the call that lists the facets; a facet row names its facet.
func TestInspectDefaultFitsBudget(t *testing.T) {
	buildCorpus(t)
	r := registry(t, "")
	for _, p := range []string{corpus["go-linux-amd64"], "/usr/lib/x86_64-linux-gnu/libm.so.6"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		m := mustCall(t, r, "inspect_binary", map[string]any{"path": p})
		body, _ := json.Marshal(m)
		if 2*len(body) > tool.DefaultResultBytes {
			t.Errorf("%s: default inspect is %d bytes", p, len(body))
		}
		d := data(m)
		counts := d["counts"].(map[string]any)
		if counts["sections"].(float64) == 0 || len(rows(m)) != 0 {
			t.Errorf("%s: counts %v rows %d", p, counts, len(rows(m)))
		}
		for _, k := range ListFacets {
			if _, ok := d["inspection"].(map[string]any)[k]; ok {
				t.Errorf("%s: the default result holds the %s list", p, k)
			}
		}
		next, _ := m["next_action"].(map[string]any)
		if next == nil || next["tool"] != "inspect_binary" {
			t.Fatalf("%s: next_action %v", p, m["next_action"])
		}
		fm := mustCall(t, r, "inspect_binary", map[string]any{"path": p, "facets": []string{"sections"}, "limit": 1000})
		if n := len(rows(fm)); float64(n) != counts["sections"] {
			t.Errorf("%s: %d section rows, counts say %v", p, n, counts["sections"])
		}
		if f := rows(fm)[0].(map[string]any)["facet"]; f != "sections" {
			t.Errorf("%s: row facet %v", p, f)
		}
	}
}

// cancelAfter is a context whose Err turns to context.Canceled after its
// first n calls: a deterministic "cancelled mid-scan" (search_strings
// polls Err every 4096 strings), independent of timing.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestSearchStringsCancelledMidScan: a search cancelled mid-scan of a
// large file returns partial evidence: every match in the scanned range
// (none beyond), the scanned range, the cancellation as a limitation, and
// a next_action that resumes where the scan stopped; following it yields
// the rest, each match once. Preserving the cancelled result keeps the
// rows delivered, the scanned range and the reason.
func TestSearchStringsCancelledMidScan(t *testing.T) {
	const n = 2_000_000 // 9 bytes each: an 18 MB file
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "s%07d\n", i)
	}
	p := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	r := registry(t, store)
	args := map[string]any{"path": p, "regex": "00$", "encodings": []string{"ascii"}, "limit": 1000}
	raw, _ := json.Marshal(args)
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(8)
	res, err := r.Call(ctx, "search_strings", raw)
	if err != nil {
		t.Fatalf("cancelled search: %v", err)
	}
	body, _ := contract.Marshal(res, nil)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	d := data(m)
	if _, dup := d["coverage"]; dup {
		t.Error("data repeats the envelope's coverage")
	}
	cov := m["coverage"].(map[string]any)
	sc, _ := cov["scanned"].(map[string]any)
	if m["status"] != "partial" || cov["cancelled"] != true || sc == nil || !strings.Contains(fmt.Sprint(m["warnings"]), "cancelled") {
		t.Fatalf("status %v coverage %v warnings %v", m["status"], cov, m["warnings"])
	}
	var to int
	fmt.Sscan(sc["to"].(string), &to)
	if to <= 0 || to >= n*9 {
		t.Fatalf("scanned to %d of %d bytes: not mid-scan", to, n*9)
	}
	got := rows(m)
	// Every match in [0, to) is present: the strings s%07d whose number
	// ends in 00 and that start before to.
	want := 0
	for i := 0; i < n && i*9 < to; i += 100 {
		want++
	}
	if len(got) != want || want == 0 {
		t.Fatalf("%d rows in the scanned range [0, %d), want %d", len(got), to, want)
	}
	for i, row := range got {
		if off := row.(map[string]any)["offset"]; off != fmt.Sprint(i*900) {
			t.Fatalf("row %d at offset %v", i, off)
		}
	}
	// Resume: the rest, each once.
	next := m["next_action"].(map[string]any)
	rest, _, _ := follow(t, context.Background(), r, "search_strings", next["arguments"].(map[string]any))
	if len(got)+len(rest) != n/100 {
		t.Fatalf("%d + %d rows after resuming, want %d", len(got), len(rest), n/100)
	}
	// Preserve the cancelled result: the record keeps its rows, range
	// and reason, and is partial.
	pres := mustCall(t, r, "preserve_evidence", map[string]any{"analysis_id": d["analysis_id"]})
	man := data(pres)["manifest"].(map[string]any)
	mc := man["coverage"].(map[string]any)
	if man["status"] != "partial" || fmt.Sprint(mc["rows"]) != fmt.Sprint(len(got)) || !strings.Contains(fmt.Sprint(mc["limitations"]), "cancelled") {
		t.Errorf("preserved record %v", man)
	}
}

// TestPreservedRecordKeepsPartialReasons (issue 23 case 8): list_symbols
// on an ELF whose .symtab is cut off is partial and says why; the
// preserved record keeps that reason and the unresolved structure, not
// only {complete:false}.
func TestPreservedRecordKeepsPartialReasons(t *testing.T) {
	buildCorpus(t)
	src, err := os.ReadFile(corpus["go-linux-amd64"])
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(corpus["go-linux-amd64"])
	if err != nil {
		t.Fatal(err)
	}
	st := ef.Section(".symtab")
	ef.Close()
	if st == nil {
		t.Skip("no .symtab")
	}
	// Cut the file inside .symtab.
	cut := src[:st.Offset+st.Size/2]
	p := filepath.Join(t.TempDir(), "cut")
	if err := os.WriteFile(p, cut, 0o700); err != nil {
		t.Fatal(err)
	}
	r := registry(t, t.TempDir())
	m, err := call(t, r, "list_symbols", map[string]any{"path": p})
	if err != nil {
		t.Skipf("list_symbols on the cut file: %v (section table unreadable)", err)
	}
	if m["status"] != "partial" {
		t.Fatalf("cut .symtab: status %v", m["status"])
	}
	pres := mustCall(t, r, "preserve_evidence", map[string]any{"analysis_id": data(m)["analysis_id"]})
	man := data(pres)["manifest"].(map[string]any)
	mc := man["coverage"].(map[string]any)
	if man["status"] != "partial" || mc["limitations"] == nil {
		t.Fatalf("record %v", man)
	}
	for _, w := range m["warnings"].([]any) {
		if strings.HasPrefix(w.(string), "page of rows") {
			continue
		}
		if !strings.Contains(fmt.Sprint(mc["limitations"]), w.(string)) {
			t.Errorf("the record lost the live limitation %q: %v", w, mc["limitations"])
		}
	}
}

// TestReplayArgumentsPerTool: Replay names each tool's input arguments
// from the record's artifacts.
func TestReplayArgumentsPerTool(t *testing.T) {
	paths := func(name string) string { return "/store/" + name }
	for _, c := range []struct {
		op   string
		args map[string]any
		want string
	}{
		{"list_symbols", map[string]any{"path": "/x", "limit": 3}, `{"limit":3,"path":"/store/binary"}`},
		{"compare_binaries", map[string]any{"left": "/a", "right": "/b"}, `{"left":"/store/left","right":"/store/right"}`},
		{"inspect_http_capture", map[string]any{"path": "/h"}, `{"path":"/store/capture"}`},
		{"compare_http_captures", map[string]any{"left": map[string]any{"path": "/a", "completeness": "complete"}, "right": map[string]any{"path": "/b"}}, `{"left":{"completeness":"complete","path":"/store/left"},"right":{"path":"/store/right"}}`},
	} {
		a := Replay(&evidence.Manifest{Operation: c.op, Arguments: c.args}, paths)
		b, _ := json.Marshal(a.Arguments)
		if a.Tool != c.op || string(b) != c.want {
			t.Errorf("%s: %s %s, want %s", c.op, a.Tool, b, c.want)
		}
	}
	if Replay(&evidence.Manifest{Operation: "list_symbols"}, func(string) string { return "" }) != nil {
		t.Error("a replay without its artifact")
	}
}

// TestInspectLargeBinaryFitsBudget (issue 12): a real 100 MB shared
// library with 20,000 exports, built by the test: the default
// inspect_binary result stays within the default result budget, and its
// counts are readelf's section count and nm's defined dynamic symbol
// count, read in the same run; a page of its exports ends at the byte
// budget.
func TestInspectLargeBinaryFitsBudget(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	if runtime.GOARCH != "amd64" {
		t.Skip("the fixture is x86-64 assembly")
	}
	// 20,000 exported functions and 100 MiB of initialised data, written
	// as assembly: gcc assembles and links it in seconds, where compiling
	// the same functions from C took minutes on a loaded machine.
	var src strings.Builder
	src.WriteString(".text\n")
	for i := range 20000 {
		fmt.Fprintf(&src, ".globl f%[1]d\n.type f%[1]d,@function\nf%[1]d:\n\tleal %[1]d(%%rdi),%%eax\n\tret\n.size f%[1]d,.-f%[1]d\n", i)
	}
	src.WriteString(".data\n.globl big\n.type big,@object\nbig:\n\t.byte 1\n\t.zero 104857599\n.size big,104857600\n.section .note.GNU-stack,\"\",@progbits\n")
	if err := os.WriteFile(filepath.Join(dir, "big.s"), []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	so := filepath.Join(dir, "big.so")
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", so, filepath.Join(dir, "big.s")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v %s", err, out)
	}
	r := registry(t, t.TempDir())
	m := mustCall(t, r, "inspect_binary", map[string]any{"path": so})
	body, _ := json.Marshal(m)
	if 2*len(body) > tool.DefaultResultBytes {
		t.Errorf("default inspect of a 100 MB binary is %d bytes (delivered twice)", len(body))
	}
	counts := data(m)["counts"].(map[string]any)
	nm, err := exec.Command("nm", "-D", "--defined-only", so).Output()
	if err != nil {
		t.Skipf("nm: %v", err)
	}
	if want := strings.Count(string(nm), "\n"); counts["exports"] != float64(want) {
		t.Errorf("exports %v, nm -D --defined-only lists %d", counts["exports"], want)
	}
	re, err := exec.Command("readelf", "-SW", so).Output()
	if err != nil {
		t.Skipf("readelf: %v", err)
	}
	sections := 0
	for _, l := range strings.Split(string(re), "\n") {
		if f := strings.Fields(strings.TrimSpace(strings.Replace(l, "[ ", "[", 1))); len(f) > 0 && strings.HasPrefix(f[0], "[") && f[0] != "[Nr]" {
			sections++
		}
	}
	if counts["sections"] != float64(sections) {
		t.Errorf("sections %v, readelf -S lists %d", counts["sections"], sections)
	}
	// A facet page of 1000 exports ends at the byte budget, row-complete,
	// and counts the whole listing.
	fm := mustCall(t, r, "inspect_binary", map[string]any{"path": so, "facets": []string{"exports"}, "limit": 1000})
	pg := data(fm)["page"].(map[string]any)
	body, _ = json.Marshal(fm)
	if 2*len(body) > tool.DefaultResultBytes || pg["more"] != true || pg["total"] != counts["exports"] || !strings.Contains(fmt.Sprint(fm["warnings"]), tool.BudgetWarning) {
		t.Errorf("exports page: %d bytes, page %v, warnings %v", len(body), pg, fm["warnings"])
	}
}

// FuzzSearchStringsResume: a string search cancelled after any number of
// context polls (one per string here) and resumed at the offset it
// reports finds exactly the matches of one uninterrupted search, in
// order, each once.
func FuzzSearchStringsResume(f *testing.F) {
	f.Add([]byte("hello world\x00a\x00b\x00c\x00d\x00\x00longer string here"), uint8(2), uint8(4), false)
	f.Add([]byte("abcd\x00e\x00f\x00g\x00h\x00ijkl"), uint8(1), uint8(2), true)
	f.Fuzz(func(t *testing.T, data []byte, after, minLen uint8, regex bool) {
		prev := cancelCheckEvery
		cancelCheckEvery = 1
		defer func() { cancelCheckEvery = prev }()
		q := StringQuery{Encodings: []string{EncASCII, EncUTF16LE}, MinLength: 2 + int(minLen%6), Lo: 0, Hi: len(data)}
		if regex {
			q.Regex = regexp.MustCompile("[aeiou]")
		}
		in := newInspection()
		want, next, _, err := searchStrings(context.Background(), in, data, q, 0, 1<<30)
		if err != nil || next != -1 {
			t.Fatalf("uninterrupted: next %d err %v", next, err)
		}
		var got []StringMatch
		from := 0
		for round := 0; ; round++ {
			ctx := &cancelAfter{Context: context.Background()}
			ctx.n.Store(int64(after%8) + 1)
			rows, next, _, err := searchStrings(ctx, in, data, q, from, 1<<30)
			got = append(got, rows...)
			if err == nil {
				if next != -1 {
					t.Fatalf("no cancellation but next %d", next)
				}
				break
			}
			if next < from || next > len(data) {
				t.Fatalf("resume offset %d outside [%d, %d]", next, from, len(data))
			}
			if next == from && len(rows) == 0 && round > len(data)+2 {
				t.Fatalf("no progress at %d", from)
			}
			from = next
		}
		if len(got) != len(want) {
			t.Fatalf("resumed search found %d matches, uninterrupted %d", len(got), len(want))
		}
		for i := range got {
			if got[i].Offset != want[i].Offset || got[i].Text != want[i].Text || got[i].Encoding != want[i].Encoding {
				t.Fatalf("match %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

// TestCancelledAtEveryPoll (issue 23 acceptance, the cancelled column):
// every bin tool, its context ending after each of its first polls,
// either fails with CANCELLED or returns a result that is the
// uncancelled one (same status and rows) or partial evidence naming the
// cancellation; never a shortened result presented as the whole, never
// another error code.
func TestCancelledAtEveryPoll(t *testing.T) {
	buildCorpus(t)
	har := writeHAR(t, 5)
	side := map[string]any{"path": har}
	bin := corpus["go-linux-amd64"]
	r := registry(t, "")
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"inspect_binary", map[string]any{"path": bin, "facets": []string{"sections", "go_deps"}}},
		{"list_symbols", map[string]any{"path": bin, "name_contains": "main."}},
		{"search_strings", map[string]any{"path": bin, "regex": "^runtime\\.[a-z]+$", "limit": 1000}},
		{"disassemble", map[string]any{"path": bin, "symbol": "main.main"}},
		{"compare_binaries", map[string]any{"left": bin, "right": corpus["go-linux-amd64-changed"], "kinds": []string{"section"}}},
		{"inspect_http_capture", map[string]any{"path": har}},
		{"compare_http_captures", map[string]any{"left": side, "right": side}},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, _ := json.Marshal(c.args)
			full, err := r.Call(context.Background(), c.name, raw)
			if err != nil {
				t.Fatal(err)
			}
			wantRows, _ := json.Marshal(full.Data.(*paged).Rows)
			partials := 0
			for n := int64(0); n < 40; n++ {
				ctx := &cancelAfter{Context: context.Background()}
				ctx.n.Store(n)
				res, err := r.Call(ctx, c.name, raw)
				if err != nil {
					if code := contract.CodeOf(err); code != contract.CodeCancelled {
						t.Fatalf("cancelled after %d polls: %v", n, err)
					}
					continue
				}
				d := res.Data.(*paged)
				got, _ := json.Marshal(d.Rows)
				switch {
				case d.Coverage.Cancelled:
					partials++
					if res.Status != contract.StatusPartial || d.Coverage.Scanned == nil || res.NextAction == nil {
						t.Fatalf("cancelled after %d polls: status %s scanned %v next %v", n, res.Status, d.Coverage.Scanned, res.NextAction)
					}
				case res.Status != full.Status || string(got) != string(wantRows):
					t.Fatalf("cancelled after %d polls: status %s and %d bytes of rows, uncancelled %s and %d", n, res.Status, len(got), full.Status, len(wantRows))
				}
			}
			if c.name == "search_strings" && partials == 0 {
				t.Error("no cancellation fell mid-scan: the test does not exercise partial evidence")
			}
		})
	}
}
