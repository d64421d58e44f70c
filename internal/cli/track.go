package cli

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/inquest-dev/inquest/internal/contract"
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
func runMutation(cmd *cobra.Command, env *Env, m *mutationFlags, toolName string, build func(reg *tool.Registry) (map[string]any, error)) error {
	rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	args, err := build(rt.Registry)
	if err != nil {
		return printFailure(env, err)
	}
	if err := m.fill(cmd, rt.Registry, args); err != nil {
		return printFailure(env, err)
	}
	raw, _ := json.Marshal(args)
	if m.asJSON {
		return callAndPrint(cmd, env, rt.Registry, toolName, raw)
	}
	res, err := rt.Registry.Call(cmd.Context(), toolName, raw)
	if err != nil {
		return printFailure(env, err)
	}
	var d struct {
		ID      string         `json:"operation_id"`
		State   string         `json:"state"`
		Outcome map[string]any `json:"outcome"`
		Confirm map[string]any `json:"confirmation"`
	}
	remarshal(res.Data, &d)
	fmt.Fprintf(env.Stdout, "operation %s: %s\n", d.ID, d.State)
	if d.State == "pending_confirmation" {
		b, _ := json.MarshalIndent(d.Confirm["action"], "", "  ")
		fmt.Fprintf(env.Stdout, "awaiting local confirmation of:\n%s\nconfirm with: inquest confirm %s   (or --deny)\n", b, d.ID)
	}
	for _, k := range []string{"names", "revision", "active_profile_id"} {
		if v, ok := d.Outcome[k]; ok {
			fmt.Fprintf(env.Stdout, "%s: %v\n", k, v)
		}
	}
	return nil
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
	res, err := rt.Registry.Call(cmd.Context(), name, json.RawMessage("{}"))
	if err != nil {
		return printFailure(env, err)
	}
	return render(res)
}

func newTrackCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "track",
		Short: "Show or change the Tracking List (get_tracking, update_tracking)",
		Long: `The Tracking List holds case-insensitive process names. Tracked lifetimes and
their observed descendants keep 7,200 samples of history instead of 120.
Removing a name whose lifetimes hold more than 120 samples needs a local
confirmation (inquest confirm).`,
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Tracked names, revision and matching lifetimes (get_tracking)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return showTool(cmd, env, asJSON, "get_tracking", func(res *contract.Result) error {
				var d struct {
					Revision string   `json:"revision"`
					Names    []string `json:"names"`
					Matching []struct {
						PID       int    `json:"pid"`
						Name      string `json:"name"`
						Lifecycle string `json:"lifecycle"`
						By        string `json:"tracked_by"`
						History   struct {
							Samples  int `json:"samples"`
							Capacity int `json:"capacity_samples"`
						} `json:"history"`
					} `json:"matching"`
				}
				if err := remarshal(res.Data, &d); err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "revision %s\nnames: %s\n", d.Revision, strings.Join(d.Names, ", "))
				tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PID\tNAME\tLIFECYCLE\tBY\tSAMPLES\tCAPACITY")
				for _, m := range d.Matching {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\n", m.PID, m.Name, m.Lifecycle, m.By, m.History.Samples, m.History.Capacity)
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
		Long:  "Give the name, or --ref PROCESS_REF / --pid PID to use a live process's captured name.",
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
