// Package cli holds the inquest command line: one file per command, each a
// constructor returning a *cobra.Command. Run is the whole program, so every
// command is testable as a function.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Version is the application version reported by initialize, get_status and
// the IPC handshake. Release builds set it with -ldflags -X.
var Version = "0.1.0-dev"

// Env is what commands share: the standard streams.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Run executes the command line args and returns the process exit code:
// 0 on success, 1 when a tool returned an error envelope or a command
// failed (a command-line mistake included; `setup` exits 2 for its own),
// 130 when interrupted. A failed tool call or argument check (a
// *contract.Error) is reported once here by reportFailure: on standard
// error in text mode, as the envelope on standard output with --json.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	root := newRootCmd(env, args)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if cmd, err := root.ExecuteContextC(ctx); err != nil {
		if ec, ok := err.(exitCode); ok {
			return int(ec)
		}
		if ce := asContractError(err); ce != nil {
			if perr := reportFailure(env, cmd, jsonMode(cmd, args), ce); perr != nil {
				if ec, ok := perr.(exitCode); ok {
					return int(ec)
				}
			}
			return 1
		}
		fmt.Fprintln(stderr, "inquest:", err)
		return 1
	}
	return 0
}

// exitCode is returned by commands that already printed their failure.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// newRootCmd builds the command tree for args: every command, or, when
// args[0] names a command registered with registerNamed, that command
// alone (the others' flags and help are never read by it: TestSoleCommand
// holds its output equal to the full tree's).
func newRootCmd(env *Env, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "inquest",
		Short: "Find out what a computer is doing: processes, performance evidence, binaries",
		Long: "inquest investigates this computer with evidence. Run `inquest mcp` as an MCP server over stdio, or use the subcommands directly.\n\n" +
			"Plain `inquest` on a terminal opens the TUI, an htop-style process monitor\n" +
			"(press ? in it for its keys). When a host already runs (`inquest serve --detach`)\n" +
			"the TUI attaches to it as a view, and quitting the view leaves that host running.\n" +
			"Without a terminal, plain `inquest` prints this help.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
		// `inquest` alone: the TUI on a terminal, help otherwise (tui.go).
		RunE: func(cmd *cobra.Command, _ []string) error { return runRoot(env, cmd) },
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagValueError(err) })
	if len(args) > 0 && !fullTree {
		if c := namedCommands[args[0]]; c != nil {
			root.AddCommand(c(env))
			refuseUnknownSubcommands(root)
			return root
		}
	}
	root.SetVersionTemplate(readBuildVersion().String())
	for _, c := range commands {
		root.AddCommand(c(env))
	}
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands gives every command that only groups others
// (record, log, evidence, bin, ...) a run function: alone it prints its
// help; with an argument that names none of its commands it fails with
// `unknown command "stpo" for "inquest record"` and cobra's
// suggestions, exit status 1, as an unknown top-level command does.
// Without it cobra prints the group's help and exits 0, so a mistyped
// `inquest record stpo` would look like success.
// groupAnnotation marks a command refuseUnknownSubcommands made runnable.
const groupAnnotation = "inquest-group"

func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if !cmd.HasParent() || !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[groupAnnotation] = "true"
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2
		}
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return fmt.Errorf("%s\nRun '%s --help' for its commands", msg, c.CommandPath())
	}
}

// namedCommands are the commands registered with their name, which run
// without building the rest of the tree (a short command such as ps pays
// for one command's flags, not every command's).
var namedCommands = map[string]func(*Env) *cobra.Command{}

// fullTree, set by tests, builds every command for every args.
var fullTree = false

// registerNamed registers command c, whose name (cobra Use) is name, and
// lets `inquest NAME ...` build it alone.
func registerNamed(name string, c func(*Env) *cobra.Command) {
	register(c)
	namedCommands[name] = c
}

// commands lists the constructors of every top-level command; each command
// file adds itself in an init function so files stay independent.
var commands []func(*Env) *cobra.Command

func register(c func(*Env) *cobra.Command) { commands = append(commands, c) }

// flagValueError is the INVALID_ARGUMENT error of a flag the flag parser
// rejects, worded for a person and naming the flag as typed in
// details.field ("--limit", or "-x" for a shorthand): an unknown flag
// (`unknown flag: --bogus`), a flag without its value, or a value that
// does not parse (`--limit "abc" is not an integer`, not the parser's
// strconv.ParseInt text). As a *contract.Error it prints as every other
// failure does: the error envelope on standard output with --json, the
// text on standard error without.
func flagValueError(err error) error {
	var inv *pflag.InvalidValueError
	var req *pflag.ValueRequiredError
	var nx *pflag.NotExistError
	var syn *pflag.InvalidSyntaxError
	switch {
	case errors.As(err, &inv):
		typ := map[string]string{"int": "an integer", "int64": "an integer", "uint": "a non-negative integer", "uint64": "a non-negative integer", "bool": "true or false", "duration": "a duration (90s, 5m, 1h)", "float64": "a number", "stringSlice": "a list"}[inv.GetFlag().Value.Type()]
		if typ == "" {
			typ = "a " + inv.GetFlag().Value.Type()
		}
		return contract.Errorf(contract.CodeInvalidArgument, "--%s %q is not %s", inv.GetFlag().Name, inv.GetValue(), typ).WithDetail("field", "--"+inv.GetFlag().Name)
	case errors.As(err, &req):
		return contract.Errorf(contract.CodeInvalidArgument, "%s", req.Error()).WithDetail("field", typedFlag(req.GetSpecifiedName(), req.GetSpecifiedShortnames()))
	case errors.As(err, &nx):
		return contract.Errorf(contract.CodeInvalidArgument, "%s (--help lists the flags)", nx.Error()).WithDetail("field", typedFlag(nx.GetSpecifiedName(), nx.GetSpecifiedShortnames()))
	case errors.As(err, &syn):
		return contract.Errorf(contract.CodeInvalidArgument, "%s", syn.Error()).WithDetail("field", syn.GetSpecifiedFlag())
	}
	return contract.Errorf(contract.CodeInvalidArgument, "%s", err.Error())
}

// typedFlag is the flag as the person typed it: "--name", or "-x" when it
// was given in a group of shorthands (specified non-empty; name is then
// the one letter).
func typedFlag(name, shorthands string) string {
	if shorthands != "" {
		return "-" + name
	}
	return "--" + name
}
