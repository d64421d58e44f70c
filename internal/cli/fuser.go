package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newFuserCmd) }

func newFuserCmd(env *Env) *cobra.Command {
	var asJSON, substring bool
	var filter collectionFilter
	cmd := &cobra.Command{
		Use:   "fuser PATH",
		Short: "Processes holding PATH open (start_capture kind file_users) as a table",
		Long: `Scan every readable /proc/PID/fd once (start_capture kind file_users, the
same tool an MCP client calls, with read.path = PATH) and list the processes
holding PATH: pid, name, handle count, process_ref. By default only rows
whose path equals the absolute PATH are shown; --substring shows every path
matching all of PATH's terms. PATH (and --owner, an executable name) narrow
the collection itself (start_capture filter), so only matching rows are
collected. --json prints the start_capture envelope.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			want, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if r, err := filepath.EvalSymlinks(want); err == nil {
				want = r
			}
			path := want
			if substring {
				path = args[0]
			}
			return runCapture(cmd, env, asJSON, func(*tool.Registry) (map[string]any, error) {
				filter.paths = []string{path}
				return filter.apply(map[string]any{"kind": "file_users"}), nil
			}, func(w io.Writer, rows []map[string]any) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PID\tNAME\tHANDLES\tPATH\tPROCESS_REF")
				for _, r := range rows {
					if !substring && r["path"] != want {
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", str(r["pid"]), str(r["name"]), str(r["handle_count"]), str(r["path"]), str(r["process_ref"]))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the start_capture envelope")
	filter.register(cmd, false, true)
	cmd.Flags().BoolVar(&substring, "substring", false, "show every path containing all terms of PATH, not only PATH itself")
	return cmd
}
