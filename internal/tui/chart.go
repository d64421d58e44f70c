package tui

import (
	"math"
	"strings"
	"time"
)

// Chart draws one series as a braille line chart of width x height cells
// (axes included): a title line, height-3 chart rows with the y axis
// labelled in unit (0 and the maximum; 100% at least for percent), the
// time axis and its first/last timestamps (local time). Unmeasured points
// (ok false) leave gaps; they are never drawn as zero.
func Chart(title, unit string, at []time.Time, vals []float64, ok []bool, width, height int) []string {
	const axisW = 9
	cw, ch := width-axisW-1, height-3
	if cw < 4 || ch < 1 {
		return []string{fit(title, width)}
	}
	lines := []string{fit(title, width)}
	top := 0.0
	for i, v := range vals {
		if ok[i] {
			top = math.Max(top, v)
		}
	}
	if unit == "percent" {
		top = math.Max(top, 100)
	}
	if top == 0 {
		top = 1
	}
	var from, to time.Time
	if len(at) > 0 {
		from, to = at[0], at[len(at)-1]
	}
	span := to.Sub(from).Seconds()
	xs := make([]float64, len(at))
	ys := make([]float64, len(at))
	for i := range at {
		xs[i] = 1
		if span > 0 {
			xs[i] = at[i].Sub(from).Seconds() / span
		}
		ys[i] = math.NaN()
		if ok[i] {
			ys[i] = vals[i] / top
		}
	}
	for r, row := range Braille(xs, ys, cw, ch) {
		label := ""
		switch r {
		case 0:
			label = FormatValue(top, unit)
		case ch - 1:
			label = FormatValue(0, unit)
		}
		lines = append(lines, rfit(label, axisW)+"│"+row)
	}
	lines = append(lines, strings.Repeat(" ", axisW)+"└"+strings.Repeat("─", cw))
	if len(at) > 0 {
		a, b := from.Local().Format("15:04:05"), to.Local().Format("15:04:05")
		lines = append(lines, strings.Repeat(" ", axisW+1)+a+strings.Repeat(" ", max(cw-len(a)-len(b), 1))+b)
	}
	return lines
}
