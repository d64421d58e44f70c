package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The text report of `inquest analyze summarize_profile`, shaped like
// `go tool pprof -top`: for each sample type (pprof's default, the last
// one, first) a header and one row per function,
//
//	Type: cpu
//	Duration: 1.91s, Total samples = 540ms (28.33%)
//	Showing nodes accounting for 540ms, 100% of 540ms total
//	      flat  flat%   sum%        cum   cum%
//	     240ms 44.44% 44.44%      380ms 70.37%  main.burnA
//
// with values in the unit pprof chooses for the table (the smallest
// nonzero value's, or a larger one when the smallest is below 1% of the
// total) and percentages as pprof prints them. The numbers are
// summarize_profile's; only the spelling is pprof's.

// pprofUnit is one unit of a pprof unit family: its name and its size in
// the family's base unit.
type pprofUnit struct {
	name   string
	factor float64
}

// pprofUnitFamily returns the units of the family of a sample unit as a
// profile names it (nanoseconds, bytes, ...) and the factor of that unit
// in the family's base; nil for a unit pprof does not scale (count).
func pprofUnitFamily(unit string) ([]pprofUnit, float64) {
	u := strings.ToLower(unit)
	if len([]rune(u)) > 2 {
		u = strings.TrimSuffix(u, "s")
	}
	mem := []pprofUnit{{"B", 1}, {"kB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40}, {"PB", 1 << 50}}
	tim := []pprofUnit{{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"hrs", 3600e9}}
	switch u {
	case "b", "byte":
		return mem, 1
	case "kb", "kbyte", "kilobyte":
		return mem, 1 << 10
	case "mb", "mbyte", "megabyte":
		return mem, 1 << 20
	case "gb", "gbyte", "gigabyte":
		return mem, 1 << 30
	case "ns", "nanosecond":
		return tim, 1
	case "μs", "us", "microsecond":
		return tim, 1e3
	case "ms", "millisecond":
		return tim, 1e6
	case "s", "sec", "second":
		return tim, 1e9
	case "hour", "hr":
		return tim, 3600e9
	}
	return nil, 1
}

// pprofAutoUnit is the unit pprof's auto scaling picks for value (in the
// sample unit): the largest unit not above it.
func pprofAutoUnit(value float64, unit string) pprofUnit {
	fam, f := pprofUnitFamily(unit)
	if fam == nil {
		return pprofUnit{"", 1}
	}
	v := math.Abs(value) * f
	best := pprofUnit{}
	for _, u := range fam {
		if u.factor >= best.factor && v/u.factor >= 1 {
			best = u
		}
	}
	if best.factor == 0 {
		if fam[0].name == "ns" {
			return pprofUnit{"s", 1e9}
		}
		return fam[0]
	}
	return best
}

// pprofLabel formats value (in the sample unit) in out as pprof's
// measurement.ScaledLabel does: two decimals, ".00" dropped, "0" alone.
func pprofLabel(value float64, unit string, out pprofUnit) string {
	_, f := pprofUnitFamily(unit)
	v := value * f / out.factor
	sv := strings.TrimSuffix(fmt.Sprintf("%.2f", v), ".00")
	if sv == "0" || sv == "-0" {
		return "0"
	}
	return sv + out.name
}

// pprofPercentage is pprof's measurement.Percentage of value in total.
func pprofPercentage(value, total float64) string {
	var ratio float64
	if total != 0 {
		ratio = math.Abs(value/total) * 100
	}
	switch {
	case ratio >= 99.95 && ratio <= 100.05:
		return "  100%"
	case ratio >= 1.0:
		return fmt.Sprintf("%5.2f%%", ratio)
	default:
		return fmt.Sprintf("%5.2g%%", ratio)
	}
}

// pprofRow is one summarize_profile row.
type pprofRow struct {
	Function   string `json:"function"`
	SampleType string `json:"sample_type"`
	Unit       string `json:"unit"`
	Flat       string `json:"flat"`
	Cum        string `json:"cum"`
}

// profileSummary is the part of summarize_profile's data the report
// reads.
type profileSummary struct {
	Rows    []pprofRow `json:"rows"`
	Summary struct {
		DurationNS  *string `json:"duration_ns"`
		SampleTypes []struct {
			Type  string `json:"type"`
			Unit  string `json:"unit"`
			Total string `json:"total"`
		} `json:"sample_types"`
	} `json:"summary"`
	Page struct {
		More bool `json:"more"`
	} `json:"page"`
}

// renderProfileTop writes the pprof -top shaped report of d. Values pprof
// would not print (a total that is not a number) are "?".
func renderProfileTop(w io.Writer, d profileSummary) {
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	types := d.Summary.SampleTypes
	order := make([]int, 0, len(types))
	for i := len(types) - 1; i >= 0; i-- { // pprof's default, the last, first
		order = append(order, i)
	}
	for n, i := range order {
		st := types[i]
		if n > 0 {
			fmt.Fprintln(w)
		}
		var rows []pprofRow
		for _, r := range d.Rows {
			if r.SampleType == st.Type {
				rows = append(rows, r)
			}
		}
		total := num(st.Total)
		out := pprofOutputUnit(rows, total, st.Unit)
		label := func(v float64) string {
			if math.IsNaN(v) {
				return "?"
			}
			return pprofLabel(v, st.Unit, out)
		}
		fmt.Fprintf(w, "Type: %s\n", cell(st.Type))
		if d.Summary.DurationNS != nil {
			dur := num(*d.Summary.DurationNS)
			line := "Duration: " + pprofLabel(dur, "nanoseconds", pprofAutoUnit(dur, "nanoseconds")) + ", Total samples = " + label(total)
			if fam, _ := pprofUnitFamily(st.Unit); fam != nil && fam[0].name == "ns" && dur > 0 {
				_, f := pprofUnitFamily(st.Unit)
				line += " (" + pprofPercentage(total*f, dur) + ")"
			}
			fmt.Fprintln(w, line)
		}
		var flatSum float64
		for _, r := range rows {
			flatSum += num(r.Flat)
		}
		fmt.Fprintf(w, "Showing nodes accounting for %s, %s of %s total\n", label(flatSum), strings.TrimSpace(pprofPercentage(flatSum, total)), label(total))
		fmt.Fprintf(w, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum")
		var sum float64
		for _, r := range rows {
			flat, cum := num(r.Flat), num(r.Cum)
			sum += flat
			fmt.Fprintf(w, "%10s %s %s %10s %s  %s\n", label(flat), pprofPercentage(flat, total), pprofPercentage(sum, total), label(cum), pprofPercentage(cum, total), cell(r.Function))
		}
	}
	if d.Page.More {
		fmt.Fprintln(w, "(more rows: run the command in next_page.argv of --json, or raise --page-size)")
	}
}

// pprofOutputUnit is the unit pprof's -top uses for a table (report's
// selectOutputUnit): the auto unit of the smallest nonzero flat (else
// cum) value, or of 100 times it when that is below 1% of the total and
// the total's unit differs.
func pprofOutputUnit(rows []pprofRow, total float64, unit string) pprofUnit {
	var minV float64
	for _, r := range rows {
		v, _ := strconv.ParseFloat(r.Flat, 64)
		v = math.Abs(v)
		if v == 0 {
			c, _ := strconv.ParseFloat(r.Cum, 64)
			v = math.Abs(c)
		}
		if v > 0 && (minV == 0 || v < minV) {
			minV = v
		}
	}
	maxV := total
	if minV == 0 {
		minV = maxV
	}
	minU, maxU := pprofAutoUnit(minV, unit), pprofAutoUnit(maxV, unit)
	if minU != maxU && minV*100 < maxV {
		return pprofAutoUnit(100*minV, unit)
	}
	return minU
}

// pprofDuration formats a duration as pprof labels one (1.91s, 800ms).
func pprofDuration(d time.Duration) string {
	v := float64(d)
	return pprofLabel(v, "nanoseconds", pprofAutoUnit(v, "nanoseconds"))
}

// humanMetric renders a metric value for people by the metric's unit:
// bytes as ps and htop print them (285.9M, in binary units; a negative
// change keeps its sign), nanoseconds as seconds with two decimals (0.80s,
// as pprof's tables), percent with one decimal and a % sign, anything
// else as the number. v is a JSON number, a decimal string or an exact
// rational {numerator, denominator}; nil is "-" (unknown).
func humanMetric(unit string, v any) string {
	var f float64
	switch x := v.(type) {
	case nil:
		return "-"
	case float64:
		f = x
	case string:
		p, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return cell(x)
		}
		f = p
	case map[string]any:
		n, err1 := strconv.ParseFloat(fmt.Sprint(x["numerator"]), 64)
		d, err2 := strconv.ParseFloat(fmt.Sprint(x["denominator"]), 64)
		if err1 != nil || err2 != nil || d == 0 {
			return fmtVal(v)
		}
		f = n / d
	default:
		return fmtVal(v)
	}
	switch unit {
	case "bytes":
		sign := ""
		if f < 0 {
			sign, f = "-", -f
		}
		return sign + humanBytes(strconv.FormatFloat(math.Round(f), 'f', 0, 64))
	case "nanoseconds":
		return strconv.FormatFloat(f/1e9, 'f', 2, 64) + "s"
	case "percent":
		return strconv.FormatFloat(f, 'f', 1, 64) + "%"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}
