package perf

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

const benchWorkV1 = `package work

//go:noinline
func Sum(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}
`

// benchWorkV2 does the same work three times: clearly slower.
const benchWorkV2 = `package work

//go:noinline
func Sum(n int) int {
	s := 0
	for r := 0; r < 3; r++ {
		for i := 0; i < n; i++ {
			s += (i*i + r) % 7
		}
	}
	return s
}
`

const benchWorkTest = `package work

import "testing"

var sink int

func BenchmarkSum(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sink += Sum(1000)
	}
}

func BenchmarkConst(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sink += i
	}
}
`

var (
	benchResultsOnce     sync.Once
	benchBase, benchCand string
	benchResultsErr      error
)

// makeBenchResults writes two versions of a package, runs
// `go test -bench . -count 10` in each, and returns the result files. The
// files are made once per machine (cached, see cachedFixture, keyed by the
// sources and the go version); tests only read them.
func makeBenchResults(t *testing.T) (string, string) {
	t.Helper()
	benchResultsOnce.Do(func() {
		dir, err := cachedFixture("benchresults", func(dir string) error {
			for i, src := range []string{benchWorkV1, benchWorkV2} {
				v := filepath.Join(dir, "v"+strconv.Itoa(i+1))
				os.MkdirAll(v, 0o755)
				os.WriteFile(filepath.Join(v, "go.mod"), []byte("module example.com/work\n\ngo 1.26\n"), 0o644)
				os.WriteFile(filepath.Join(v, "work.go"), []byte(src), 0o644)
				os.WriteFile(filepath.Join(v, "work_test.go"), []byte(benchWorkTest), 0o644)
				cmd := exec.Command("go", "test", "-run", "^$", "-bench", ".", "-count", "10", "-benchtime", "20000x")
				cmd.Dir = v
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
				out, err := cmd.Output()
				if err != nil {
					return fmt.Errorf("go test -bench in %s: %v\n%s", v, err, out)
				}
				if err := os.WriteFile(filepath.Join(dir, []string{"base.txt", "new.txt"}[i]), out, 0o644); err != nil {
					return err
				}
			}
			return nil
		}, benchWorkV1, benchWorkV2, benchWorkTest)
		if err != nil {
			benchResultsErr = err
			return
		}
		benchBase, benchCand = filepath.Join(dir, "base.txt"), filepath.Join(dir, "new.txt")
	})
	if benchResultsErr != nil {
		t.Fatal(benchResultsErr)
	}
	return benchBase, benchCand
}

// benchstatCSV builds golang.org/x/perf/cmd/benchstat and returns its CSV
// rows keyed by benchmark name: [base center, new center, delta, p/n].
func benchstatCSV(t *testing.T, base, cand string) map[string][]string {
	out, err := exec.Command(benchstatPath(t), "-format", "csv", base, cand).Output()
	if err != nil {
		t.Fatalf("benchstat: %v", err)
	}
	r := csv.NewReader(strings.NewReader(string(out)))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("benchstat csv: %v\n%s", err, out)
	}
	rows := map[string][]string{}
	for _, rec := range recs {
		if len(rec) >= 7 && rec[0] != "" && rec[1] != "sec/op" {
			rows[rec[0]] = []string{rec[1], rec[3], rec[5], rec[6]}
		}
	}
	return rows
}

func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func TestCompareBenchmarksMatchesBenchstat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test -bench twice")
	}
	base, cand := makeBenchResults(t)
	want := benchstatCSV(t, base, cand)
	e := newEnv(t)
	res := e.mustCall("compare_benchmarks", map[string]any{"sources": []any{pathSrc(base), pathSrc(cand)}})
	seen := 0
	for _, r := range data(res)["rows"].([]any) {
		row := r.(map[string]any)
		if row["unit"] != "sec/op" {
			continue
		}
		name := row["benchmark"].(string)
		w, ok := want[name]
		if !ok || name == "geomean" {
			t.Errorf("benchstat has no row %s", name)
			continue
		}
		seen++
		bc, _ := strconv.ParseFloat(w[0], 64)
		nc, _ := strconv.ParseFloat(w[1], 64)
		if got := row["base"].(map[string]any)["center"].(float64); !closeTo(got, bc) {
			t.Errorf("%s base center %v, benchstat %v", name, got, bc)
		}
		if got := row["candidate_summary"].(map[string]any)["center"].(float64); !closeTo(got, nc) {
			t.Errorf("%s candidate center %v, benchstat %v", name, got, nc)
		}
		if row["delta"] != w[2] || row["comparison"] != w[3] {
			t.Errorf("%s: delta %v %v, benchstat %v %v", name, row["delta"], row["comparison"], w[2], w[3])
		}
		if w[2] != "~" {
			pct, _ := strconv.ParseFloat(strings.TrimSuffix(w[2], "%"), 64)
			if got := row["delta_percent"].(float64); math.Abs(got-pct) > 0.005 {
				t.Errorf("%s delta %v%%, benchstat %v%%", name, got, pct)
			}
		}
		// The verdict follows benchstat's delta: "~" is no significant
		// change; otherwise the sign decides (lower sec/op is better).
		// (Whether Sum measures slower depends on the machine's load, so
		// only the agreement with benchstat is asserted.)
		switch {
		case w[2] == "~" && row["verdict"] != "no_significant_change":
			t.Errorf("%s: verdict %v, benchstat ~", name, row["verdict"])
		case w[2] != "~" && strings.HasPrefix(w[2], "+") && row["verdict"] != "regression":
			t.Errorf("%s: verdict %v, benchstat %s", name, row["verdict"], w[2])
		case w[2] != "~" && strings.HasPrefix(w[2], "-") && row["verdict"] != "improvement":
			t.Errorf("%s: verdict %v, benchstat %s", name, row["verdict"], w[2])
		}
	}
	// The geomean row agrees too (one table: one package, one config).
	for _, g := range data(res)["summary"].(map[string]any)["geomean"].([]any) {
		gm := g.(map[string]any)
		if gm["unit"] != "sec/op" {
			continue
		}
		w := want["geomean"]
		i := int(gm["column_index"].(float64))
		c, _ := strconv.ParseFloat(w[i], 64)
		if !closeTo(gm["geomean"].(float64), c) || (i == 1 && gm["delta"] != w[2]) {
			t.Errorf("geomean %v, benchstat %v", gm, w)
		}
	}
	delete(want, "geomean")
	if seen != len(want) || seen < 2 {
		t.Fatalf("compared %d rows, benchstat has %d", seen, len(want))
	}
	// summarize_benchmarks of the baseline gives benchstat's base column.
	sum := e.mustCall("summarize_benchmarks", map[string]any{"sources": []any{pathSrc(base)}})
	for _, r := range data(sum)["rows"].([]any) {
		row := r.(map[string]any)
		if row["unit"] != "sec/op" {
			continue
		}
		bc, _ := strconv.ParseFloat(want[row["benchmark"].(string)][0], 64)
		if !closeTo(row["center"].(float64), bc) || row["n"].(float64) != 10 || row["statistic"] != "median" {
			t.Errorf("summary %v, benchstat center %v", row, bc)
		}
	}
}

func TestBenchmarksDeterministicGolden(t *testing.T) {
	e := newEnv(t)
	base := e.write("base.txt", "goos: linux\npkg: example.com/x\nBenchmarkA-2 100 10 ns/op 8 B/op\nBenchmarkA-2 100 12 ns/op 8 B/op\nBenchmarkA-2 100 11 ns/op 8 B/op\nBenchmarkA-2 100 10 ns/op 8 B/op\nBenchmarkA-2 100 11 ns/op 8 B/op\nBenchmarkA-2 100 10 ns/op 8 B/op\nnot a benchmark line\n")
	cand := e.write("new.txt", "goos: linux\npkg: example.com/x\nBenchmarkA-2 100 20 ns/op 8 B/op\nBenchmarkA-2 100 21 ns/op 8 B/op\nBenchmarkA-2 100 22 ns/op 8 B/op\nBenchmarkA-2 100 20 ns/op 8 B/op\nBenchmarkA-2 100 21 ns/op 8 B/op\nBenchmarkA-2 100 20 ns/op 8 B/op\nBenchmarkOnlyNew-2 1 5 ns/op\n")
	res := e.mustCall("compare_benchmarks", map[string]any{"sources": []any{pathSrc(base), pathSrc(cand)}, "page_size": 2})
	rows, _ := e.follow(res)
	golden(t, "bench/compare.golden.json", rows)
	if _, code := e.call("summarize_benchmarks", map[string]any{"sources": []any{pathSrc(e.write("empty.txt", "hello\n"))}}); code != contract.CodeDecodeFailed {
		t.Fatalf("no results: %s", code)
	}
}
