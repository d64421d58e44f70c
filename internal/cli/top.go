package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newTopCmd) }

// metricAliases are the short names ps(1), top(1) and htop users type,
// mapped to process metric ids of the catalog. Full ids pass through.
var metricAliases = map[string]string{
	"cpu": "cpu_percent", "%cpu": "cpu_percent", "pcpu": "cpu_percent",
	"time": "cpu_time_ns", "cputime": "cpu_time_ns", "cpu_time": "cpu_time_ns",
	"rss": "rss_bytes", "mem": "rss_bytes", "memory": "rss_bytes", "res": "rss_bytes",
	"vsz": "virtual_bytes", "virt": "virtual_bytes",
	"swap": "swap_bytes",
	"thr":  "threads", "nlwp": "threads",
	"fd": "fd_count", "fds": "fd_count",
	"read": "read_bytes", "write": "write_bytes",
	"minflt": "minor_faults", "majflt": "major_faults",
}

// metricID resolves a --metric / --sort word: an alias or a metric id
// (unknown words pass through for the tool's schema to reject).
func metricID(s string) string {
	if id, ok := metricAliases[strings.ToLower(s)]; ok {
		return id
	}
	return s
}

func newTopCmd(env *Env) *cobra.Command {
	var asJSON, exact bool
	var metric, aggregate, by, last, from, to, scope, name string
	var limit int
	cmd := &cobra.Command{
		Use:   "top [--metric cpu_percent] [--last 60s | --from T [--to T]] [-n 10]",
		Short: "Rank processes by a metric over a window of retained history (rank_processes)",
		Long: `Rank processes by one metric over the last minute (default) or another
window of the host's retained history, processes that ended inside the
window included, in one call to rank_processes.

--metric takes a process metric id (inquest call list_metrics) or an alias:
cpu (cpu_percent), time (cpu_time_ns), rss/mem, vsz, swap, thr, fds, read,
write, minflt, majflt. Cumulative counters (cpu_time_ns, read_bytes, ...)
rank by their increase inside the window; gauges (cpu_percent, rss_bytes,
...) by their mean (--aggregate max or last otherwise), or by their growth:
--by increase (last minus first) or --by slope (least squares, per second),
so "top --metric rss --by slope" finds the process whose memory grows.
cpu_percent ranks
by the mean of a process's own samples, so a process that ran for half the
window competes on its share while it ran; --metric time ranks by the CPU
time consumed inside the window, adds a row per parent for the children
it reaped inside the window ("children of PID N (name)"; the reaped
processes' own rows say "in children of N"), and prints how much of the
system's CPU time (/proc/stat user+nice+system) the rows account for.

COVER is the part of the window the lifetime's retained history spans;
NOTE says when it started or ended inside the window, or when retention
dropped its earlier samples. --json prints the rank_processes envelope.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			args := map[string]any{"metric_id": metricID(metric), "limit": limit}
			if by != "" {
				if aggregate != "" {
					return badFlag("--by", "--by and --aggregate are the same choice: give one")
				}
				aggregate = by
			}
			if aggregate != "" {
				args["aggregate"] = aggregate
			}
			if scope != "" {
				args["scope"] = scope
			}
			if name != "" {
				args["filter"] = map[string]any{"name": name}
			}
			if from != "" || to != "" {
				if cmd.Flags().Changed("last") {
					return badFlag("--last", "--last and --from/--to are exclusive")
				}
				if err := setWhen(args, from, to, time.Now()); err != nil {
					return err
				}
			} else {
				secs, err := parseLast(last)
				if err != nil {
					return err
				}
				args["last_seconds"] = secs
			}
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
			if err != nil {
				return err
			}
			defer rt.Close()
			b, _ := json.Marshal(args)
			if asJSON {
				return callAndPrint(cmd, env, rt.Registry, "rank_processes", b)
			}
			res, err := rankRows(cmd.Context(), rt.Registry, b, limit)
			if err != nil {
				return failed(err)
			}
			if err := renderRanking(env.Stdout, res, exact); err != nil {
				return err
			}
			// After the table, so it reads first; the count of unranked
			// lifetimes is already in the header line ("N without a
			// value"), so the warning that explains it is left out.
			for _, w := range res.Warnings {
				if isUnrankedWarning(w) {
					continue
				}
				fmt.Fprintf(env.Stderr, "note: %s\n", noteCell(w))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&metric, "metric", "cpu_percent", "process metric id or alias (cpu, time, rss, ...)")
	cmd.Flags().StringVar(&aggregate, "aggregate", "", "increase|last for counters, mean|max|last|increase|slope for gauges (default increase / mean)")
	cmd.Flags().StringVar(&by, "by", "", "same as --aggregate (--by slope ranks gauges by growth per second)")
	cmd.Flags().StringVar(&last, "last", "60s", "window ending at the latest sample: a Go duration of whole seconds (60s, 5m) or seconds")
	cmd.Flags().StringVar(&from, "from", "", "window start: RFC 3339, local \"YYYY-MM-DD HH:MM\" or how long ago (2h) (instead of --last)")
	cmd.Flags().StringVar(&to, "to", "", "window end, in the forms --from takes (needs --from; default the latest sample)")
	cmd.Flags().StringVar(&scope, "scope", "", "live, retained or all (default all: ended lifetimes too)")
	cmd.Flags().StringVar(&name, "name", "", "case-insensitive name substring")
	cmd.Flags().IntVarP(&limit, "limit", "n", 10, "rows (1..1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the rank_processes envelope")
	cmd.Flags().BoolVar(&exact, "bytes", false, "print exact values (bytes, nanoseconds) instead of human units (285.9M, 0.80s)")
	return cmd
}

// parseLast reads --last: a Go duration of whole seconds or a plain
// number of seconds, at least one second.
func parseLast(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 {
			return 0, badFlag("--last", "--last must be at least 1s")
		}
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, badFlag("--last", "--last takes whole seconds, such as 60s or 5m")
	}
	return int(d / time.Second), nil
}

// rankRows calls rank_processes with args and follows its pages (the
// result budget can end a page before limit rows) until limit rows are
// read or the ranking ends. It returns the first page's result with
// data.rows holding every row read and the first page's warnings (every
// page of one ranking carries the same ones) without the result-budget
// one: the pages it names were read.
func rankRows(ctx context.Context, reg *tool.Registry, args []byte, limit int) (*contract.Result, error) {
	res, err := reg.Call(ctx, "rank_processes", args)
	if err != nil {
		return nil, err
	}
	var data map[string]any
	if err := remarshal(res.Data, &data); err != nil {
		return nil, err
	}
	rows, _ := data["rows"].([]any)
	next := res.NextAction
	for next != nil && next.Tool == "rank_processes" && len(rows) < limit {
		b, _ := json.Marshal(next.Arguments)
		page, err := reg.Call(ctx, "rank_processes", b)
		if err != nil {
			return nil, err
		}
		var d map[string]any
		if err := remarshal(page.Data, &d); err != nil {
			return nil, err
		}
		more, _ := d["rows"].([]any)
		rows = append(rows, more...)
		next = page.NextAction
	}
	if len(rows) > limit {
		rows = rows[:limit]
	}
	data["rows"] = rows
	res.Data = data
	var kept []string
	for _, w := range res.Warnings {
		if w != tool.BudgetWarning {
			kept = append(kept, w)
		}
	}
	res.Warnings = kept
	return res, nil
}

// renderRanking prints a rank_processes result as a table: a header line
// naming the metric, aggregate and window, then one row per lifetime.
func renderRanking(w io.Writer, res *contract.Result, exact bool) error {
	var d struct {
		Metric struct {
			ID   string `json:"id"`
			Unit string `json:"unit"`
		} `json:"metric"`
		Aggregate string `json:"aggregate"`
		ValueUnit string `json:"value_unit"`
		Window    struct {
			From       string `json:"from"`
			To         string `json:"to"`
			DurationMs int64  `json:"duration_ms"`
		} `json:"window"`
		Rows []struct {
			Rank      int    `json:"rank"`
			PID       int    `json:"pid"`
			Name      string `json:"name"`
			Lifecycle string `json:"lifecycle"`
			Value     any    `json:"value"`
			Samples   int    `json:"available_value_count"`
			Accounted *struct {
				PID int `json:"pid"`
			} `json:"accounted_in"`
			Coverage struct {
				Fraction  float64 `json:"fraction"`
				Started   bool    `json:"started_in_window"`
				Ended     bool    `json:"ended_in_window"`
				Truncated bool    `json:"truncated_by_retention"`
			} `json:"coverage"`
		} `json:"rows"`
		Coverage struct {
			Ranked   int `json:"ranked"`
			Unranked int `json:"unranked"`
			CPU      *struct {
				System string   `json:"system_cpu_ns"`
				Rows   string   `json:"rows_ns"`
				Share  *float64 `json:"rows_share"`
			} `json:"cpu_accounting"`
		} `json:"coverage"`
	}
	if err := remarshal(res.Data, &d); err != nil {
		return err
	}
	// Coverage is the envelope's (stated once).
	if err := remarshal(res.Coverage, &d.Coverage); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s %s over %s .. %s (%s): %d ranked, %d not ranked (no value in the window)\n", cell(d.Metric.ID), cell(d.Aggregate), cell(d.Window.From), cell(d.Window.To),
		time.Duration(d.Window.DurationMs)*time.Millisecond, d.Coverage.Ranked, d.Coverage.Unranked)
	if c := d.Coverage.CPU; c != nil {
		share := "unknown"
		if c.Share != nil {
			share = strconv.FormatFloat(*c.Share*100, 'f', 1, 64) + "%"
		}
		fmt.Fprintf(w, "rows account for %s of %s system CPU time (%s; /proc/stat user+nice+system)\n", fmtMetricValue("nanoseconds", c.Rows), fmtMetricValue("nanoseconds", c.System), share)
	}
	unit := d.Metric.Unit
	if d.ValueUnit != "" {
		unit = d.ValueUnit
	}
	// Numbers right-aligned, text left-aligned (as ps and htop), the
	// last column unpadded so no row carries trailing blanks.
	table := [][]string{{"RANK", "PID", "VALUE", "SAMPLES", "COVER", "LIFECYCLE", "NAME", "NOTE"}}
	for _, r := range d.Rows {
		var notes []string
		if r.Coverage.Started {
			notes = append(notes, "started in window")
		}
		if r.Coverage.Ended {
			notes = append(notes, "ended in window")
		}
		if r.Coverage.Truncated {
			notes = append(notes, "earlier samples dropped by retention")
		}
		if r.Accounted != nil {
			notes = append(notes, "in children of "+strconv.Itoa(r.Accounted.PID))
		}
		table = append(table, []string{strconv.Itoa(r.Rank), strconv.Itoa(r.PID), rankValue(unit, r.Value, exact), strconv.Itoa(r.Samples),
			strconv.FormatFloat(r.Coverage.Fraction*100, 'f', 0, 64) + "%", lifecycleCell(r.Lifecycle, r.Coverage.Ended), cell(r.Name), strings.Join(notes, ", ")})
	}
	width := make([]int, 8)
	for _, l := range table {
		for i, c := range l {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, l := range table {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range l {
			if i > 0 {
				b.WriteString("  ")
			}
			if i < 5 {
				b.WriteString(pad(c, width[i], true))
			} else {
				b.WriteString(pad(c, width[i], false))
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}

// rankValue is a VALUE cell: in human units by the metric's unit
// (fmtMetricValue), or with exact (--bytes) the value as the tool gave it.
func rankValue(unit string, v any, exact bool) string {
	if !exact {
		return fmtMetricValue(unit, v)
	}
	if r, ok := v.(map[string]any); ok {
		return ratString(fmt.Sprint(r["numerator"]), fmt.Sprint(r["denominator"]))
	}
	return fmtVal(v)
}

// lifecycleCell is the LIFECYCLE cell: "ended" for a lifetime whose end
// the window saw, whatever the retained record says about its state.
func lifecycleCell(lifecycle string, ended bool) string {
	if ended && lifecycle != "live" {
		return "ended"
	}
	return cell(lifecycle)
}

// isUnrankedWarning reports whether w is rank_processes' explanation of
// the lifetimes it could not rank (no value in the window), which the
// table's header line already counts.
func isUnrankedWarning(w string) bool {
	return strings.Contains(w, "they are not ranked")
}

// fmtMetricValue renders a metric value for a table by its unit: bytes
// in binary units, nanoseconds as seconds, percent with one decimal,
// counts as integers; exact rational means as decimals.
func fmtMetricValue(unit string, v any) string {
	var r *big.Rat
	switch x := v.(type) {
	case nil:
		return "-"
	case float64:
		if unit == "percent" {
			return strconv.FormatFloat(x, 'f', 1, 64)
		}
		if !strings.HasSuffix(unit, "/s") {
			return fmtVal(x)
		}
		// A slope: per second, in the metric's unit.
		if r = new(big.Rat).SetFloat64(x); r == nil {
			return fmtVal(x)
		}
	case string:
		r, _ = new(big.Rat).SetString(x)
	case map[string]any:
		r, _ = new(big.Rat).SetString(fmt.Sprint(x["numerator"]) + "/" + fmt.Sprint(x["denominator"]))
	}
	if r == nil {
		return fmt.Sprint(v)
	}
	switch unit {
	case "bytes":
		f, _ := r.Float64()
		return humanBytes(strconv.FormatFloat(f, 'f', 0, 64))
	case "bytes/s":
		f, _ := r.Float64()
		if f < 0 {
			return "-" + humanBytes(strconv.FormatFloat(-f, 'f', 0, 64)) + "/s"
		}
		return humanBytes(strconv.FormatFloat(f, 'f', 0, 64)) + "/s"
	case "nanoseconds":
		f, _ := r.Float64()
		return strconv.FormatFloat(f/1e9, 'f', 2, 64) + "s"
	}
	per := ""
	if strings.HasSuffix(unit, "/s") {
		per = "/s"
	}
	if r.IsInt() {
		return r.Num().String() + per
	}
	return r.FloatString(2) + per
}

// parseWhen reads a --from/--to value as a person types it: an RFC 3339
// time (2026-12-02T04:00:00Z, a zone offset, or fractional seconds), a
// local date and time ("2026-12-02 04:00" or with seconds), or a duration
// before now ("90m", "2h", "1h30m"; a leading "-" is accepted). It
// returns the instant as RFC 3339 in UTC with nanoseconds, which the proc
// tools take, or an error naming flag and the forms it accepts.
func parseWhen(flag, s string, now time.Time) (string, error) {
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Format(time.RFC3339Nano), nil
		}
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UTC().Format(time.RFC3339Nano), nil
		}
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "-")); err == nil && d > 0 {
		return now.Add(-d).UTC().Format(time.RFC3339Nano), nil
	}
	e := contract.Errorf(contract.CodeInvalidArgument, "%s %q is not a time: give RFC 3339 (%s), a local \"YYYY-MM-DD HH:MM\", or how long ago (90m, 2h)", flag, s, now.UTC().Truncate(time.Second).Format(time.RFC3339))
	e.Field = "/" + strings.TrimPrefix(flag, "--")
	return "", e
}

// setWhen puts --from and --to (when given) into a proc tool's args as
// "from" and "to", read by parseWhen; the error names the flag.
func setWhen(args map[string]any, from, to string, now time.Time) error {
	for _, f := range []struct{ flag, key, v string }{{"--from", "from", from}, {"--to", "to", to}} {
		if f.v == "" {
			continue
		}
		t, err := parseWhen(f.flag, f.v, now)
		if err != nil {
			return err
		}
		args[f.key] = t
	}
	return nil
}
