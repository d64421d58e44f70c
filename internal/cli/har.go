package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func init() { register(newHARCmd) }

func newHARCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "har",
		Short: "HTTP capture evidence: show and diff HAR 1.2 files (inspect_http_capture, compare_http_captures)",
	}
	cmd.AddCommand(newHARShowCmd(env), newHARDiffCmd(env))
	return cmd
}

func newHARShowCmd(env *Env) *cobra.Command {
	var f binFlags
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "inspect_http_capture: request groups with statuses, sizes, timings, body digests",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			args := map[string]any{"path": a[0]}
			f.apply(cmd, args, true)
			return runTool(cmd, env, &f, "inspect_http_capture", args, func(w io.Writer, raw json.RawMessage) error {
				var d struct {
					Summary map[string]any `json:"summary"`
					Rows    []struct {
						Method, URL string
						Resource    string         `json:"resource_type"`
						Count       int            `json:"count"`
						Statuses    map[string]int `json:"statuses"`
						SizeTotal   string         `json:"size_total"`
						TimeTotal   *float64       `json:"time_total_ms"`
						Bodies      int            `json:"bodies_retained"`
					}
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					return err
				}
				fmt.Fprintf(w, "entries %v  groups %v\n", d.Summary["entries"], d.Summary["groups"])
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "METHOD\tURL\tTYPE\tCOUNT\tSTATUSES\tBYTES\tTIME_MS\tBODIES")
				for _, r := range d.Rows {
					t := ""
					if r.TimeTotal != nil {
						t = fmt.Sprintf("%.1f", *r.TimeTotal)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\n", cell(r.Method), cell(r.URL), cell(r.Resource), r.Count, statusCounts(r.Statuses), r.SizeTotal, t, r.Bodies)
				}
				return tw.Flush()
			})
		},
	}
	f.add(cmd, true)
	return cmd
}

func newHARDiffCmd(env *Env) *cobra.Command {
	var f binFlags
	var leftComplete, rightComplete bool
	var verdicts []string
	cmd := &cobra.Command{
		Use:   "diff LEFT RIGHT",
		Short: "compare_http_captures: group verdicts (captures are partial unless --left-complete/--right-complete)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			side := func(p string, complete bool) map[string]any {
				c := "partial"
				if complete {
					c = "complete"
				}
				return map[string]any{"path": p, "completeness": c}
			}
			args := map[string]any{"left": side(a[0], leftComplete), "right": side(a[1], rightComplete)}
			setFlag(cmd, args, "verdict", "verdicts", verdicts)
			f.apply(cmd, args, true)
			return runTool(cmd, env, &f, "compare_http_captures", args, func(w io.Writer, raw json.RawMessage) error {
				var d struct {
					Summary map[string]any `json:"summary"`
					Rows    []struct {
						Method, URL, Verdict, Content string
						Presence                      string `json:"presence"`
						L                             int    `json:"left_count"`
						R                             int    `json:"right_count"`
					}
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					return err
				}
				s, _ := json.Marshal(d.Summary["by_verdict"])
				fmt.Fprintf(w, "summary %s\n", s)
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "VERDICT\tMETHOD\tURL\tLEFT\tRIGHT\tWHY")
				for _, r := range d.Rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.Verdict, cell(r.Method), cell(r.URL), r.L, r.R, cell(r.Content))
				}
				return tw.Flush()
			})
		},
	}
	f.add(cmd, true)
	cmd.Flags().BoolVar(&leftComplete, "left-complete", false, "declare the left capture complete")
	cmd.Flags().BoolVar(&rightComplete, "right-complete", false, "declare the right capture complete")
	cmd.Flags().StringSliceVar(&verdicts, "verdict", nil, "equal, omissions_can_explain, independent_difference, undetermined")
	return cmd
}

// statusCounts renders a status→count map as "200×3, 404×1", statuses in
// numeric order (non-numeric keys after, in string order).
func statusCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, ea := strconv.Atoi(keys[i])
		b, eb := strconv.Atoi(keys[j])
		if ea == nil && eb == nil {
			return a < b
		}
		if (ea == nil) != (eb == nil) {
			return ea == nil
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", cell(k), m[k])
	}
	return strings.Join(parts, ", ")
}
