package bin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// summaryByRoundTrip is how inspect_binary built data.inspection before
// inspectionSummary: the Inspection's JSON less its lists, decoded into a
// map (keys sorted when encoded) and go_build_info.deps and
// debug_info.producers dropped the same way. It is the reference the
// typed summary must encode identically to.
func summaryByRoundTrip(in *Inspection) map[string]json.RawMessage {
	sum := *in
	sum.Sections, sum.Segments, sum.Imports, sum.Exports, sum.Libraries, sum.Members = nil, nil, nil, nil, nil, nil
	if in.GoBuildInfo != nil {
		g := *in.GoBuildInfo
		g.Deps = nil
		sum.GoBuildInfo = &g
	}
	if in.Debug != nil {
		d := *in.Debug
		d.Producers = nil
		sum.Debug = &d
	}
	b, _ := json.Marshal(&sum)
	var summary map[string]json.RawMessage
	_ = json.Unmarshal(b, &summary)
	for _, k := range []string{"sections", "segments", "imports", "exports", "libraries", "members"} {
		delete(summary, k)
	}
	for _, k := range []string{"go_build_info", "debug_info"} {
		var m map[string]json.RawMessage
		if json.Unmarshal(summary[k], &m) == nil && m != nil {
			delete(m, "deps")
			delete(m, "producers")
			summary[k], _ = json.Marshal(m)
		}
	}
	return summary
}

// countByRows is how inspect_binary counted a facet before facetCount:
// by encoding its rows.
func countByRows(in *Inspection, facet string) int { return len(facetRows(in, facet)) }

// TestInspectionSummaryEncoding: the typed summary (summarize) encodes
// byte for byte as the round-tripped one did, and facetCount equals the
// number of facet rows, on every file of the corpus (ELF, PE, Mach-O,
// universal, relocatable, C fixtures), the committed test files and the
// system's own binaries, with and without digests.
func TestInspectionSummaryEncoding(t *testing.T) {
	buildCorpus(t)
	var paths []string
	for _, p := range corpus {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	td, _ := filepath.Glob("testdata/*")
	for _, p := range td {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			paths = append(paths, p)
		}
	}
	for _, p := range []string{"/usr/bin/ls", "/bin/sh", filepath.Join(runtime.GOROOT(), "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH, "compile")} {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
		}
	}
	if len(paths) < 10 {
		t.Fatalf("only %d files to compare", len(paths))
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, digests := range []bool{false, true} {
			in, err := inspectMode(context.Background(), data, digests, dwarfUnits)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			want, _ := json.Marshal(summaryByRoundTrip(in))
			got, _ := json.Marshal(summarize(in))
			if !bytes.Equal(got, want) {
				t.Errorf("%s (digests %v): summary encodes differently\n got %s\nwant %s", p, digests, got, want)
			}
			for _, f := range ListFacets {
				if g, w := facetCount(in, f), countByRows(in, f); g != w {
					t.Errorf("%s: facetCount(%s) = %d, rows %d", p, f, g, w)
				}
			}
		}
	}
}
