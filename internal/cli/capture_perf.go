package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/perf"
	"github.com/spf13/cobra"
)

func init() { register(newPerfCaptureCmd) }

// newPerfCaptureCmd is `inquest capture`: one capture_and_<operation> call
// with the target argv after --.
func newPerfCaptureCmd(env *Env) *cobra.Command {
	var (
		provider, operation, cwd, captureArgs, analysisArgs, consoleOutput, budget, experimentFile, limits, rescueTo string
		envs                                                                                                         []string
		pageSize                                                                                                     int
		preserve, asJSON, verbose                                                                                    bool
	)
	cmd := &cobra.Command{
		Use:   "capture --provider KIND [OPTIONS] -- ARGV...",
		Short: "Run a target under measurement and analyze what it produced",
		Long: `Run ARGV (never a shell string) under a capture provider in its own process
tree and analyze the result with one operation, through the same
capture_and_<operation> tool as MCP.

  --provider direct   measure each execution (wall time, user/sys CPU, max RSS, exit)
  --provider go-test  ARGV are go test package arguments (e.g. -- .)
  --provider pprof-http  fetch a profile from a loopback Go service
                      (--capture-arguments '{"url":"http://127.0.0.1:6060"}')
                      while ARGV runs as the load
  --provider perf     perf record -g -- ARGV, folded perf script stacks
  --provider py-spy   py-spy record -- ARGV (when py-spy is on PATH)

--operation is summarize_executions (default), preview_artifact,
summarize_benchmarks, summarize_profile, compare_benchmarks or
compare_profiles (the compare operations need --experiment: its cases are
the compared targets, each captured once per block). --experiment FILE.json runs a
randomized paired experiment ({"cases":[{"name":"a","argv":[...]},...],
"blocks":30,"seed":1,"threshold":0.05}) and prints each case's median and
its difference from the first case with a 95% bootstrap interval and a
verdict. A case without an argv inherits ARGV; when every case names its
argv, ARGV may be left out. Provider fields go in --capture-arguments (e.g.
'{"bench":"Sum","count":5,"profile":"cpu"}'), operation fields in
--analysis-arguments, the workload budget in --workload-budget
('{"timeout_seconds":60,"max_memory_bytes":1073741824}'). --preserve keeps
the captured artifacts as evidence; --rescue-to ABSOLUTE_PATH publishes
them to a new evidence store at that path instead (checked before the
workload runs); without either the scratch directory is removed at exit.

Each execution's process is named on stderr while it runs: on a terminal
a status line shows the running execution's pid (and its process_ref
when an inquest host already runs; a capture never starts one); with
--verbose every start and end is a line of its own ("execution 1/1
started (case target, block 0): pid 4242, process_ref pr_..."), on a
terminal or not. stdout carries only the result.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash > 0 || (dash < 0 && len(args) > 0) {
				return badFlag("ARGV", "give the target after --, e.g. inquest capture --provider direct -- ./prog arg")
			}
			var experiment map[string]any
			if experimentFile != "" {
				b, err := readOptionFile("--experiment", experimentFile)
				if err != nil {
					return err
				}
				if err := json.Unmarshal(b, &experiment); err != nil || experiment == nil {
					return badFlag("--experiment", "%s", "--experiment file must hold a JSON object")
				}
			}
			if len(args) == 0 {
				// An experiment whose every case names its argv needs no
				// ARGV: the first case's stands for target.argv, which
				// only cases without an argv would inherit.
				argv, err := experimentArgv(experiment)
				if err != nil {
					return err
				}
				args = argv
			}
			if provider == "" {
				return badFlag("--provider", "%s", "--provider is required ("+strings.Join(perf.CaptureProviderKinds(), ", ")+")")
			}
			if err := checkCaptureProvider(provider, operation); err != nil {
				return err
			}
			if preserve && rescueTo != "" {
				return badFlag("--preserve", "%s", "--preserve and --rescue-to are mutually exclusive")
			}
			if rescueTo != "" {
				// Checked before the workload runs: a destination refused
				// after a long capture would lose its artifacts.
				if err := perf.PreflightRescue(rescueTo); err != nil {
					return badFlag("--rescue-to", "--rescue-to: %s", contract.AsError(err).Message)
				}
			}
			if cwd == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				cwd = wd
			}
			abs, err := filepath.Abs(cwd)
			if err != nil {
				return err
			}
			target := map[string]any{"argv": args, "cwd": abs}
			if len(envs) > 0 {
				m := map[string]any{}
				for _, kv := range envs {
					k, v, ok := strings.Cut(kv, "=")
					if !ok {
						return badFlag("--env", "--env %q: want KEY=VALUE", kv)
					}
					m[k] = v
				}
				target["env"] = m
			}
			if consoleOutput != "" {
				target["console_output"] = consoleOutput
			}
			if budget != "" {
				var b map[string]any
				if err := json.Unmarshal([]byte(budget), &b); err != nil || b == nil {
					return badFlag("--workload-budget", "%s", "--workload-budget must be a JSON object")
				}
				target["budget"] = b
			}
			prov := map[string]any{}
			if captureArgs != "" {
				if err := json.Unmarshal([]byte(captureArgs), &prov); err != nil || prov == nil {
					return badFlag("--capture-arguments", "%s", "--capture-arguments must be a JSON object")
				}
			}
			prov["kind"] = provider
			call := map[string]any{}
			if analysisArgs != "" {
				if err := json.Unmarshal([]byte(analysisArgs), &call); err != nil || call == nil {
					return badFlag("--analysis-arguments", "%s", "--analysis-arguments must be a JSON object")
				}
			}
			call["target"], call["provider"] = target, prov
			if preserve {
				call["preserve"] = true
			}
			if experiment != nil {
				call["experiment"] = experiment
			}
			if limits != "" {
				var l map[string]any
				if err := json.Unmarshal([]byte(limits), &l); err != nil {
					return badFlag("--limits", "%s", "--limits must be a JSON object")
				}
				call["limits"] = l
			}
			if cmd.Flags().Changed("page-size") {
				call["page_size"] = pageSize
			}
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr, NoHost: true})
			if err != nil {
				return err
			}
			defer rt.Close()
			rt.nameCaptureWorkloads(true, false)
			ctx := cmd.Context()
			tty := writerIsTerminal(env.Stderr)
			if tty || verbose {
				ctx = perf.WithExecutionEvents(ctx, executionReporter(env.Stderr, tty && !verbose))
			}
			raw, _ := json.Marshal(call)
			res, cerr := rt.Registry.Call(ctx, "capture_and_"+operation, raw)
			if tty && !verbose {
				fmt.Fprint(env.Stderr, "\r\x1b[K")
			}
			kept := preserve
			if res != nil && cerr == nil && rescueTo != "" {
				if d, _ := res.Data.(map[string]any); d != nil && d["analysis_id"] != nil {
					if _, rerr := keepResult(cmd, rt.Registry, res, false, rescueTo); rerr != nil {
						// The workload ran: keep its files for a later
						// inquest analyze rather than lose them.
						d["rescue_failure"] = contract.AsError(rerr)
						d["preserve_failure"] = d["rescue_failure"]
						res.Warn("--rescue-to " + rescueTo + " failed: " + contract.AsError(rerr).Message)
					} else {
						kept = true
					}
				} else {
					res.Warn("--rescue-to: the capture produced no analysis to rescue")
				}
			}
			keepFailed := false
			if res != nil {
				if d, _ := res.Data.(map[string]any); (preserve || rescueTo != "") && d != nil && d["preserve_failure"] != nil {
					keepFailed = true
					keepUnpreserved(rt.perfRuntime(), res, operation, retryArguments(call, operation), rescueTo != "")
					if rescueTo != "" {
						delete(d, "preserve_failure")
					}
				}
				if kept && !preserve {
					rescuedHandoff(res, rescueTo)
				} else {
					cliCaptureHandoff(res, kept)
				}
			}
			if kept && !preserve && !asJSON && cerr == nil {
				if r, ok := res.Data.(map[string]any)["rescued"].(map[string]any); ok {
					fmt.Fprintf(env.Stderr, "rescued as evidence %s in %s (read it with: INQUEST_DATA_DIR=%s inquest evidence show %s)\n",
						cell(fmt.Sprint(r["evidence_id"])), cell(rescueTo), cell(rescueTo), cell(fmt.Sprint(r["evidence_id"])))
				}
			}
			var perr error
			if asJSON || cerr != nil || operation != "summarize_executions" {
				perr = printEnvelope(env, res, cerr)
			} else {
				perr = printExecutionTable(env.Stdout, res)
			}
			if perr == nil && keepFailed {
				// The result is printed, but what --preserve or
				// --rescue-to promised did not happen: exit 1.
				return exitCode(1)
			}
			return perr
		},
	}
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "", "capture provider: direct, go-test, pprof-http, perf or py-spy")
	f.StringVar(&operation, "operation", "summarize_executions", "analysis operation fed by the capture")
	f.StringVar(&cwd, "cwd", "", "working directory of the target (default: the current directory)")
	f.StringArrayVar(&envs, "env", nil, "environment override KEY=VALUE (repeatable, at most 32)")
	f.StringVar(&captureArgs, "capture-arguments", "", "provider fields as a JSON object")
	f.StringVar(&analysisArgs, "analysis-arguments", "", "operation fields as a JSON object")
	f.StringVar(&consoleOutput, "console-output", "", "retained console: diagnostics (first 64 KiB, default) or full (first 64 MiB)")
	f.StringVar(&budget, "workload-budget", "", `workload budget JSON, e.g. {"timeout_seconds":60,"max_memory_bytes":1073741824}`)
	f.StringVar(&experimentFile, "experiment", "", "experiment JSON file (cases, blocks, seed, metric, estimand, threshold, oracle)")
	f.StringVar(&limits, "limits", "", `analysis limits JSON, e.g. {"max_rows":50}`)
	f.IntVar(&pageSize, "page-size", 0, "rows per page (shorthand for limits.max_rows)")
	f.BoolVar(&preserve, "preserve", false, "preserve the captured artifacts as immutable evidence")
	f.StringVar(&rescueTo, "rescue-to", "", "publish the captured artifacts to a new evidence store at this absolute path")
	f.BoolVar(&asJSON, "json", false, "print the tool's envelope as JSON")
	f.BoolVarP(&verbose, "verbose", "v", false, "print a line on stderr as each execution starts (pid, process_ref) and ends")
	return cmd
}

// executionReporter prints capture execution events on w: with status, a
// terminal status line rewritten in place ("capture: execution 2/6
// running (case a, block 0): pid 4242, process_ref pr_..."), else one line
// per event (perf.ExecutionEvent.Message).
func executionReporter(w io.Writer, status bool) func(perf.ExecutionEvent) {
	return func(e perf.ExecutionEvent) {
		if !status {
			fmt.Fprintf(w, "inquest capture: %s\n", e.Message())
			return
		}
		line := fmt.Sprintf("capture: execution %d/%d", e.Execution, e.Executions)
		if e.Event == perf.ExecutionStarted {
			line += fmt.Sprintf(" running (case %s, block %d): pid %d", e.Case, e.Block, e.PID)
			if e.ProcessRef != nil {
				line += ", process_ref " + *e.ProcessRef
			}
		} else {
			line += " ended"
		}
		fmt.Fprintf(w, "\r\x1b[K%s", line)
	}
}

func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// retryArguments are the analysis fields of a capture call (what
// --analysis-arguments and, for summarize_executions, the experiment's
// metric, estimand, threshold and seed gave), for the inquest analyze
// command that preserves a capture's kept files.
func retryArguments(call map[string]any, operation string) map[string]any {
	out := map[string]any{}
	for k, v := range call {
		switch k {
		case "target", "provider", "preserve", "experiment", "limits", "page_size":
		default:
			out[k] = v
		}
	}
	if x, ok := call["experiment"].(map[string]any); ok && operation == "summarize_executions" {
		for _, k := range []string{"metric", "estimand", "threshold", "seed"} {
			if v, ok := x[k]; ok {
				out[k] = v
			}
		}
	}
	return out
}

// keepUnpreserved handles a --preserve capture whose preservation failed
// (data.preserve_failure, e.g. a full evidence store): its scratch
// directory is kept after exit instead of removed, its data.sources keep
// their paths (marked kept), and data.next_command is the inquest analyze
// command that preserves them once the store has room (the process-local
// preserve_evidence next_action ends with this command).
func keepUnpreserved(prt *perf.Runtime, res *contract.Result, operation string, fields map[string]any, rescue bool) {
	data := res.Data.(map[string]any)
	srcs, _ := data["sources"].([]any)
	var paths []string
	format, dir := "", ""
	for _, s := range srcs {
		m, ok := s.(map[string]any)
		p, _ := m["path"].(string)
		if !ok || p == "" {
			continue
		}
		if d := prt.KeepCapture(p); d != "" {
			dir = d
		}
		paths = append(paths, p)
		format, _ = m["format"].(string)
		delete(m, "scratch")
		m["removed_when"] = "kept after inquest capture exited because preserving failed; remove it once preserved"
	}
	res.NextAction = nil
	delete(data, "analysis_id")
	kept := res.Warnings[:0]
	for _, w := range res.Warnings {
		if strings.HasPrefix(w, "the captured artifacts are in a scratch directory") {
			continue // they are kept after exit instead, as said below
		}
		if i := strings.Index(w, "; the call to repeat once the store has room is preserve_evidence"); i >= 0 {
			w = w[:i]
		}
		kept = append(kept, w)
	}
	res.Warnings = kept
	when := "once the evidence store has room"
	if rescue {
		when = "once you can publish them (to the active store with --preserve, or rescue them later)"
	}
	if len(paths) == 0 {
		res.Warn("no captured analysis source is left to preserve later; rerun the capture " + when)
		return
	}
	argv := append([]string{"inquest", "analyze", operation}, paths...)
	if format != "" {
		argv = append(argv, "--format", format)
	}
	if len(fields) > 0 {
		b, _ := json.Marshal(fields)
		argv = append(argv, "--arguments", string(b))
	}
	argv = append(argv, "--preserve")
	data["next_command"] = argv
	res.Warn("the captured files are kept in " + dir + " instead of being removed at exit: " + when + ", next_command (inquest analyze ... --preserve) preserves them without rerunning the workload; remove the directory once they are kept")
}

// rescuedHandoff finishes a capture that --rescue-to published to the new
// store at dest: the scratch sources are marked removed (their copies are
// in dest), the session's preserve_evidence handoff and its warning are
// dropped, and data.next_command is the command that reads the rescued
// evidence from dest.
func rescuedHandoff(res *contract.Result, dest string) {
	data := res.Data.(map[string]any)
	srcs, _ := data["sources"].([]any)
	for _, s := range srcs {
		if m, ok := s.(map[string]any); ok && m["scratch"] == true {
			delete(m, "path")
			delete(m, "scratch")
			m["removed"] = true
			m["removed_when"] = "the capture's scratch directory was removed when inquest capture exited; its files were rescued to " + dest
		}
	}
	kept := res.Warnings[:0]
	for _, w := range res.Warnings {
		if !strings.HasPrefix(w, "the captured artifacts are in a scratch directory") {
			kept = append(kept, w)
		}
	}
	res.Warnings = kept
	delete(data, "analysis_id")
	res.NextAction = nil
	data["next_page"] = nil
	if r, ok := data["rescued"].(map[string]any); ok {
		if id, ok := r["evidence_id"].(string); ok {
			data["next_command"] = []string{"env", "INQUEST_DATA_DIR=" + dest, "inquest", "evidence", "show", id}
		}
	}
}

// cliCaptureHandoff drops the process-local analysis_id; a preserved
// capture's next page becomes an `inquest analyze --evidence` argv, and an
// unpreserved one has none because its scratch is removed at exit.
func cliCaptureHandoff(res *contract.Result, preserved bool) {
	data, ok := res.Data.(map[string]any)
	if !ok {
		return
	}
	if !preserved {
		// The scratch directory is gone once this command exits.
		srcs, _ := data["sources"].([]any)
		for _, s := range srcs {
			if m, ok := s.(map[string]any); ok && m["scratch"] == true {
				delete(m, "path")
				delete(m, "scratch")
				m["removed"] = true
				m["removed_when"] = "the capture's scratch directory was removed when inquest capture exited; rerun with --preserve to keep it as evidence"
			}
		}
	}
	if np := res.NextAction; np != nil && np.Tool == "inspect_evidence" {
		if id, ok := np.Arguments["evidence_id"].(string); ok {
			delete(data, "analysis_id")
			data["next_command"] = []string{"inquest", "evidence", "show", id}
		}
		return
	}
	if preserved || res.NextAction == nil {
		addArgv(res, nil, "")
		return
	}
	delete(data, "analysis_id")
	more := res.NextAction.Tool != "preserve_evidence"
	if !more {
		// The session's preserve_evidence handoff ends with this command.
		kept := res.Warnings[:0]
		for _, w := range res.Warnings {
			if !strings.HasPrefix(w, "the captured artifacts are in a scratch directory") {
				kept = append(kept, w)
			}
		}
		res.Warnings = kept
	}
	res.NextAction = nil
	data["next_page"] = nil
	if more {
		res.Warn("more rows remain, but this capture's scratch directory is removed at exit: rerun with --preserve (then follow next_page.argv) or a larger --page-size")
	} else {
		res.Warn("the captured artifacts were removed at exit: rerun with --preserve to keep them as evidence")
	}
}

// metricLabel is an execution metric's name as a table header: the unit
// suffix dropped (the cells carry units) and words upper-cased, e.g.
// wall_time_ns → WALL TIME, max_rss_bytes → MAX RSS.
func metricLabel(metric string) string {
	for _, suf := range []string{"_ns", "_bytes", "_seconds", "_count"} {
		metric = strings.TrimSuffix(metric, suf)
	}
	return strings.ToUpper(strings.ReplaceAll(metric, "_", " "))
}

// printExecutionTable renders summarize_executions like hyperfine's
// summary: per case runs, median, min…max; then each case against the
// baseline with its 95% interval and verdict.
func printExecutionTable(w io.Writer, res *contract.Result) error {
	data, _ := res.Data.(map[string]any)
	if af, ok := data["analysis_failure"].(map[string]any); ok {
		fmt.Fprintf(w, "analysis failed: %v\n", af["message"])
	}
	sum, _ := data["summary"].(map[string]any)
	unit, _ := sum["unit"].(string)
	metric, _ := sum["metric"].(string)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CASE\tRUNS\tEXCLUDED\tMEDIAN %s\tMEAN\tMIN … MAX\n", metricLabel(metric))
	cases, _ := sum["cases"].([]any)
	for _, c := range cases {
		c, _ := c.(map[string]any)
		fmt.Fprintf(tw, "%v\t%v\t%v\t%s\t%s\t%s … %s\n", c["case"], c["included"], c["excluded"],
			fmtQty(c["median"], unit), fmtQty(c["mean"], unit), fmtQty(c["min"], unit), fmtQty(c["max"], unit))
	}
	tw.Flush()
	if comps, ok := sum["comparisons"].([]any); ok {
		fmt.Fprintf(w, "\n%v over paired blocks (95%% bootstrap CI, %v resamples, threshold %v of baseline):\n", sum["estimand"], sum["bootstrap_resamples"], sum["threshold"])
		for _, c := range comps {
			c, _ := c.(map[string]any)
			line := fmt.Sprintf("  %v vs %v: ", c["case"], c["baseline"])
			if c["estimate"] == nil {
				line += fmt.Sprintf("%v (%v)", c["classification"], c["reason"])
			} else {
				line += fmt.Sprintf("%s [%s, %s]", signed(c["estimate"], unit), signed(c["ci_low"], unit), signed(c["ci_high"], unit))
				if r, ok := c["relative_estimate"].(float64); ok {
					line += fmt.Sprintf(" (%+.1f%%)", r*100)
				}
				line += fmt.Sprintf(" over %v pairs: %v", c["pairs"], strings.ToUpper(fmt.Sprint(c["classification"])))
			}
			fmt.Fprintln(w, line)
		}
	}
	if cap, ok := data["capture"].(map[string]any); ok {
		if o, ok := cap["outcome"].(map[string]any); ok {
			fmt.Fprintf(w, "\nexecutions: %v (succeeded %v, failed %v, excluded %v)\n", o["executions"], o["succeeded"], o["failed"], o["excluded"])
		}
		if ex, ok := cap["executions"].([]map[string]any); ok && len(ex) == 1 {
			// The execution's record is its row of summarize_executions;
			// capture.executions holds what the row lacks.
			e := map[string]any{}
			if rows := mapRows(data["rows"]); len(rows) == 1 {
				for k, v := range rows[0] {
					e[k] = v
				}
			}
			for k, v := range ex[0] {
				e[k] = v
			}
			code := "signal " + fmt.Sprint(e["signal"])
			if c, ok := e["exit_code"].(*int); ok && c != nil {
				code = "exit " + strconv.Itoa(*c)
			}
			rss := fmtQty(e["max_rss_bytes"], "bytes")
			if e["max_rss_bytes"] == nil {
				rss = "at most " + fmtQty(e["max_rss_at_most_bytes"], "bytes") + " (not above this process's own peak)"
			}
			fmt.Fprintf(w, "%s (%v), user %s, sys %s, max RSS %s\n", code, e["termination"], fmtQty(e["user_cpu_ns"], "ns"), fmtQty(e["sys_cpu_ns"], "ns"), rss)
		}
	}
	if id, ok := data["evidence_id"].(string); ok {
		fmt.Fprintf(w, "evidence: %s\n", id)
	}
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	if next, ok := data["next_command"].([]string); ok && (data["preserve_failure"] != nil || data["rescue_failure"] != nil) {
		fmt.Fprintf(w, "next: %s\n", shellJoin(next))
	}
	return nil
}

// mapRows returns rows held as []map[string]any or []any of maps (nil
// for anything else).
func mapRows(v any) []map[string]any {
	switch rows := v.(type) {
	case []map[string]any:
		return rows
	case []any:
		out := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			if m, ok := r.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func fmtQty(v any, unit string) string {
	f, ok := toFloat(v)
	if !ok {
		return "-"
	}
	if unit == "bytes" {
		switch {
		case f >= 1<<30:
			return fmt.Sprintf("%.2f GiB", f/(1<<30))
		case f >= 1<<20:
			return fmt.Sprintf("%.2f MiB", f/(1<<20))
		case f >= 1<<10:
			return fmt.Sprintf("%.1f KiB", f/(1<<10))
		}
		return fmt.Sprintf("%.0f B", f)
	}
	a := f
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3f s", f/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3f ms", f/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3f µs", f/1e3)
	}
	return fmt.Sprintf("%.0f ns", f)
}

func signed(v any, unit string) string {
	s := fmtQty(v, unit)
	if f, ok := toFloat(v); ok && f >= 0 {
		return "+" + s
	}
	return s
}

// checkCaptureProvider refuses a --operation that has no capture tool and
// a --provider the operation does not take, listing the providers the
// operation takes and the operations that take the given provider
// (perf.CaptureOperationProviders), instead of the schema's bare
// "expected const" of a single-provider operation.
func checkCaptureProvider(provider, operation string) error {
	byOp := perf.CaptureOperationProviders()
	if len(byOp) == 0 {
		return nil // no captures on this platform: the call says so
	}
	var ops []string
	for op := range byOp {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	valid, ok := byOp[operation]
	if !ok {
		return badFlag("--operation", "--operation %q has no capture; give one of %s", operation, strings.Join(ops, ", "))
	}
	if slices.Contains(valid, provider) {
		return nil
	}
	msg := fmt.Sprintf("--provider %q is not a provider of --operation %s, which takes %s", provider, operation, strings.Join(valid, ", "))
	var takers []string
	for _, op := range ops {
		if slices.Contains(byOp[op], provider) {
			takers = append(takers, op)
		}
	}
	if len(takers) > 0 {
		msg += fmt.Sprintf("; --provider %s is taken by --operation %s", provider, strings.Join(takers, ", "))
	} else {
		msg += fmt.Sprintf("; the providers are %s", strings.Join(perf.CaptureProviderKinds(), ", "))
	}
	return badFlag("--provider", "%s", msg)
}

// experimentArgv returns the argv of an experiment's first case when every
// case names one (the target ARGV may then be omitted: no case inherits
// it). Without an experiment, or with a case that has no argv, the error
// says to give the target after --.
func experimentArgv(experiment map[string]any) ([]string, error) {
	need := badFlag("ARGV", "give the target after --, e.g. inquest capture --provider direct -- ./prog arg")
	cases, _ := experiment["cases"].([]any)
	if len(cases) == 0 {
		return nil, need
	}
	var first []string
	for i, c := range cases {
		m, _ := c.(map[string]any)
		argv, _ := m["argv"].([]any)
		if len(argv) == 0 {
			name, _ := m["name"].(string)
			return nil, badFlag("--experiment", "--experiment case %d (%q) has no argv: give the target it inherits after --, e.g. inquest capture --provider direct --experiment %s -- ./prog arg", i+1, name, "FILE")
		}
		if i == 0 {
			for _, a := range argv {
				s, ok := a.(string)
				if !ok {
					return nil, badFlag("--experiment", "--experiment case 1 argv holds %v, not a string", a)
				}
				first = append(first, s)
			}
		}
	}
	return first, nil
}
