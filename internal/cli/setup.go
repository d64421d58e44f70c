package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/setup"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

func init() { register(newSetupCmd) }

type setupFlags struct {
	clients          []string
	all, yes, dryRun bool
	check, remove    bool
	toolsets         string
	raw, inProcess   bool
	timeout          time.Duration
	toolsetsSet      bool
	// remote machine over ssh
	remote, name, remotePath string
	sshOptions               []string
}

func newSetupCmd(env *Env) *cobra.Command {
	var f setupFlags
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Register inquest as an MCP server in your coding agents (Claude Code, Codex, Gemini CLI, OpenCode, Cursor, ...)",
		Long: `Register this inquest executable as the MCP server "inquest" in the user
configuration of your coding agents, so that they start "inquest mcp" themselves.

Clients and the file edited (environment overrides honoured):
  claude-code     $CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json (mcpServers)
  codex           $CODEX_HOME/config.toml, else ~/.codex/config.toml ([mcp_servers.inquest])
  gemini          $GEMINI_CLI_HOME/.gemini/settings.json, else ~/.gemini/settings.json (mcpServers)
  opencode        $OPENCODE_CONFIG_DIR/opencode.json[c], else $OPENCODE_CONFIG, else
                  $XDG_CONFIG_HOME/opencode/opencode.json[c] or config.json (mcp, type local)
  cursor          ~/.cursor/mcp.json (mcpServers)
  claude-desktop  Claude/claude_desktop_config.json in the application data directory
  vscode          Code/User/mcp.json in the application data directory (servers)

On a terminal, setup lists the clients with the file and entry for each (detected
ones marked, nothing preselected) and asks which to set up. Elsewhere name them:
--client NAME (repeatable) or --all (every detected client), and approve the write
with --yes. --dry-run prints the exact change as a unified diff and writes nothing.

Edits keep every other byte of the file: comments, key order, indentation, other
servers. A file with invalid syntax or a duplicate key is refused with its line.
The original is copied to $XDG_STATE_HOME/inquest/setup-backups first (the path is
printed) and the file is replaced atomically. Running setup again changes nothing.

--remote [USER@]HOST[:PORT] registers inquest on another machine instead, as the
server "inquest-HOST" (--name NAME to choose): clients start
  ssh -T [-o OPTION]... -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=30
      [-p PORT] [USER@]HOST PATH mcp ...
where PATH is the remote inquest found over ssh (on the PATH of a non-login session,
else ~/.local/bin, ~/go/bin, /usr/local/bin; --remote-path to name it), and the entry is
written only after it answered MCP initialize and tools/list through that very command.
--ssh-option Key=value (repeatable) adds ssh -o options (IdentityFile, UserKnownHostsFile, ...);
they come first, so they win over the defaults.
With --check or --remove, --remote or --name selects that entry. See docs/fleet.md.

--toolsets, --raw and --in-process are passed on to the registered "inquest mcp".
--remove deletes only the inquest entry. --check starts each registered command
line as the client would and runs MCP initialize and tools/list.
Restart or reconnect a client after its configuration changed.`,
		Example: `  inquest setup                                  # choose on a terminal
  inquest setup --client claude-code --client codex --yes
  inquest setup --all --dry-run                  # show the diffs, write nothing
  inquest setup --check                          # verify every registration
  inquest setup --remove --client cursor --yes
  inquest setup --remote admin@db1.example.com --client claude-code --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.toolsetsSet = cmd.Flags().Changed("toolsets")
			if cmd.Flags().Changed("remote") && strings.TrimSpace(f.remote) == "" {
				// An empty --remote must not fall back to registering
				// this machine.
				return usageError(env, "--remote is empty: give [USER@]HOST[:PORT], or leave --remote out to register this machine")
			}
			return runSetup(cmd, env, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.clients, "client", nil, "client to set up (repeatable): "+strings.Join(setup.Names(), ", "))
	fl.BoolVar(&f.all, "all", false, "every detected client (with --remove or --check: every client with an inquest entry)")
	fl.BoolVarP(&f.yes, "yes", "y", false, "write without asking")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the change as a unified diff and write nothing")
	fl.BoolVar(&f.check, "check", false, "verify the registered entries: executable, version, MCP initialize + tools/list")
	fl.BoolVar(&f.remove, "remove", false, "remove the inquest entry from the named clients")
	fl.StringVar(&f.toolsets, "toolsets", "", "registered: comma-separated toolsets proc,perf,bin (default all)")
	fl.BoolVar(&f.raw, "raw", false, "registered: raw delivery mode")
	fl.BoolVar(&f.inProcess, "in-process", false, "registered: proc tools on a host inside the MCP server process")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "--check: limit for each registration's version, initialize and tools/list")
	fl.StringVar(&f.remote, "remote", "", "register inquest on another machine over ssh: [USER@]HOST[:PORT]")
	fl.StringVar(&f.name, "name", "", "--remote: the server name to register (default inquest-HOST)")
	fl.StringVar(&f.remotePath, "remote-path", "", "--remote: the inquest executable's absolute path there (default: found over ssh)")
	fl.StringArrayVar(&f.sshOptions, "ssh-option", nil, "--remote: an ssh -o option Key=value (repeatable)")
	return cmd
}

// usageError is a command-line mistake: exit status 2.
func usageError(env *Env, format string, args ...any) error {
	fmt.Fprintf(env.Stderr, "inquest setup: "+format+"\n", args...)
	return exitCode(2)
}

func runSetup(cmd *cobra.Command, env *Env, f *setupFlags) error {
	var chosen []*setup.Client
	for _, n := range f.clients {
		c := setup.Lookup(n)
		if c == nil {
			return usageError(env, "unknown client %q (want one of %s)", n, strings.Join(setup.Names(), ", "))
		}
		if !slices.Contains(chosen, c) {
			chosen = append(chosen, c)
		}
	}
	if f.all && len(chosen) > 0 {
		return usageError(env, "--all and --client exclude each other")
	}
	if f.check && (f.remove || f.dryRun) || f.remove && (f.toolsetsSet || f.raw || f.inProcess) {
		return usageError(env, "--check is alone; --remove takes no --toolsets, --raw or --in-process")
	}
	if f.timeout <= 0 {
		return usageError(env, "--timeout must be positive")
	}
	var remote *setup.Remote
	if f.remote != "" {
		r, err := setup.ParseRemote(f.remote)
		if err != nil {
			return usageError(env, "%v", err)
		}
		for _, o := range f.sshOptions {
			if err := setup.CheckOption(o); err != nil {
				return usageError(env, "%v", err)
			}
		}
		r.Options = f.sshOptions
		remote = &r
	} else if len(f.sshOptions) > 0 || f.remotePath != "" {
		return usageError(env, "--ssh-option and --remote-path need --remote [USER@]HOST[:PORT]")
	} else if f.name != "" && !f.check && !f.remove {
		return usageError(env, "--name needs --remote [USER@]HOST[:PORT] (or --check/--remove to select an entry)")
	}
	if f.name != "" {
		if err := setup.CheckName(f.name); err != nil {
			return usageError(env, "%v", err)
		}
	}
	if f.remotePath != "" && !strings.HasPrefix(f.remotePath, "/") {
		return usageError(env, "--remote-path %q: give the absolute path of inquest on the remote machine", f.remotePath)
	}
	// The entry --check and --remove select: --name, else the remote's
	// default name, else (no --remote) inquest's and, for --check, every
	// remote one.
	entryName := f.name
	if entryName == "" && remote != nil {
		entryName = remote.DefaultName()
	}
	senv, err := setup.OSEnv()
	if err != nil {
		return err
	}
	if f.check {
		return setupCheck(cmd, env, senv, chosen, f, entryName)
	}
	if f.remove {
		if len(chosen) == 0 && !f.all {
			return usageError(env, "--remove needs --client NAME or --all")
		}
		name := entryName
		if name == "" {
			name = setup.ServerName
		}
		if f.all {
			for _, c := range setup.Clients {
				if r, err := setup.RegisteredNamed(c, senv, name); err != nil || r != nil {
					chosen = append(chosen, c)
				}
			}
		}
		return setupWrite(env, senv, chosen, f, nil, false, name)
	}
	var l setup.Launcher
	if remote != nil {
		if !f.all && len(chosen) == 0 && !f.dryRun && !interactive(env) {
			// before any ssh: the choice is missing anyway
			return usageError(env, "not on a terminal: name the clients with --client NAME (repeatable) or --all, and approve with --yes (or preview with --dry-run)")
		}
		l, err = remoteLauncher(cmd, env, f, *remote)
	} else {
		l, err = setupLauncher(f)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "inquest setup:", err)
		return exitCode(1)
	}
	if remote != nil {
		// the local executable plays no part
	} else if onPath, err := exec.LookPath("inquest"); err == nil {
		a, errA := os.Stat(onPath)
		b, errB := os.Stat(l.Command)
		if errA == nil && errB == nil && !os.SameFile(a, b) {
			fmt.Fprintf(env.Stderr, "note: the inquest on PATH (%s) is another executable than the one being registered (%s); agents will start the registered one\n", onPath, l.Command)
		}
	}
	prompted := false
	switch {
	case f.all:
		chosen = detected(senv)
	case len(chosen) > 0:
	case f.dryRun:
		chosen = detected(senv)
	case interactive(env):
		chosen, err = promptClients(env, senv, l)
		if err != nil {
			return err
		}
		if len(chosen) == 0 {
			fmt.Fprintln(env.Stderr, "nothing selected; no file was changed")
			return nil
		}
		prompted = true
	default:
		return usageError(env, "not on a terminal: name the clients with --client NAME (repeatable) or --all, and approve with --yes (or preview with --dry-run)")
	}
	if len(chosen) == 0 {
		fmt.Fprintln(env.Stderr, "inquest setup: no client detected; name one with --client ("+strings.Join(setup.Names(), ", ")+")")
		return exitCode(1)
	}
	return setupWrite(env, senv, chosen, f, &l, prompted, l.Name)
}

// detected lists the detected clients.
func detected(e setup.Env) []*setup.Client {
	var out []*setup.Client
	for _, c := range setup.Clients {
		if c.Detected(e) {
			out = append(out, c)
		}
	}
	return out
}

// remoteLauncher is the ssh command line clients will start for inquest
// on r: the remote path found over ssh (or --remote-path), then pinned by
// the check --check runs (remote `inquest version`, MCP initialize and
// tools/list through exactly that command line).
func remoteLauncher(cmd *cobra.Command, env *Env, f *setupFlags, r setup.Remote) (setup.Launcher, error) {
	local, err := mcpArgs(f)
	if err != nil {
		return setup.Launcher{}, err
	}
	path := f.remotePath
	if path == "" {
		path, err = r.Discover(cmd.Context(), f.timeout)
		if err != nil {
			return setup.Launcher{}, fmt.Errorf("looking for inquest on %s over ssh: %w; nothing was written", r.Host, err)
		}
		fmt.Fprintf(env.Stderr, "found inquest on %s: %s\n", r.Host, path)
	}
	l := r.Launcher(f.name, path, local.Args)
	reg := &setup.Registration{Name: l.Name, Argv: append([]string{l.Command}, l.Args...)}
	res, err := setup.Check(cmd.Context(), reg, nil, f.timeout)
	if err != nil {
		var se *setup.SSHError
		if errors.As(err, &se) {
			return setup.Launcher{}, fmt.Errorf("inquest on %s does not answer: %w; nothing was written", r.Host, err)
		}
		return setup.Launcher{}, fmt.Errorf("inquest on %s does not answer through %s: %w; nothing was written", r.Host, shellJoin(reg.Argv), err)
	}
	fmt.Fprintf(env.Stderr, "checked: %s %s on %s, protocol %s, %d tools\n", res.Server, res.Version, r.Host, res.Protocol, res.Tools)
	return l, nil
}

// setupLauncher is the command line clients will start: this executable's
// absolute path (as invoked, so a stable symlink such as ~/go/bin/inquest
// stays a symlink) and mcp with the pass-through flags.
func setupLauncher(f *setupFlags) (setup.Launcher, error) {
	self, err := selfPath()
	if err != nil {
		return setup.Launcher{}, err
	}
	l, err := mcpArgs(f)
	l.Command = self
	return l, err
}

// mcpArgs is mcp with the pass-through flags (Command left empty).
func mcpArgs(f *setupFlags) (setup.Launcher, error) {
	args := []string{"mcp"}
	if f.toolsetsSet {
		sets, err := parseToolsets(f.toolsets)
		if err != nil {
			return setup.Launcher{}, err
		}
		if len(sets) == 0 {
			return setup.Launcher{}, badFlag("--toolsets", "--toolsets is empty; name one or more of proc, perf, bin (or leave it out for all)")
		}
		args = append(args, "--toolsets", strings.Join(sets, ","))
	}
	if f.raw {
		args = append(args, "--raw")
	}
	if f.inProcess {
		args = append(args, "--in-process")
	}
	return setup.Launcher{Args: args}, nil
}

// selfPath returns the absolute path this process was started as when it
// names this executable, else the executable's resolved path. A binary
// built by `go run` lives in a temporary directory that is deleted when it
// exits, so it is refused.
func selfPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find this executable: %w", err)
	}
	path := exe
	if arg0 := os.Args[0]; arg0 != "" {
		cand := arg0
		if !strings.ContainsRune(arg0, os.PathSeparator) && !strings.ContainsRune(arg0, '/') {
			cand, _ = exec.LookPath(arg0)
		}
		if cand != "" {
			if abs, err := filepath.Abs(cand); err == nil {
				a, errA := os.Stat(abs)
				b, errB := os.Stat(exe)
				if errA == nil && errB == nil && os.SameFile(a, b) {
					path = abs
				}
			}
		}
	}
	tmp := filepath.Clean(os.TempDir()) + string(os.PathSeparator)
	if strings.HasPrefix(path, tmp) && strings.Contains(path, string(os.PathSeparator)+"go-build") {
		return "", fmt.Errorf("this inquest was built by `go run` into a temporary directory (%s) that disappears when it exits; install it first (go install github.com/inquest-dev/inquest/cmd/inquest@latest, or go install ./cmd/inquest in a checkout) and run `inquest setup` from the installed binary", filepath.Dir(path))
	}
	return path, nil
}

// interactive reports whether stdin, stdout and stderr are all terminals.
func interactive(env *Env) bool {
	for _, s := range []any{env.Stdin, env.Stdout, env.Stderr} {
		f, ok := s.(*os.File)
		if !ok || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
			return false
		}
	}
	return true
}

// promptClients shows every client (optional ones only when detected) with
// its file and entry, nothing preselected, and reads the numbers chosen.
func promptClients(env *Env, e setup.Env, l setup.Launcher) ([]*setup.Client, error) {
	var list []*setup.Client
	for _, c := range setup.Clients {
		if !c.Optional || c.Detected(e) {
			list = append(list, c)
		}
	}
	w := env.Stderr
	name := l.Name
	if name == "" {
		name = setup.ServerName
	}
	fmt.Fprintf(w, "Register inquest as the MCP server %q; clients will start:\n  %s\n\n", name, shellJoin(append([]string{l.Command}, l.Args...)))
	for i, c := range list {
		mark := "not found"
		if c.Detected(e) {
			mark = "detected"
		}
		fmt.Fprintf(w, "  %d) %-15s %s (%s)\n       %s\n", i+1, c.Title, c.Locate(e), mark, c.Entry(l))
	}
	fmt.Fprintln(w)
	in := bufio.NewReader(env.Stdin)
	for tries := 0; tries < 3; tries++ {
		fmt.Fprint(w, "Set up which? Numbers separated by spaces or commas, \"all\", or Enter for none: ")
		line, err := in.ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && line != "") {
			fmt.Fprintln(w)
			return nil, nil
		}
		picked, perr := parseSelection(strings.TrimSpace(line), len(list))
		if perr != nil {
			fmt.Fprintln(w, perr)
			continue
		}
		var out []*setup.Client
		for _, i := range picked {
			out = append(out, list[i])
		}
		return out, nil
	}
	return nil, usageError(env, "no valid selection")
}

// parseSelection reads "1 3", "1,3" or "all" for n choices into 0-based
// indexes in list order.
func parseSelection(s string, n int) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	if strings.EqualFold(s, "all") {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	seen := map[int]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		i, err := strconv.Atoi(f)
		if err != nil || i < 1 || i > n {
			return nil, fmt.Errorf("%q is not a number from 1 to %d", f, n)
		}
		seen[i-1] = true
	}
	var out []int
	for i := 0; i < n; i++ {
		if seen[i] {
			out = append(out, i)
		}
	}
	return out, nil
}

// setupWrite plans the change for each client, prints it, asks when
// needed, and writes. l is nil for --remove, which removes the entry
// name ("" is inquest's).
func setupWrite(env *Env, e setup.Env, chosen []*setup.Client, f *setupFlags, l *setup.Launcher, prompted bool, name string) error {
	if name == "" {
		name = setup.ServerName
	}
	var changes []*setup.Change
	failed := false
	for _, c := range chosen {
		var ch *setup.Change
		var err error
		if l != nil {
			ch, err = setup.Plan(c, e, *l)
		} else {
			ch, err = setup.PlanRemoveNamed(c, e, name)
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: %v; left untouched\n", c.Name, err)
			failed = true
			continue
		}
		switch ch.Action {
		case setup.Unchanged:
			fmt.Fprintf(env.Stdout, "%s: %s already registers %s; unchanged\n", c.Name, ch.Path, name)
		case setup.Absent:
			fmt.Fprintf(env.Stdout, "%s: %s has no %s entry; unchanged\n", c.Name, ch.Path, name)
		default:
			verb := map[setup.Action]string{setup.Add: "add " + name + " to", setup.Update: "update " + name + " in", setup.Remove: "remove " + name + " from"}[ch.Action]
			if !ch.Exists {
				verb = "create"
			}
			fmt.Fprintf(env.Stdout, "%s: %s %s\n", c.Name, verb, ch.Path)
			if f.dryRun {
				fmt.Fprint(env.Stdout, ch.Diff())
			}
			changes = append(changes, ch)
		}
	}
	if f.dryRun || len(changes) == 0 {
		if failed {
			return exitCode(1)
		}
		return nil
	}
	if !f.yes && !prompted {
		if !interactive(env) {
			fmt.Fprintln(env.Stderr, "inquest setup: nothing written: add --yes to write without a terminal (or --dry-run to see the diff)")
			return exitCode(2)
		}
		fmt.Fprintf(env.Stderr, "Write %d file(s)? [y/N] ", len(changes))
		line, _ := bufio.NewReader(env.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(env.Stderr, "nothing written")
			return exitCode(1)
		}
	}
	sd, err := stateDir()
	if err != nil {
		return err
	}
	backups := filepath.Join(sd, "setup-backups")
	wrote := 0
	for _, ch := range changes {
		backup, err := ch.Apply(backups, time.Now())
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: %v\n", ch.Client.Name, err)
			failed = true
			continue
		}
		wrote++
		if backup != "" {
			fmt.Fprintf(env.Stdout, "%s: wrote %s (backup of the original: %s)\n", ch.Client.Name, ch.Target, backup)
		} else {
			fmt.Fprintf(env.Stdout, "%s: wrote %s (new file)\n", ch.Client.Name, ch.Target)
		}
	}
	if wrote > 0 {
		fmt.Fprintln(env.Stdout, "Restart or reconnect the changed clients to pick this up.")
		if l != nil {
			fmt.Fprintln(env.Stdout, "Then ask your agent, e.g.: \"Use inquest: which processes use the most memory, and what is listening on the network?\"")
		}
	}
	if failed {
		return exitCode(1)
	}
	return nil
}

// setupCheck verifies every registration (of the chosen clients, default
// all): inquest's and every remote one, or only the entry name when not
// "". Exit 1 when one fails or none exists.
func setupCheck(cmd *cobra.Command, env *Env, e setup.Env, chosen []*setup.Client, f *setupFlags, name string) error {
	explicit := len(chosen) > 0
	if !explicit {
		chosen = setup.Clients
	}
	found, failed := 0, false
	want := versionJSON()
	for _, c := range chosen {
		var regs []*setup.Registration
		var err error
		if name != "" {
			var r *setup.Registration
			if r, err = setup.RegisteredNamed(c, e, name); r != nil {
				regs = append(regs, r)
			}
		} else {
			regs, err = setup.RegisteredAll(c, e)
		}
		if err != nil {
			fmt.Fprintf(env.Stdout, "FAIL %s: %v\n", c.Name, err)
			failed = true
			continue
		}
		if len(regs) == 0 {
			if explicit {
				what := "inquest"
				if name != "" {
					what = name
				}
				fmt.Fprintf(env.Stdout, "FAIL %s: no %s entry in %s\n", c.Name, what, c.Locate(e))
				failed = true
			}
			continue
		}
		for _, r := range regs {
			found++
			label := c.Name
			if r.Name != setup.ServerName {
				label += " " + r.Name
			}
			res, err := setup.Check(cmd.Context(), r, want, f.timeout)
			if err != nil {
				fmt.Fprintf(env.Stdout, "FAIL %s: %s: %s: %v\n", label, r.Path, shellJoin(r.Argv), err)
				failed = true
				continue
			}
			fmt.Fprintf(env.Stdout, "ok   %s: %s: %s: %s %s, protocol %s, %d tools\n", label, r.Path, shellJoin(r.Argv), res.Server, res.Version, res.Protocol, res.Tools)
		}
	}
	if found == 0 && !explicit {
		fmt.Fprintln(env.Stdout, "FAIL no client configuration registers inquest; run `inquest setup`")
		failed = true
	}
	if failed {
		return exitCode(1)
	}
	return nil
}

// shellJoin quotes argv for display.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}
