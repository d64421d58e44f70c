package perf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/aclements/go-moremath/stats"
	"github.com/inquest-dev/inquest/internal/contract"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"
)

// benchSummaryFields are summarize_benchmarks' own arguments: benchstat's
// -confidence, -row, -ignore and -filter.
type benchSummaryFields struct {
	Confidence *float64 `json:"confidence,omitempty"`
	Row        string   `json:"row,omitempty"`
	Ignore     string   `json:"ignore,omitempty"`
	Filter     string   `json:"filter,omitempty"`
}

// benchCompareFields are compare_benchmarks' own arguments: the summary
// flags plus benchstat's -alpha and -col.
type benchCompareFields struct {
	benchSummaryFields
	Alpha *float64 `json:"alpha,omitempty"`
	Col   string   `json:"col,omitempty"`
}

type summarizeBenchmarksArgs struct {
	operationArgs
	benchSummaryFields
}

type compareBenchmarksArgs struct {
	operationArgs
	benchCompareFields
}

func benchField(name string) Field {
	switch name {
	case "confidence":
		return Field{"confidence", js{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "description": "benchstat -confidence (default 0.95)."}}
	case "alpha":
		return Field{"alpha", js{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "description": "benchstat -alpha (default 0.05)."}}
	case "row":
		return Field{"row", js{"type": "string", "minLength": 1, "maxLength": 1024, "description": "benchstat -row projection (default .fullname)."}}
	case "col":
		return Field{"col", js{"type": "string", "minLength": 1, "maxLength": 1024, "description": "benchstat -col projection (default .file: a column per source)."}}
	case "ignore":
		return Field{"ignore", js{"type": "string", "maxLength": 1024, "description": "benchstat -ignore keys."}}
	case "filter":
		return Field{"filter", js{"type": "string", "minLength": 1, "maxLength": 4096, "description": "benchstat -filter query (default *)."}}
	}
	panic("unknown benchmark field " + name)
}

func summarizeBenchmarksOperation() *Operation {
	return bindOperation(&Operation{
		Name:        "summarize_benchmarks",
		Title:       "Summarize Go benchmark results",
		Description: "Summarize one Go benchmark results file as benchstat does: per table, unit and row, the center, its confidence interval and range, and geomeans. Required: sources (exactly one gobench file).",
		MinSources:  1, MaxSources: 1,
		Formats: []string{FormatGoBench},
		Fields:  []Field{benchField("confidence"), benchField("row"), benchField("ignore"), benchField("filter")},
	}, func(ctx context.Context, req *Request, a *summarizeBenchmarksArgs) (*Output, error) {
		return runSummarizeBenchmarks(ctx, req, benchOptions(&benchCompareFields{benchSummaryFields: a.benchSummaryFields}))
	})
}

func compareBenchmarksOperation() *Operation {
	return bindOperation(&Operation{
		Name:        "compare_benchmarks",
		Title:       "Compare Go benchmark results",
		Description: "Compare Go benchmark results files as benchstat does (the first column is the baseline): per table, unit, row and column, the change of centers, the Mann-Whitney p-value and its significance at alpha. Required: sources (2-16 gobench files, or one file with col, as benchstat -col /format results.txt).",
		MinSources:  1, MaxSources: 16,
		Formats: []string{FormatGoBench},
		Fields:  []Field{benchField("confidence"), benchField("alpha"), benchField("col"), benchField("row"), benchField("ignore"), benchField("filter")},
	}, func(ctx context.Context, req *Request, a *compareBenchmarksArgs) (*Output, error) {
		return runCompareBenchmarks(ctx, req, benchOptions(&a.benchCompareFields))
	})
}

// benchOpts are benchstat's projection flags.
type benchOpts struct {
	row, col, ignore, filter string
	conf                     float64
	th                       benchmath.Thresholds
}

func benchOptions(f *benchCompareFields) benchOpts {
	o := benchOpts{row: ".fullname", col: ".file", filter: "*", ignore: f.Ignore, conf: 0.95}
	if f.Row != "" {
		o.row = f.Row
	}
	if f.Col != "" {
		o.col = f.Col
	}
	if f.Filter != "" {
		o.filter = f.Filter
	}
	if f.Confidence != nil {
		o.conf = *f.Confidence
	}
	o.th = benchmath.DefaultThresholds
	o.th.CompareAlpha = 0.05
	if f.Alpha != nil {
		o.th.CompareAlpha = *f.Alpha
	}
	return o
}

// benchTable is one benchstat table: one configuration (the .config keys
// not otherwise projected) and unit, rows by the row projection and
// columns by the column projection.
type benchTable struct {
	key        benchproc.Key
	unit       string
	rows, cols []benchproc.Key
	rowSet     map[benchproc.Key]struct{}
	colSet     map[benchproc.Key]struct{}
	cells      map[[2]benchproc.Key]*benchCell
	assumption benchmath.Assumption
	better     int
	geomeans   []*benchGeomean // per column
}

type benchCell struct {
	values []float64
	// residues are the distinct residue keys of the cell's results (the
	// fields no projection names); residueSet indexes them once there are
	// many (most cells have one).
	residues   []benchproc.Key
	residueSet map[benchproc.Key]struct{}
	sample     *benchmath.Sample
	summary    benchmath.Summary
	base       *benchCell
	cmp        benchmath.Comparison
	warns      []string // sample and summary warnings
	noCmp      bool     // a sample holds NaN: no comparison
}

// addResidue records k among the cell's distinct residue keys.
func (c *benchCell) addResidue(k benchproc.Key) {
	if c.residueSet != nil {
		if _, ok := c.residueSet[k]; ok {
			return
		}
		c.residueSet[k] = struct{}{}
	} else if slices.Contains(c.residues, k) {
		return
	} else if len(c.residues) >= 8 {
		c.residueSet = make(map[benchproc.Key]struct{}, 16)
		for _, r := range c.residues {
			c.residueSet[r] = struct{}{}
		}
		c.residueSet[k] = struct{}{}
	}
	c.residues = append(c.residues, k)
}

func hasNaN(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) {
			return true
		}
	}
	return false
}

// benchGeomean is benchstat's geomean row cell of one column: the
// geometric mean of the column's own centers and of its ratios to the
// baseline column.
type benchGeomean struct {
	hasSummary, hasRatio bool
	summary, ratio       float64
	n, paired            int
	warnings             []string
}

// benchTables is what benchstat builds from the inputs.
type benchTables struct {
	tables      []*benchTable
	unitField   *benchproc.Field
	tableFields []*benchproc.Field
	results     int
	filtered    int
	syntax      int
	warnings    []string
	// empty lists the sources without any result line: like benchstat,
	// they give no column (their absence is a warning).
	empty []int
}

// buildBenchTables reads every input with benchfmt (input i is the file
// "source-i" for the .file key), applies the filter and projections with
// benchproc, and summarizes every cell, comparison and geomean with
// benchmath exactly as benchstat's table builder does.
func buildBenchTables(ctx context.Context, inputs []*input, o benchOpts) (*benchTables, error) {
	filter, err := benchproc.NewFilter(o.filter)
	if err != nil {
		return nil, fieldErr(contract.CodeInvalidArgument, "/filter", "filter is not a benchfilter query: %v", sanitize(err))
	}
	var parser benchproc.ProjectionParser
	tableBy, unitField, err := parser.ParseWithUnit(".config", filter)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "table projection: %v", sanitize(err))
	}
	rowBy, err := parser.Parse(o.row, filter)
	if err != nil {
		return nil, fieldErr(contract.CodeInvalidArgument, "/row", "row is not a benchproc projection: %v", sanitize(err))
	}
	colBy, err := parser.Parse(o.col, filter)
	if err != nil {
		return nil, fieldErr(contract.CodeInvalidArgument, "/col", "col is not a benchproc projection: %v", sanitize(err))
	}
	if _, err := parser.Parse(o.ignore, filter); err != nil {
		return nil, fieldErr(contract.CodeInvalidArgument, "/ignore", "ignore is not a list of benchproc keys: %v", sanitize(err))
	}
	residue := parser.Residue()
	bt := &benchTables{unitField: unitField}
	byKey := map[benchproc.Key]*benchTable{}
	// One reader for every input, as benchfmt.Files does: unit metadata
	// accumulates, and each input is the .file "source-N".
	r := benchfmt.NewReader(bytes.NewReader(nil), "")
	for _, in := range inputs {
		f, err := os.Open(in.file)
		if err != nil {
			return nil, fieldErr(contract.CodeInputChanged, "/sources/"+itoa(in.index), "source %d can no longer be read", in.index)
		}
		r.Reset(ctxReader{ctx, f}, "source-"+itoa(in.index), ".file", "source-"+itoa(in.index))
		results := 0
		for r.Scan() {
			switch rec := r.Result().(type) {
			case *benchfmt.SyntaxError:
				bt.syntax++
				if len(bt.warnings) < 100 {
					_, line := rec.Pos()
					bt.warnings = append(bt.warnings, "source "+itoa(in.index)+" line "+itoa(line)+": "+rec.Msg+" (line skipped, as benchstat does)")
				}
			case *benchfmt.Result:
				results++
				bt.results++
				if ok, _ := filter.Apply(rec); !ok {
					bt.filtered++
					continue
				}
				tableKeys := tableBy.ProjectValues(rec)
				rowKey, colKey, resKey := rowBy.Project(rec), colBy.Project(rec), residue.Project(rec)
				for ui, tk := range tableKeys {
					t := byKey[tk]
					if t == nil {
						t = &benchTable{key: tk, rowSet: map[benchproc.Key]struct{}{}, colSet: map[benchproc.Key]struct{}{}, cells: map[[2]benchproc.Key]*benchCell{}}
						byKey[tk] = t
					}
					ck := [2]benchproc.Key{rowKey, colKey}
					c := t.cells[ck]
					if c == nil {
						c = &benchCell{}
						t.cells[ck] = c
						t.rowSet[rowKey] = struct{}{}
						t.colSet[colKey] = struct{}{}
					}
					c.values = append(c.values, rec.Values[ui].Value)
					c.addResidue(resKey)
				}
			}
		}
		err = r.Err()
		f.Close()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, bufio.ErrTooLong) {
				// benchfmt (and so benchstat) reads lines of at most
				// bufio.MaxScanTokenSize bytes; its error names the last
				// line it read whole.
				e := contract.Errorf(contract.CodeLimitExceeded, "source %d has a line longer than %d bytes, the longest line golang.org/x/perf/benchfmt (benchstat) reads", in.index, bufio.MaxScanTokenSize).WithDetail("limit_bytes", bufio.MaxScanTokenSize)
				prefix := "source-" + itoa(in.index) + ":"
				if rest, ok := strings.CutPrefix(err.Error(), prefix); ok {
					if n, _, ok := strings.Cut(rest, ":"); ok {
						if l, perr := strconv.Atoi(n); perr == nil {
							e = e.WithDetail("line", l+1)
						}
					}
				}
				return nil, e
			}
			return nil, decodeFail("source %d could not be read as Go benchmark results", in.index)
		}
		if results == 0 {
			if len(inputs) == 1 {
				return nil, decodeFail("source %d holds no Go benchmark result lines (\"BenchmarkName N value unit...\")", in.index)
			}
			// benchstat prints the other files' columns: this source is
			// an empty column, said in a warning.
			bt.empty = append(bt.empty, in.index)
			bt.warnings = append(bt.warnings, "source "+itoa(in.index)+" holds no Go benchmark result lines; like benchstat it gives no column (see coverage.empty_sources)")
		}
	}
	if len(bt.empty) == len(inputs) {
		return nil, decodeFail("no source holds Go benchmark result lines (\"BenchmarkName N value unit...\")")
	}
	units := r.Units()
	memo := compareMemo{}
	var keys []benchproc.Key
	for k := range byKey {
		keys = append(keys, k)
	}
	benchproc.SortKeys(keys)
	if len(keys) > 0 {
		bt.tableFields = keys[0].Projection().FlattenedFields()
	}
	for _, k := range keys {
		t := byKey[k]
		t.unit = k.Get(unitField)
		t.assumption = units.GetAssumption(t.unit)
		t.better = units.GetBetter(t.unit)
		t.rows, t.cols = sortedSet(t.rowSet), sortedSet(t.colSet)
		for _, c := range t.cells {
			c.sample = benchmath.NewSample(c.values, &o.th)
		}
		base := t.cols[0]
		for ck, c := range t.cells {
			if ck[1] != base {
				c.base = t.cells[[2]benchproc.Key{ck[0], base}]
			}
			c.summary = t.assumption.Summary(c.sample, o.conf)
			if c.base != nil {
				if hasNaN(c.values) || hasNaN(c.base.values) {
					// benchmath's Mann-Whitney U does not terminate on
					// NaN samples (benchstat hangs): not compared.
					c.noCmp = true
				} else {
					c.cmp = memo.compare(t.assumption, c.base.sample, c.sample)
				}
			}
			c.warns = append(errStrings(c.sample.Warnings), errStrings(c.summary.Warnings)...)
			if nsk := benchproc.NonSingularFields(c.residues); len(nsk) > 0 {
				var names []string
				for _, f := range nsk {
					names = append(names, f.Name)
				}
				c.warns = append(c.warns, "benchmarks vary in "+strings.Join(names, ", "))
			}
		}
		t.geomeans = geomeanRow(t)
		bt.tables = append(bt.tables, t)
	}
	return bt, nil
}

// compareMemo caches benchmath's Mann-Whitney U comparisons by the
// samples' rank signature. The test's result (p-value, its error and
// the sample-size warning) is a function of only the two sample sizes and
// the merged ranking's tie counts T (the length of each run of equal
// values in the merged sorted samples) and the first sample's rank sum
// R1 (which fixes U). Benchmarks of one
// run share few signatures (n=10 vs 10 without ties has 51), so each
// U distribution is built once instead of once per row as benchstat
// does; the results are the ones Compare returns.
type compareMemo map[string]benchmath.Comparison

func (m compareMemo) compare(a benchmath.Assumption, s1, s2 *benchmath.Sample) benchmath.Comparison {
	if a != benchmath.AssumeNothing {
		return a.Compare(s1, s2)
	}
	// Sample.Values are sorted (benchmath.NewSample sorts them).
	x, y := s1.Values, s2.Values
	key := make([]byte, 0, 16+3*(len(x)+len(y)))
	key = strconv.AppendInt(key, int64(len(x)), 10)
	key = append(key, ',')
	key = strconv.AppendInt(key, int64(len(y)), 10)
	key = append(key, ':')
	r1x2 := 0 // twice the first sample's rank sum (midranks)
	rank, ties := 1, false
	for i, j := 0, 0; i < len(x) || j < len(y); {
		var v float64
		if j >= len(y) || (i < len(x) && x[i] <= y[j]) {
			v = x[i]
		} else {
			v = y[j]
		}
		n1 := 0
		for ; i < len(x) && x[i] == v; i++ {
			n1++
		}
		n := n1
		for ; j < len(y) && y[j] == v; j++ {
			n++
		}
		r1x2 += (2*rank + n - 1) * n1
		rank += n
		ties = ties || n > 1
		key = strconv.AppendInt(key, int64(n), 10)
		key = append(key, ',')
	}
	// MannWhitneyUTest's exact branch for LocationDiffers (benchmath's
	// test) depends on U only through min(U1, U2); its normal
	// approximation on U1 itself.
	u1x2 := r1x2 - len(x)*(len(x)+1)
	limit := stats.MannWhitneyExactLimit
	if ties {
		limit = stats.MannWhitneyTiesExactLimit
	}
	if len(x) <= limit && len(y) <= limit {
		u1x2 = min(u1x2, 2*len(x)*len(y)-u1x2)
	}
	key = append(key, '=')
	key = strconv.AppendInt(key, int64(u1x2), 10)
	k := string(key) + "|" + strconv.FormatFloat(s1.Thresholds.CompareAlpha, 'g', -1, 64)
	if c, ok := m[k]; ok {
		return c
	}
	c := a.Compare(s1, s2)
	m[k] = c
	return c
}

func sortedSet(m map[benchproc.Key]struct{}) []benchproc.Key {
	keys := make([]benchproc.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	benchproc.SortKeys(keys)
	return keys
}

// geomeanRow is benchstat's summarizeCol for every column of t.
func geomeanRow(t *benchTable) []*benchGeomean {
	nBase := 0
	for _, row := range t.rows {
		if _, ok := t.cells[[2]benchproc.Key{row, t.cols[0]}]; ok {
			nBase++
		}
	}
	out := make([]*benchGeomean, len(t.cols))
	for i, col := range t.cols {
		g := &benchGeomean{}
		var summaries, ratios []float64
		badRatio := false
		for _, row := range t.rows {
			c, ok := t.cells[[2]benchproc.Key{row, col}]
			if !ok {
				continue
			}
			summaries = append(summaries, c.summary.Center)
			if c.base != nil {
				a, b := c.summary.Center, c.base.summary.Center
				switch {
				case a == b:
					ratios = append(ratios, 1)
				case b == 0:
					badRatio = true
					ratios = append(ratios, 0)
					continue
				default:
					ratios = append(ratios, a/b)
				}
			}
		}
		g.n, g.paired = len(summaries), len(ratios)
		if i > 0 && nBase != len(ratios) {
			g.warnings = append(g.warnings, "benchmark set differs from baseline; geomeans may not be comparable")
		}
		if gm := stats.GeoMean(summaries); math.IsNaN(gm) {
			g.warnings = append(g.warnings, "summaries must be >0 to compute geomean")
		} else {
			g.hasSummary, g.summary = true, gm
		}
		if i > 0 && !badRatio {
			if gm := stats.GeoMean(ratios); math.IsNaN(gm) {
				g.warnings = append(g.warnings, "ratios must be >0 to compute geomean")
			} else {
				g.hasRatio, g.ratio = true, gm
			}
		}
		out[i] = g
	}
	return out
}

// config is the table's configuration (its key without the unit), as
// benchstat prints above each table.
func (bt *benchTables) config(t *benchTable) map[string]string {
	m := map[string]string{}
	for _, f := range bt.tableFields {
		if f.Name != ".unit" {
			if v := t.key.Get(f); v != "" {
				m[f.Name] = v
			}
		}
	}
	return m
}

// num is f for JSON, or its string ("NaN", "+Inf", "-Inf") when it is
// not finite.
func num(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

func cellSummary(c *benchCell, label string) map[string]any {
	s := c.summary
	m := map[string]any{"n": len(c.sample.Values), "center": num(s.Center), "lo": num(s.Lo), "hi": num(s.Hi), "confidence": num(s.Confidence), "statistic": label, "range": "±" + s.PctRangeString()}
	if len(c.warns) > 0 {
		m["warnings"] = c.warns
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

// configWarning explains tables that hold fewer columns than the result:
// the configurations (e.g. cpu: lines) differ, so benchstat prints their
// benchmarks in separate tables that are not compared.
func (bt *benchTables) configWarning() []string {
	cols := map[benchproc.Key]struct{}{}
	short := false
	for _, t := range bt.tables {
		for _, c := range t.cols {
			cols[c] = struct{}{}
		}
	}
	for _, t := range bt.tables {
		if len(t.cols) < len(cols) {
			short = true
		}
	}
	if !short || len(cols) < 2 {
		return nil
	}
	var keys []benchproc.Key
	for _, t := range bt.tables {
		keys = append(keys, t.key)
	}
	var names []string
	for _, f := range benchproc.NonSingularFields(keys) {
		if f.Name != ".unit" {
			names = append(names, f.Name)
		}
	}
	if len(names) == 0 {
		return []string{"some tables lack columns: not every benchmark appears in every column"}
	}
	return []string{fmt.Sprintf("the configurations differ in %s, so benchmarks of different configurations are in separate tables and not compared (as benchstat prints them); pass ignore: %q to compare across them", strings.Join(names, ", "), strings.Join(names, ","))}
}

func (bt *benchTables) coverage() map[string]any {
	empty := append([]int{}, bt.empty...)
	return map[string]any{"results": bt.results, "results_filtered": bt.filtered, "syntax_errors": bt.syntax, "tables": len(bt.tables), "empty_sources": empty}
}

func geomeanMap(bt *benchTables, t *benchTable, i int) map[string]any {
	g := t.geomeans[i]
	m := map[string]any{"config": bt.config(t), "unit": t.unit, "column": t.cols[i].StringValues(), "column_index": i, "benchmarks": g.n, "geomean": nil}
	if g.hasSummary {
		m["geomean"] = num(g.summary)
	}
	if i > 0 {
		m["base_column"] = t.cols[0].StringValues()
		m["paired"] = g.paired
		m["delta"], m["delta_percent"], m["ratio"] = "?", nil, nil
		if g.hasRatio {
			m["delta"] = fmt.Sprintf("%+.2f%%", (g.ratio-1)*100)
			m["delta_percent"] = num((g.ratio - 1) * 100)
			m["ratio"] = num(g.ratio)
		}
	}
	if len(g.warnings) > 0 {
		m["warnings"] = g.warnings
	}
	return m
}

func runSummarizeBenchmarks(ctx context.Context, req *Request, o benchOpts) (*Output, error) {
	bt, err := buildBenchTables(ctx, req.Inputs, o)
	if err != nil {
		return nil, err
	}
	// Rows are counted here and built only when the page takes them.
	type sumRow struct {
		t   *benchTable
		cfg map[string]string
		rk  benchproc.Key
		ci  int
		c   *benchCell
	}
	var rows []sumRow
	for _, t := range bt.tables {
		cfg := bt.config(t)
		for _, rk := range t.rows {
			for ci, ck := range t.cols {
				if c, ok := t.cells[[2]benchproc.Key{rk, ck}]; ok {
					rows = append(rows, sumRow{t, cfg, rk, ci, c})
				}
			}
		}
	}
	build := func(r sumRow) any {
		t := r.t
		row := cellSummary(r.c, t.assumption.SummaryLabel())
		row["benchmark"], row["config"], row["unit"] = r.rk.StringValues(), r.cfg, t.unit
		if len(t.cols) > 1 {
			row["column"] = t.cols[r.ci].StringValues()
			row["column_index"] = r.ci
		}
		return row
	}
	out, err := pageFunc(int64(len(rows)), func(i int64) any { return build(rows[i]) }, req)
	if err != nil {
		return nil, err
	}
	geo := pageGeomeans(bt, len(rows), req.Start.Row, len(out.Rows), func(i int) *benchTable { return rows[i].t })
	out.Summary = map[string]any{"results": bt.results, "series": len(rows), "tables": len(bt.tables), "confidence": o.conf, "row": o.row, "filter": o.filter, "ignore": o.ignore, "geomean": geo}
	out.Coverage = mergeCoverage(bt.coverage(), out.Coverage)
	out.Warnings = append(append(append([]string(nil), bt.warnings...), bt.configWarning()...), out.Warnings...)
	return out, nil
}

func runCompareBenchmarks(ctx context.Context, req *Request, o benchOpts) (*Output, error) {
	if len(req.Inputs) == 1 && o.col == ".file" {
		// benchstat compares the columns of one file only by another
		// projection (benchstat -col note results.txt).
		return nil, fieldErr(contract.CodeInvalidArgument, "/sources", "compare_benchmarks needs two or more sources, or one source with col (a projection such as /format or note) to compare its columns")
	}
	bt, err := buildBenchTables(ctx, req.Inputs, o)
	if err != nil {
		return nil, err
	}
	// Rows are counted here and built only when the page takes them.
	type cmpRow struct {
		t     *benchTable
		cfg   map[string]string
		rk    benchproc.Key
		ci    int
		c, bc *benchCell
	}
	var rows []cmpRow
	significant := 0
	for _, t := range bt.tables {
		cfg := bt.config(t)
		base := t.cols[0]
		for _, rk := range t.rows {
			bc := t.cells[[2]benchproc.Key{rk, base}]
			if len(t.cols) == 1 {
				rows = append(rows, cmpRow{t, cfg, rk, 0, nil, bc})
				continue
			}
			for ci := 1; ci < len(t.cols); ci++ {
				c := t.cells[[2]benchproc.Key{rk, t.cols[ci]}]
				if c == nil && bc == nil {
					continue
				}
				if c != nil && bc != nil && !c.noCmp && c.cmp.P <= c.cmp.Alpha && bc.summary.Center != c.summary.Center {
					significant++
				}
				rows = append(rows, cmpRow{t, cfg, rk, ci, c, bc})
			}
		}
	}
	build := func(r cmpRow) any {
		t, rk, ci, c, bc := r.t, r.rk, r.ci, r.c, r.bc
		label := t.assumption.SummaryLabel()
		base := t.cols[0]
		row := map[string]any{"candidate": ci, "benchmark": rk.StringValues(), "config": r.cfg, "unit": t.unit,
			"base_column": base.StringValues(), "column": t.cols[ci].StringValues(), "base": nil, "candidate_summary": nil,
			"delta_percent": nil, "p_value": nil, "significant": false, "delta": ""}
		if bc != nil {
			row["base"] = cellSummary(bc, label)
		}
		if c != nil && ci > 0 {
			row["candidate_summary"] = cellSummary(c, label)
		}
		switch {
		case ci == 0:
			row["column"] = nil
			row["verdict"] = "no_other_column"
		case bc == nil:
			row["verdict"] = "missing_in_base"
		case c == nil:
			row["verdict"] = "missing_in_candidate"
		case c.noCmp:
			row["verdict"] = "not_compared"
			row["delta"] = "?"
			row["warnings"] = []string{"a sample holds NaN values, which the Mann-Whitney U test cannot rank; not compared (benchstat does not terminate on this input)"}
		default:
			cmp := c.cmp
			oc, nc := bc.summary.Center, c.summary.Center
			row["p_value"] = num(cmp.P)
			row["alpha"] = cmp.Alpha
			row["comparison"] = cmp.String()
			row["delta"] = cmp.FormatDelta(oc, nc)
			// benchstat prints "~" when P > Alpha (FormatDelta).
			sig := cmp.P <= cmp.Alpha && oc != nc
			row["significant"] = sig
			if oc != 0 {
				row["delta_percent"] = num((nc/oc - 1) * 100)
			}
			if w := errStrings(cmp.Warnings); len(w) > 0 {
				row["warnings"] = w
			}
			switch {
			case !sig:
				row["verdict"] = "no_significant_change"
			case t.better == 0:
				row["verdict"] = map[bool]string{true: "increase", false: "decrease"}[nc > oc]
			case (nc > oc) == (t.better > 0):
				row["verdict"] = "improvement"
			default:
				row["verdict"] = "regression"
			}
		}
		return row
	}
	out, err := pageFunc(int64(len(rows)), func(i int64) any { return build(rows[i]) }, req)
	if err != nil {
		return nil, err
	}
	geo := pageGeomeans(bt, len(rows), req.Start.Row, len(out.Rows), func(i int) *benchTable { return rows[i].t })
	candidates := 0
	for _, t := range bt.tables {
		candidates = max(candidates, len(t.cols)-1)
	}
	out.Summary = map[string]any{"baseline": 0, "candidates": candidates, "significant": significant, "confidence": o.conf, "alpha": o.th.CompareAlpha,
		"test": "benchmath AssumeNothing: Mann-Whitney U (exact comparison for assume=exact units)", "geomean": geo,
		"tables": len(bt.tables), "row": o.row, "col": o.col, "filter": o.filter, "ignore": o.ignore}
	out.Coverage = mergeCoverage(bt.coverage(), out.Coverage)
	out.Warnings = append(append(append([]string(nil), bt.warnings...), bt.configWarning()...), out.Warnings...)
	return out, nil
}

// mergeCoverage returns base with the pager's coverage keys (page_ended_by)
// added from page; base may be nil.
func mergeCoverage(base, page map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range page {
		base[k] = v
	}
	return base
}

// pageGeomeans is summary.geomean of one page: benchstat's geomean row
// (geomeanMap, one entry per column) of each table that has a row on the
// page (rows start..start+n of the n-row listing, table(i) naming row i's
// table), in table order. Geomeans are per table, so a page carries those
// of its own tables and the summary stays bounded by the page, not by the
// number of tables in the input.
func pageGeomeans(bt *benchTables, total int, start int64, n int, table func(i int) *benchTable) []any {
	on := map[*benchTable]bool{}
	for i := int(start); i < int(start)+n && i < total; i++ {
		on[table(i)] = true
	}
	geo := []any{}
	for _, t := range bt.tables {
		if !on[t] {
			continue
		}
		for i := range t.cols {
			geo = append(geo, geomeanMap(bt, t, i))
		}
	}
	return geo
}
