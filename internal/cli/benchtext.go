package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/perf/benchunit"
)

// The text report of `inquest analyze compare_benchmarks`, shaped like
// benchstat's: the configuration (goos, goarch, pkg, cpu) when it
// changes, then one table per unit with a column per source file,
//
//	        │   old.txt    │               new.txt               │
//	        │    sec/op    │   sec/op     vs base                │
//	X-2       1010.0n ± ∞ ¹   810.0n ± ∞ ¹       ~ (p=0.100 n=3) ²
//	geomean    2.258µ         2.022µ        -10.45%
//	¹ need >= 6 samples for confidence interval at level 0.95
//
// Centers use benchstat's scaling (one scale per row, benchunit), the
// range, delta and p-value are compare_benchmarks' own strings. Column
// widths are this report's; the cells are benchstat's.

// benchSummary is a center with its range as compare_benchmarks reports
// it.
type benchSummary struct {
	Center   *float64 `json:"center"`
	Range    string   `json:"range"`
	Warnings []string `json:"warnings"`
}

// benchRow is one compare_benchmarks row: one benchmark, one unit, one
// candidate column against the base.
type benchRow struct {
	Benchmark  string            `json:"benchmark"`
	Unit       string            `json:"unit"`
	Candidate  int               `json:"candidate"`
	Base       benchSummary      `json:"base"`
	Cand       benchSummary      `json:"candidate_summary"`
	Delta      string            `json:"delta"`
	Comparison string            `json:"comparison"`
	Warnings   []string          `json:"warnings"`
	Config     map[string]string `json:"config"`
}

// benchData is the part of compare_benchmarks' data the report reads.
type benchData struct {
	Rows    []benchRow `json:"rows"`
	Sources []struct {
		Path       string `json:"path"`
		EvidenceID string `json:"evidence_id"`
		Index      int    `json:"index"`
	} `json:"sources"`
	Summary struct {
		Geomean []struct {
			Unit        string   `json:"unit"`
			ColumnIndex int      `json:"column_index"`
			Geomean     *float64 `json:"geomean"`
			Delta       string   `json:"delta"`
			Warnings    []string `json:"warnings"`
		} `json:"geomean"`
	} `json:"summary"`
	Page struct {
		More bool `json:"more"`
	} `json:"page"`
}

var superDigits = []rune("⁰¹²³⁴⁵⁶⁷⁸⁹")

// superscript is i in superscript digits, as benchstat numbers its notes.
func superscript(i int) string {
	s := fmt.Sprint(i)
	var b strings.Builder
	for _, c := range s {
		b.WriteRune(superDigits[c-'0'])
	}
	return b.String()
}

// renderBenchstat writes d as benchstat's text report.
func renderBenchstat(w io.Writer, d benchData) {
	colName := func(i int) string {
		for _, s := range d.Sources {
			if s.Index == i {
				if s.Path != "" {
					return filepath.Base(s.Path)
				}
				return s.EvidenceID
			}
		}
		return fmt.Sprintf("source-%d", i)
	}
	var units []string
	for _, r := range d.Rows {
		if !slices.Contains(units, r.Unit) {
			units = append(units, r.Unit)
		}
	}
	var lastConfig map[string]string
	for ti, unit := range units {
		var rows []benchRow
		ncols := 1
		for _, r := range d.Rows {
			if r.Unit == unit {
				rows = append(rows, r)
				ncols = max(ncols, r.Candidate+1)
			}
		}
		if ti > 0 {
			fmt.Fprintln(w)
		}
		if cfg := rows[0].Config; !maps(cfg, lastConfig) {
			keys := make([]string, 0, len(cfg))
			for k := range cfg {
				keys = append(keys, k)
			}
			order := map[string]int{"goos": 0, "goarch": 1, "pkg": 2, "cpu": 3}
			sort.Slice(keys, func(i, j int) bool {
				oi, iok := order[keys[i]]
				oj, jok := order[keys[j]]
				if iok != jok {
					return iok
				}
				if iok {
					return oi < oj
				}
				return keys[i] < keys[j]
			})
			for _, k := range keys {
				fmt.Fprintf(w, "%s: %s\n", cell(k), cell(cfg[k]))
			}
			lastConfig = cfg
		}
		var notes []string
		note := func(msgs ...[]string) string {
			var marks []string
			for _, list := range msgs {
				for _, m := range list {
					i := slices.Index(notes, m)
					if i < 0 {
						notes = append(notes, m)
						i = len(notes) - 1
					}
					marks = append(marks, superscript(i+1))
				}
			}
			return strings.Join(marks, " ")
		}
		class := benchunit.ClassOf(unit)
		// One line per benchmark: cells per column.
		type line struct {
			name  string
			cells [][]string // per column: center, range, note[, delta, comparison, note]
		}
		var names []string
		byName := map[string][]benchRow{}
		for _, r := range rows {
			if _, ok := byName[r.Benchmark]; !ok {
				names = append(names, r.Benchmark)
			}
			byName[r.Benchmark] = append(byName[r.Benchmark], r)
		}
		var lines []line
		for _, n := range names {
			rs := byName[n]
			sort.Slice(rs, func(i, j int) bool { return rs[i].Candidate < rs[j].Candidate })
			var centers []float64
			if c := rs[0].Base.Center; c != nil {
				centers = append(centers, *c)
			}
			for _, r := range rs {
				if r.Cand.Center != nil {
					centers = append(centers, *r.Cand.Center)
				}
			}
			sc := benchunit.CommonScale(centers, class)
			format := func(v *float64) string {
				if v == nil {
					return "?"
				}
				return sc.Format(*v)
			}
			rng := func(s string) string { return strings.TrimPrefix(s, "±") }
			l := line{name: n, cells: make([][]string, ncols)}
			l.cells[0] = []string{format(rs[0].Base.Center), rng(rs[0].Base.Range), note(rs[0].Base.Warnings)}
			for _, r := range rs {
				if r.Candidate < 1 || r.Candidate >= ncols {
					continue
				}
				l.cells[r.Candidate] = []string{format(r.Cand.Center), rng(r.Cand.Range), note(r.Cand.Warnings), r.Delta, "(" + r.Comparison + ")", note(r.Warnings)}
			}
			lines = append(lines, l)
		}
		// geomean, as benchstat, when the table has more than one row.
		var geo *line
		if len(lines) > 1 {
			g := line{name: "geomean", cells: make([][]string, ncols)}
			for _, s := range d.Summary.Geomean {
				if s.Unit != unit || s.ColumnIndex >= ncols {
					continue
				}
				v := ""
				if s.Geomean != nil {
					v = benchunit.Scale(*s.Geomean, class)
				}
				if s.ColumnIndex == 0 {
					g.cells[0] = []string{v, "", note(s.Warnings)}
				} else {
					d := s.Delta
					if d == "" {
						d = "?"
					}
					g.cells[s.ColumnIndex] = []string{v, "", "", d, "", note(s.Warnings)}
				}
			}
			geo = &g
		}
		all := lines
		if geo != nil {
			all = append(slices.Clone(lines), *geo)
		}
		// widths
		nameW := 0
		for _, l := range all {
			nameW = max(nameW, utf8.RuneCountInString(l.name))
		}
		width := make([][]int, ncols)
		for c := range width {
			width[c] = make([]int, 6)
		}
		for _, l := range all {
			for c, cs := range l.cells {
				for k, s := range cs {
					width[c][k] = max(width[c][k], utf8.RuneCountInString(s))
				}
			}
		}
		colText := func(c int, cs []string) string {
			if cs == nil {
				cs = make([]string, 6)
			}
			for len(cs) < 6 {
				cs = append(cs, "")
			}
			wd := width[c]
			pm := " ± "
			if cs[1] == "" {
				pm = "   "
			}
			s := pad(cs[0], wd[0], true) + pm + pad(cs[1], wd[1], true) + " " + pad(cs[2], wd[2], false)
			if c > 0 {
				s += "  " + pad(cs[3], wd[3], true) + " " + pad(cs[4], wd[4], false) + " " + pad(cs[5], wd[5], false)
			}
			return s
		}
		colW := make([]int, ncols)
		for c := range colW {
			colW[c] = utf8.RuneCountInString(colText(c, nil))
		}
		// header: file names, then the unit and "vs base"
		var h1, h2 strings.Builder
		h1.WriteString(strings.Repeat(" ", nameW))
		h2.WriteString(strings.Repeat(" ", nameW))
		for c := range ncols {
			h1.WriteString(" │ " + center(colName(c), colW[c]))
			centerW := width[c][0] + 3 + width[c][1] + 1 + width[c][2]
			u := center(unit, centerW)
			if c > 0 {
				u += "  " + pad("vs base", colW[c]-centerW-2, false)
			}
			h2.WriteString(" │ " + u)
		}
		fmt.Fprintln(w, h1.String()+" │")
		fmt.Fprintln(w, h2.String()+" │")
		for _, l := range all {
			var b strings.Builder
			b.WriteString(pad(cell(l.name), nameW, false))
			for c := range ncols {
				b.WriteString("   " + colText(c, l.cells[c]))
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		}
		for i, n := range notes {
			fmt.Fprintf(w, "%s %s\n", superscript(i+1), cell(n))
		}
	}
	if d.Page.More {
		fmt.Fprintln(w, "(more rows: run the command in next_page.argv of --json, or raise --page-size)")
	}
}

// maps reports whether a and b hold the same entries.
func maps(a, b map[string]string) bool {
	if len(a) != len(b) || a == nil != (b == nil) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// pad pads s with spaces to n runes, on the left when right is set.
func pad(s string, n int, right bool) string {
	k := n - utf8.RuneCountInString(s)
	if k <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", k) + s
	}
	return s + strings.Repeat(" ", k)
}

// center centers s in n runes.
func center(s string, n int) string {
	k := n - utf8.RuneCountInString(s)
	if k <= 0 {
		return s
	}
	l := k / 2
	return strings.Repeat(" ", l) + s + strings.Repeat(" ", k-l)
}
