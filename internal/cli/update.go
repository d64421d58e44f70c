package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/setup"
	"github.com/spf13/cobra"
)

func init() { register(newUpdateCmd) }

type updateFlags struct {
	clients       []string
	check, dryRun bool
	timeout       time.Duration
}

// newUpdateCmd is `inquest update`: re-point the existing inquest
// registrations of MCP clients to this executable.
func newUpdateCmd(env *Env) *cobra.Command {
	var f updateFlags
	cmd := &cobra.Command{
		Use:   "update",
		Short: "Re-point existing MCP client registrations to this inquest (never adds new ones)",
		Long: `Re-point every client configuration that already registers the MCP server
"inquest" (or only those named with --client) to this inquest executable,
after starting it as a client would and checking its version and tool
catalog (MCP initialize and tools/list). The entry keeps its arguments
(--toolsets, --raw, ...) and environment; every other byte of the file is
kept, the original is backed up as inquest setup does, and the file is
replaced atomically. A client without an inquest entry is left alone: add
one with inquest setup. Nothing runs in the background and nothing checks
for new versions: you run update after installing a new inquest.

--dry-run prints each change as a unified diff and writes nothing.
--check writes nothing and reports, per registration, whether it already
starts this inquest (exit 1 when one does not, or when none exists).`,
		Example: `  go install ./cmd/inquest && inquest update   # after installing a new build
  inquest update --dry-run                     # show the diffs, write nothing
  inquest update --check                       # is every registration this inquest?
  inquest update --client codex`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runUpdate(cmd, env, &f) },
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.clients, "client", nil, "client to update (repeatable; default every client with an inquest entry): "+strings.Join(setup.Names(), ", "))
	fl.BoolVar(&f.check, "check", false, "write nothing; report whether each registration starts this inquest")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the changes as unified diffs and write nothing")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "limit for starting this inquest and checking its version, initialize and tools/list")
	return cmd
}

func runUpdate(cmd *cobra.Command, env *Env, f *updateFlags) error {
	fail := func(format string, args ...any) error {
		fmt.Fprintf(env.Stderr, "inquest update: "+format+"\n", args...)
		return exitCode(2)
	}
	if f.check && f.dryRun {
		return fail("--check and --dry-run exclude each other")
	}
	if f.timeout <= 0 {
		return fail("--timeout must be positive (got %s)", f.timeout)
	}
	var chosen []*setup.Client
	for _, n := range f.clients {
		c := setup.Lookup(n)
		if c == nil {
			return fail("--client %q is not a client inquest knows (want one of %s)", n, strings.Join(setup.Names(), ", "))
		}
		if !slices.Contains(chosen, c) {
			chosen = append(chosen, c)
		}
	}
	explicit := len(chosen) > 0
	if !explicit {
		chosen = setup.Clients
	}
	senv, err := setup.OSEnv()
	if err != nil {
		return err
	}
	self, err := selfPath()
	if err != nil {
		fmt.Fprintln(env.Stderr, "inquest update:", err)
		return exitCode(1)
	}
	want := versionJSON()
	// Start this inquest as a client would before pointing anything at it.
	res, err := setup.Check(cmd.Context(), &setup.Registration{Argv: []string{self, "mcp"}}, want, f.timeout)
	if err != nil {
		fmt.Fprintf(env.Stderr, "inquest update: this inquest (%s) failed its own check, so no registration was changed: %v\n", self, err)
		return exitCode(1)
	}
	fmt.Fprintf(env.Stdout, "this inquest: %s: %s %s, protocol %s, %d tools\n", self, res.Server, res.Version, res.Protocol, res.Tools)
	found, failed := 0, false
	var changes []*setup.Change
	for _, c := range chosen {
		r, err := setup.Registered(c, senv)
		if err != nil {
			fmt.Fprintf(env.Stdout, "FAIL %s: %v; left untouched\n", c.Name, err)
			failed = true
			continue
		}
		if r == nil {
			if explicit {
				fmt.Fprintf(env.Stdout, "FAIL %s: %s has no inquest entry; add one with inquest setup --client %s\n", c.Name, c.Locate(senv), c.Name)
				failed = true
			}
			continue
		}
		found++
		if len(r.Argv) == 0 {
			fmt.Fprintf(env.Stdout, "FAIL %s: %s: the inquest entry has no command; left untouched\n", c.Name, r.Path)
			failed = true
			continue
		}
		current := sameExecutable(r.Argv[0], self)
		if f.check {
			if current {
				fmt.Fprintf(env.Stdout, "ok   %s: %s: %s starts this inquest\n", c.Name, r.Path, shellJoin(r.Argv))
			} else {
				fmt.Fprintf(env.Stdout, "OLD  %s: %s: %s is not this inquest (%s); run inquest update\n", c.Name, r.Path, shellJoin(r.Argv), self)
				failed = true
			}
			continue
		}
		ch, err := setup.Plan(c, senv, setup.Launcher{Command: self, Args: r.Argv[1:]})
		if err != nil {
			fmt.Fprintf(env.Stdout, "FAIL %s: %v; left untouched\n", c.Name, err)
			failed = true
			continue
		}
		if ch.Action == setup.Unchanged {
			fmt.Fprintf(env.Stdout, "%s: %s already starts this inquest; unchanged\n", c.Name, ch.Path)
			continue
		}
		fmt.Fprintf(env.Stdout, "%s: re-point %s from %s to %s\n", c.Name, ch.Path, r.Argv[0], self)
		if f.dryRun {
			fmt.Fprint(env.Stdout, ch.Diff())
			continue
		}
		changes = append(changes, ch)
	}
	if found == 0 && !explicit {
		fmt.Fprintln(env.Stdout, "FAIL no client configuration registers inquest; register it with inquest setup")
		return exitCode(1)
	}
	if len(changes) > 0 {
		sd, err := stateDir()
		if err != nil {
			return err
		}
		for _, ch := range changes {
			backup, err := ch.Apply(filepath.Join(sd, "setup-backups"), time.Now())
			if err != nil {
				fmt.Fprintf(env.Stdout, "FAIL %s: %v\n", ch.Client.Name, err)
				failed = true
				continue
			}
			fmt.Fprintf(env.Stdout, "%s: wrote %s (backup of the original: %s)\n", ch.Client.Name, ch.Target, backup)
		}
		fmt.Fprintln(env.Stdout, "Restart or reconnect the changed clients to pick this up.")
	}
	if failed {
		return exitCode(1)
	}
	return nil
}

// sameExecutable reports whether the registered command names the file at
// self (after resolving it on PATH when it has no directory).
func sameExecutable(registered, self string) bool {
	if registered == self {
		return true
	}
	if !strings.ContainsRune(registered, '/') && !strings.ContainsRune(registered, os.PathSeparator) {
		if p, err := exec.LookPath(registered); err == nil {
			registered = p
		}
	}
	a, errA := os.Stat(registered)
	b, errB := os.Stat(self)
	return errA == nil && errB == nil && os.SameFile(a, b)
}
