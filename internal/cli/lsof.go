package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newLsofCmd) }

func newLsofCmd(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "lsof PID",
		Short: "Open files of a process (start_capture kind open_files) as a table",
		Long: `List the open file descriptors of process PID: fd, kind, size, position,
flags and path, through the same start_capture/read_capture tools an MCP client
uses (the PID is resolved to a process_ref with list_processes). --json prints
the start_capture envelope.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := strconv.Atoi(args[0])
			if err != nil || pid < 1 {
				return fmt.Errorf("PID must be a positive integer")
			}
			return runCapture(cmd, env, asJSON, func(reg *tool.Registry) (map[string]any, error) {
				ref, err := refForPID(cmd, reg, pid)
				if err != nil {
					return nil, err
				}
				return map[string]any{"kind": "open_files", "process_ref": ref}, nil
			}, func(w io.Writer, rows []map[string]any) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "FD\tKIND\tSIZE\tPOS\tFLAGS\tPATH")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", str(r["fd"]), str(r["kind"]), str(r["size_bytes"]), str(r["position"]), str(r["flags"]), str(r["path"]))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the start_capture envelope")
	return cmd
}

// str renders a row value for a table ("-" for null).
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// refForPID resolves pid to a process_ref through list_processes (the
// tools never accept a bare PID for targeted collection).
func refForPID(cmd *cobra.Command, reg *tool.Registry, pid int) (string, error) {
	b, _ := json.Marshal(map[string]any{"filter": map[string]any{"pid": pid}})
	res, err := reg.Call(cmd.Context(), "list_processes", b)
	if err != nil {
		return "", err
	}
	var page struct {
		Rows []struct {
			Ref string `json:"process_ref"`
		} `json:"rows"`
	}
	if err := remarshal(res.Data, &page); err != nil || len(page.Rows) == 0 {
		return "", contract.Errorf(contract.CodeProcessExited, "no live process has PID %d in the latest snapshot", pid)
	}
	return page.Rows[0].Ref, nil
}

// runCapture starts a capture through start_capture (waiting for it and
// reading the first page), follows next_action through every page and
// renders all rows. With asJSON it prints the start_capture envelope as
// an MCP client would see it instead.
func runCapture(cmd *cobra.Command, env *Env, asJSON bool, argsFn func(*tool.Registry) (map[string]any, error),
	render func(io.Writer, []map[string]any)) error {
	rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	args, err := argsFn(rt.Registry)
	if err != nil {
		return printFailure(env, err)
	}
	raw, _ := json.Marshal(args)
	if asJSON {
		return callAndPrint(cmd, env, rt.Registry, "start_capture", raw)
	}
	rows, warnings, err := collectCapture(cmd, rt.Registry, args)
	if err != nil {
		return printFailure(env, err)
	}
	for _, w := range warnings {
		fmt.Fprintln(env.Stderr, "warning:", w)
	}
	render(env.Stdout, rows)
	return nil
}

// collectCapture runs start_capture with args and returns every row of
// the result, following get_job and read_capture continuations.
func collectCapture(cmd *cobra.Command, reg *tool.Registry, args map[string]any) ([]map[string]any, []string, error) {
	raw, _ := json.Marshal(args)
	res, err := reg.Call(cmd.Context(), "start_capture", raw)
	if err != nil {
		return nil, nil, err
	}
	var rows []map[string]any
	var warnings []string
	for {
		var d struct {
			State  string `json:"state"`
			Result *struct {
				Error *contract.Error `json:"error"`
			} `json:"result"`
			Page *struct {
				Warnings []string `json:"warnings"`
				Data     struct {
					Rows []map[string]any `json:"rows"`
				} `json:"data"`
				Error *contract.Error `json:"error"`
			} `json:"result_page"`
			Rows []map[string]any `json:"rows"`
		}
		if err := remarshal(res.Data, &d); err != nil {
			return nil, nil, err
		}
		if d.State == "failed" && d.Result != nil && d.Result.Error != nil {
			return nil, nil, d.Result.Error
		}
		if d.Page != nil {
			if d.Page.Error != nil {
				return nil, nil, d.Page.Error
			}
			rows = append(rows, d.Page.Data.Rows...)
			warnings = append(warnings, d.Page.Warnings...)
		} else if d.State == "" {
			rows = append(rows, d.Rows...) // a read_capture page
		}
		if res.NextAction == nil {
			return rows, warnings, nil
		}
		b, _ := json.Marshal(res.NextAction.Arguments)
		if res, err = reg.Call(cmd.Context(), res.NextAction.Tool, b); err != nil {
			return nil, nil, err
		}
	}
}
