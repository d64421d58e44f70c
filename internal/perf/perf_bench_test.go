package perf

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// writeLargeProfile writes a deterministic CPU-like pprof profile with
// nFuncs functions and nSamples samples of depth 8-40 (gzipped, as
// runtime/pprof writes them).
func writeLargeProfile(tb testing.TB, path string, nFuncs, nSamples int) {
	r := mrand.New(mrand.NewPCG(1, 2))
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		DurationNanos: int64(time.Minute),
	}
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x4000000, File: "/bin/large", HasFunctions: true}
	p.Mapping = []*profile.Mapping{m}
	for i := 0; i < nFuncs; i++ {
		f := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("example.com/pkg%d.(*T%d).Method%d", i%37, i%101, i), SystemName: "", Filename: fmt.Sprintf("/src/pkg%d/file%d.go", i%37, i%13)}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, &profile.Location{ID: uint64(i + 1), Mapping: m, Address: 0x400000 + uint64(i)*64, Line: []profile.Line{{Function: f, Line: int64(10 + i%300)}}})
	}
	for s := 0; s < nSamples; s++ {
		depth := 8 + r.IntN(33)
		locs := make([]*profile.Location, depth)
		// Zipf-like leaves so the top is meaningful; roots shared.
		for d := 0; d < depth; d++ {
			var idx int
			if d == depth-1 {
				idx = 0 // main
			} else {
				idx = int(float64(nFuncs-1)*r.Float64()*r.Float64()) + 1
			}
			locs[d] = p.Location[idx]
		}
		n := int64(1 + r.IntN(5))
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{n, n * 10_000_000}})
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		tb.Fatal(err)
	}
}

var largeProfileOnce sync.Once
var largeProfilePath string

func largeProfile(b *testing.B) string {
	largeProfileOnce.Do(func() {
		dir, _ := os.MkdirTemp("", "inquest-bench-")
		largeProfilePath = filepath.Join(dir, "large.pprof")
		writeLargeProfile(b, largeProfilePath, 3000, 100_000)
	})
	return largeProfilePath
}

// BenchmarkSummarizeProfileVsPprofTop times summarize_profile (through the
// tool registry, hashing included) and, in the same run, the go tool pprof
// binary's -top on the same 100,000-sample profile; it reports both wall
// times per call and their ratio (target: at most 0.5).
func BenchmarkSummarizeProfileVsPprofTop(b *testing.B) {
	path := largeProfile(b)
	pprofBin := pprofPath(b)
	e := newEnv(b)
	args := json.RawMessage(mustJSON(map[string]any{"sources": []any{pathSrc(path)}, "sample_type": "cpu", "page_size": 100}))
	ours := time.Duration(0)
	ref := time.Duration(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.rt.digests = digestCache{m: map[digestKey]string{}}
		t0 := time.Now()
		if _, err := e.reg.Call(context.Background(), "summarize_profile", args); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t0)
		t1 := time.Now()
		cmd := exec.Command(pprofBin, "-top", "-nodecount=100", "-sample_index=cpu", path)
		cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH=/nonexistent")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("pprof: %v %s", err, out)
		}
		ref += time.Since(t1)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(ours.Milliseconds())/n, "summarize_ms/op")
	b.ReportMetric(float64(ref.Milliseconds())/n, "pprof_top_ms/op")
	b.ReportMetric(float64(ours)/float64(ref), "ratio")
}

// buildManifestStore writes n manifests (sharing one artifact object)
// straight into a store directory and lets Open rebuild the index from
// them, as it does after index loss.
func buildManifestStore(tb testing.TB, dir string, n int) {
	os.MkdirAll(filepath.Join(dir, "manifests"), 0o700)
	art := []byte("shared artifact\n")
	sum := "f0b8a3d7b3bd5c5a5b4f7c0e1f1d7f9f3b0c5e8d2a6c4b1e9f7a3d5c8b2e4f6a"
	_ = art
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	ops := []string{"preview_artifact", "summarize_profile", "compare_profiles", "summarize_benchmarks", "compare_benchmarks", "inspect_trace_window", "disassemble"}
	formats := []string{"text", "csv", "pprof", "folded", "gobench", "chrome-trace", "elf"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rb [10]byte
	for i := 0; i < n; i++ {
		rand.Read(rb[:])
		var id [16]byte
		created := base.Add(time.Duration(i) * time.Minute)
		for k := 0; k < 8; k++ {
			id[k] = byte(uint64(created.UnixNano()) >> (56 - 8*k))
		}
		copy(id[8:], rb[:8])
		m := evidence.Manifest{
			SchemaVersion: evidence.FormatVersion, EvidenceID: "ev-" + strings.ToLower(enc.EncodeToString(id[:])),
			CreatedAt: created, Toolset: "perf", Operation: ops[i%len(ops)], Status: "complete",
			Artifacts: []evidence.Artifact{{Name: "source-0", Role: evidence.RoleAnalysisSource, Format: formats[i%len(formats)], SHA256: sum, Size: 16}},
			Arguments: map[string]any{"page_size": 100}, Limits: map[string]any{}, Coverage: map[string]any{"complete": true}, Producers: map[string]string{"inquest": "bench"},
		}
		body, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dir, "manifests", m.EvidenceID+".json"), body, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

var manifestStoreOnce sync.Once
var manifestStoreDir string

// BenchmarkQueryEvidence100k runs query_evidence (through the tool
// registry) over 100,000 manifests with a mix of filters, first pages and
// continuation pages, and reports p50 and p95 latency (target p50 < 20 ms).
func BenchmarkQueryEvidence100k(b *testing.B) {
	manifestStoreOnce.Do(func() {
		dir, _ := os.MkdirTemp("", "inquest-query-bench-")
		manifestStoreDir = filepath.Join(dir, "store")
		buildManifestStore(b, manifestStoreDir, 100_000)
		st, err := evidence.Open(manifestStoreDir) // reindexes 100,000 manifests
		if err != nil {
			b.Fatal(err)
		}
		loc, _ := st.Location(context.Background())
		st.Close()
		if loc.Records != 100_000 {
			b.Fatalf("indexed %d records", loc.Records)
		}
	})
	e := newEnvAt(b, manifestStoreDir)
	queries := []map[string]any{
		{"page_size": 50},
		{"page_size": 200},
		{"operation": "summarize_profile", "page_size": 100},
		{"format": "pprof", "page_size": 100},
		{"format": "chrome-trace", "created_from": "2026-02-01T00:00:00Z", "created_to": "2026-02-15T00:00:00Z", "page_size": 50},
		{"created_from": "2026-01-20T00:00:00Z", "created_to": "2026-01-21T00:00:00Z", "page_size": 200},
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)]
		t0 := time.Now()
		res, err := e.reg.Call(context.Background(), "query_evidence", json.RawMessage(mustJSON(q)))
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		// Every other iteration also fetches the continuation page.
		if res.NextAction != nil && i%2 == 0 {
			t1 := time.Now()
			if _, err := e.reg.Call(context.Background(), "query_evidence", json.RawMessage(mustJSON(res.NextAction.Arguments))); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t1))
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95_ms")
}
