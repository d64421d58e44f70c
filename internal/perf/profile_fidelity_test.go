package perf

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/pprof/profile"
)

// unsymProfile writes an unsymbolized CPU profile (samples count) over
// mappings with the given files: stacks are lists of (mapping index,
// address) frames, leaf first, each with its count.
func unsymProfile(t *testing.T, path string, files []string, stacks [][][2]uint64, counts []int64) string {
	t.Helper()
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}
	for i, f := range files {
		base := uint64(0x400000 + i*0x1000000)
		p.Mapping = append(p.Mapping, &profile.Mapping{ID: uint64(i + 1), Start: base, Limit: base + 0x100000, File: f})
	}
	locs := map[[2]uint64]*profile.Location{}
	for si, st := range stacks {
		var ls []*profile.Location
		for _, fr := range st {
			loc := locs[fr]
			if loc == nil {
				m := p.Mapping[fr[0]]
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: m.Start + fr[1]}
				locs[fr] = loc
				p.Location = append(p.Location, loc)
			}
			ls = append(ls, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: ls, Value: []int64{counts[si]}})
	}
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := p.Write(fh); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUnsymbolizedMappingsKeyedLikePprof: frames without symbols from two
// mappings with the same base name are two rows, as pprof -top
// -symbolize=none prints them (issue 35 item 5), in summarize_profile and
// in compare_profiles against pprof -diff_base of two profiles of the
// same binary under different paths.
func TestUnsymbolizedMappingsKeyedLikePprof(t *testing.T) {
	e := newEnv(t)
	// /opt/a/libx.so: 5 flat, 5 cum; /opt/b/libx.so: 5 flat, 7 cum
	// (it calls into a with 2 more); main binary frames on top.
	two := unsymProfile(t, filepath.Join(e.dir, "two.pb.gz"), []string{"/usr/bin/app", "/opt/a/libx.so", "/opt/b/libx.so"},
		[][][2]uint64{{{1, 0x10}, {0, 0x10}}, {{2, 0x20}, {0, 0x10}}, {{1, 0x30}, {2, 0x40}, {0, 0x10}}},
		[]int64{3, 5, 2})
	res := e.mustCall("summarize_profile", map[string]any{"sources": []any{pathSrc(two, "pprof")}, "sample_type": "samples", "page_size": 100})
	rows := rowsOf(t, e, res)
	want, _ := pprofTopRows(t, two, "-sample_index=samples")
	// pprof's order of two rows printed alike with equal flat is not
	// fixed (its nodes come from a map), so tied rows are compared in a
	// canonical order.
	canonTies(t, rows, want, "flat", "cum")
	compareTop(t, rows, want, "flat", "cum", "flat_percent", "cum_percent")
	libx := 0
	for _, r := range rows {
		if r["function"] == "[libx.so]" {
			libx++
			if r["mapping"] != "/opt/a/libx.so" && r["mapping"] != "/opt/b/libx.so" {
				t.Errorf("row %v names no mapping", r)
			}
		}
	}
	if libx != 2 {
		t.Errorf("%d [libx.so] rows, pprof prints 2: %v", libx, rows)
	}

	// The same binary under two paths: pprof -diff_base keeps the
	// base's and the candidate's frames apart.
	base := unsymProfile(t, filepath.Join(e.dir, "base.pb.gz"), []string{"/build/1/app", "/build/1/libx.so"},
		[][][2]uint64{{{1, 0x10}, {0, 0x10}}, {{0, 0x20}}}, []int64{4, 6})
	cand := unsymProfile(t, filepath.Join(e.dir, "cand.pb.gz"), []string{"/build/2/app", "/build/2/libx.so"},
		[][][2]uint64{{{1, 0x10}, {0, 0x10}}, {{0, 0x20}}}, []int64{5, 9})
	cmp := e.mustCall("compare_profiles", map[string]any{"sources": []any{pathSrc(base, "pprof"), pathSrc(cand, "pprof")}, "sample_type": "samples", "page_size": 100})
	crows := rowsOf(t, e, cmp)
	var got []map[string]any
	for _, r := range crows {
		if r["delta_flat"] != "0" || r["delta_cum"] != "0" {
			got = append(got, r)
		}
	}
	dwant, _ := pprofTopRows(t, cand, "-sample_index=samples", "-diff_base="+base)
	if len(dwant) < 4 {
		t.Fatalf("pprof -diff_base printed %d rows; the test expects base and candidate frames apart", len(dwant))
	}
	canonTies(t, got, dwant, "delta_flat", "delta_cum")
	compareTop(t, got, dwant, "delta_flat", "delta_cum", "diff_base_flat_percent", "diff_base_cum_percent")
}

// canonTies reorders, in both ours and pprof's rows, each run of rows
// with the same name and |flat| by cum descending.
func canonTies(t *testing.T, ours []map[string]any, ref []topRow, flatKey, cumKey string) {
	t.Helper()
	abs := func(v int64) int64 { return max(v, -v) }
	sort.SliceStable(ours, func(i, j int) bool {
		a, b := ours[i], ours[j]
		if a["function"] != b["function"] || abs(atoi(t, a[flatKey])) != abs(atoi(t, b[flatKey])) {
			return false
		}
		return atoi(t, a[cumKey]) > atoi(t, b[cumKey])
	})
	sort.SliceStable(ref, func(i, j int) bool {
		a, b := ref[i], ref[j]
		if a.name != b.name || abs(a.flat) != abs(b.flat) {
			return false
		}
		return a.cum > b.cum
	})
}

// TestCompareProfilesZeroBaseTotal: when the base's total is 0 (no
// samples, or only samples of value 0), percentages of it are undefined:
// null with a reason, never 0 (issue 35 item 10); the deltas are pprof
// -diff_base's. (pprof then divides by the candidate's total instead, as
// its report's total falls back to all samples when the base's is 0.)
func TestCompareProfilesZeroBaseTotal(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name       string
		base, cand [][][2]uint64
		bc, cc     []int64
	}{
		{"base without samples", nil, [][][2]uint64{{{0, 0x10}}, {{0, 0x20}}}, nil, []int64{20, 3}},
		{"base samples of value 0", [][][2]uint64{{{0, 0x10}}, {{0, 0x20}}}, [][][2]uint64{{{0, 0x20}}}, []int64{0, 0}, []int64{-20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := []string{"/usr/bin/app"}
			base := unsymProfile(t, filepath.Join(e.dir, tc.name+"-base.pb.gz"), files, tc.base, tc.bc)
			cand := unsymProfile(t, filepath.Join(e.dir, tc.name+"-cand.pb.gz"), files, tc.cand, tc.cc)
			res := e.mustCall("compare_profiles", map[string]any{"sources": []any{pathSrc(base, "pprof"), pathSrc(cand, "pprof")}, "sample_type": "samples", "granularity": "addresses", "page_size": 100})
			rows := rowsOf(t, e, res)
			var got []map[string]any
			for _, r := range rows {
				if r["delta_flat"] != "0" || r["delta_cum"] != "0" {
					got = append(got, r)
				}
				if r["diff_base_flat_percent"] != nil || r["diff_base_cum_percent"] != nil || r["percent_unknown_reason"] == nil {
					t.Errorf("row %v: percentages of a zero base total must be null with a reason", r)
				}
			}
			want, total := pprofTopRows(t, cand, "-sample_index=samples", "-addresses", "-diff_base="+base)
			var candAbs int64
			for _, c := range tc.cc {
				candAbs += max(c, -c)
			}
			comp := data(res)["summary"].(map[string]any)["comparisons"].([]any)[0].(map[string]any)
			if total != candAbs || comp["base_total"] != "0" {
				t.Fatalf("pprof -diff_base total %d (the candidate's is %d), our base_total %v", total, candAbs, comp["base_total"])
			}
			if len(got) == 0 {
				t.Fatal("no delta rows")
			}
			compareTop(t, got, want, "delta_flat", "delta_cum", "", "")
		})
	}
}

// javaCPU writes a legacy Java binary CPU profile (profile.parseCPU's
// header 0, 3, 1, period, 0, then count/depth/addresses samples, the
// end-of-data marker and the address-to-method text) in words of w bytes.
func javaCPU(t *testing.T, path string, w int, order binary.ByteOrder) string {
	t.Helper()
	var buf bytes.Buffer
	word := func(v uint64) {
		if w == 8 {
			binary.Write(&buf, order, v)
		} else {
			binary.Write(&buf, order, uint32(v))
		}
	}
	for _, v := range []uint64{0, 3, 1, 10000, 0} {
		word(v)
	}
	for _, s := range [][]uint64{{5, 2, 0x1000, 0x2000}, {3, 2, 0x1010, 0x2000}, {2, 1, 0x2000}} {
		for _, v := range s {
			word(v)
		}
	}
	for _, v := range []uint64{0, 1, 0} {
		word(v)
	}
	buf.WriteString("0x1000 com.example.Hot.run (Hot.java:12)\n0x1010 com.example.Cold.run (Cold.java:7)\n0x2000 com.example.Main.main (Main.java:3)\n")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLegacyThreadcreateAndJavaDetected: a legacy text thread-creation
// profile and legacy Java binary CPU profiles (32- and 64-bit words, both
// byte orders) are detected without a declared format and read as pprof
// reads them (issue 35 item 6).
func TestLegacyThreadcreateAndJavaDetected(t *testing.T) {
	e := newEnv(t)
	thread := e.write("threads.txt", "threadcreate profile: total 7\n"+
		"4 @ 0x401000 0x402000 0x403000\n"+
		"#\t0x401000\truntime.newm+0x10\t/go/src/runtime/proc.go:10\n\n"+
		"3 @ 0x404000 0x403000\n")
	for _, tc := range []struct{ name, file, sampleType string }{
		{"threadcreate", thread, "threadcreate"},
		{"java cpu 64-bit little-endian", javaCPU(t, filepath.Join(e.dir, "java64le.prof.bin"), 8, binary.LittleEndian), "samples"},
		{"java cpu 64-bit big-endian", javaCPU(t, filepath.Join(e.dir, "java64be.prof.bin"), 8, binary.BigEndian), "cpu"},
		{"java cpu 32-bit little-endian", javaCPU(t, filepath.Join(e.dir, "java32le.prof.bin"), 4, binary.LittleEndian), "samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, code := e.call("summarize_profile", map[string]any{"sources": []any{pathSrc(tc.file)}, "sample_type": tc.sampleType, "page_size": 100})
			if code != "" {
				t.Fatalf("without format: %s %v", code, m["error"])
			}
			if f := data(m)["sources"].([]any)[0].(map[string]any)["format"]; f != "pprof" {
				t.Errorf("detected format %v, want pprof", f)
			}
			flags := []string{"-sample_index=" + tc.sampleType}
			if tc.sampleType == "cpu" {
				flags = append(flags, "-unit=ns")
			}
			want, total := pprofTopRows(t, tc.file, flags...)
			if len(want) == 0 {
				t.Fatal("pprof printed no rows")
			}
			compareTop(t, rowsOf(t, e, m), want, "flat", "cum", "flat_percent", "cum_percent")
			st := data(m)["summary"].(map[string]any)["sample_types"].([]any)
			for _, s := range st {
				if s := s.(map[string]any); s["type"] == tc.sampleType && atoi(t, s["total"]) != total {
					t.Errorf("total %v, pprof %d", s["total"], total)
				}
			}
		})
	}
}
