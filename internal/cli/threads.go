package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newThreadsCmd) }

func newThreadsCmd(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "threads PID",
		Short: "Threads of a process (start_capture kind threads) as a table",
		Long: `List the threads of process PID: tid, name, state, priority, nice, user and
system CPU seconds, last CPU and context switches, through start_capture kind
threads (the PID is resolved to a process_ref with list_processes). --json
prints the start_capture envelope.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := parsePID(args[0])
			if err != nil {
				return err
			}
			return runCapture(cmd, env, asJSON, func(reg *tool.Registry) (map[string]any, error) {
				ref, err := refForPID(cmd, reg, pid)
				if err != nil {
					return nil, err
				}
				return map[string]any{"kind": "threads", "process_ref": ref}, nil
			}, func(w io.Writer, rows []map[string]any) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TID\tNAME\tSTATE\tPRI\tNICE\tUSER_S\tSYS_S\tCPU\tVCSW\tNVCSW")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", str(r["tid"]), textOf(r, "name"), str(r["state"]), str(r["priority"]), str(r["nice"]),
						str(r["user_cpu_seconds"]), str(r["system_cpu_seconds"]), str(r["last_cpu"]), str(r["voluntary_context_switches"]), str(r["nonvoluntary_context_switches"]))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the start_capture envelope")
	return cmd
}
