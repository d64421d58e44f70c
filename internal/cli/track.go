package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ledger"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newTrackCmd) }

// newOperationID returns a fresh operation_id for a CLI mutation ("cli-"
// and 16 hex digits); --operation-id supplies one to retry exactly.
func newOperationID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "cli-" + hex.EncodeToString(b)
}

// currentRevision reads the investigation revision with get_tracking, for
// commands run without --expected-revision (a person acting on the state
// as it is now).
func currentRevision(cmd *cobra.Command, reg *tool.Registry) (string, error) {
	res, err := reg.Call(cmd.Context(), "get_tracking", json.RawMessage("{}"))
	if err != nil {
		return "", err
	}
	var d struct {
		Revision string `json:"revision"`
	}
	if err := remarshal(res.Data, &d); err != nil {
		return "", err
	}
	return d.Revision, nil
}

// mutationFlags are the operation fields every mutating command takes.
type mutationFlags struct {
	opID, revision string
	asJSON         bool
}

func (m *mutationFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&m.opID, "operation-id", "", "operation_id (default: a new random id; reuse one to retry without repeating the effect)")
	cmd.Flags().StringVar(&m.revision, "expected-revision", "", "expected_revision (default: the current revision from get_tracking)")
	cmd.Flags().BoolVar(&m.asJSON, "json", false, "print the envelope")
}

// fill sets operation_id and expected_revision in args.
func (m *mutationFlags) fill(cmd *cobra.Command, reg *tool.Registry, args map[string]any) error {
	if m.opID == "" {
		m.opID = newOperationID()
	}
	args["operation_id"] = m.opID
	if m.revision == "" {
		rev, err := currentRevision(cmd, reg)
		if err != nil {
			return err
		}
		m.revision = rev
	}
	args["expected_revision"] = m.revision
	return nil
}

// runMutation calls a mutation tool and prints either the envelope
// (--json) or one line with the operation's state.
//
// An operation left in pending_confirmation (history
// loss, profile deletion; docs/tui.md, "Confirmations") is decided by a local user, and the host cancels
// it when the requesting connection closes. So the command keeps its host
// connection open, says how to decide (`inquest confirm ID` in another
// terminal; on a terminal it also asks y/N, and a line piped on standard
// input is taken as the answer, sent through a local decision connection,
// since the requesting connection may not decide its own request), polls get_operation until the operation ends or its
// 60 s deadline passes, prints the final state and exits 1 unless the
// action happened. With --json it prints the final operation envelope.
func runMutation(cmd *cobra.Command, env *Env, m *mutationFlags, toolName string, build func(reg *tool.Registry) (map[string]any, error)) error {
	rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	args, err := build(rt.Registry)
	if err == nil {
		err = m.fill(cmd, rt.Registry, args)
	}
	if err != nil {
		return failed(err)
	}
	raw, _ := json.Marshal(args)
	res, err := rt.Registry.Call(cmd.Context(), toolName, raw)
	if err == nil && operationState(res) == "pending_confirmation" {
		info := env.Stdout
		if m.asJSON {
			info = env.Stderr
		}
		res, err = awaitConfirmation(cmd.Context(), env, info, rt.Registry, res, callConfirmHost)
	}
	if m.asJSON {
		if perr := printEnvelope(env, res, err); perr != nil || err != nil {
			return perr
		}
		if operationState(res) != "succeeded" {
			return exitCode(1)
		}
		return nil
	}
	if err != nil {
		return failed(err)
	}
	var d struct {
		ID      string         `json:"operation_id"`
		State   string         `json:"state"`
		Outcome map[string]any `json:"outcome"`
		Error   map[string]any `json:"error"`
	}
	remarshal(res.Data, &d)
	fmt.Fprintf(env.Stdout, "operation %s: %s", cell(d.ID), cell(d.State))
	if d.Error != nil {
		fmt.Fprintf(env.Stdout, " (%s: %s)", cell(fmt.Sprint(d.Error["code"])), cell(fmt.Sprint(d.Error["message"])))
	}
	fmt.Fprintln(env.Stdout)
	for _, k := range []string{"names", "revision", "active_profile_id"} {
		if v, ok := d.Outcome[k]; ok {
			fmt.Fprintf(env.Stdout, "%s: %s\n", k, cell(fmt.Sprint(v)))
		}
	}
	if d.State != "succeeded" {
		return exitCode(1)
	}
	return nil
}

// operationState is data.state of an operation envelope ("" when absent).
func operationState(res *contract.Result) string {
	var d struct {
		State string `json:"state"`
	}
	if res == nil || remarshal(res.Data, &d) != nil {
		return ""
	}
	return d.State
}

// confirmHelp documents how a waiting mutation takes its decision.
const confirmHelp = `An action awaiting local confirmation keeps the command running until it is
decided or expires (60 s): confirm it from another terminal with
"inquest confirm OPERATION_ID" (or --deny). On a terminal the command also
asks "apply this action? [y/N]". When standard input is not a terminal, its
first line is the answer: "y" or "yes" confirms, any other line denies
(echo y | inquest profile delete NAME); empty input (EOF, /dev/null) leaves
the decision to inquest confirm. The command exits 0 only if the action
happened.`

// confirmPoll is how often a CLI mutation awaiting confirmation polls
// get_operation.
const confirmPoll = 250 * time.Millisecond

// awaitConfirmation keeps the requesting connection (reg's backend) open
// while the operation in res awaits a local decision and returns the final
// get_operation envelope, or the last one seen when the host stopped
// answering. decide reaches the running host on a second connection for
// the interactive prompt (nil: no prompt).
func awaitConfirmation(ctx context.Context, env *Env, w io.Writer, reg *tool.Registry, res *contract.Result, decide hostCaller) (*contract.Result, error) {
	var d struct {
		ID      string         `json:"operation_id"`
		Confirm map[string]any `json:"confirmation"`
	}
	remarshal(res.Data, &d)
	b, _ := json.MarshalIndent(d.Confirm["action"], "", "  ")
	fmt.Fprintf(w, "operation %s: pending_confirmation\nawaiting local confirmation of:\n%s\n", cell(d.ID), cellLines(string(b)))
	if os.Getenv(inProcessEnv) == "1" {
		fmt.Fprintf(w, "this command runs its own in-process host (%s=1), which no other command can reach, so nothing can confirm this; run it without %s against the shared host\n", inProcessEnv, inProcessEnv)
		return res, nil
	}
	deadline := time.Now().Add(ledger.ConfirmTimeout)
	if exp, ok := d.Confirm["expires_at"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, exp); err == nil {
			deadline = t
		}
	}
	fmt.Fprintf(w, "confirm it from another terminal with: inquest confirm %s   (or --deny)\nwaiting until %s (this command must keep running: the host cancels the request when it exits)\n", cell(d.ID), deadline.Format(time.RFC3339))
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(3*time.Second))
	defer cancel()
	// The answer on standard input: a y/N prompt on a terminal; piped
	// input (not a terminal) is read as the answer too, its first line
	// (y or yes confirms, anything else denies), while empty input (EOF,
	// /dev/null) leaves the decision to `inquest confirm`.
	var outMu sync.Mutex
	finished := false
	say := func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		if !finished {
			fmt.Fprintf(w, format, a...)
		}
	}
	defer func() {
		outMu.Lock()
		finished = true
		outMu.Unlock()
	}()
	if decide != nil && env.Stdin != nil {
		tty := isTerminal(env.Stdin)
		if tty {
			say("or confirm here: apply this action? [y/N] ")
		}
		go func() {
			line, err := bufio.NewReader(env.Stdin).ReadString('\n')
			if err != nil && strings.TrimSpace(line) == "" || ctx.Err() != nil {
				return
			}
			decision := "deny"
			if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
				decision = "confirm"
			}
			if !tty {
				say("answer read from standard input: %s\n", decision)
			}
			if _, err := decide(ctx, host.ConfirmMethod, map[string]any{"operation_id": d.ID, "decision": decision}); err != nil {
				say("the decision was not accepted: %s\n", cell(err.Error()))
			}
		}()
	}
	args, _ := json.Marshal(map[string]any{"operation_id": d.ID})
	last := res
	for {
		select {
		case <-ctx.Done():
			return last, nil
		case <-time.After(confirmPoll):
		}
		r, err := reg.Call(ctx, "get_operation", args)
		if err != nil {
			if ctx.Err() != nil {
				return last, nil
			}
			return r, err
		}
		last = r
		if st := operationState(r); st != "pending_confirmation" && st != "pending" && st != "running" {
			return r, nil
		}
	}
}

// isTerminal reports whether r is a character device (an interactive
// terminal), so a prompt can be answered.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// showTool calls a getter with {} and renders its result, or prints the
// envelope with --json.
func showTool(cmd *cobra.Command, env *Env, asJSON bool, name string, render func(*contract.Result) error) error {
	rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	if asJSON {
		return callAndPrint(cmd, env, rt.Registry, name, json.RawMessage("{}"))
	}
	// render sees every page: a paged answer (get_tracking) is followed
	// through next_action to its end.
	args := json.RawMessage("{}")
	for {
		res, err := rt.Registry.Call(cmd.Context(), name, args)
		if err != nil {
			return failed(err)
		}
		if err := render(res); err != nil {
			return err
		}
		if res.NextAction == nil || res.NextAction.Tool != name {
			return nil
		}
		args, _ = json.Marshal(res.NextAction.Arguments)
	}
}

func newTrackCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "track",
		Short: "Show or change the Tracking List (get_tracking, update_tracking)",
		Long: `The Tracking List holds case-insensitive process names. Tracked lifetimes and
their observed descendants keep 7,200 samples of history instead of 120.
Removing a name whose lifetimes hold more than 120 samples needs a local
confirmation (inquest confirm).

` + confirmHelp,
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Tracked names, revision and matching lifetimes (get_tracking)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			type matchRow struct {
				PID       int    `json:"pid"`
				Name      string `json:"name"`
				Lifecycle string `json:"lifecycle"`
				By        string `json:"tracked_by"`
				History   struct {
					Samples  int `json:"samples"`
					Capacity int `json:"capacity_samples"`
				} `json:"history"`
			}
			var all []matchRow
			return showTool(cmd, env, asJSON, "get_tracking", func(res *contract.Result) error {
				var d struct {
					Revision string     `json:"revision"`
					Names    []string   `json:"names"`
					Matching []matchRow `json:"matching"`
				}
				if err := remarshal(res.Data, &d); err != nil {
					return err
				}
				all = append(all, d.Matching...)
				if res.NextAction != nil && res.NextAction.Tool == "get_tracking" {
					return nil // the table follows the last page
				}
				names := make([]string, len(d.Names))
				for i, n := range d.Names {
					names[i] = cell(n)
				}
				fmt.Fprintf(env.Stdout, "revision %s\nnames: %s\n", cell(d.Revision), strings.Join(names, ", "))
				tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PID\tNAME\tLIFECYCLE\tBY\tSAMPLES\tCAPACITY")
				for _, m := range all {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\n", m.PID, cell(m.Name), cell(m.Lifecycle), cell(m.By), m.History.Samples, m.History.Capacity)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the get_tracking envelope")
	cmd.AddCommand(list, trackChange(env, "add"), trackChange(env, "remove"))
	return cmd
}

func trackChange(env *Env, action string) *cobra.Command {
	var m mutationFlags
	var ref string
	var pid int
	c := &cobra.Command{
		Use:   action + " [NAME]",
		Short: strings.ToUpper(action[:1]) + action[1:] + " one name (update_tracking action " + action + ")",
		Long:  "Give the name, or --ref PROCESS_REF / --pid PID to use a live process's captured name.\n\n" + confirmHelp,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMutation(cmd, env, &m, "update_tracking", func(reg *tool.Registry) (map[string]any, error) {
				a := map[string]any{"action": action}
				switch {
				case len(args) == 1 && ref == "" && pid == 0:
					a["process_name"] = args[0]
				case len(args) == 0 && ref != "" && pid == 0:
					a["process_ref"] = ref
				case len(args) == 0 && ref == "" && pid > 0:
					r, err := refForPID(cmd, reg, pid)
					if err != nil {
						return nil, err
					}
					a["process_ref"] = r
				default:
					return nil, contract.Errorf(contract.CodeInvalidArgument, "give exactly one of NAME, --ref or --pid")
				}
				return a, nil
			})
		},
	}
	c.Flags().StringVar(&ref, "ref", "", "process_ref whose captured name is used")
	c.Flags().IntVar(&pid, "pid", 0, "live PID whose name is used (resolved to a process_ref)")
	m.add(c)
	return c
}
