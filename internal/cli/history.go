package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/recording"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tui"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newHistoryCmd) }

// refForPIDAny resolves a PID to a process_ref among live and retained
// lifetimes (list_processes scope all); several lifetimes of one PID are
// ambiguous unless exactly one is live.
func refForPIDAny(cmd *cobra.Command, reg *tool.Registry, pid int) (string, error) {
	b, _ := json.Marshal(map[string]any{"scope": "all", "filter": map[string]any{"pid": pid}})
	res, err := reg.Call(cmd.Context(), "list_processes", b)
	if err != nil {
		return "", err
	}
	var page struct {
		Rows []struct {
			Ref       string `json:"process_ref"`
			Lifecycle string `json:"lifecycle"`
		} `json:"rows"`
	}
	if err := remarshal(res.Data, &page); err != nil {
		return "", err
	}
	switch {
	case len(page.Rows) == 1:
		return page.Rows[0].Ref, nil
	case len(page.Rows) == 0 && procExists(pid):
		// A process that started since the last sample: wait for the
		// sampler to list it, as lsof and threads do.
		return refForPID(cmd, reg, pid)
	case len(page.Rows) == 0:
		return "", atPID(contract.Errorf(contract.CodeReferenceInvalid, "no live or retained lifetime has PID %d", pid))
	}
	for _, r := range page.Rows {
		if r.Lifecycle == "live" {
			return r.Ref, nil
		}
	}
	return "", contract.Errorf(contract.CodeInvalidArgument, "PID %d has %d retained lifetimes; pass --ref from inquest call list_processes '{\"scope\":\"retained\"}'", pid, len(page.Rows))
}

func newHistoryCmd(env *Env) *cobra.Command {
	var asJSON, raw, table, exact bool
	var ref, from, to string
	var pid, limit int
	var metrics []string
	cmd := &cobra.Command{
		Use:   "history --metric ID[,ID...] [--pid PID | --ref REF] [--from T] [--to T] [--raw]",
		Short: "Retained metric history of a process or the system (get_history)",
		Long: `Summarize (default) or list (--raw) the retained history of one target: a
process (--pid, --ref; ended lifetimes too) or the system (default). Bounds
are RFC 3339 timestamps, inclusive. --raw follows every page. --json prints
the get_history envelope of the first page.

On a terminal each metric is drawn as a braille line chart with axes and
units above the summary; piped (or with --table) the output is the table
alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(metrics) == 0 {
				return badFlag("--metric", "--metric is required (see inquest call list_metrics)")
			}
			if cmd.Flags().Changed("pid") {
				if _, err := parsePID(strconv.Itoa(pid)); err != nil {
					return badFlag("--pid", "--pid: %s", contract.AsError(err).Message)
				}
				if ref != "" {
					return badFlag("--pid", "--pid and --ref are exclusive: give one target")
				}
			}
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
			if err != nil {
				return err
			}
			defer rt.Close()
			// ps/top aliases (rss, cpu, vsz, ...) name the catalog's ids.
			for i, m := range metrics {
				metrics[i] = metricID(m)
			}
			args := map[string]any{"metric_ids": metrics, "mode": "summary"}
			if raw {
				args["mode"] = "raw"
			}
			switch {
			case ref != "":
				args["target"] = map[string]any{"process_ref": ref}
			case pid > 0:
				r, err := refForPIDAny(cmd, rt.Registry, pid)
				if err != nil {
					return failed(err)
				}
				args["target"] = map[string]any{"process_ref": r}
			}
			if err := setWhen(args, from, to, time.Now()); err != nil {
				return err
			}
			// An explicit --limit always reaches the tool, whose schema
			// rejects values outside 1..5000 (INVALID_ARGUMENT).
			if cmd.Flags().Changed("limit") {
				args["limit"] = limit
			}
			b, _ := json.Marshal(args)
			if asJSON {
				return callAndPrint(cmd, env, rt.Registry, "get_history", b)
			}
			res, err := rt.Registry.Call(cmd.Context(), "get_history", b)
			if err != nil {
				return failed(err)
			}
			// A partial result (the request reaches beyond retained
			// coverage) says so before the table.
			for _, w := range res.Warnings {
				fmt.Fprintf(env.Stdout, "warning: %s\n", noteCell(w))
			}
			if !raw {
				if w, ok := terminalWidth(env.Stdout); ok && !table {
					if err := drawHistoryCharts(cmd, env, rt.Registry, args, metrics, w); err != nil {
						return failed(err)
					}
				}
				return renderSummary(env.Stdout, metrics, res, exact)
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			hdr := []string{"AT"}
			for _, m := range metrics {
				hdr = append(hdr, cell(m))
			}
			fmt.Fprintln(tw, strings.Join(hdr, "\t"))
			for {
				var page struct {
					Rows []struct {
						At     string         `json:"at"`
						Values map[string]any `json:"values"`
					} `json:"rows"`
				}
				if err := remarshal(res.Data, &page); err != nil {
					return err
				}
				for _, r := range page.Rows {
					cells := []string{cell(r.At)}
					for _, m := range metrics {
						cells = append(cells, valueCell(m, r.Values[m], exact))
					}
					fmt.Fprintln(tw, strings.Join(cells, "\t"))
				}
				if res.NextAction == nil {
					break
				}
				nb, _ := json.Marshal(res.NextAction.Arguments)
				if res, err = rt.Registry.Call(cmd.Context(), "get_history", nb); err != nil {
					tw.Flush()
					return failed(err)
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringSliceVar(&metrics, "metric", nil, "metric ids (comma-separated or repeated)")
	cmd.Flags().StringVar(&ref, "ref", "", "process_ref (live or retained)")
	cmd.Flags().IntVar(&pid, "pid", 0, "PID (resolved among live and retained lifetimes)")
	cmd.Flags().StringVar(&from, "from", "", "inclusive start: RFC 3339, local \"YYYY-MM-DD HH:MM\" or how long ago (2h)")
	cmd.Flags().StringVar(&to, "to", "", "inclusive end, in the forms --from takes")
	cmd.Flags().BoolVar(&raw, "raw", false, "every stored sample instead of the summary")
	cmd.Flags().IntVar(&limit, "limit", 0, "raw rows per page (1..5000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the get_history envelope")
	cmd.Flags().BoolVar(&table, "table", false, "print the table even on a terminal (no chart)")
	cmd.Flags().BoolVar(&exact, "bytes", false, "print exact values (bytes, nanoseconds) instead of human units (285.9M, 0.80s)")
	return cmd
}

// valueCell renders one value of metric id: in human units by its unit
// (humanMetric), or exact as the tool gave it when exact (--bytes).
func valueCell(id string, v any, exact bool) string {
	if exact {
		if r, ok := v.(map[string]any); ok {
			return ratString(fmt.Sprint(r["numerator"]), fmt.Sprint(r["denominator"]))
		}
		return fmtVal(v)
	}
	return humanMetric(metricUnit(id), v)
}

// renderSummary prints one line per metric of a summary result, values in
// human units unless exact.
func renderSummary(w io.Writer, metrics []string, res *contract.Result, exact bool) error {
	var d struct {
		Metrics  map[string]map[string]any `json:"metrics"`
		Coverage map[string]any            `json:"coverage"`
	}
	if err := remarshal(res.Data, &d); err != nil {
		return err
	}
	// Coverage is the envelope's (stated once).
	if err := remarshal(res.Coverage, &d.Coverage); err != nil {
		return err
	}
	fmt.Fprintf(w, "retained %v .. %v, %v samples in range, max gap %v ms\n", fmtVal(d.Coverage["retained_from"]), fmtVal(d.Coverage["retained_to"]), fmtVal(d.Coverage["sample_count"]), fmtVal(d.Coverage["max_sample_interval_ms"]))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tSAMPLES\tAVAILABLE\tMISSING\tMIN\tMAX\tMEAN\tFIRST\tLAST\tDELTA")
	for _, id := range metrics {
		m := d.Metrics[id]
		mean := valueCell(id, m["mean"], exact)
		first, last := "-", "-"
		if f, ok := m["first"].(map[string]any); ok {
			first = valueCell(id, f["value"], exact)
		}
		if l, ok := m["last"].(map[string]any); ok {
			last = valueCell(id, l["value"], exact)
		}
		// DELTA is LAST - FIRST: first_to_last_change, known whenever
		// FIRST and LAST are (0 when they are equal). The endpoint delta,
		// present only when both requested bounds are exact sample
		// times, is the same number then.
		delta := m["first_to_last_change"]
		if delta == nil {
			delta = m["delta"]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(id), fmtVal(m["sample_count"]), fmtVal(m["available_value_count"]), fmtVal(m["missing_value_count"]),
			valueCell(id, m["min"], exact), valueCell(id, m["max"], exact), mean, first, last, valueCell(id, delta, exact))
	}
	return tw.Flush()
}

// terminalWidth is the column count of w when it is a terminal.
func terminalWidth(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok || !writerIsTerminal(f) {
		return 0, false
	}
	width, _, err := term.GetSize(f.Fd())
	if err != nil || width < 20 {
		return 80, true
	}
	return width, true
}

// drawHistoryCharts reads the raw samples of the same request (every
// page) and draws one chart per metric.
func drawHistoryCharts(cmd *cobra.Command, env *Env, reg *tool.Registry, args map[string]any, metrics []string, width int) error {
	raw := map[string]any{}
	for k, v := range args {
		raw[k] = v
	}
	raw["mode"] = "raw"
	var at []time.Time
	vals := make([][]float64, len(metrics))
	oks := make([][]bool, len(metrics))
	b, _ := json.Marshal(raw)
	for {
		res, err := reg.Call(cmd.Context(), "get_history", b)
		if err != nil {
			return err
		}
		var page struct {
			Rows []struct {
				At     string         `json:"at"`
				Values map[string]any `json:"values"`
			} `json:"rows"`
		}
		if err := remarshal(res.Data, &page); err != nil {
			return err
		}
		for _, r := range page.Rows {
			t, _ := time.Parse(time.RFC3339Nano, r.At)
			at = append(at, t)
			for i, m := range metrics {
				v, ok := chartNumber(r.Values[m])
				vals[i], oks[i] = append(vals[i], v), append(oks[i], ok)
			}
		}
		if res.NextAction == nil {
			break
		}
		b, _ = json.Marshal(res.NextAction.Arguments)
	}
	for i, m := range metrics {
		unit := metricUnit(m)
		for _, l := range tui.Chart(m+" ("+unit+")", unit, at, vals[i], oks[i], width, 12) {
			fmt.Fprintln(env.Stdout, strings.TrimRight(l, " "))
		}
		fmt.Fprintln(env.Stdout)
	}
	return nil
}

func chartNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// drawLogCharts draws the system CPU and memory of every recorded frame
// of a saved recording as braille charts (inquest log show on a terminal).
func drawLogCharts(w io.Writer, l *recording.Log, width int) {
	if l.System == nil {
		return
	}
	for _, slot := range []int{sample.SCPUPercent, sample.SMemUsed} {
		m := sample.SystemMetrics[slot]
		var at []time.Time
		var vals []float64
		var oks []bool
		for _, s := range l.System.View().Raw(history.Interval{}, []int{slot}) {
			at = append(at, history.MsTime(s.At))
			v := float64(s.Vals[0])
			if m.Repr == sample.ReprNumber {
				v = sample.AsFloat(s.Vals[0])
			}
			vals, oks = append(vals, v), append(oks, s.Avail[0])
		}
		if len(at) == 0 {
			return
		}
		for _, line := range tui.Chart(m.ID+" ("+m.Unit+")", m.Unit, at, vals, oks, width, 12) {
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
		fmt.Fprintln(w)
	}
}
