package cli

import (
	"encoding/json"
	"errors"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/spf13/cobra"
)

func init() { register(newCallCmd) }

func newCallCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "call TOOL [JSON]",
		Short: "Call any tool with JSON arguments and print its envelope",
		Long: `Call any inquest tool exactly as an MCP client would: the same schema
validation, the same envelope. JSON defaults to {}. A result's envelope is
printed on stdout. When the tool fails the exit status is 1 and the error
(code, message, field, details, next call) goes to stderr only; with --json
its error envelope is printed on stdout instead.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := json.RawMessage("{}")
			if len(args) == 2 {
				m, err := jsonObjectArg("the JSON argument", args[1], true)
				if err != nil {
					return failed(err)
				}
				raw, _ = json.Marshal(m)
			}
			rt, err := newRuntime(cmd.Context(), runtimeOptions{Stderr: env.Stderr})
			if err != nil {
				return err
			}
			defer rt.Close()
			return callAndPrint(cmd, env, rt.Registry, args[0], raw)
		},
	}
	addErrorJSONFlag(cmd, false)
	return cmd
}

// callAndPrint runs a tool through the registry and prints its envelope as
// indented JSON; a failure is returned for Run to report (exit 1).
func callAndPrint(cmd *cobra.Command, env *Env, reg *tool.Registry, name string, raw json.RawMessage) error {
	res, err := reg.Call(cmd.Context(), name, raw)
	if errors.Is(err, tool.ErrUnknownTool) {
		return unknownToolError(name)
	}
	if err != nil {
		return failed(err)
	}
	body, isErr := contract.Marshal(res, err)
	var v any
	_ = json.Unmarshal(body, &v)
	if perr := printJSON(env.Stdout, v); perr != nil {
		return perr
	}
	if isErr {
		return exitCode(1)
	}
	return nil
}

// unknownToolError is the INVALID_ARGUMENT for a tool name no toolset
// holds (`inquest call TOOL`, `inquest mcp inspect --tool NAME`): the
// name is echoed (the person typed it) and `inquest mcp inspect` lists
// the names there are.
func unknownToolError(name string) error {
	return contract.Errorf(contract.CodeInvalidArgument, "unknown tool %q; run `inquest mcp inspect` for the list", name).
		WithDetail("tool", name)
}
