package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/spf13/cobra"
)

// How every command reports a failed tool call or argument check (a
// *contract.Error), in one place:
//
//   - text mode (no --json): on standard error only, so `inquest CMD | jq`
//     or `inquest CMD > out` gets nothing on standard output. The first
//     line is "inquest: CODE: message", then indented lines for the
//     argument it names (field), the accepted value (expected), the
//     code's details and the exact next call (next_action).
//   - --json: the error envelope {"error": {...}} on standard output,
//     exactly as the tool answers over MCP (as `kubectl -o json` and `gh
//     --json` users expect: standard output is always one JSON document).
//
// Either way the exit status is 1. A command returns the error (Run
// reports it) or, when it must go on after one failure (`bin inspect
// FILE...`), calls reportFailure itself.

// failed returns err as the *contract.Error Run reports (nil for nil): an
// untyped error becomes INTERNAL_ERROR, as contract.AsError says.
func failed(err error) error {
	if err == nil {
		return nil
	}
	return contract.AsError(err)
}

// reportFailure prints err as the mode says (asJSON: the envelope on
// standard output; otherwise the text on standard error) and returns exit
// status 1.
//
// In text mode the error is told as the person at cmd's command line
// reads it (cliError: the flag or argument they typed, not the tool's
// argument pointer); cmd may be nil (the pointer is then shown as is).
func reportFailure(env *Env, cmd *cobra.Command, asJSON bool, err error) error {
	e := contract.AsError(err)
	if asJSON {
		body, _ := contract.Marshal(nil, e)
		if perr := printBody(env.Stdout, body); perr != nil {
			return perr
		}
		return exitCode(1)
	}
	var b strings.Builder
	msg, lines := cliError(cmd, e)
	fmt.Fprintf(&b, "inquest: %s: %s\n", e.Code, cell(msg))
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprint(env.Stderr, b.String())
	return exitCode(1)
}

// jsonMode reports whether the command that ran prints JSON: its --json
// flag is set. args are the whole command line, read when the flag was
// not parsed (a flag error before it): --json or --json=true before "--".
func jsonMode(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Changed {
			v, _ := strconv.ParseBool(f.Value.String())
			return v
		}
		if cmd.Flags().Lookup("json") == nil {
			return false
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" {
			return true
		}
		if v, ok := strings.CutPrefix(a, "--json="); ok {
			b, _ := strconv.ParseBool(v)
			return b
		}
	}
	return false
}

// asContractError returns the *contract.Error in err's chain, or nil.
func asContractError(err error) *contract.Error {
	var ce *contract.Error
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}

// addErrorJSONFlag adds --json to a command whose output is a result
// envelope whatever the flag (call, wait, analyze, evidence): with it a
// failure's error envelope is printed on standard output too, so standard
// output is one JSON document whatever the outcome.
func addErrorJSONFlag(cmd *cobra.Command, persistent bool) {
	const usage = "on failure print the error envelope on stdout (otherwise the error goes to stderr only)"
	if persistent {
		cmd.PersistentFlags().Bool("json", false, usage)
		return
	}
	cmd.Flags().Bool("json", false, usage)
}
