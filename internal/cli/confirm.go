package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/spf13/cobra"
)

func init() { register(newConfirmCmd) }

// hostCaller runs one host method; the command uses callConfirmHost (the user's
// running host over the local endpoint), tests pass an in-process host.
type hostCaller func(ctx context.Context, method string, args any) (*contract.Result, error)

func newConfirmCmd(env *Env) *cobra.Command {
	var deny, asJSON bool
	cmd := &cobra.Command{
		Use:   "confirm [OPERATION_ID] [--deny]",
		Short: "Decide an action awaiting local confirmation (the headless host's overlay)",
		Long: `Actions that would discard history or delete a profile wait for a local
user's decision (pending_confirmation, 60 s from submission, then TIMEOUT).
Without OPERATION_ID, list what awaits a decision; with it, confirm the
action (or --deny it) on the running host. This is a host method, not an MCP
tool: MCP clients cannot confirm their own requests.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConfirm(cmd.Context(), env, callConfirmHost, args, deny, asJSON)
		},
	}
	cmd.Flags().BoolVar(&deny, "deny", false, "refuse the action (CANCELLED)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the envelope")
	return cmd
}

func runConfirm(ctx context.Context, env *Env, call hostCaller, args []string, deny, asJSON bool) error {
	var res *contract.Result
	var err error
	if len(args) == 0 {
		res, err = call(ctx, host.PendingConfirmationsMethod, nil)
	} else {
		decision := "confirm"
		if deny {
			decision = "deny"
		}
		res, err = call(ctx, host.ConfirmMethod, map[string]any{"operation_id": args[0], "decision": decision})
	}
	if err != nil || asJSON {
		return printEnvelope(env, res, err)
	}
	if len(args) == 0 {
		return printPending(env.Stdout, res)
	}
	var d struct {
		State string         `json:"state"`
		Error map[string]any `json:"error"`
	}
	remarshal(res.Data, &d)
	fmt.Fprintf(env.Stdout, "operation %s: %s", cell(args[0]), cell(d.State))
	if d.Error != nil {
		fmt.Fprintf(env.Stdout, " (%s)", cell(fmt.Sprint(d.Error["code"])))
	}
	fmt.Fprintln(env.Stdout)
	if d.State != "succeeded" && !deny {
		return exitCode(1)
	}
	return nil
}

// cellLines passes each line of a multi-line block (indented JSON) through
// cell, keeping the line breaks: encoding/json leaves DEL and C1 controls
// (such as U+009B, CSI) unescaped in strings.
func cellLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = cell(l)
	}
	return strings.Join(lines, "\n")
}

func printPending(w io.Writer, res *contract.Result) error {
	var d struct {
		Ops []struct {
			ID      string         `json:"operation_id"`
			Tool    string         `json:"tool"`
			Expires string         `json:"-"`
			Confirm map[string]any `json:"confirmation"`
		} `json:"operations"`
	}
	if err := remarshal(res.Data, &d); err != nil {
		return err
	}
	if len(d.Ops) == 0 {
		fmt.Fprintln(w, "nothing awaits confirmation")
		return nil
	}
	for _, op := range d.Ops {
		b, _ := json.MarshalIndent(op.Confirm["action"], "  ", "  ")
		fmt.Fprintf(w, "%s (%s), expires %s:\n  %s\n", cell(op.ID), cell(op.Tool), cell(fmt.Sprint(op.Confirm["expires_at"])), cellLines(string(b)))
	}
	fmt.Fprintln(w, "decide with: inquest confirm OPERATION_ID [--deny]")
	return nil
}
