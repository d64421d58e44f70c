package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestTopGolden renders a fixed rank_processes result
// (testdata/top.golden): an ended lifetime reads "ended", not the
// retained record's "unknown"; the header counts the unranked ones.
func TestTopGolden(t *testing.T) {
	res := &contract.Result{
		Coverage: map[string]any{"ranked": 3, "unranked": 17},
		Data: map[string]any{
			"metric":    map[string]any{"id": "cpu_percent", "unit": "percent"},
			"aggregate": "mean",
			"window":    map[string]any{"from": "2026-11-30T10:00:00Z", "to": "2026-11-30T10:01:00Z", "duration_ms": 60000},
			"rows": []any{
				map[string]any{"rank": 1, "pid": 4242, "name": "python3.11", "lifecycle": "live", "value": 41.1, "available_value_count": 60, "coverage": map[string]any{"fraction": 1.0}},
				map[string]any{"rank": 2, "pid": 5000, "name": "compile", "lifecycle": "unknown", "value": 12.6, "available_value_count": 6, "coverage": map[string]any{"fraction": 0.1, "started_in_window": true, "ended_in_window": true}},
				map[string]any{"rank": 3, "pid": 77, "name": "kworker/0:1", "lifecycle": "live", "value": 0.5, "available_value_count": 60, "coverage": map[string]any{"fraction": 1.0, "truncated_by_retention": true}},
			},
		},
	}
	var b strings.Builder
	if err := renderRanking(&b, res, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "top.golden", b.String())
	// rss in human units, and exact with --bytes
	data := res.Data.(map[string]any)
	data["metric"] = map[string]any{"id": "rss_bytes", "unit": "bytes"}
	data["aggregate"] = "max"
	for _, r := range data["rows"].([]any) {
		r.(map[string]any)["value"] = "299790336"
	}
	for _, c := range []struct {
		exact bool
		want  string
	}{{false, " 285.9M "}, {true, " 299790336 "}} {
		b.Reset()
		if err := renderRanking(&b, res, c.exact); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("exact %v: no %q in\n%s", c.exact, c.want, b.String())
		}
	}
	if !isUnrankedWarning("17 lifetimes with samples in the window have no mean of cpu_percent there (no_available_value: 17); they are not ranked, and unknown is not zero") {
		t.Error("the unranked warning is not recognized, so top would print it")
	}
}

// TestInspectVerdictsFirst: bin inspect prints the hardening verdicts
// before the section rows, RELRO as Full/Partial RELRO.
func TestInspectVerdictsFirst(t *testing.T) {
	for _, c := range []struct{ verdict, want string }{{"full", "Full RELRO"}, {"partial", "Partial RELRO"}, {"no", "No RELRO"}} {
		raw, _ := json.Marshal(map[string]any{
			"file": map[string]any{"caller_input_path": "/bin/x", "size": "100"},
			"inspection": map[string]any{
				"header":    map[string]any{"format": "elf", "class": "ELFCLASS64", "endianness": "little"},
				"hardening": []any{map[string]any{"name": "relro", "verdict": c.verdict, "basis": []string{"PT_GNU_RELRO present"}}, map[string]any{"name": "nx", "verdict": "yes", "basis": []string{}}},
			},
			"rows": []any{map[string]any{"facet": "sections", "name": ".text", "address": "0x1000", "size": "10", "flags": "AX"}},
		})
		var b strings.Builder
		if err := renderInspection(&b, raw); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		h, s := strings.Index(out, "HARDENING"), strings.Index(out, "SECTION")
		if h < 0 || s < 0 || h > s || !regexp.MustCompile(`\nrelro +`+c.want+` `).MatchString(out) {
			t.Errorf("%s:\n%s", c.verdict, out)
		}
	}
}

// TestTopAccountingGolden: with cpu_time_ns the table says how much of
// the system's CPU the rows account for, names a parent's reaped-children
// row and marks the reaped lifetime counted in it; a slope renders per
// second in human units.
func TestTopAccountingGolden(t *testing.T) {
	res := &contract.Result{
		Coverage: map[string]any{"ranked": 3, "unranked": 0, "cpu_accounting": map[string]any{"system_cpu_ns": "40000000000", "rows_ns": "39800000000", "rows_share": 0.995}},
		Data: map[string]any{
			"metric":    map[string]any{"id": "cpu_time_ns", "unit": "nanoseconds"},
			"aggregate": "increase",
			"window":    map[string]any{"from": "2026-11-30T10:00:00Z", "to": "2026-11-30T10:00:20Z", "duration_ms": 20000},
			"rows": []any{
				map[string]any{"rank": 1, "kind": "reaped_children", "pid": 1234, "name": "children of PID 1234 (spawner)", "lifecycle": "live", "value": "16020000000", "available_value_count": 40, "coverage": map[string]any{"fraction": 1.0}},
				map[string]any{"rank": 2, "kind": "lifetime", "pid": 99, "name": "cc1", "lifecycle": "live", "value": "12000000000", "available_value_count": 40, "coverage": map[string]any{"fraction": 1.0}},
				map[string]any{"rank": 3, "kind": "lifetime", "pid": 1300, "name": "spawner", "lifecycle": "unknown", "value": "80000000", "available_value_count": 1, "accounted_in": map[string]any{"pid": 1234}, "coverage": map[string]any{"fraction": 0.0, "started_in_window": true, "ended_in_window": true}},
			},
		},
	}
	var b strings.Builder
	if err := renderRanking(&b, res, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "top_accounting.golden", b.String())
	data := res.Data.(map[string]any)
	data["metric"] = map[string]any{"id": "rss_bytes", "unit": "bytes"}
	data["aggregate"], data["value_unit"] = "slope", "bytes/s"
	data["rows"].([]any)[0].(map[string]any)["value"] = 8551167.5
	b.Reset()
	if err := renderRanking(&b, res, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), " 8.2M/s ") {
		t.Errorf("slope cell: no 8.2M/s in\n%s", b.String())
	}
}
