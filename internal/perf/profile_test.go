package perf

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

const profProgram = `package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

//go:noinline
func hotLoop(n int) uint64 {
	var x uint64
	for i := 0; i < n; i++ {
		x += uint64(i*i) ^ (x >> 3)
	}
	return x
}

//go:noinline
func coldLoop(n int) uint64 {
	var x uint64
	for i := 0; i < n; i++ {
		x ^= uint64(i) * 7
	}
	return x
}

var keep [1000][]byte

//go:noinline
func allocate() {
	for i := range keep {
		keep[i] = make([]byte, 64<<10)
	}
}

var sink uint64

func main() {
	runtime.MemProfileRate = 1
	cpu, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		panic(err)
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		sink += hotLoop(4_000_000)
		sink += coldLoop(500_000)
	}
	pprof.StopCPUProfile()
	cpu.Close()
	allocate()
	runtime.GC()
	heap, err := os.Create(os.Args[2])
	if err != nil {
		panic(err)
	}
	if err := pprof.WriteHeapProfile(heap); err != nil {
		panic(err)
	}
	heap.Close()
}
`

var (
	profOnce          sync.Once
	cpuProf, heapProf string
	profErr           error
)

// makeProfiles returns the CPU and heap profiles profProgram wrote with
// runtime/pprof. The program is built and run once per machine (the
// profiles are cached, see cachedFixture, keyed by its source and the go
// version) and the paths are shared by the package's tests, which only
// read them.
func makeProfiles(t *testing.T) (string, string) {
	t.Helper()
	profOnce.Do(func() {
		dir, err := cachedFixture("profiles", func(dir string) error {
			src := filepath.Join(dir, "src")
			os.MkdirAll(src, 0o755)
			os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/prof\n\ngo 1.26\n"), 0o644)
			os.WriteFile(filepath.Join(src, "main.go"), []byte(profProgram), 0o644)
			build := exec.Command("go", "build", "-o", filepath.Join(dir, "prof"), ".")
			build.Dir = src
			build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
			if out, err := build.CombinedOutput(); err != nil {
				return &buildErr{string(out)}
			}
			run := exec.Command(filepath.Join(dir, "prof"), filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "heap.pprof"))
			if out, err := run.CombinedOutput(); err != nil {
				return &buildErr{string(out)}
			}
			return nil
		}, profProgram)
		if err != nil {
			profErr = err
			return
		}
		cpuProf, heapProf = filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "heap.pprof")
	})
	if profErr != nil {
		t.Fatal(profErr)
	}
	return cpuProf, heapProf
}

type buildErr struct{ out string }

func (b *buildErr) Error() string { return "building/running the profiled program: " + b.out }

func TestMain(m *testing.M) {
	if os.Getenv(traceHelperEnv) != "" {
		os.Exit(traceHelperMain())
	}
	code := m.Run()
	// The per-run fixtures (the cached ones under fixtureRoot stay).
	for _, d := range []string{largeProfilePath, manifestStoreDir, largeTracePath} {
		if d != "" && strings.HasPrefix(d, os.TempDir()) {
			os.RemoveAll(filepath.Dir(d))
		}
	}
	os.Exit(code)
}

// pprofTop runs `go tool pprof -top` and returns function -> [flat, cum].
func pprofTop(t testing.TB, file, sampleIndex string, extra ...string) map[string][2]int64 {
	t.Helper()
	args := append([]string{"-top", "-nodecount=1000000", "-nodefraction=0", "-sample_index=" + sampleIndex}, extra...)
	args = append(args, file)
	out, err := pprofCmd(t, args...).Output()
	if err != nil {
		t.Fatalf("pprof: %v", err)
	}
	res := map[string][2]int64{}
	num := regexp.MustCompile(`^(-?[0-9]+)[a-zA-Z]*$`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	header := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "flat" && f[1] == "flat%" {
			header = true
			continue
		}
		if !header || len(f) < 6 {
			continue
		}
		fm, cm := num.FindStringSubmatch(f[0]), num.FindStringSubmatch(f[3])
		if fm == nil || cm == nil {
			t.Fatalf("unparsed pprof line %q", sc.Text())
		}
		flat, _ := strconv.ParseInt(fm[1], 10, 64)
		cum, _ := strconv.ParseInt(cm[1], 10, 64)
		name := strings.Join(f[5:], " ")
		name = strings.TrimSuffix(strings.TrimSuffix(name, " (inline)"), " (partial-inline)")
		res[name] = [2]int64{flat, cum}
	}
	return res
}

func rowsOf(t *testing.T, e *env, res map[string]any) []map[string]any {
	rows, _ := e.follow(res)
	var out []map[string]any
	for _, r := range rows {
		out = append(out, r.(map[string]any))
	}
	return out
}

func atoi(t testing.TB, v any) int64 {
	n, err := strconv.ParseInt(v.(string), 10, 64)
	if err != nil {
		t.Fatalf("not a decimal string: %v", v)
	}
	return n
}

// TestSummarizeProfileAgainstPprof checks every function's exact flat and
// cum values against go tool pprof -top for each sample type of the CPU
// and heap profiles the test program wrote.
func TestSummarizeProfileAgainstPprof(t *testing.T) {
	cpu, heap := makeProfiles(t)
	e := newEnv(t)
	tests := []struct {
		file, sampleType, unitFlag, focus string
	}{
		{cpu, "cpu", "-unit=ns", ""},
		{cpu, "samples", "", ""},
		{heap, "alloc_objects", "", ""},
		{heap, "alloc_space", "-unit=B", ""},
		{heap, "inuse_space", "-unit=B", ""},
		{heap, "alloc_space", "-unit=B", `^main\.allocate$`},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file)+"/"+tt.sampleType+tt.focus, func(t *testing.T) {
			args := map[string]any{"sources": []any{pathSrc(tt.file)}, "sample_type": tt.sampleType, "page_size": 7}
			var extra []string
			if tt.unitFlag != "" {
				extra = append(extra, tt.unitFlag)
			}
			if tt.focus != "" {
				args["focus"] = tt.focus
				extra = append(extra, "-focus="+tt.focus)
			}
			res := e.mustCall("summarize_profile", args)
			rows := rowsOf(t, e, res)
			want := pprofTop(t, tt.file, tt.sampleType, extra...)
			got := map[string][2]int64{}
			for _, r := range rows {
				got[r["function"].(string)] = [2]int64{atoi(t, r["flat"]), atoi(t, r["cum"])}
			}
			if len(got) != len(want) {
				t.Errorf("%d functions, pprof shows %d", len(got), len(want))
			}
			for fn, w := range want {
				if got[fn] != w {
					t.Errorf("%s: got flat,cum %v, pprof %v", fn, got[fn], w)
				}
			}
		})
	}
	// The first row is the one pprof lists first for the same file: the
	// profile's own values decide, not how the scheduler ran the workload
	// (under load runtime.asyncPreempt can out-sample main.hotLoop).
	res := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(cpu)}, "sample_type": "cpu", "page_size": 1})
	rows := data(res)["rows"].([]any)
	want, _ := pprofTopRows(t, cpu, "-sample_index=cpu", "-unit=ns")
	if len(want) == 0 {
		if len(rows) != 0 {
			t.Fatalf("pprof shows no rows, we show %v", rows)
		}
		return
	}
	top := rows[0].(map[string]any)
	if top["function"] != want[0].name || atoi(t, top["flat"]) != want[0].flat || top["unit"] != "nanoseconds" {
		t.Fatalf("top CPU row %v, pprof %+v", top, want[0])
	}
}

// TestProfileGolden pins the deterministic parts: the sample types and
// units of both profiles and the heap rows of main.allocate (MemProfileRate
// 1 records every allocation).
func TestProfileGolden(t *testing.T) {
	cpu, heap := makeProfiles(t)
	e := newEnv(t)
	cpuRes := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(cpu)}, "page_size": 1})
	var cpuTypes []any
	for _, st := range data(cpuRes)["summary"].(map[string]any)["sample_types"].([]any) {
		m := st.(map[string]any)
		cpuTypes = append(cpuTypes, []any{m["type"], m["unit"]})
	}
	heapRes := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(heap)}, "focus": `^main\.allocate$`, "sample_type": "alloc_objects", "sort": "cum"})
	var heapRows []any
	for _, r := range data(heapRes)["rows"].([]any) {
		m := r.(map[string]any)
		if strings.HasPrefix(m["function"].(string), "main.") {
			// The program makes exactly 1000 allocations in main.allocate;
			// the runtime's heap sampling adds a few nondeterministically,
			// so the golden pins the rows and the values are range-checked.
			flat, cum := atoi(t, m["flat"]), atoi(t, m["cum"])
			if cum < 1000 || cum > 1020 || (flat != 0 && flat != cum) {
				t.Errorf("%s: flat %d cum %d, want about 1000 allocations", m["function"], flat, cum)
			}
			heapRows = append(heapRows, []any{m["function"], flat > 0, m["rank"]})
		}
	}
	golden(t, "profile/summary.golden.json", map[string]any{"cpu_sample_types": cpuTypes, "heap_alloc_objects_main": heapRows, "cpu_format": data(cpuRes)["summary"].(map[string]any)["format"]})
}

func TestCompareProfiles(t *testing.T) {
	cpu, heap := makeProfiles(t)
	e := newEnv(t)
	// Folded stacks: a base and a candidate where c doubles and b vanishes.
	base := e.write("base.folded", "main;a;b 10\nmain;a;c 30\nmain;d 60\n")
	cand := e.write("cand.folded", "main;a;c 60\nmain;d 60\n")
	res := e.mustCall("compare_profiles", map[string]any{"sources": []any{pathSrc(base), pathSrc(cand)}})
	byFn := map[string]map[string]any{}
	for _, r := range data(res)["rows"].([]any) {
		m := r.(map[string]any)
		byFn[m["function"].(string)] = m
	}
	check := func(fn, key string, want any) {
		t.Helper()
		if got := byFn[fn][key]; mustJSON(got) != mustJSON(want) {
			t.Errorf("%s %s = %v, want %v", fn, key, got, want)
		}
	}
	check("c", "delta_flat", "30")
	check("c", "delta_flat_percent", 100.0)
	check("b", "delta_flat", "-10")
	check("b", "candidate_flat", "0")
	check("a", "delta_cum", "20")
	check("d", "delta_flat", "0")
	// d: 60/100 of base, 60/120 of candidate: -10 share points.
	check("d", "delta_flat_share_points", -10.0)
	if data(res)["rows"].([]any)[0].(map[string]any)["function"] != "c" {
		t.Error("rows are not ordered by absolute flat delta")
	}
	// A profile compared with itself has no deltas.
	self := e.mustCall("compare_profiles", map[string]any{"sources": []any{pathSrc(cpu), pathSrc(cpu)}, "sample_type": "cpu"})
	for _, r := range rowsOf(t, e, self) {
		if r["delta_flat"] != "0" || r["delta_cum"] != "0" {
			t.Fatalf("self comparison has a delta: %v", r)
		}
	}
	// Mixed formats without a shared sample type are rejected.
	if _, code := e.call("compare_profiles", map[string]any{"sources": []any{pathSrc(base), pathSrc(heap)}}); code != contract.CodeInvalidArgument {
		t.Fatalf("mismatched sample types: %s", code)
	}
	if _, code := e.call("compare_profiles", map[string]any{"sources": []any{pathSrc(base)}}); code != contract.CodeInvalidArgument {
		t.Fatal("one source accepted for a comparison")
	}
}

func TestFoldedAndProfileErrors(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, content, format string
		extra                 map[string]any
		want                  contract.Code
	}{
		{"folded without count", "main;a;b\n", "folded", nil, contract.CodeDecodeFailed},
		{"folded negative", "main;a -3\n", "folded", nil, contract.CodeDecodeFailed},
		{"folded empty frame", "main;;a 3\n", "folded", nil, contract.CodeDecodeFailed},
		{"not a pprof", "hello", "pprof", nil, contract.CodeDecodeFailed},
		{"bad focus", "main;a 1\n", "folded", map[string]any{"focus": "("}, contract.CodeInvalidArgument},
		{"unknown sample type", "main;a 1\n", "folded", map[string]any{"sample_type": "cpu"}, contract.CodeInvalidArgument},
		{"gzip garbage", "\x1f\x8bnot gzip", "pprof", nil, contract.CodeDecodeFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := e.write(strings.ReplaceAll(tt.name, " ", "_"), tt.content)
			args := map[string]any{"sources": []any{pathSrc(p, tt.format)}}
			for k, v := range tt.extra {
				args[k] = v
			}
			if m, code := e.call("summarize_profile", args); code != tt.want {
				t.Fatalf("got %s %v", code, m["error"])
			}
		})
	}
}

// utf16 encodes s as UTF-16 with a byte-order mark.
func utf16(s string, bigEndian bool) string {
	var b []byte
	if bigEndian {
		b = []byte{0xfe, 0xff}
	} else {
		b = []byte{0xff, 0xfe}
	}
	for _, r := range s {
		if bigEndian {
			b = append(b, byte(r>>8), byte(r))
		} else {
			b = append(b, byte(r), byte(r>>8))
		}
	}
	return string(b)
}

// TestFoldedVariants: like flamegraph.pl and speedscope, the folded
// reader reads UTF-8 with or without BOM and UTF-16 with BOM, keeps every
// valid stack line, and counts the others (comments, lines without a
// count, empty frames) with their first line numbers; such a result is
// partial.
func TestFoldedVariants(t *testing.T) {
	e := newEnv(t)
	valid := "main;a;b 10\nmain;c 5\n"
	tests := []struct {
		name, content string
		invalid       string
		first         []any
	}{
		{"plain", valid, "0", nil},
		{"utf8 bom", "\ufeff" + valid, "0", nil},
		{"crlf", strings.ReplaceAll(valid, "\n", "\r\n"), "0", nil},
		{"utf16le bom", utf16(valid, false), "0", nil},
		{"utf16be bom", utf16(valid, true), "0", nil},
		{"comment and invalid", "# collapsed by stackcollapse\n" + valid + "garbage\nmain;d x\n", "3", []any{1.0, 4.0, 5.0}},
		{"ends in empty frame", valid + "main;a; 4\n", "1", []any{3.0}},
		{"tab separated count", "main;a;b\t10\nmain;c 5\n", "0", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := e.write("v.folded", tt.content)
			m := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(p, "folded")}})
			cov := m["coverage"].(map[string]any)
			if cov["invalid_lines"] != tt.invalid || mustJSON(cov["first_invalid_lines"]) != mustJSON(tt.first) {
				t.Fatalf("coverage %v", cov)
			}
			if (tt.invalid != "0") != (m["status"] == "partial") {
				t.Errorf("status %v with %s invalid lines", m["status"], tt.invalid)
			}
			got := map[string][2]int64{}
			for _, r := range data(m)["rows"].([]any) {
				r := r.(map[string]any)
				got[r["function"].(string)] = [2]int64{atoi(t, r["flat"]), atoi(t, r["cum"])}
			}
			want := map[string][2]int64{"main": {0, 15}, "a": {0, 10}, "b": {10, 10}, "c": {5, 5}}
			if mustJSON(got) != mustJSON(want) {
				t.Errorf("rows %v, want %v", got, want)
			}
		})
	}
}
