package perf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// topRow is one row of go tool pprof -top.
type topRow struct {
	name              string
	flat, cum         int64
	flatPct, cumPct   string
	flatText, cumText string
}

// pprofTopRows runs go tool pprof -top over file with every node shown and
// returns its rows in order and its total ("of N total").
func pprofTopRows(t testing.TB, file string, extra ...string) ([]topRow, int64) {
	t.Helper()
	args := append([]string{"-top", "-nodecount=1000000", "-nodefraction=0", "-symbolize=none"}, extra...)
	args = append(args, file)
	cmd := pprofCmd(t, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pprof %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	num := regexp.MustCompile(`^(-?[0-9]+)[a-zA-Z]*$`)
	totalRE := regexp.MustCompile(` of (-?[0-9]+)[a-zA-Z]* total`)
	var rows []topRow
	var total int64 = math.MinInt64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 16<<20) // names can be long
	header := false
	for sc.Scan() {
		line := sc.Text()
		if m := totalRE.FindStringSubmatch(line); m != nil {
			total, _ = strconv.ParseInt(m[1], 10, 64)
		}
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "flat" && f[1] == "flat%" {
			header = true
			continue
		}
		if !header || len(f) < 6 {
			continue
		}
		fm, cm := num.FindStringSubmatch(f[0]), num.FindStringSubmatch(f[3])
		if fm == nil || cm == nil {
			t.Fatalf("unparsed pprof line %q (pass a -unit flag)", line)
		}
		flat, _ := strconv.ParseInt(fm[1], 10, 64)
		cum, _ := strconv.ParseInt(cm[1], 10, 64)
		name := strings.Join(f[5:], " ")
		name = strings.TrimSuffix(strings.TrimSuffix(name, " (inline)"), " (partial-inline)")
		rows = append(rows, topRow{name: name, flat: flat, cum: cum, flatPct: f[1], cumPct: f[4]})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading pprof output: %v", err)
	}
	if total == math.MinInt64 {
		t.Fatalf("no total in pprof output:\n%s", out)
	}
	return rows, total
}

// pprofPercent formats v like go tool pprof (measurement.Percentage): the
// magnitude, "100%" within ±0.05, two decimals from 1%, else %.2g.
func pprofPercent(v float64) string {
	r := math.Abs(v)
	switch {
	case r >= 99.95 && r <= 100.05:
		return "100%"
	case r >= 1:
		return fmt.Sprintf("%.2f%%", r)
	default:
		return strings.TrimSpace(fmt.Sprintf("%5.2g%%", r))
	}
}

// synthProfiles writes the profiles the pprof conformance cases read:
// symbolized ones with inlining, recursion, several files and mappings; an
// unsymbolized one; a base/new pair; legacy heap, contention and CPU
// files. It returns their paths by name.
func synthProfiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	paths := map[string]string{}
	mServer := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/srv/bin/server_main", HasFunctions: true}
	mLibc := &profile.Mapping{ID: 2, Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/lib/x86_64-linux-gnu/libc.so.6"}
	fns := []*profile.Function{
		{ID: 1, Name: "main.main", Filename: "/src/app/main.go"},
		{ID: 2, Name: "main.hot", Filename: "/src/app/main.go"},
		{ID: 3, Name: "main.helper", Filename: "/src/app/util.go"},
		{ID: 4, Name: "main.rec", Filename: "/src/app/rec.go"},
		{ID: 5, Name: "runtime.mallocgc", Filename: "/go/src/runtime/malloc.go"},
		{ID: 6, Name: "", SystemName: "anon", Filename: ""},
	}
	loc := func(id uint64, addr uint64, m *profile.Mapping, lines ...profile.Line) *profile.Location {
		return &profile.Location{ID: id, Address: addr, Mapping: m, Line: lines}
	}
	ln := func(f int, line int64) profile.Line { return profile.Line{Function: fns[f-1], Line: line} }
	locs := []*profile.Location{
		loc(1, 0x401000, mServer, ln(1, 10)),
		loc(2, 0x402000, mServer, ln(3, 5), ln(2, 20)), // helper inlined into hot
		loc(3, 0x403000, mServer, ln(2, 22)),
		loc(4, 0x404000, mServer, ln(4, 7)),
		loc(5, 0x405000, mServer, ln(5, 100)),
		loc(6, 0x7f0000001000, mLibc),
		loc(7, 0x900000, nil),
		loc(8, 0x406000, mServer, ln(6, 3)),
		loc(9, 0x402100, mServer, ln(3, 6)), // helper called, not inlined
	}
	L := func(ids ...int) []*profile.Location {
		var out []*profile.Location
		for _, id := range ids {
			out = append(out, locs[id-1])
		}
		return out
	}
	mk := func(scale int64, extra int64) *profile.Profile {
		return &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10000000,
			Sample: []*profile.Sample{
				{Location: L(2, 1), Value: []int64{30 * scale, 300000000 * scale}},
				{Location: L(3, 1), Value: []int64{12, 120000000}},
				{Location: L(4, 4, 4, 1), Value: []int64{7 + extra, 70000000 + extra*10000000}},
				{Location: L(5, 3, 1), Value: []int64{5, 50000000}},
				{Location: L(6, 3, 1), Value: []int64{9 * scale, 90000000 * scale}},
				{Location: L(7, 1), Value: []int64{2, 20000000}},
				{Location: L(8, 9, 1), Value: []int64{4 + extra, 40000000 + extra*10000000}},
				{Location: L(9, 3, 1), Value: []int64{3, 30000000}},
			},
			Mapping:  []*profile.Mapping{mServer, mLibc},
			Location: locs,
			Function: fns,
		}
	}
	write := func(name string, p *profile.Profile) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Write(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		paths[name] = f.Name()
	}
	write("old.pb.gz", mk(1, 0))
	write("new.pb.gz", mk(3, 4))

	// Unsymbolized: the same stacks with addresses and mappings only.
	var uLocs []*profile.Location
	for _, l := range locs {
		uLocs = append(uLocs, &profile.Location{ID: l.ID, Address: l.Address, Mapping: l.Mapping})
	}
	u := mk(1, 0)
	for _, s := range u.Sample {
		for i, l := range s.Location {
			s.Location[i] = uLocs[l.ID-1]
		}
	}
	u.Location, u.Function = uLocs, nil
	u.Mapping = []*profile.Mapping{
		{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/srv/bin/server_main"},
		{ID: 2, Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/lib/x86_64-linux-gnu/libc.so.6"},
	}
	for _, l := range uLocs {
		if l.Mapping != nil {
			l.Mapping = u.Mapping[l.Mapping.ID-1]
		}
	}
	write("unsym.pb.gz", u)

	// go tool pprof -proto -base old new: a profile with negative values.
	diff := filepath.Join(dir, "diff.pb.gz")
	cmd := pprofCmd(t, "-proto", "-symbolize=none", "-output", diff, "-base", paths["new.pb.gz"], paths["old.pb.gz"])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pprof -proto -base: %v\n%s", err, out)
	}
	paths["diff.pb.gz"] = diff

	// Legacy text formats, laid out as runtime/pprof's legacy writers
	// print them (heap: "heap profile: ..."; contention: "--- contention:").
	maps := "\nMAPPED_LIBRARIES:\n00400000-00500000 r-xp 00000000 08:01 123 /srv/bin/server_main\n"
	legacy := map[string]string{
		"heap.txt":       "heap profile: 3: 1536 [5: 2560] @ heap/1048576\n1: 512 [2: 1024] @ 0x401000 0x402000\n2: 1024 [3: 1536] @ 0x403000 0x402000\n" + maps,
		"contention.txt": "--- contention:\ncycles/second=2000000000\nsampling period=1\n100 10 @ 0x401000 0x402000\n200 20 @ 0x403000 0x402000\n",
		// go tool pprof rejects a contention profile followed by a
		// MAPPED_LIBRARIES section ("unrecognized profile format").
		"contention-maps.txt": "--- contention:\ncycles/second=2000000000\nsampling period=1\n100 10 @ 0x401000 0x402000\n" + maps,
	}
	for name, body := range legacy {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	// Legacy CPU profile: 64-bit little-endian words: header 0, 3, 0,
	// period (µs), 0; records count, n, pc...; trailer 0, 1, 0; then the
	// text /proc/self/maps.
	var buf bytes.Buffer
	words := []uint64{0, 3, 0, 10000, 0, 5, 2, 0x401000, 0x402000, 7, 3, 0x403000, 0x402000, 0x401000, 2, 1, 0x404000, 0, 1, 0}
	for _, w := range words {
		binary.Write(&buf, binary.LittleEndian, w)
	}
	buf.WriteString("00400000-00500000 r-xp 00000000 08:01 123 /srv/bin/server_main\n")
	cpu := filepath.Join(dir, "legacy.cpu")
	if err := os.WriteFile(cpu, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	paths["legacy.cpu"] = cpu
	return paths
}

// TestProfileConformancePprof compares summarize_profile with go tool
// pprof -top on the same files in the same run: every row's name, order,
// flat and cum, the printed percentages and the total, for symbolized,
// unsymbolized, negative (pprof -proto -base output) and legacy profiles,
// at function and address granularity, with focus/ignore on function,
// file and mapping names, and sorted by cum.
func TestProfileConformancePprof(t *testing.T) {
	e := newEnv(t)
	p := synthProfiles(t, e.dir)
	cpu, heap := makeProfiles(t)
	tests := []struct {
		name, file, sampleType string
		args                   map[string]any
		flags                  []string
	}{
		{"symbolized", p["old.pb.gz"], "samples", nil, nil},
		{"symbolized cpu ns", p["new.pb.gz"], "cpu", nil, []string{"-unit=ns"}},
		{"sort cum", p["new.pb.gz"], "samples", map[string]any{"sort": "cum"}, []string{"-cum"}},
		{"addresses", p["old.pb.gz"], "samples", map[string]any{"granularity": "addresses"}, []string{"-addresses"}},
		{"focus file", p["old.pb.gz"], "samples", map[string]any{"focus": `main\.go`}, []string{`-focus=main\.go`}},
		{"ignore file", p["old.pb.gz"], "samples", map[string]any{"ignore": `util\.go$`}, []string{`-ignore=util\.go$`}},
		{"focus and ignore", p["new.pb.gz"], "samples", map[string]any{"focus": `^main\.`, "ignore": `rec`}, []string{`-focus=^main\.`, `-ignore=rec`}},
		{"focus mapping", p["old.pb.gz"], "samples", map[string]any{"focus": `libc`}, []string{`-focus=libc`}},
		{"unsymbolized", p["unsym.pb.gz"], "samples", nil, nil},
		{"unsymbolized addresses", p["unsym.pb.gz"], "samples", map[string]any{"granularity": "addresses"}, []string{"-addresses"}},
		{"unsymbolized focus mapping", p["unsym.pb.gz"], "samples", map[string]any{"focus": `server_main`}, []string{`-focus=server_main`}},
		{"negative", p["diff.pb.gz"], "samples", nil, nil},
		{"negative cum", p["diff.pb.gz"], "cpu", map[string]any{"sort": "cum"}, []string{"-cum", "-unit=ns"}},
		{"legacy heap", p["heap.txt"], "inuse_space", nil, []string{"-unit=B"}},
		{"legacy heap alloc objects", p["heap.txt"], "alloc_objects", nil, nil},
		{"legacy contention", p["contention.txt"], "delay", nil, []string{"-unit=ns"}},
		{"legacy cpu", p["legacy.cpu"], "samples", nil, nil},
		{"legacy cpu addresses", p["legacy.cpu"], "cpu", map[string]any{"granularity": "addresses"}, []string{"-addresses", "-unit=ns"}},
		{"runtime cpu", cpu, "cpu", nil, []string{"-unit=ns"}},
		{"runtime heap", heap, "alloc_space", nil, []string{"-unit=B"}},
		{"runtime heap focus file", heap, "alloc_space", map[string]any{"focus": `main\.go`}, []string{"-unit=B", `-focus=main\.go`}},
	}
	// What pprof rejects we reject, naming what was recognized.
	if out, err := pprofCmd(t, "-top", "-symbolize=none", p["contention-maps.txt"]).CombinedOutput(); err == nil {
		t.Fatalf("pprof read the contention profile with maps:\n%s", out)
	}
	m, code := e.call("summarize_profile", map[string]any{"sources": []any{pathSrc(p["contention-maps.txt"], "pprof")}})
	if code != "DECODE_FAILED" || !strings.Contains(mustJSON(m), "--- contention") {
		t.Errorf("pprof rejects the file; we gave %s %v", code, m["error"])
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"sources": []any{pathSrc(tt.file, "pprof")}, "sample_type": tt.sampleType, "page_size": 5}
			for k, v := range tt.args {
				args[k] = v
			}
			res := e.mustCall("summarize_profile", args)
			got := rowsOf(t, e, res)
			want, wantTotal := pprofTopRows(t, tt.file, append([]string{"-sample_index=" + tt.sampleType}, tt.flags...)...)
			for _, st := range data(res)["summary"].(map[string]any)["sample_types"].([]any) {
				if st := st.(map[string]any); st["type"] == tt.sampleType {
					if tot := atoi(t, st["total"]); tot != wantTotal {
						t.Errorf("total %d, pprof %d", tot, wantTotal)
					}
				}
			}
			compareTop(t, got, want, "flat", "cum", "flat_percent", "cum_percent")
		})
	}
}

// compareTop checks rows against pprof's, row for row, in order.
func compareTop(t *testing.T, got []map[string]any, want []topRow, flatKey, cumKey, flatPctKey, cumPctKey string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d rows, pprof shows %d", len(got), len(want))
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		g, w := got[i], want[i]
		name := g["function"].(string)
		flat, cum := atoi(t, g[flatKey]), atoi(t, g[cumKey])
		if name != w.name || flat != w.flat || cum != w.cum {
			t.Errorf("row %d: %s flat %d cum %d; pprof %s flat %d cum %d", i, name, flat, cum, w.name, w.flat, w.cum)
			continue
		}
		if flatPctKey != "" {
			if fp := pprofPercent(g[flatPctKey].(float64)); fp != w.flatPct {
				t.Errorf("%s flat%% %s, pprof %s", name, fp, w.flatPct)
			}
			if cp := pprofPercent(g[cumPctKey].(float64)); cp != w.cumPct {
				t.Errorf("%s cum%% %s, pprof %s", name, cp, w.cumPct)
			}
		}
	}
}

// TestCompareProfilesConformanceDiffBase compares compare_profiles'
// deltas with go tool pprof -top -diff_base=BASE NEW: same rows in the
// same order, delta flat/cum and their percentages of the base total.
func TestCompareProfilesConformanceDiffBase(t *testing.T) {
	e := newEnv(t)
	p := synthProfiles(t, e.dir)
	tests := []struct {
		name, base, cand, sampleType string
		args                         map[string]any
		flags                        []string
	}{
		{"samples", p["old.pb.gz"], p["new.pb.gz"], "samples", nil, nil},
		{"reverse (negative total)", p["new.pb.gz"], p["old.pb.gz"], "samples", nil, nil},
		{"cpu cum", p["old.pb.gz"], p["new.pb.gz"], "cpu", map[string]any{"sort": "cum"}, []string{"-cum", "-unit=ns"}},
		{"focus file", p["new.pb.gz"], p["old.pb.gz"], "samples", map[string]any{"focus": `main\.go`}, []string{`-focus=main\.go`}},
		{"addresses", p["old.pb.gz"], p["new.pb.gz"], "samples", map[string]any{"granularity": "addresses"}, []string{"-addresses"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"sources": []any{pathSrc(tt.base, "pprof"), pathSrc(tt.cand, "pprof")}, "sample_type": tt.sampleType, "page_size": 4}
			for k, v := range tt.args {
				args[k] = v
			}
			res := e.mustCall("compare_profiles", args)
			rows := rowsOf(t, e, res)
			// pprof -top omits nodes whose net flat and cum are both 0.
			var got []map[string]any
			for _, r := range rows {
				if r["delta_flat"] != "0" || r["delta_cum"] != "0" {
					got = append(got, r)
				}
			}
			want, wantTotal := pprofTopRows(t, tt.cand, append([]string{"-sample_index=" + tt.sampleType, "-diff_base=" + tt.base}, tt.flags...)...)
			comp := data(res)["summary"].(map[string]any)["comparisons"].([]any)[0].(map[string]any)
			if bt := atoi(t, comp["base_total"]); bt != wantTotal {
				t.Errorf("base total %d, pprof -diff_base total %d", bt, wantTotal)
			}
			compareTop(t, got, want, "delta_flat", "delta_cum", "diff_base_flat_percent", "diff_base_cum_percent")
		})
	}
}

// TestProfileFormatDetection: legacy profiles and folded stacks (UTF-16,
// after comments, with a tab before the count) are recognized without a
// declared format.
func TestProfileFormatDetection(t *testing.T) {
	e := newEnv(t)
	p := synthProfiles(t, e.dir)
	for _, f := range []string{p["heap.txt"], p["contention.txt"], p["legacy.cpu"], e.write("s16.txt", utf16("main;a 3\n", false)),
		e.write("comment.txt", "# collapsed by stackcollapse-perf.pl\n\nmain;a 3\n"), e.write("tab.txt", "main;a\t3\n")} {
		m, code := e.call("summarize_profile", map[string]any{"sources": []any{pathSrc(f)}})
		if code != "" {
			t.Errorf("%s: %s %v", filepath.Base(f), code, m["error"])
		}
	}
}
