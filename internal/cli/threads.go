package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
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
		Long: `List the threads of process PID as ps -L -o tid,comm,state,priority,ni,psr,time
spells them: TID, COMMAND (the thread's name), S (state letter: R running, S
sleeping, D disk sleep, T stopped, Z zombie, I idle), PRI (the kernel's
priority, ps -o priority), NI (nice), PSR (the CPU it last ran on) and TIME
(user + system CPU time, [DD-]HH:MM:SS), then USR and SYS (user and system
CPU seconds, to the clock tick) and VCSW/NVCSW (voluntary and involuntary
context switches). It uses start_capture kind threads (the PID is resolved to
a process_ref with list_processes). --json prints the start_capture envelope.`,
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
			}, func(w io.Writer, rows []map[string]any) { renderThreads(w, rows) })
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the start_capture envelope")
	return cmd
}

// psStateLetters maps the threads capture's state names to the letter ps
// prints in its S column (/proc/PID/task/TID/stat field 3).
var psStateLetters = map[string]string{"running": "R", "sleeping": "S", "disk_sleep": "D", "zombie": "Z", "stopped": "T",
	"tracing_stop": "t", "dead": "X", "idle": "I", "parked": "P", "waking": "W", "wakekill": "K"}

// psState is a state name as ps's letter ("-" when unknown; a name
// without a letter is shown escaped as it is).
func psState(v any) string {
	s, ok := v.(string)
	if !ok {
		return "-"
	}
	if l, ok := psStateLetters[s]; ok {
		return l
	}
	return cell(s)
}

// threadTime is a thread's user + system CPU seconds as ps's TIME
// column spells them ([DD-]HH:MM:SS, whole seconds; "-" when unknown).
// The seconds are clock ticks (1/100 s) divided by the tick rate: they
// are summed as ticks, so a sum never lands a hair below a whole second.
func threadTime(user, sys any) string {
	u, ok1 := user.(float64)
	s, ok2 := sys.(float64)
	if !ok1 || !ok2 {
		return "-"
	}
	ticks := math.Round(u*100) + math.Round(s*100)
	return psTime(ticks * 1e7)
}

// cpuSeconds is seconds with the clock tick's two decimals and the unit
// ("0.06s"; "-" when unknown).
func cpuSeconds(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + "s"
}

// renderThreads prints threads rows as ps -L spells the same facts (see
// the threads command), then the CPU split and context switches.
func renderThreads(w io.Writer, rows []map[string]any) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TID\tCOMMAND\tS\tPRI\tNI\tPSR\tTIME\tUSR\tSYS\tVCSW\tNVCSW")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", str(r["tid"]), textOf(r, "name"), psState(r["state"]), str(r["priority"]), str(r["nice"]),
			str(r["last_cpu"]), threadTime(r["user_cpu_seconds"], r["system_cpu_seconds"]), cpuSeconds(r["user_cpu_seconds"]), cpuSeconds(r["system_cpu_seconds"]),
			str(r["voluntary_context_switches"]), str(r["nonvoluntary_context_switches"]))
	}
	tw.Flush()
}
