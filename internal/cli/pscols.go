package cli

import (
	"bufio"
	"fmt"
	"github.com/inquest-dev/inquest/internal/sample"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// psColumn is one column `inquest ps -o` can show: its header as ps
// spells it, the list_processes projection field and metric it reads, and
// how it renders a row.
type psColumn struct {
	header string
	field  string // projection field ("" for none)
	metric string // metric id ("" for none)
	left   bool   // left-aligned (text), else right-aligned (numbers)
	render func(r map[string]any, exact bool) string
}

// stateLetter is a list_processes state as ps spells it: the kernel's
// letter (R, S, D, Z, T, t, X, I, P, W), "?" when unknown.
func stateLetter(v any) string {
	name, _ := v.(string)
	if l := sample.StateLetter(name); l != "" {
		return l
	}
	return "?"
}

// psKeywords maps the ps -o keywords inquest ps understands (procps
// spelling and aliases) to their column.
var psKeywords = sync.OnceValue(func() map[string]psColumn {
	metric := func(header, id string) psColumn {
		return psColumn{header: header, metric: id, render: func(r map[string]any, exact bool) string {
			v := psValue(r, id)
			if exact {
				return fmtVal(v)
			}
			if id == "cpu_percent" {
				return fmtPercent(v)
			}
			u := metricUnit(id)
			if u == "percent" || u == "count" {
				return fmtVal(v)
			}
			return humanMetric(u, v)
		}}
	}
	text := func(header, field string) psColumn {
		return psColumn{header: header, field: field, left: true, render: func(r map[string]any, _ bool) string {
			if field == "name" || field == "comm" {
				return textOf(r, field)
			}
			return str(r[field])
		}}
	}
	cols := map[string]psColumn{
		"pid":  {header: "PID", field: "pid", render: func(r map[string]any, _ bool) string { return str(r["pid"]) }},
		"ppid": {header: "PPID", field: "parent", render: func(r map[string]any, _ bool) string { p, _ := r["parent"].(map[string]any); return str(p["pid"]) }},
		"uid":  {header: "UID", field: "uid", render: func(r map[string]any, _ bool) string { return str(r["uid"]) }},
		"user": text("USER", "user"),
		"comm": text("COMMAND", "comm"),
		"name": text("NAME", "name"),
		// ps prints the kernel's state letter (stat adds modifiers such
		// as l and N that inquest ps does not read; s is the letter alone).
		"stat": {header: "STAT", field: "state", left: true, render: func(r map[string]any, _ bool) string { return stateLetter(r["state"]) }},
		"s":    {header: "S", field: "state", left: true, render: func(r map[string]any, _ bool) string { return stateLetter(r["state"]) }},
		"args": {header: "COMMAND", field: "command_line", left: true, render: func(r map[string]any, _ bool) string {
			return psArgsCell(r)
		}},
		"time": {header: "TIME", metric: "cpu_time_ns", render: func(r map[string]any, exact bool) string {
			v := psValue(r, "cpu_time_ns")
			if exact {
				return fmtVal(v)
			}
			return psTime(v)
		}},
		"%cpu":      metric("%CPU", "cpu_percent"),
		"rss":       metric("RSS", "rss_bytes"),
		"vsz":       metric("VSZ", "virtual_bytes"),
		"swap":      metric("SWAP", "swap_bytes"),
		"nlwp":      metric("NLWP", "threads"),
		"fds":       metric("FDS", "fd_count"),
		"minflt":    metric("MINFL", "minor_faults"),
		"majflt":    metric("MAJFL", "major_faults"),
		"container": {header: "CONTAINER", field: "container", left: true, render: func(r map[string]any, _ bool) string { return containerCell(r) }},
		"nspid": {header: "NSPID", field: "ns_pid", render: func(r map[string]any, _ bool) string {
			ns, _ := r["ns_pid"].(map[string]any)
			l, _ := ns["value"].([]any)
			if len(l) == 0 {
				return "-"
			}
			return str(l[len(l)-1])
		}},
	}
	for alias, k := range map[string]string{"command": "args", "cmd": "args", "ucomm": "comm", "state": "s",
		"pcpu": "%cpu", "cpu": "%cpu", "rsz": "rss", "vsize": "vsz", "thcount": "nlwp", "thr": "nlwp", "cputime": "time",
		"euser": "user", "uname": "user", "euid": "uid", "fd": "fds"} {
		cols[alias] = cols[k]
	}
	return cols
})

// psValue is row r's value of metric id (nil when unknown).
func psValue(r map[string]any, id string) any {
	v, _ := r["values"].(map[string]any)
	return v[id]
}

// psTime formats cumulative CPU time in nanoseconds as ps's TIME column
// does: [DD-]HH:MM:SS, seconds truncated.
func psTime(v any) string {
	var ns float64
	switch x := v.(type) {
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return "-"
		}
		ns = f
	case float64:
		ns = x
	default:
		return "-"
	}
	s := int64(math.Floor(ns / 1e9))
	d, h, m := s/86400, s/3600%24, s/60%60
	if d > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", d, h, m, s%60)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s%60)
}

// psArgsCell is the command line as ps's args prints it: the arguments
// joined by spaces, [comm] when the process has none (a kernel thread),
// "-" when it could not be read.
func psArgsCell(r map[string]any) string {
	cl, ok := r["command_line"].(map[string]any)
	if !ok {
		return "-"
	}
	list, ok := cl["value"].([]any)
	if !ok {
		return "-"
	}
	if len(list) == 0 {
		if c, ok := r["comm"].(string); ok {
			return "[" + cell(c) + "]"
		}
		return "-"
	}
	parts := make([]string, len(list))
	for i, a := range list {
		s, _ := a.(string)
		parts[i] = cell(s)
	}
	return strings.Join(parts, " ")
}

// parsePSColumns reads -o values ("pid,user,time,args", repeatable) into
// columns; an unknown keyword is an error naming the ones accepted.
func parsePSColumns(flag string, vals []string) ([]psColumn, error) {
	var cols []psColumn
	for _, v := range vals {
		for k := range strings.SplitSeq(v, ",") {
			k = strings.ToLower(strings.TrimSpace(k))
			header := ""
			if i := strings.IndexByte(k, '='); i >= 0 { // ps's keyword=HEADER
				k, header = k[:i], strings.ToUpper(k[i+1:])
			}
			if k == "" {
				continue
			}
			c, ok := psKeywords()[k]
			if !ok {
				keys := make([]string, 0, len(psKeywords()))
				for n := range psKeywords() {
					keys = append(keys, n)
				}
				slices.Sort(keys)
				return nil, badFlag(flag, "%s %q: unknown column; use %s", flag, k, strings.Join(keys, ", "))
			}
			if header != "" {
				c.header = header
			}
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return nil, badFlag(flag, "%s needs at least one column, e.g. %s pid,user,time,args", flag, flag)
	}
	return cols, nil
}

// psColumnArgs are the list_processes projection and metric ids cols
// read (pid always, for the row's identity; comm with args, for kernel
// threads).
func psColumnArgs(cols []psColumn) (projection, metrics []string) {
	projection = []string{"pid"}
	for _, c := range cols {
		if c.field != "" && !slices.Contains(projection, c.field) {
			projection = append(projection, c.field)
		}
		if c.field == "command_line" && !slices.Contains(projection, "comm") {
			projection = append(projection, "comm")
		}
		if c.metric != "" && !slices.Contains(metrics, c.metric) {
			metrics = append(metrics, c.metric)
		}
	}
	return projection, metrics
}

// renderPSColumns prints rows as ps -o does: one column per keyword, the
// last text column unpadded.
func renderPSColumns(w io.Writer, cols []psColumn, rows []map[string]any, exact bool) {
	out := bufio.NewWriter(w)
	defer out.Flush()
	cells := make([][]string, 0, len(rows)+1)
	hdr := make([]string, len(cols))
	for i, c := range cols {
		hdr[i] = c.header
	}
	cells = append(cells, hdr)
	for _, r := range rows {
		line := make([]string, len(cols))
		for i, c := range cols {
			line[i] = c.render(r, exact)
		}
		cells = append(cells, line)
	}
	left := make([]bool, len(cols))
	for i, c := range cols {
		left[i] = c.left
	}
	writeAligned(out, cells, left)
}

// writeAligned prints cells (the header first) as ps and top do: columns
// one space apart, numbers right-aligned, text (left[i]) left-aligned,
// the last column unpadded when it is text; width in runes.
func writeAligned(out io.Writer, cells [][]string, left []bool) {
	width := make([]int, len(left))
	for _, l := range cells {
		for i, s := range l {
			width[i] = max(width[i], len([]rune(s)))
		}
	}
	for _, l := range cells {
		var b strings.Builder
		for i, s := range l {
			if i > 0 {
				b.WriteByte(' ')
			}
			switch {
			case i == len(l)-1 && left[i]:
				b.WriteString(s)
			case left[i]:
				b.WriteString(pad(s, width[i], false))
			default:
				b.WriteString(pad(s, width[i], true))
			}
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
}
