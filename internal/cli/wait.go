package cli

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newWaitCmd) }

func newWaitCmd(env *Env) *cobra.Command {
	var timeout time.Duration
	var ref string
	var pid int
	var system bool
	cmd := &cobra.Command{
		Use:   "wait present NAME | exit (--pid PID | --ref REF) | metric METRIC OP THRESHOLD [--pid PID | --ref REF | --system]",
		Short: "Wait for a process to appear, exit, or a metric threshold (wait_condition)",
		Long: `Wait up to --timeout (1ms..60s) for a condition and print the evidence
envelope: a process named NAME in a sample newer than the request (present),
a verified lifetime exiting (exit; a held pidfd on Linux), or METRIC OP
THRESHOLD with OP one of > >= < <= on a fresh sample (metric). A timeout
is the TIMEOUT error with the last observation (details) and exit 1; like
every failure it goes to stderr only, or with --json as the error envelope
on stdout.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < time.Millisecond || timeout > time.Minute {
				return badFlag("--timeout", "--timeout must be 1ms..60s")
			}
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
			if err != nil {
				return err
			}
			defer rt.Close()
			a := map[string]any{"timeout_ms": timeout.Milliseconds(), "wait_ms": 10000}
			target := func() error {
				switch {
				case ref != "":
					a["process_ref"] = ref
				case pid > 0:
					// The tool takes the pid: the bridge resolves it as for
					// every MCP client (a process newer than the latest
					// sample is waited for, a zombie or gone pid is
					// PROCESS_EXITED at /pid).
					a["pid"] = pid
				}
				return nil
			}
			switch {
			case args[0] == "present" && len(args) == 2:
				a["condition"], a["process_name"] = "process_present", args[1]
			case args[0] == "exit" && len(args) == 1:
				a["condition"] = "process_exit"
				if err := target(); err != nil {
					return failed(err)
				}
			case args[0] == "metric" && len(args) == 4:
				a["condition"], a["metric_id"], a["comparison"] = "metric_threshold", args[1], args[2]
				if _, err := strconv.ParseFloat(args[3], 64); err != nil {
					return badFlag("THRESHOLD", "THRESHOLD %q is not a number", args[3])
				}
				a["threshold"] = args[3]
				if system {
					a["system"] = true
				} else if err := target(); err != nil {
					return failed(err)
				}
			default:
				return contract.Errorf(contract.CodeInvalidArgument, "usage: %s", cmd.UseLine()).WithDetail("arguments", args)
			}
			// The bridge waits in 10 s budgets; follow the continuation
			// until the wait ends (it cannot outlive timeout_ms).
			b, _ := json.Marshal(a)
			if _, byPID := a["pid"]; byPID && a["condition"] == "process_exit" {
				// exit also accepts a lifetime that already ended (a zombie,
				// or one only retained), which no live pid resolves to:
				// the host answers its process_ref with exit evidence at
				// once (a zombie) or PROCESS_EXITED.
				res, err := rt.Registry.Call(cmd.Context(), "wait_condition", b)
				if e := contract.AsError(err); e == nil || e.Code != contract.CodeProcessExited || e.Field != "/pid" {
					if err != nil || res.NextAction == nil || res.NextAction.Tool != "wait_condition" {
						return printEnvelope(env, res, err)
					}
					next := res.NextAction.Arguments
					next["wait_ms"] = 10000
					b, _ = json.Marshal(next)
				} else if r, ferr := endedRefForPID(cmd, rt.Registry, pid); ferr == nil {
					delete(a, "pid")
					a["process_ref"] = r
					b, _ = json.Marshal(a)
				} else {
					return printEnvelope(env, nil, err)
				}
			}
			for {
				res, err := rt.Registry.Call(cmd.Context(), "wait_condition", b)
				if err != nil || res.NextAction == nil || res.NextAction.Tool != "wait_condition" {
					return printEnvelope(env, res, err)
				}
				next := res.NextAction.Arguments
				next["wait_ms"] = 10000
				b, _ = json.Marshal(next)
			}
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait (timeout_ms), at most 60s")
	cmd.Flags().StringVar(&ref, "ref", "", "process_ref of the target")
	cmd.Flags().IntVar(&pid, "pid", 0, "live PID of the target (resolved to a process_ref)")
	cmd.Flags().BoolVar(&system, "system", false, "the system is the metric target")
	addErrorJSONFlag(cmd, false)
	return cmd
}

// endedRefForPID is refForPIDAny for a pid that no live lifetime has: a
// zombie that started after the latest sample is in the next one, so
// while /proc/PID exists it is waited for (about two sampling intervals).
func endedRefForPID(cmd *cobra.Command, reg *tool.Registry, pid int) (string, error) {
	deadline := time.Now().Add(2500 * time.Millisecond)
	for {
		r, err := refForPIDAny(cmd, reg, pid)
		if contract.CodeOf(err) != contract.CodeReferenceInvalid || !procExists(pid) || time.Now().After(deadline) {
			return r, err
		}
		select {
		case <-cmd.Context().Done():
			return "", contract.AsError(cmd.Context().Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
