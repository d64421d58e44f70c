// Package cli holds the inquest command line: one file per command, each a
// constructor returning a *cobra.Command. Run is the whole program, so every
// command is testable as a function.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
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
	ctx = context.WithValue(ctx, cmdLineKey{}, args)
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
			typeArgErrors(root)
			return root
		}
	}
	root.SetVersionTemplate(readBuildVersion().String())
	for _, c := range commands {
		root.AddCommand(c(env))
	}
	refuseUnknownSubcommands(root)
	typeArgErrors(root)
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
			msg += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
		return contract.Errorf(contract.CodeInvalidArgument, "%s; run '%s --help' for its commands", msg, c.CommandPath()).WithDetail("field", "COMMAND")
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

// badFlag is the INVALID_ARGUMENT error of a value the person gave flag
// on the command line, flag as typed ("--sort", "-o"; flagAsTyped tells
// which spelling) or a positional placeholder ("PID"), named in
// details.field as flagValueError names a flag the parser rejects. Every
// command's own check of a flag or argument value fails with it, so the
// failure prints as every other one: `inquest: INVALID_ARGUMENT: ...` and
// a field line on standard error, the error envelope with --json.
func badFlag(flag, format string, args ...any) *contract.Error {
	return contract.Errorf(contract.CodeInvalidArgument, format, args...).WithDetail("field", flag)
}

// cmdLineKey is the context key of the command line Run was given.
type cmdLineKey struct{}

// flagAsTyped is how the flag name of cmd was spelt on the command line:
// "-o" when its shorthand was typed (alone or in a group such as -eo),
// else "--name" (also when the command line is not known).
func flagAsTyped(cmd *cobra.Command, name string) string {
	f := cmd.Flags().Lookup(name)
	if f == nil || f.Shorthand == "" || cmd.Context() == nil {
		return "--" + name
	}
	args, _ := cmd.Context().Value(cmdLineKey{}).([]string)
	typed := "--" + name
	for _, a := range args {
		if a == "--" {
			break
		}
		switch {
		case a == "--"+name || strings.HasPrefix(a, "--"+name+"="):
			typed = "--" + name
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(strings.SplitN(a[1:], "=", 2)[0], f.Shorthand):
			typed = "-" + f.Shorthand
		}
	}
	return typed
}

// typeArgErrors wraps the positional-argument check (cobra Args) of cmd
// and every command under it, so a wrong count of arguments fails with an
// INVALID_ARGUMENT a person reads ("ps takes no arguments (got x)",
// "bin disasm takes one FILE, got 2") that --json prints as the error
// envelope, not cobra's "accepts 1 arg(s), received 2" in plain text.
func typeArgErrors(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		typeArgErrors(c)
	}
	if cmd.Args == nil || cmd.Annotations[groupAnnotation] != "" {
		return
	}
	check := cmd.Args
	cmd.Args = func(c *cobra.Command, args []string) error {
		err := check(c, args)
		if err == nil || asContractError(err) != nil {
			return err
		}
		return argCountError(c, args, err)
	}
}

// argCountError words cobra's argument-count error err of c, given args,
// for a person: what c takes, by its usage line's placeholders, and what
// it got.
func argCountError(c *cobra.Command, args []string, err error) error {
	name := commandKey(c)
	if name == "" {
		name = c.Name()
	}
	words := positionalWords(c)
	var lo, hi int
	msg := err.Error()
	var what string
	switch {
	case strings.HasPrefix(msg, "unknown command"):
		return contract.Errorf(contract.CodeInvalidArgument, "%s takes no arguments (got %s)", name, strings.Join(args, " ")).
			WithDetail("arguments", args)
	case scan(msg, "accepts %d arg(s), received", &lo):
		what = countWords(lo, words)
	case scan(msg, "requires at least %d arg(s), only received", &lo):
		what = "at least " + countWords(lo, words)
	case scan(msg, "accepts at most %d arg(s), received", &hi):
		what = "at most " + countWords(hi, words)
	case scan(msg, "accepts between %d and %d arg(s), received", &lo, &hi):
		what = fmt.Sprintf("%d to %d arguments (%s)", lo, hi, strings.Join(words, ", "))
	default:
		return contract.Errorf(contract.CodeInvalidArgument, "%s: %s", name, msg).WithDetail("arguments", args)
	}
	got := "none"
	if len(args) > 0 {
		got = strconv.Itoa(len(args))
	}
	e := contract.Errorf(contract.CodeInvalidArgument, "%s takes %s, got %s (usage: %s)", name, what, got, c.UseLine())
	if n := max(lo, hi); n > 0 && len(words) > 0 {
		e.WithDetail("field", strings.Join(words[:min(n, len(words))], " "))
	}
	if len(args) > 0 {
		e.WithDetail("arguments", args)
	}
	return e
}

// scan reports whether msg begins with format's words, filling ns.
func scan(msg, format string, ns ...any) bool {
	n, err := fmt.Sscanf(msg, format, ns...)
	return err == nil && n == len(ns)
}

// countWords is n arguments named by the placeholders words: "one FILE",
// "LEFT and RIGHT", "2 arguments".
func countWords(n int, words []string) string {
	switch {
	case n == 0:
		return "no arguments"
	case n == 1 && len(words) > 0:
		return "one " + words[0]
	case n <= len(words):
		return strings.Join(words[:n], " and ")
	}
	return strconv.Itoa(n) + " arguments"
}
