package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/perf"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newAnalyzeCmd) }

func newAnalyzeCmd(env *Env) *cobra.Command {
	var (
		evidenceID, continuation, format, arguments, limits, rescueTo string
		pageSize                                                      int
		preserve, jsonOut                                             bool
	)
	ops := []string{}
	for _, op := range perf.Operations() {
		ops = append(ops, op.Name)
	}
	cmd := &cobra.Command{
		Use:   "analyze OPERATION [PATH...]",
		Short: "Analyze performance artifacts with a perf operation (" + strings.Join(ops, ", ") + ")",
		Long: `Run one perf analysis tool over local artifacts (PATH..., in order) or a
preserved evidence record (--evidence ID), through the same tool, schema and
envelope as MCP. OPERATION is the tool name. Operation fields go in
--arguments as a JSON object (e.g. '{"start_ns":0,"end_ns":"1000000"}').
A partial result carries next_page.argv: run it unchanged for the next page
(--continuation TOKEN with the same arguments). --preserve keeps the result
as immutable evidence; --rescue-to DIR publishes it to a new store instead.
A failure exits 1 with the error on stderr only, or with --json as the
error envelope on stdout.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			op := args[0]
			paths := args[1:]
			if perf.OperationByName(op) == nil {
				return badFlag("OPERATION", "unknown operation %q (want one of %s)", op, strings.Join(ops, ", "))
			}
			if preserve && rescueTo != "" {
				return badFlag("--preserve", "%s", "--preserve and --rescue-to are mutually exclusive")
			}
			if evidenceID != "" && len(paths) > 0 {
				return badFlag("--evidence", "give PATH arguments or --evidence, not both")
			}
			if evidenceID != "" && format != "" {
				return badFlag("--format", "%s", "--format applies to paths; preserved sources retain their format")
			}
			if evidenceID == "" && len(paths) == 0 {
				return badFlag("PATH", "give at least one PATH or --evidence ID")
			}
			if rescueTo != "" {
				if err := perf.PreflightRescue(rescueTo); err != nil {
					return badFlag("--rescue-to", "--rescue-to: %s", contract.AsError(err).Message)
				}
			}
			if cmd.Flags().Changed("page-size") && pageSize < 1 {
				return badFlag("--page-size", "--page-size must be a positive integer (got %d)", pageSize)
			}
			call := map[string]any{}
			if arguments != "" {
				var err error
				if call, err = jsonObjectArg("--arguments", arguments, false); err != nil {
					return failed(err)
				}
				if _, ok := call["sources"]; ok {
					return errors.New(`--arguments must not contain "sources": sources come from PATH arguments or --evidence`)
				}
			}
			var sources []any
			for _, p := range paths {
				abs, err := filepath.Abs(p)
				if err != nil {
					return err
				}
				s := map[string]any{"kind": "path", "path": abs}
				if format != "" {
					s["format"] = format
				}
				sources = append(sources, s)
			}
			rt, err := newAnalysisRuntime()
			if err != nil {
				return err
			}
			defer rt.Close()
			if evidenceID != "" {
				// The record's ordered analysis sources, as inspect_evidence
				// projects them (one per analysis artifact).
				ib, _ := json.Marshal(map[string]any{"evidence_id": evidenceID})
				ins, err := rt.Registry.Call(cmd.Context(), "inspect_evidence", ib)
				if err != nil {
					return printEnvelope(env, nil, err)
				}
				data, _ := ins.Data.(map[string]any)
				list, _ := data["analysis_sources"].([]any)
				if len(list) == 0 {
					list = []any{map[string]any{"kind": "evidence", "evidence_id": evidenceID}}
				}
				sources = append(sources, list...)
			}
			call["sources"] = sources
			if continuation != "" {
				call["continuation"] = continuation
			}
			if limits != "" {
				l, err := jsonObjectArg("--limits", limits, false)
				if err != nil {
					return failed(err)
				}
				call["limits"] = l
			}
			if cmd.Flags().Changed("page-size") {
				call["page_size"] = pageSize
			}
			raw, _ := json.Marshal(call)
			res, err := rt.Registry.Call(cmd.Context(), op, raw)
			if err == nil && (preserve || rescueTo != "") {
				res, err = keepResult(cmd, rt.Registry, res, preserve, rescueTo)
			}
			if res != nil {
				addArgv(res, paths, evidenceID)
			}
			if err == nil && !jsonOut && textReports()[op] != nil {
				return textReports()[op](env, res)
			}
			return printEnvelope(env, res, err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&evidenceID, "evidence", "", "analyze a preserved evidence record's analysis source instead of paths")
	f.StringVar(&continuation, "continuation", "", "continuation token from next_page (give the same arguments)")
	f.StringVar(&format, "format", "", "declare the format of every PATH (text, json, jsonl, csv, pprof, folded, gobench, chrome-trace)")
	f.StringVar(&arguments, "arguments", "", "operation fields as a JSON object")
	f.StringVar(&limits, "limits", "", `limits JSON, e.g. {"max_rows":50,"timeout_seconds":30}`)
	f.IntVar(&pageSize, "page-size", 0, "rows per page (shorthand for limits.max_rows)")
	f.BoolVar(&preserve, "preserve", false, "preserve the result as immutable evidence")
	f.StringVar(&rescueTo, "rescue-to", "", "publish the result to a new evidence store at this absolute path")
	f.BoolVar(&jsonOut, "json", false, "print the result envelope (summarize_profile and compare_benchmarks print a text report without it); on failure the error envelope")
	return cmd
}

// textReports are the operations whose result reads as a reference
// tool's text report by default: summarize_profile as go tool pprof -top,
// compare_benchmarks as benchstat. Every other operation prints its
// envelope.
var textReports = sync.OnceValue(func() map[string]func(*Env, *contract.Result) error {
	return map[string]func(*Env, *contract.Result) error{
		"summarize_profile": func(env *Env, res *contract.Result) error {
			var d profileSummary
			if err := remarshal(res.Data, &d); err != nil {
				return err
			}
			renderProfileTop(env.Stdout, d)
			reportKept(env, res)
			return nil
		},
		"compare_benchmarks": func(env *Env, res *contract.Result) error {
			var d benchData
			if err := remarshal(res.Data, &d); err != nil {
				return err
			}
			renderBenchstat(env.Stdout, d)
			reportKept(env, res)
			return nil
		},
	}
})

// reportKept tells on stderr what --preserve or --rescue-to made of a
// result printed as text, and its warnings.
func reportKept(env *Env, res *contract.Result) {
	for _, w := range res.Warnings {
		fmt.Fprintln(env.Stderr, "warning:", noteCell(w))
	}
	data, _ := res.Data.(map[string]any)
	for _, k := range []string{"preserved", "rescued"} {
		if m, ok := data[k].(map[string]any); ok {
			if id, ok := m["evidence_id"].(string); ok {
				fmt.Fprintf(env.Stderr, "%s as evidence %s\n", k, cell(id))
			}
		}
	}
}

// keepResult preserves or rescues the analysis just made, through the same
// lifecycle tools, and attaches the outcome under data.preserved/rescued.
func keepResult(cmd *cobra.Command, reg *tool.Registry, res *contract.Result, preserve bool, rescueTo string) (*contract.Result, error) {
	data, _ := res.Data.(map[string]any)
	id, _ := data["analysis_id"].(string)
	name, args := "preserve_evidence", map[string]any{"analysis_id": id}
	key := "preserved"
	if !preserve {
		name, key = "rescue_evidence", "rescued"
		args["destination"] = rescueTo
	}
	raw, _ := json.Marshal(args)
	kept, err := reg.Call(cmd.Context(), name, raw)
	if err != nil {
		return nil, err
	}
	data[key] = kept.Data
	if kept.NextAction != nil {
		res.NextAction = kept.NextAction
		data["next_page"] = kept.NextAction
	}
	return res, nil
}

// addArgv removes the process-local analysis_id and adds next_page.argv:
// the exact command for the next page.
func addArgv(res *contract.Result, paths []string, evidenceID string) {
	data, ok := res.Data.(map[string]any)
	if !ok {
		return
	}
	delete(data, "analysis_id")
	np := res.NextAction
	if np == nil {
		// The command's own next_page (with argv) is null when there is
		// no next call; the tools' results carry next_action only.
		data["next_page"] = nil
		return
	}
	argv := []string{"inquest", "analyze", np.Tool}
	fields := map[string]any{}
	token := ""
	var evID string
	var live []string
	for k, v := range np.Arguments {
		switch k {
		case "continuation":
			token, _ = v.(string)
		case "sources":
			list, _ := v.([]any)
			for _, s := range list {
				m, _ := s.(map[string]any)
				if m["kind"] == "evidence" {
					evID, _ = m["evidence_id"].(string)
				} else if p, ok := m["path"].(string); ok {
					live = append(live, p)
				}
			}
		default:
			fields[k] = v
		}
	}
	if evID != "" {
		argv = append(argv, "--evidence", evID)
	} else {
		argv = append(argv, live...)
	}
	fb, _ := json.Marshal(fields)
	argv = append(argv, "--arguments", string(fb), "--continuation", token)
	page := map[string]any{"tool": np.Tool, "arguments": np.Arguments, "argv": argv}
	// A rescued handoff reads the alternate store: argv runs with this
	// environment (INQUEST_DATA_DIR), as rescue_evidence's next_page says.
	if r, ok := data["rescued"].(map[string]any); ok {
		if env, ok := r["environment"]; ok {
			page["environment"] = env
		}
	}
	data["next_page"] = page
}

// printEnvelope prints a result's envelope like callAndPrint; a failure
// is returned for Run to report (exit 1).
func printEnvelope(env *Env, res *contract.Result, err error) error {
	if err != nil {
		return failed(err)
	}
	body, isErr := contract.Marshal(res, err)
	var v any
	_ = json.Unmarshal(body, &v)
	if perr := printJSON(env.Stdout, v); perr != nil {
		return perr
	}
	if isErr {
		return exitCode(1)
	}
	return nil
}
