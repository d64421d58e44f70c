package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/openmetrics"
	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"
)

func init() { register(newSettingsCmd) }

// settingKeys are the application settings this command reads and writes.
var settingKeys = []string{"mcp_connections_disabled", "recording_directory", "cpu_share_of_all_cores", openmetrics.SettingListen, openmetrics.SettingAllowRemote}

func newSettingsCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "settings",
		Short: "Read or change application settings in inquest.toml",
		Long: `Read or change application settings saved in inquest.toml
($XDG_CONFIG_HOME/inquest/inquest.toml).

mcp_connections_disabled (default false): when true, the host opens no MCP
listener and a bridge never starts a host. A running host applies a change
within a second: disabling closes its listener and every connection
(invalidating their captures, cursors and jobs); enabling opens a fresh
listener.

recording_directory (default $XDG_DATA_HOME/inquest/recordings): an absolute
directory where recordings are written and list_logs looks; it is created
when a recording starts. The next recording and listing use a change.
` + "`inquest settings unset recording_directory`" + ` (or set it to "") returns to
the default.

openmetrics_listen (default "", off): HOST:PORT where the host serves its
Prometheus exporter, GET http://HOST:PORT/metrics (OpenMetrics text: the
system's and the live tracked processes' metrics). A loopback address
(127.0.0.1:9935, [::1]:9935, localhost:9935) unless openmetrics_allow_remote
is true. A running host opens, moves or closes the listener within a second.
` + "`inquest settings unset openmetrics_listen`" + ` turns it off.

openmetrics_allow_remote (default false): true lets openmetrics_listen be an
address other machines reach (anyone who reaches it reads the tracked
processes' names, pids and metrics).

cpu_share_of_all_cores (default false): the TUI's CPU% scale. false shows
per-core use as htop does (one core = 100%, a process using two cores
200%); true shows the share of all cores (all cores = 100%). The TUI's
Settings screen (S, then c) saves it too; the next TUI opens with it.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "get [KEY]",
		Short: "Print one setting, or all",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load()
			if err != nil {
				return explainConfigErr(err)
			}
			keys := settingKeys
			if len(args) == 1 {
				if err := checkKey(args[0]); err != nil {
					return err
				}
				keys = args
			}
			for _, k := range keys {
				switch k {
				case "mcp_connections_disabled":
					fmt.Fprintf(env.Stdout, "%s = %t\n", k, cfg.Settings.MCPConnectionsDisabled)
				case openmetrics.SettingListen:
					v := cfg.Settings.OpenMetricsListen
					if v == "" {
						v = `"" (off)`
					}
					fmt.Fprintf(env.Stdout, "%s = %s\n", k, v)
				case openmetrics.SettingAllowRemote:
					fmt.Fprintf(env.Stdout, "%s = %t\n", k, cfg.Settings.OpenMetricsAllowRemote)
				case "cpu_share_of_all_cores":
					fmt.Fprintf(env.Stdout, "%s = %t\n", k, cfg.Settings.CPUShareOfAllCores)
				case "recording_directory":
					dir, src, err := host.RecordingDirectory()
					if err != nil {
						return explainConfigErr(err)
					}
					fmt.Fprintf(env.Stdout, "%s = %s (%s)\n", k, dir, src)
				}
			}
			return nil
		},
	})
	var noWait bool
	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Save a setting; a running host applies it at once",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKey(args[0]); err != nil {
				return err
			}
			if args[0] == "recording_directory" && args[1] == "" {
				return unsetSetting(env, args[0])
			}
			if args[0] == openmetrics.SettingListen || args[0] == openmetrics.SettingAllowRemote {
				return setExporter(cmd.Context(), env, args[0], args[1], noWait)
			}
			if args[0] == "recording_directory" {
				if !filepath.IsAbs(args[1]) {
					return settingValueError("recording_directory takes an absolute directory path")
				}
				if _, err := config.Update(func(f *config.File) error {
					f.RecordingDirectory = filepath.Clean(args[1])
					return nil
				}); err != nil {
					return explainConfigErr(err)
				}
				fmt.Fprintf(env.Stdout, "%s = %s\n", args[0], filepath.Clean(args[1]))
				return nil
			}
			v, err := strconv.ParseBool(args[1])
			if err != nil {
				return settingValueError("%s takes true or false", args[0])
			}
			if args[0] == "cpu_share_of_all_cores" {
				if err := saveCPUShareOfAllCores(v); err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "%s = %t (the next TUI uses it)\n", args[0], v)
				return nil
			}
			if _, err := config.Update(func(f *config.File) error {
				f.Settings.MCPConnectionsDisabled = v
				return nil
			}); err != nil {
				return explainConfigErr(err)
			}
			fmt.Fprintf(env.Stdout, "%s = %t\n", args[0], v)
			running, pid, _ := ipc.HostRunning(ipc.Dir())
			if !running {
				return nil
			}
			if noWait {
				fmt.Fprintf(env.Stdout, "the running host (pid %d) applies it within a second\n", pid)
				return nil
			}
			if err := waitListener(cmd.Context(), !v); err != nil {
				return fmt.Errorf("saved, but the running host (pid %d) did not apply it: %v", pid, err)
			}
			if v {
				fmt.Fprintf(env.Stdout, "the running host (pid %d) closed its MCP listener and connections\n", pid)
			} else {
				fmt.Fprintf(env.Stdout, "the running host (pid %d) opened its MCP listener\n", pid)
			}
			return nil
		},
	}
	set.Flags().BoolVar(&noWait, "no-wait", false, "do not wait for a running host to apply the change")
	cmd.AddCommand(set)
	cmd.AddCommand(&cobra.Command{
		Use:   "unset KEY",
		Short: "Reset a setting to its default (recording_directory: the default directory; also `set recording_directory \"\"`)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKey(args[0]); err != nil {
				return err
			}
			if args[0] == "cpu_share_of_all_cores" {
				return set.RunE(set, []string{args[0], "false"})
			}
			if args[0] == "mcp_connections_disabled" {
				// The default (false) through set, which waits for a
				// running host to open its listener.
				return set.RunE(set, []string{args[0], "false"})
			}
			if args[0] == openmetrics.SettingListen {
				return setExporter(cmd.Context(), env, args[0], "", noWait)
			}
			if args[0] == openmetrics.SettingAllowRemote {
				return setExporter(cmd.Context(), env, args[0], "false", noWait)
			}
			return unsetSetting(env, args[0])
		},
	})
	return cmd
}

// unsetSetting removes recording_directory from inquest.toml, so the
// default directory ($XDG_DATA_HOME/inquest/recordings) applies to the
// next recording and listing, and prints the effective value.
func unsetSetting(env *Env, key string) error {
	if _, err := config.Update(func(f *config.File) error {
		f.RecordingDirectory = ""
		return nil
	}); err != nil {
		return explainConfigErr(err)
	}
	dir, src, err := host.RecordingDirectory()
	if err != nil {
		return explainConfigErr(err)
	}
	fmt.Fprintf(env.Stdout, "%s = %s (%s)\n", key, dir, src)
	return nil
}

func checkKey(k string) error {
	for _, s := range settingKeys {
		if s == k {
			return nil
		}
	}
	e := contract.Errorf(contract.CodeInvalidArgument, "unknown setting %q", k).
		WithDetail("accepted", settingKeys)
	e.Field = "/key"
	return e
}

// settingValueError is the INVALID_ARGUMENT for a VALUE the setting does
// not take; the message names the setting and echoes what was typed.
func settingValueError(format string, args ...any) error {
	e := contract.Errorf(contract.CodeInvalidArgument, format, args...)
	e.Field = "/value"
	return e
}

// settingApplyWait bounds how long `settings set` waits for a running host
// to apply a change. The host polls inquest.toml every second and applies
// a change at once, so the wait normally ends within about a second; the
// bound is generous so that a loaded machine (a slow poll, a slow listener
// close) is not reported as a host that failed to apply it — only a hung
// host reaches it.
const settingApplyWait = 2 * time.Minute

// waitListener waits up to settingApplyWait until the endpoint accepts a
// connection (on) or has no listener (off).
func waitListener(ctx context.Context, on bool) error {
	ctx, cancel := context.WithTimeout(ctx, settingApplyWait)
	defer cancel()
	for {
		c, _, err := ipc.Dial(ctx, ipc.Path())
		if err == nil {
			c.Close()
			if on {
				return nil
			}
		} else if !on && errors.Is(err, ipc.ErrNoHost) {
			return nil
		}
		select {
		case <-ctx.Done():
			if on {
				return fmt.Errorf("its listener did not open within %v (see its log)", settingApplyWait)
			}
			return fmt.Errorf("its listener is still open after %v", settingApplyWait)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// explainConfigErr turns an inquest.toml decoding failure into a message
// naming the file, the line and key at fault and the remedy; the file is
// never rewritten to "repair" it. Other errors pass through.
func explainConfigErr(err error) error {
	if err == nil {
		return nil
	}
	path, perr := config.Path()
	if perr != nil {
		path = "inquest.toml"
	}
	fix := "edit " + path + " (or move it aside to start from defaults; inquest never overwrites a file it cannot read) and retry"
	var re *config.ReadError
	if errors.As(err, &re) {
		fix := "make it readable by this user (chmod u+r " + re.Path + ") or move it aside to start from defaults, and retry"
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("%s: this user may not read it; %s", re.Error(), fix)
		}
		return fmt.Errorf("%s; %s", re.Error(), fix)
	}
	var sme *toml.StrictMissingError
	if errors.As(err, &sme) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s has settings inquest does not know:", path)
		for _, de := range sme.Errors {
			row, col := de.Position()
			fmt.Fprintf(&b, " line %d column %d key %q;", row, col, strings.Join(de.Key(), "."))
		}
		fmt.Fprintf(&b, " known keys are [settings] mcp_connections_disabled and cpu_share_of_all_cores (true/false), openmetrics_listen (\"HOST:PORT\"), openmetrics_allow_remote (true/false) and the tracking, profile and recording keys `inquest track`/`inquest profile` write; remove or correct the line(s): %s", fix)
		return errors.New(b.String())
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		key := ""
		if k := de.Key(); len(k) > 0 {
			key = fmt.Sprintf(" (key %q)", strings.Join(k, "."))
		}
		return fmt.Errorf("%s cannot be read: line %d column %d%s is wrong: %s; %s", path, row, col, key, de.Error(), fix)
	}
	if strings.Contains(err.Error(), "toml:") {
		return fmt.Errorf("%s cannot be decoded: %s; a setting has the wrong type (mcp_connections_disabled takes true or false, without quotes); %s", path, strings.TrimPrefix(err.Error(), path+": "), fix)
	}
	return err
}
