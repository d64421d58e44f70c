package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/mcpserver"
	"github.com/inquest-dev/inquest/internal/perf"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newMCPCmd) }

func newMCPCmd(env *Env) *cobra.Command {
	var toolsets, limits string
	var raw, inProcess bool
	var maxResult int
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Run the MCP server over stdio (stdout carries only MCP messages)",
		Long: `Run inquest as an MCP server on stdin/stdout. Diagnostics go to stderr.
--toolsets selects proc, perf and bin (default: all). --raw selects the raw
delivery mode: wait_ms 0, explicit read, 100-row pages.
--max-result-bytes sets the byte budget of one delivered result (the text
block and structuredContent together; default 65536, at most 4194304): paged
tools end a page at it, and a larger result says so in a warning.
--limits JSON sets the analysis ceilings of this server, with the keys a
perf tool's limits argument takes ({"max_rows":500,"timeout_seconds":60,
"max_input_bytes":1073741824,"max_memory_bytes":268435456}); each may only
lower the built-in ceiling, calls may lower them further, never raise them,
and get_status shows them under data.analysis_limits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if maxResult < minResultBytes || maxResult > tool.HardResultBytes {
				return badFlag("--max-result-bytes", "--max-result-bytes %d is out of range: give %d to %d bytes", maxResult, minResultBytes, tool.HardResultBytes)
			}
			sets, err := parseToolsets(toolsets)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("toolsets") && len(sets) == 0 {
				return badFlag("--toolsets", "--toolsets is empty; name one or more of proc, perf, bin (or leave it out for all)")
			}
			ceilings := perf.DefaultCeilings
			if limits != "" {
				if ceilings, err = perf.ParseCeilings(limits); err != nil {
					return badFlag("--limits", "--limits: %v", err)
				}
			}
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Raw: raw, Stderr: env.Stderr, InProcess: inProcess, MCP: true, Ceilings: ceilings})
			if err != nil {
				return err
			}
			defer rt.Close()
			rt.Registry.Wrap("get_status", withAnalysisLimits(ceilings))
			rt.nameCaptureWorkloads(len(sets) == 0 || slices.Contains(sets, tool.Proc), true)
			logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			srv := mcpserver.New(rt.Registry, mcpserver.Options{Version: Version, Toolsets: sets, Logger: logger, MaxResultBytes: maxResult})
			return mcpserver.ServeStdio(cmd.Context(), srv)
		},
	}
	cmd.Flags().StringVar(&toolsets, "toolsets", "", "comma-separated toolsets to publish: proc,perf,bin (default all)")
	cmd.Flags().StringVar(&limits, "limits", "", `analysis ceilings JSON, e.g. {"max_rows":500,"timeout_seconds":60}; may only lower the built-in ones`)
	cmd.Flags().BoolVar(&raw, "raw", false, "raw delivery: wait_ms 0, explicit read, 100-row pages")
	cmd.Flags().IntVar(&maxResult, "max-result-bytes", tool.DefaultResultBytes, fmt.Sprintf("byte budget of one delivered result (text and structuredContent together), %d to %d", minResultBytes, tool.HardResultBytes))
	cmd.Flags().BoolVar(&inProcess, "in-process", false, "run proc tools on a host inside this process instead of the shared host (history ends with the bridge)")
	cmd.AddCommand(newMCPInspectCmd(env))
	return cmd
}

// withAnalysisLimits adds this server's perf ceilings to get_status's
// data as analysis_limits (perf.Ceilings.Status): the host answers
// get_status for every bridge, the ceilings belong to this one.
func withAnalysisLimits(c perf.Ceilings) func(tool.Handler) tool.Handler {
	return func(next tool.Handler) tool.Handler {
		return func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			res, err := next(ctx, args)
			if err != nil || res == nil {
				return res, err
			}
			data, ok := res.Data.(map[string]any)
			if !ok {
				b, merr := json.Marshal(res.Data)
				if merr != nil || json.Unmarshal(b, &data) != nil || data == nil {
					return res, err
				}
				res.Data = data
			}
			data["analysis_limits"] = c.Status()
			return res, nil
		}
	}
}

// minResultBytes is the smallest --max-result-bytes: room for an envelope,
// its coverage and warnings, and a row.
const minResultBytes = 16 << 10

func parseToolsets(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		ok := false
		for _, t := range tool.Toolsets {
			if p == t {
				ok = true
			}
		}
		if !ok {
			return nil, badFlag("--toolsets", "unknown toolset %q (want proc, perf or bin)", p)
		}
		out = append(out, p)
	}
	return out, nil
}

func newMCPInspectCmd(env *Env) *cobra.Command {
	var name string
	var full, markdown bool
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Print the tool catalog (names and descriptions; --tool NAME or --full for schemas)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr, NoHost: true})
			if err != nil {
				return err
			}
			defer rt.Close()
			reg := rt.Registry
			if markdown {
				writeToolsMarkdown(env.Stdout, reg)
				return nil
			}
			if name != "" {
				t, ok := reg.Lookup(name)
				if !ok {
					return unknownToolError(name)
				}
				if err := printJSON(env.Stdout, mcpserver.Definition(reg, t)); err != nil {
					return err
				}
				// The longer guidance tools/list leaves out (examples,
				// modes, edge cases) follows the published definition.
				if t.Details != "" {
					fmt.Fprintf(env.Stdout, "\n%s\n", t.Details)
				}
				return nil
			}
			for _, set := range tool.Toolsets {
				for _, t := range reg.Tools(set) {
					if full {
						if err := printJSON(env.Stdout, mcpserver.Definition(reg, t)); err != nil {
							return err
						}
						continue
					}
					ro := ""
					if t.Annotations.ReadOnly {
						ro = " (read-only)"
					}
					fmt.Fprintf(env.Stdout, "%-5s %-24s %s%s\n", set, t.Name, firstSentence(t.Description), ro)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "tool", "", "print one tool's full definition (as tools/list publishes it) and its longer guidance")
	cmd.Flags().BoolVar(&full, "full", false, "print every tool's full definition")
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the catalog as Markdown (docs/tools.md)")
	return cmd
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

func printJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
