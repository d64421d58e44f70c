package perf

import (
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/perf/benchmath"
)

var (
	benchFilesOnce     sync.Once
	benchOld, benchNew string
)

// writeGoBenchFile writes a `go test -bench . -count 10 -benchmem` style
// results file for two packages: nBench benchmarks (with /sub-benchmarks
// and MB/s on every third, as strings and bytes report), count runs each
// in the order go test prints them, with seed-dependent values.
func writeGoBenchFile(tb testing.TB, path string, nBench, count int, seed uint64) {
	r := mrand.New(mrand.NewPCG(seed, 7))
	var b strings.Builder
	for pkg := 0; pkg < 2; pkg++ {
		fmt.Fprintf(&b, "goos: linux\ngoarch: amd64\npkg: example.com/pkg%d\ncpu: Example CPU @ 2.00GHz\n", pkg)
		for i := 0; i < nBench/2; i++ {
			name := fmt.Sprintf("BenchmarkOperation%d/size=%d-2", i/4, 1<<(i%4*3))
			base := 50 + float64(i*37%5000)
			for c := 0; c < count; c++ {
				ns := base * (1 + 0.1*r.Float64())
				fmt.Fprintf(&b, "%s\t%8d\t%12.2f ns/op", name, 1000000/int(base), ns)
				if i%3 == 0 {
					fmt.Fprintf(&b, "\t%8.2f MB/s", float64(int(1)<<(i%4*3))*1e3/ns)
				}
				fmt.Fprintf(&b, "\t%8d B/op\t%6d allocs/op\n", i%7*16, i%7)
			}
		}
		fmt.Fprintf(&b, "PASS\nok  \texample.com/pkg%d\t12.345s\n", pkg)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// benchInputs returns two results files: $INQUEST_BENCH_OLD and
// $INQUEST_BENCH_NEW when set (e.g. two real `go test -bench . -count 10
// -benchmem strings bytes` runs), else two generated files of 400
// benchmarks x 10 runs.
func benchInputs(tb testing.TB) (string, string) {
	if o, n := os.Getenv("INQUEST_BENCH_OLD"), os.Getenv("INQUEST_BENCH_NEW"); o != "" && n != "" {
		return o, n
	}
	benchFilesOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inquest-benchfiles-")
		if err != nil {
			tb.Fatal(err)
		}
		benchOld, benchNew = filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt")
		writeGoBenchFile(tb, benchOld, 400, 10, 1)
		writeGoBenchFile(tb, benchNew, 400, 10, 2)
	})
	return benchOld, benchNew
}

// BenchmarkCompareBenchmarksVsBenchstat times compare_benchmarks (through
// the tool registry, input digests included, first page of rows) and, in
// the same iteration, the benchstat binary built from the go.mod x/perf
// version on the same two files (A, B, A, B...); it reports the min and
// median wall time of each side per iteration and their ratios (target:
// at most 1). Profile our side alone with BenchmarkCompareBenchmarksOnly.
func BenchmarkCompareBenchmarksVsBenchstat(b *testing.B) {
	old, nw := benchInputs(b)
	bs := benchstatPath(b)
	e := newEnv(b)
	args := json.RawMessage(mustJSON(map[string]any{"sources": []any{pathSrc(old), pathSrc(nw)}}))
	var ours, ref []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.rt.digests = digestCache{m: map[digestKey]string{}}
		t0 := time.Now()
		if _, err := e.reg.Call(context.Background(), "compare_benchmarks", args); err != nil {
			b.Fatal(err)
		}
		ours = append(ours, time.Since(t0))
		t1 := time.Now()
		if out, err := exec.Command(bs, old, nw).CombinedOutput(); err != nil {
			b.Fatalf("benchstat: %v %s", err, out)
		}
		ref = append(ref, time.Since(t1))
	}
	b.StopTimer()
	slices.Sort(ours)
	slices.Sort(ref)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(ours[0]), "ours_min_ms")
	b.ReportMetric(ms(ours[len(ours)/2]), "ours_med_ms")
	b.ReportMetric(ms(ref[0]), "benchstat_min_ms")
	b.ReportMetric(ms(ref[len(ref)/2]), "benchstat_med_ms")
	b.ReportMetric(float64(ours[0])/float64(ref[0]), "ratio_min")
	b.ReportMetric(float64(ours[len(ours)/2])/float64(ref[len(ref)/2]), "ratio_med")
}

// BenchmarkCompareBenchmarksOnly times compare_benchmarks alone through
// the tool registry on the BenchmarkCompareBenchmarksVsBenchstat inputs,
// for -cpuprofile and -benchmem.
func BenchmarkCompareBenchmarksOnly(b *testing.B) {
	old, nw := benchInputs(b)
	e := newEnv(b)
	args := json.RawMessage(mustJSON(map[string]any{"sources": []any{pathSrc(old), pathSrc(nw)}}))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.rt.digests = digestCache{m: map[digestKey]string{}}
		if _, err := e.reg.Call(context.Background(), "compare_benchmarks", args); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCompareMemoMatchesBenchmath checks that the memoized comparison is
// benchmath's AssumeNothing.Compare for every pair of samples: sizes 1-12
// against 1-12 (both sides of the exact limits with ties) and 60 (normal
// approximation), values drawn from few levels so ties, all-equal samples
// and mirrored U values occur.
func TestCompareMemoMatchesBenchmath(t *testing.T) {
	r := mrand.New(mrand.NewPCG(3, 4))
	memo := compareMemo{}
	th := benchmath.DefaultThresholds
	sizes := []int{1, 2, 3, 5, 8, 9, 10, 12, 60}
	for _, levels := range []int{1, 3, 8, 1000} {
		for _, n1 := range sizes {
			for _, n2 := range sizes {
				for rep := 0; rep < 6; rep++ {
					draw := func(n int) []float64 {
						xs := make([]float64, n)
						for i := range xs {
							xs[i] = float64(r.IntN(levels))
						}
						return xs
					}
					s1, s2 := benchmath.NewSample(draw(n1), &th), benchmath.NewSample(draw(n2), &th)
					want := benchmath.AssumeNothing.Compare(s1, s2)
					got := memo.compare(benchmath.AssumeNothing, s1, s2)
					if got.P != want.P || got.N1 != want.N1 || got.N2 != want.N2 || got.Alpha != want.Alpha ||
						!slices.Equal(errStrings(got.Warnings), errStrings(want.Warnings)) {
						t.Fatalf("levels %d, %v vs %v: memo %+v, benchmath %+v", levels, s1.Values, s2.Values, got, want)
					}
				}
			}
		}
	}
	if len(memo) == 0 {
		t.Fatal("memo never filled")
	}
}
