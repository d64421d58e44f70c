package perf

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
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

var (
	benchstatOnce sync.Once
	benchstatBin  string
	benchstatErr  error
)

// benchstatPath returns the benchstat binary built from golang.org/x/perf
// at the version go.mod requires, built once per machine (see
// cachedFixture) and shared by all tests.
func benchstatPath(t testing.TB) string {
	t.Helper()
	benchstatOnce.Do(func() {
		benchstatBin, benchstatErr = buildModuleTool("benchstat", "golang.org/x/perf", "golang.org/x/perf/cmd/benchstat")
	})
	if benchstatErr != nil {
		t.Fatal(benchstatErr)
	}
	return benchstatBin
}

// bsCell is one column's cells of a benchstat CSV row.
type bsCell struct {
	center, ci, delta, p string
	warnings             []string
}

// bsRow is one data or geomean row of benchstat's CSV output.
type bsRow struct {
	config map[string]string
	unit   string
	label  string
	cells  map[int]*bsCell
}

// runBenchstat runs benchstat -format csv with the flags over files
// labelled source-N, and returns its rows keyed by tableKey/label (the
// geomean row's label is "geomean") in order.
func runBenchstat(t *testing.T, flags []string, files ...string) ([]*bsRow, map[string]*bsRow) {
	t.Helper()
	args := append([]string{"-format", "csv"}, flags...)
	for i, f := range files {
		args = append(args, fmt.Sprintf("source-%d=%s", i, f))
	}
	cmd := exec.Command(benchstatPath(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("benchstat %v: %v\n%s", args, err, stderr.String())
	}
	// Warnings: "COLROW: message" (column letter = cell index).
	warnRE := regexp.MustCompile(`^([A-Z])([0-9]+): (.*)$`)
	warns := map[[2]int][]string{}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if m := warnRE.FindStringSubmatch(line); m != nil {
			row, _ := strconv.Atoi(m[2])
			warns[[2]int{row, int(m[1][0] - 'A')}] = append(warns[[2]int{row, int(m[1][0] - 'A')}], m[3])
		}
	}
	startCol := func(exp int) int {
		if exp == 0 {
			return 1
		}
		return 3 + (exp-1)*4
	}
	r := csv.NewReader(&stdout)
	r.FieldsPerRecord = -1
	var rows []*bsRow
	byKey := map[string]*bsRow{}
	cfg := map[string]string{}
	unit := ""
	inTable := false
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("benchstat csv: %v\n%s", err, stdout.String())
		}
		line, _ := r.FieldPos(0)
		switch {
		case len(rec) == 1 && rec[0] == "":
			inTable = false
			continue
		case len(rec) == 1 && strings.Contains(rec[0], ": "):
			// Table key lines ("pkg: x"); benchstat prints only the
			// keys that changed, and encoding/csv skips blank lines.
			k, v, _ := strings.Cut(rec[0], ": ")
			cfg = copyCfg(cfg)
			cfg[k] = v
			inTable = false
			continue
		case len(rec) >= 3 && rec[0] == "" && rec[2] == "CI":
			unit, inTable = rec[1], true
			continue
		case !inTable || rec[0] == "":
			continue // column key rows
		}
		row := &bsRow{config: copyCfg(cfg), unit: unit, label: rec[0], cells: map[int]*bsCell{}}
		for exp := 0; startCol(exp) < len(rec); exp++ {
			c := startCol(exp)
			cell := &bsCell{center: rec[c]}
			if c+1 < len(rec) {
				cell.ci = rec[c+1]
			}
			if exp > 0 && c+3 < len(rec) {
				cell.delta, cell.p = rec[c+2], rec[c+3]
			}
			cell.warnings = warns[[2]int{line, c}]
			if exp > 0 {
				cell.warnings = append(cell.warnings, warns[[2]int{line, c + 2}]...)
			}
			if cell.center == "" && cell.delta == "" && len(cell.warnings) == 0 {
				continue
			}
			row.cells[exp] = cell
		}
		rows = append(rows, row)
		byKey[tableKey(row.config, unit)+"/"+rec[0]] = row
	}
	return rows, byKey
}

func copyCfg(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// tableKey renders a configuration and unit canonically.
func tableKey(cfg map[string]string, unit string) string {
	var parts []string
	for k, v := range cfg {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ") + " " + unit
}

func cfgOf(v any) map[string]string {
	out := map[string]string{}
	for k, x := range v.(map[string]any) {
		out[k] = x.(string)
	}
	return out
}

// centerString renders our center as benchstat's CSV (fmt.Sprint of the
// float64); non-finite centers are our strings "NaN", "+Inf", "-Inf".
func centerString(v any) string {
	switch x := v.(type) {
	case float64:
		return fmt.Sprint(x)
	case string:
		return x
	}
	return fmt.Sprintf("%v", v)
}

func rangeCI(s map[string]any) string { return strings.TrimPrefix(s["range"].(string), "±") }

func warnList(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, w := range l {
			out = append(out, w.(string))
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// benchConformanceFiles writes benchmark result files covering
// configurations (two packages, a second goos), sub-benchmark keys, extra
// units, benchmarks present in one file only, different cpu lines,
// non-finite values and a malformed line.
func benchConformanceFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	gen := func(pkgs []string, cpu string, scale float64, extra string) string {
		var b strings.Builder
		b.WriteString("goos: linux\ngoarch: amd64\n")
		if cpu != "" {
			b.WriteString("cpu: " + cpu + "\n")
		}
		for pi, pkg := range pkgs {
			b.WriteString("pkg: " + pkg + "\n")
			for i := 0; i < 8; i++ {
				for _, size := range []int{10, 100} {
					v := (float64(100*size) + float64((i*37)%11)) * scale * float64(pi+1)
					fmt.Fprintf(&b, "BenchmarkEncode/size=%d-4 1000 %g ns/op %d B/op %d allocs/op\n", size, v, size*8, 2)
					fmt.Fprintf(&b, "BenchmarkDecode/size=%d-4 1000 %g ns/op %d B/op\n", size, v*1.5+float64(i%3), size*16)
				}
				fmt.Fprintf(&b, "BenchmarkHash-4 5000 %g ns/op\n", 42+float64(i%4)*scale)
			}
		}
		b.WriteString(extra)
		b.WriteString("PASS\nok  \texample.com/x\t1.2s\n")
		return b.String()
	}
	files := map[string]string{
		"base.txt":     gen([]string{"example.com/a", "example.com/b"}, "Intel Xeon", 1, "BenchmarkOnlyBase-4 10 5 ns/op\nBenchmarkBroken-4 notanumber ns/op\n"),
		"new.txt":      gen([]string{"example.com/a", "example.com/b"}, "Intel Xeon", 1.3, "BenchmarkOnlyNew-4 10 6 ns/op\n"),
		"third.txt":    gen([]string{"example.com/a"}, "Intel Xeon", 0.9, ""),
		"othercpu.txt": gen([]string{"example.com/a", "example.com/b"}, "AMD EPYC", 1.1, ""),
		// Two CPUs in one file: ignore cpu pools both in each cell, with
		// no residue warning (ignored keys are not residue), as benchstat.
		"mixedcpu.txt":  gen([]string{"example.com/a"}, "Intel Xeon", 1, "") + gen([]string{"example.com/a"}, "AMD EPYC", 1.2, ""),
		"nonfinite.txt": "goos: linux\npkg: example.com/n\nBenchmarkNaN-4 1 NaN ns/op\nBenchmarkNaN-4 1 NaN ns/op\nBenchmarkInf-4 1 +Inf ns/op\nBenchmarkInf-4 1 +Inf ns/op\nBenchmarkZero-4 1 0 ns/op\n",
		// No NaN benchmark here: benchstat does not terminate when it
		// compares a NaN sample (TestBenchmarksNaNCompare).
		"nonfinite2.txt": "goos: linux\npkg: example.com/n\nBenchmarkInf-4 1 +Inf ns/op\nBenchmarkInf-4 1 7 ns/op\nBenchmarkZero-4 1 2 ns/op\n",
		"nan3.txt":       "goos: linux\npkg: example.com/n\nBenchmarkNaN-4 1 3 ns/op\nBenchmarkNaN-4 1 4 ns/op\n",
		"empty.txt":      "",
		"formats.txt":    columnsFile("", []string{"BenchmarkEncode/format=json-4", "BenchmarkEncode/format=gob-4", "BenchmarkDecode/format=json-4", "BenchmarkDecode/format=gob-4"}),
		"notes.txt":      columnsFile("note: before\n", []string{"BenchmarkEncode-4", "BenchmarkDecode-4"}) + columnsFile("note: after\n", []string{"BenchmarkEncode-4", "BenchmarkDecode-4", "BenchmarkOnlyAfter-4"}),
		"noresults.txt":  "goos: linux\ngoarch: amd64\nPASS\nok  \texample.com/x\t0.1s\n",
	}
	paths := map[string]string{}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	return paths
}

// columnsFile is a results file with header and, for each benchmark
// name, eight runs whose values depend on the name and the header (so
// columns differ).
func columnsFile(header string, names []string) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: example.com/c\n" + header)
	for run := 0; run < 8; run++ {
		for ni, n := range names {
			v := 100 + 37*ni + 3*run + 11*len(header) + 5*len(n)
			fmt.Fprintf(&b, "%s 1000 %d ns/op %d B/op\n", n, v, 64*(ni+1))
		}
	}
	return b.String()
}

// TestBenchmarksConformanceBenchstat runs benchstat (built from x/perf in
// this run) and compare_benchmarks / summarize_benchmarks on the same
// files with the same -col/-row/-ignore/-filter/-alpha/-confidence, and
// checks every row: center, CI, delta, p-value and n text, cell and
// comparison warnings, and every table's geomean row per column (value,
// delta or "?", warnings).
func TestBenchmarksConformanceBenchstat(t *testing.T) {
	e := newEnv(t)
	p := benchConformanceFiles(t, e.dir)
	tests := []struct {
		name  string
		files []string
		args  map[string]any
		flags []string
	}{
		{"two files, two packages", []string{"base.txt", "new.txt"}, nil, nil},
		{"three files, benchmark sets differ", []string{"base.txt", "new.txt", "third.txt"}, nil, nil},
		{"col size", []string{"base.txt", "new.txt"}, map[string]any{"col": "/size"}, []string{"-col", "/size"}},
		{"row name", []string{"base.txt", "new.txt"}, map[string]any{"row": ".name"}, []string{"-row", ".name"}},
		{"cpu differs", []string{"base.txt", "othercpu.txt"}, nil, nil},
		{"ignore cpu", []string{"base.txt", "othercpu.txt"}, map[string]any{"ignore": "cpu"}, []string{"-ignore", "cpu"}},
		{"ignore cpu, cpus vary within a file", []string{"mixedcpu.txt", "third.txt"}, map[string]any{"ignore": "cpu"}, []string{"-ignore", "cpu"}},
		{"filter name and unit", []string{"base.txt", "new.txt"}, map[string]any{"filter": ".name:Encode .unit:sec/op"}, []string{"-filter", ".name:Encode .unit:sec/op"}},
		{"filter subkey", []string{"base.txt", "new.txt"}, map[string]any{"filter": "/size:100 OR .name:Hash"}, []string{"-filter", "/size:100 OR .name:Hash"}},
		{"alpha confidence", []string{"base.txt", "new.txt"}, map[string]any{"alpha": 0.01, "confidence": 0.9}, []string{"-alpha", "0.01", "-confidence", "0.9"}},
		{"non-finite", []string{"nonfinite.txt", "nonfinite2.txt"}, nil, nil},
		// An empty file (or one without result lines) is no column, as
		// in benchstat; the others are compared.
		{"empty middle file", []string{"base.txt", "empty.txt", "new.txt"}, nil, nil},
		{"empty first file", []string{"empty.txt", "base.txt", "new.txt"}, nil, nil},
		{"file without results", []string{"base.txt", "noresults.txt", "third.txt"}, nil, nil},
		// One file, columns by another projection (benchstat's
		// documentation: benchstat -col /format new.txt, -col note).
		{"one file col /format", []string{"formats.txt"}, map[string]any{"col": "/format"}, []string{"-col", "/format"}},
		{"one file col note", []string{"notes.txt"}, map[string]any{"col": "note"}, []string{"-col", "note"}},
		{"one file col /format row .name", []string{"formats.txt"}, map[string]any{"col": "/format", "row": ".name"}, []string{"-col", "/format", "-row", ".name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srcs []any
			var files []string
			for _, f := range tt.files {
				srcs = append(srcs, pathSrc(p[f], "gobench"))
				files = append(files, p[f])
			}
			args := map[string]any{"sources": srcs, "page_size": 7}
			for k, v := range tt.args {
				args[k] = v
			}
			res := e.mustCall("compare_benchmarks", args)
			rows := rowsOf(t, e, res)
			want, byKey := runBenchstat(t, tt.flags, files...)
			checkAgainstBenchstat(t, rows, allGeomeans(e, res), want, byKey)
			for i, f := range tt.files {
				if f == "empty.txt" || f == "noresults.txt" {
					if !strings.Contains(fmt.Sprint(res["warnings"]), "source "+strconv.Itoa(i)+" holds no Go benchmark result lines") || res["status"] != "partial" {
						t.Errorf("status %v warnings %v name no empty source %d", res["status"], res["warnings"], i)
					}
					if got := fmt.Sprint(res["coverage"].(map[string]any)["empty_sources"]); got != fmt.Sprintf("[%d]", i) {
						t.Errorf("coverage.empty_sources %s, want [%d]", got, i)
					}
				}
			}
		})
	}
	// One source without col has nothing to compare.
	if m, code := e.call("compare_benchmarks", map[string]any{"sources": []any{pathSrc(p["formats.txt"], "gobench")}}); code != contract.CodeInvalidArgument || m["error"].(map[string]any)["field"] != "/sources" {
		t.Errorf("one source without col: %s %v, want INVALID_ARGUMENT at /sources", code, m["error"])
	}
	// summarize_benchmarks is benchstat over one file.
	for _, tt := range []struct {
		name  string
		args  map[string]any
		flags []string
	}{
		{"summary", nil, nil},
		{"summary row name", map[string]any{"row": ".name"}, []string{"-row", ".name"}},
		{"summary filter", map[string]any{"filter": ".unit:B/op"}, []string{"-filter", ".unit:B/op"}},
		{"summary non-finite", map[string]any{"file": "nonfinite.txt"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := p["base.txt"]
			args := map[string]any{"page_size": 9}
			for k, v := range tt.args {
				if k == "file" {
					file = p[v.(string)]
					continue
				}
				args[k] = v
			}
			args["sources"] = []any{pathSrc(file, "gobench")}
			res := e.mustCall("summarize_benchmarks", args)
			rows := rowsOf(t, e, res)
			want, byKey := runBenchstat(t, tt.flags, file)
			n := 0
			for _, w := range want {
				if w.label != "geomean" {
					n++
				}
			}
			if len(rows) != n {
				t.Errorf("%d rows, benchstat %d", len(rows), n)
			}
			for _, r := range rows {
				w := byKey[tableKey(cfgOf(r["config"]), r["unit"].(string))+"/"+r["benchmark"].(string)]
				if w == nil || w.cells[0] == nil {
					t.Errorf("benchstat has no row %v", r)
					continue
				}
				if centerString(r["center"]) != w.cells[0].center || rangeCI(r) != w.cells[0].ci || !sameSet(warnList(r["warnings"]), w.cells[0].warnings) {
					t.Errorf("%s %s: %v %v %v; benchstat %+v", r["benchmark"], r["unit"], r["center"], r["range"], r["warnings"], *w.cells[0])
				}
			}
			for _, g := range allGeomeans(e, res) {
				gm := g.(map[string]any)
				w := byKey[tableKey(cfgOf(gm["config"]), gm["unit"].(string))+"/geomean"]
				center := ""
				if gm["geomean"] != nil {
					center = centerString(gm["geomean"])
				}
				if w == nil || w.cells[0] == nil || center != w.cells[0].center || !sameSet(warnList(gm["warnings"]), w.cells[0].warnings) {
					t.Errorf("geomean %v, benchstat %+v", gm, w)
				}
			}
		})
	}
}

// checkAgainstBenchstat checks compare_benchmarks rows and geomeans
// against benchstat's CSV rows, both ways.
func checkAgainstBenchstat(t *testing.T, rows []map[string]any, geo []any, want []*bsRow, byKey map[string]*bsRow) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range rows {
		key := tableKey(cfgOf(r["config"]), r["unit"].(string)) + "/" + r["benchmark"].(string)
		w := byKey[key]
		if w == nil {
			t.Errorf("benchstat has no row %s", key)
			continue
		}
		seen[key] = true
		if b, ok := r["base"].(map[string]any); ok {
			c := w.cells[0]
			if c == nil || centerString(b["center"]) != c.center || rangeCI(b) != c.ci || !sameSet(warnList(b["warnings"]), c.warnings) {
				t.Errorf("%s base %v %v %v; benchstat %+v", key, b["center"], b["range"], b["warnings"], c)
			}
		} else if w.cells[0] != nil && r["candidate"].(float64) > 0 {
			t.Errorf("%s: no base, benchstat has %+v", key, *w.cells[0])
		}
		ci := int(r["candidate"].(float64))
		if ci == 0 {
			continue
		}
		c := w.cells[ci]
		cs, ok := r["candidate_summary"].(map[string]any)
		if !ok {
			if c != nil && c.center != "" {
				t.Errorf("%s column %d missing, benchstat has %+v", key, ci, *c)
			}
			continue
		}
		if c == nil {
			t.Errorf("%s column %d: benchstat has no cell", key, ci)
			continue
		}
		var ourWarn []string
		ourWarn = append(ourWarn, warnList(cs["warnings"])...)
		ourWarn = append(ourWarn, warnList(r["warnings"])...)
		if centerString(cs["center"]) != c.center || rangeCI(cs) != c.ci || !sameSet(ourWarn, c.warnings) {
			t.Errorf("%s column %d: %v %v %v; benchstat %+v", key, ci, cs["center"], cs["range"], ourWarn, *c)
		}
		if r["base"] != nil {
			if r["delta"] != c.delta || r["comparison"] != c.p {
				t.Errorf("%s column %d: delta %v (%v); benchstat %s (%s)", key, ci, r["delta"], r["comparison"], c.delta, c.p)
			}
		}
	}
	for _, w := range want {
		key := tableKey(w.config, w.unit) + "/" + w.label
		if w.label != "geomean" && !seen[key] {
			t.Errorf("benchstat row %s is missing", key)
		}
	}
	// Geomean rows: one per table, each column over its own benchmarks.
	nGeo := 0
	for _, g := range geo {
		gm := g.(map[string]any)
		key := tableKey(cfgOf(gm["config"]), gm["unit"].(string)) + "/geomean"
		w := byKey[key]
		if w == nil {
			t.Errorf("benchstat has no geomean row %s", key)
			continue
		}
		nGeo++
		i := int(gm["column_index"].(float64))
		c := w.cells[i]
		if c == nil {
			t.Errorf("%s column %d: benchstat has no geomean cell", key, i)
			continue
		}
		center := ""
		if gm["geomean"] != nil {
			center = centerString(gm["geomean"])
		}
		if center != c.center || !sameSet(warnList(gm["warnings"]), c.warnings) {
			t.Errorf("%s column %d geomean %v %v; benchstat %+v", key, i, gm["geomean"], gm["warnings"], *c)
		}
		if i > 0 && gm["delta"] != c.delta {
			t.Errorf("%s column %d geomean delta %v; benchstat %q", key, i, gm["delta"], c.delta)
		}
	}
	tables := 0
	for _, w := range want {
		if w.label == "geomean" {
			tables += len(w.cells)
		}
	}
	if nGeo != tables {
		t.Errorf("%d geomean cells, benchstat %d", nGeo, tables)
	}
}

// TestBenchmarksNaNCompare: a NaN sample compared with numbers is not
// compared (benchstat's Mann-Whitney U does not terminate on it); the
// row says so and the centers are the string "NaN".
func TestBenchmarksNaNCompare(t *testing.T) {
	e := newEnv(t)
	p := benchConformanceFiles(t, e.dir)
	res := e.mustCall("compare_benchmarks", map[string]any{"sources": []any{pathSrc(p["nonfinite.txt"], "gobench"), pathSrc(p["nan3.txt"], "gobench")}})
	found := false
	for _, r := range rowsOf(t, e, res) {
		if r["benchmark"] == "NaN-4" && r["candidate_summary"] != nil {
			found = true
			if r["verdict"] != "not_compared" || r["delta"] != "?" || r["base"].(map[string]any)["center"] != "NaN" || r["p_value"] != nil {
				t.Errorf("NaN row %v", r)
			}
		}
	}
	if !found {
		t.Fatal("no NaN row")
	}
}

// TestBenchmarksConfigurationWarning: sources whose configurations differ
// (different cpu: lines) land in separate, uncompared tables, as in
// benchstat; the result says why and which ignore compares them.
func TestBenchmarksConfigurationWarning(t *testing.T) {
	e := newEnv(t)
	p := benchConformanceFiles(t, e.dir)
	res := e.mustCall("compare_benchmarks", map[string]any{"sources": []any{pathSrc(p["base.txt"], "gobench"), pathSrc(p["othercpu.txt"], "gobench")}, "page_size": 1})
	if !strings.Contains(mustJSON(res["warnings"]), `configurations differ in cpu`) || res["status"] != "partial" {
		t.Fatalf("warnings %v", res["warnings"])
	}
	res = e.mustCall("compare_benchmarks", map[string]any{"sources": []any{pathSrc(p["base.txt"], "gobench"), pathSrc(p["othercpu.txt"], "gobench")}, "ignore": "cpu", "page_size": 1000})
	if strings.Contains(mustJSON(res["warnings"]), "configurations differ") {
		t.Fatalf("ignore cpu still warns: %v", res["warnings"])
	}
	for _, r := range data(res)["rows"].([]any) {
		if v := r.(map[string]any)["verdict"]; v == "no_other_column" {
			t.Fatalf("ignore cpu left an uncompared row: %v", r)
		}
	}
}

// allGeomeans follows res's pages and returns every table's geomean
// entries once each, in order: each page's summary.geomean carries the
// geomeans of the tables with a row on that page.
func allGeomeans(e *env, res map[string]any) []any {
	var out []any
	seen := map[string]bool{}
	for cur := res; ; {
		for _, g := range data(cur)["summary"].(map[string]any)["geomean"].([]any) {
			if k := mustJSON(g); !seen[k] {
				seen[k] = true
				out = append(out, g)
			}
		}
		na, _ := cur["next_action"].(map[string]any)
		if na == nil {
			return out
		}
		cur = e.mustCall(na["tool"].(string), na["arguments"])
	}
}
