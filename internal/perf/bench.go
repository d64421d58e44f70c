package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

func benchFields() []Field {
	return []Field{
		{"confidence", map[string]any{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "description": "Confidence level of the intervals around each center (benchstat -confidence); default 0.95."}},
		{"alpha", map[string]any{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "description": "Significance level for comparisons (benchstat -alpha); default 0.05."}},
	}
}

func summarizeBenchmarksOperation() *Operation {
	return &Operation{
		Name:  "summarize_benchmarks",
		Title: "Summarize Go benchmark results",
		Description: "Summarize one Go benchmark results file (`go test -bench` output, golang.org/x/perf/benchfmt): per benchmark, configuration and unit, the sample size, center (median, or exact value for assume=exact units), its confidence interval and range, as benchstat computes them with benchmath. Units are tidied like benchstat (ns/op becomes sec/op). " +
			"Required: sources (exactly one gobench file). Optional: confidence, page_size, limits, continuation.",
		MinSources: 1, MaxSources: 1,
		Formats: []string{FormatGoBench},
		Fields:  benchFields()[:1],
		Run:     runSummarizeBenchmarks,
	}
}

func compareBenchmarksOperation() *Operation {
	return &Operation{
		Name:  "compare_benchmarks",
		Title: "Compare Go benchmark results",
		Description: "Compare Go benchmark results files like benchstat (first source is the baseline column, each other source a candidate): per benchmark, configuration and unit, both summaries, the percent change of the centers, the p-value of benchmath's Mann-Whitney U test (or exact comparison), and a significance verdict (\"~\" when p > alpha) with the direction judged by the unit (lower sec/op is better); summary.geomean gives benchstat's geomean row per candidate and unit. " +
			"Required: sources (2-16 gobench files). Optional: confidence, alpha, page_size, limits, continuation.",
		MinSources: 2, MaxSources: 16,
		Formats: []string{FormatGoBench},
		Fields:  benchFields(),
		Run:     runCompareBenchmarks,
	}
}

type benchKey struct {
	config string
	name   string
	unit   string
}

type benchFile struct {
	order    []benchKey
	values   map[benchKey][]float64
	configs  map[string]map[string]string
	units    benchfmt.UnitMetadataMap
	results  int
	warnings []string
}

// readBench reads one benchmark file with benchfmt. Syntax errors are kept
// as warnings with their line numbers (benchstat reports and skips them).
func readBench(ctx context.Context, in *input) (*benchFile, error) {
	f, err := os.Open(in.file)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInputChanged, "source %d can no longer be read", in.index)
	}
	defer f.Close()
	bf := &benchFile{values: map[benchKey][]float64{}, configs: map[string]map[string]string{}}
	r := benchfmt.NewReader(ctxReader{ctx, f}, "source-"+itoa(in.index))
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			if len(bf.warnings) < 100 {
				_, line := rec.Pos()
				bf.warnings = append(bf.warnings, "source "+itoa(in.index)+" line "+itoa(line)+": "+rec.Msg+" (line skipped)")
			}
		case *benchfmt.Result:
			bf.results++
			var parts []string
			cfg := map[string]string{}
			for _, c := range rec.Config {
				if c.File {
					parts = append(parts, c.Key+"="+string(c.Value))
					cfg[c.Key] = string(c.Value)
				}
			}
			cs := strings.Join(parts, " ")
			bf.configs[cs] = cfg
			for _, v := range rec.Values {
				k := benchKey{cs, rec.Name.String(), v.Unit}
				if _, ok := bf.values[k]; !ok {
					bf.order = append(bf.order, k)
				}
				bf.values[k] = append(bf.values[k], v.Value)
			}
		}
	}
	if err := r.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, decodeFail("source %d could not be read as Go benchmark results", in.index)
	}
	bf.units = r.Units()
	if bf.results == 0 {
		return nil, decodeFail("source %d holds no Go benchmark result lines", in.index)
	}
	return bf, nil
}

func floatField(m map[string]any, key string, def float64) float64 {
	if n, ok := m[key].(json.Number); ok {
		if f, err := strconv.ParseFloat(string(n), 64); err == nil {
			return f
		}
	}
	return def
}

func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

func summaryMap(s benchmath.Summary, n int, label string) map[string]any {
	m := map[string]any{"n": n, "center": finite(s.Center), "lo": finite(s.Lo), "hi": finite(s.Hi), "confidence": finite(s.Confidence), "statistic": label, "range": "±" + s.PctRangeString()}
	if w := errStrings(s.Warnings); len(w) > 0 {
		m["warnings"] = w
	}
	return m
}

func errStrings(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// sortedKeys orders benchmark keys like benchstat: configuration, then
// first appearance of the name, then unit in appearance order.
func sortedKeys(order []benchKey) []benchKey {
	out := append([]benchKey(nil), order...)
	pos := map[benchKey]int{}
	for i, k := range order {
		pos[k] = i
	}
	sort.SliceStable(out, func(a, b int) bool { return pos[out[a]] < pos[out[b]] })
	return out
}

func runSummarizeBenchmarks(ctx context.Context, req *Request) (*Output, error) {
	bf, err := readBench(ctx, req.Inputs[0])
	if err != nil {
		return nil, err
	}
	conf := floatField(req.Fields, "confidence", 0.95)
	th := benchmath.DefaultThresholds
	var rows []any
	for _, k := range sortedKeys(bf.order) {
		s := benchmath.NewSample(append([]float64(nil), bf.values[k]...), &th)
		as := bf.units.GetAssumption(k.unit)
		sum := as.Summary(s, conf)
		row := map[string]any{"benchmark": k.name, "config": bf.configs[k.config], "unit": k.unit}
		for kk, v := range summaryMap(sum, len(s.Values), as.SummaryLabel()) {
			row[kk] = v
		}
		rows = append(rows, row)
	}
	out, err := page(rows, req)
	if err != nil {
		return nil, err
	}
	out.Summary = map[string]any{"results": bf.results, "series": len(bf.order), "confidence": conf}
	out.Warnings = bf.warnings
	return out, nil
}

func runCompareBenchmarks(ctx context.Context, req *Request) (*Output, error) {
	var files []*benchFile
	for _, in := range req.Inputs {
		bf, err := readBench(ctx, in)
		if err != nil {
			return nil, err
		}
		files = append(files, bf)
	}
	conf := floatField(req.Fields, "confidence", 0.95)
	th := benchmath.Thresholds{CompareAlpha: floatField(req.Fields, "alpha", 0.05)}
	base := files[0]
	var rows []any
	significant := 0
	var warnings []string
	var geomeans []any
	for ci := 1; ci < len(files); ci++ {
		cand := files[ci]
		keys := sortedKeys(append(append([]benchKey(nil), base.order...), onlyIn(cand.order, base.values)...))
		gm := map[string]*geoAcc{}
		var gmUnits []string
		acc := func(unit string) *geoAcc {
			if gm[unit] == nil {
				gm[unit] = &geoAcc{}
				gmUnits = append(gmUnits, unit)
			}
			return gm[unit]
		}
		for _, k := range keys {
			row := map[string]any{"candidate": ci, "benchmark": k.name, "config": mergeCfg(base.configs[k.config], cand.configs[k.config]), "unit": k.unit}
			bv, okb := base.values[k]
			cv, okc := cand.values[k]
			as := base.units.GetAssumption(k.unit)
			var bs, cs *benchmath.Sample
			if okb {
				bs = benchmath.NewSample(append([]float64(nil), bv...), &th)
				row["base"] = summaryMap(as.Summary(bs, conf), len(bs.Values), as.SummaryLabel())
			} else {
				row["base"] = nil
			}
			if okc {
				cs = benchmath.NewSample(append([]float64(nil), cv...), &th)
				row["candidate_summary"] = summaryMap(as.Summary(cs, conf), len(cs.Values), as.SummaryLabel())
			} else {
				row["candidate_summary"] = nil
			}
			if !okb || !okc {
				row["verdict"] = map[bool]string{true: "missing_in_candidate", false: "missing_in_base"}[okb]
				row["delta_percent"], row["p_value"], row["significant"], row["delta"] = nil, nil, false, ""
				rows = append(rows, row)
				continue
			}
			cmp := as.Compare(bs, cs)
			oc, nc := as.Summary(bs, conf).Center, as.Summary(cs, conf).Center
			acc(k.unit).add(oc, nc)
			row["p_value"] = finite(cmp.P)
			row["alpha"] = cmp.Alpha
			row["comparison"] = cmp.String()
			row["delta"] = cmp.FormatDelta(oc, nc)
			sig := cmp.P <= cmp.Alpha && oc != nc
			// benchstat prints "~" when P > Alpha (FormatDelta).
			row["significant"] = sig
			if oc != 0 {
				row["delta_percent"] = finite((nc/oc - 1) * 100)
			} else {
				row["delta_percent"] = nil
			}
			if w := errStrings(cmp.Warnings); len(w) > 0 {
				row["warnings"] = w
			}
			better := base.units.GetBetter(k.unit)
			switch {
			case !sig:
				row["verdict"] = "no_significant_change"
			case better == 0:
				row["verdict"] = map[bool]string{true: "increase", false: "decrease"}[nc > oc]
			case (nc > oc) == (better > 0):
				row["verdict"] = "improvement"
			default:
				row["verdict"] = "regression"
			}
			if sig {
				significant++
			}
			rows = append(rows, row)
		}
		for _, u := range gmUnits {
			geomeans = append(geomeans, gm[u].result(ci, u))
		}
	}
	for _, f := range files {
		warnings = append(warnings, f.warnings...)
	}
	out, err := page(rows, req)
	if err != nil {
		return nil, err
	}
	out.Summary = map[string]any{"baseline": 0, "candidates": len(files) - 1, "significant": significant, "confidence": conf, "alpha": th.CompareAlpha, "test": "benchmath AssumeNothing: Mann-Whitney U (exact comparison for assume=exact units)", "geomean": geomeans}
	out.Warnings = warnings
	return out, nil
}

func onlyIn(order []benchKey, other map[benchKey][]float64) []benchKey {
	var out []benchKey
	for _, k := range order {
		if _, ok := other[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

func mergeCfg(a, b map[string]string) map[string]string {
	if a != nil {
		return a
	}
	return b
}

// geoAcc accumulates benchstat's geomean row of one unit: the geometric
// mean of each column's centers and of the candidate/base center ratios
// (0/0 counts as 1; a zero base makes the ratio unavailable). Only
// benchmarks present in both columns contribute.
type geoAcc struct {
	base, cand, ratio []float64
	badRatio          bool
}

func (g *geoAcc) add(b, c float64) {
	g.base = append(g.base, b)
	g.cand = append(g.cand, c)
	switch {
	case b == c:
		g.ratio = append(g.ratio, 1)
	case b == 0:
		g.badRatio = true
	default:
		g.ratio = append(g.ratio, c/b)
	}
}

func geomean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		if x <= 0 {
			return math.NaN()
		}
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

func (g *geoAcc) result(ci int, unit string) map[string]any {
	m := map[string]any{"candidate": ci, "unit": unit, "benchmarks": len(g.base), "base": finite(geomean(g.base)), "candidate_geomean": finite(geomean(g.cand)), "delta_percent": nil, "delta": "?"}
	if !g.badRatio {
		if r := geomean(g.ratio); !math.IsNaN(r) {
			m["delta_percent"] = (r - 1) * 100
			m["delta"] = fmt.Sprintf("%+.2f%%", (r-1)*100)
		}
	}
	return m
}
