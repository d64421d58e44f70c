package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/spf13/cobra"
)

func init() { register(newServeCmd) }

// readyFDEnv names the inherited descriptor on which a detached host
// reports "ready PID", "exists PID" or "error MESSAGE" to `serve --detach`.
const readyFDEnv = "INQUEST_READY_FD"

// configPollInterval is how often the host checks inquest.toml (re-read
// when its size or modification time changed) to apply a runtime toggle
// of mcp_connections_disabled, where inotify cannot tell it (on Linux a
// change wakes the host at once and nothing wakes it otherwise).
const configPollInterval = 250 * time.Millisecond

func newServeCmd(env *Env) *cobra.Command {
	var detach bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the headless host: sampling, history and the local MCP endpoint",
		Long: `Run the inquest host without a face. It samples processes, keeps their
history and serves bridges (` + "`inquest mcp`" + `) and CLI commands over the local
endpoint ` + ipc.Path() + `
(directory 0700, socket 0600, peers checked with SO_PEERCRED). One host runs
per user (flock on host.lock in the same directory).

--detach starts the host in the background in its own session and process
group, logging to $XDG_STATE_HOME/inquest/serve.log, and returns once it is
ready. If mcp_connections_disabled is saved as true, the host opens no
listener; ` + "`inquest settings set mcp_connections_disabled false`" + ` opens it
at runtime.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if detach {
				return serveDetached(env)
			}
			return serveForeground(cmd.Context(), env)
		},
	}
	cmd.Flags().BoolVar(&detach, "detach", false, "start the host in the background and return once it is ready")
	return cmd
}

// stateDir is $XDG_STATE_HOME/inquest (default ~/.local/state/inquest).
func stateDir() (string, error) {
	d := os.Getenv("XDG_STATE_HOME")
	if d == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no XDG_STATE_HOME and no home directory: %w", err)
		}
		d = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(d, "inquest"), nil
}

// readyReporter writes the one-line readiness report for serve --detach.
type readyReporter struct{ f *os.File }

func newReadyReporter() *readyReporter {
	s := os.Getenv(readyFDEnv)
	if s == "" {
		return &readyReporter{}
	}
	os.Unsetenv(readyFDEnv)
	fd, err := strconv.Atoi(s)
	if err != nil {
		return &readyReporter{}
	}
	return &readyReporter{f: os.NewFile(uintptr(fd), "ready")}
}

func (r *readyReporter) report(format string, args ...any) {
	if r.f == nil {
		return
	}
	fmt.Fprintf(r.f, format+"\n", args...)
	r.f.Close()
	r.f = nil
}

func serveForeground(ctx context.Context, env *Env) (err error) {
	ready := newReadyReporter()
	defer func() {
		if err != nil {
			ready.report("error %v", err)
		}
	}()
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Failures of host-side handlers are logged through slog's default
	// logger: make it the host log (stderr of serve), never stdout.
	slog.SetDefault(logger)
	dir := ipc.Dir()
	var lock *ipc.HostLock
	if hr := ipc.RunningElsewhere(); hr != nil {
		err = hr
	} else {
		lock, err = ipc.AcquireHostLock(dir, 2*time.Second)
	}
	if err != nil {
		var hr *ipc.HostRunningError
		if errors.As(err, &hr) {
			ready.report("exists %d", hr.PID)
		}
		return err
	}
	defer lock.Release()
	cfgPath, err := config.Path()
	if err != nil {
		return err
	}
	cfg, err := config.LoadFrom(cfgPath)
	if err != nil {
		return fmt.Errorf("the MCP setting is unknown, so no host was started: %w", explainConfigErr(err))
	}
	h, err := host.New(host.Options{Version: Version})
	if err != nil {
		return err
	}
	pid := os.Getpid()
	h.AddStatus(func(m map[string]any) {
		m["host"] = map[string]any{"pid": pid, "face": "serve"}
	})
	if err := h.Start(ctx); err != nil {
		return err
	}
	defer h.Stop()
	ep := ipc.NewHostEndpoint(h.IPCService(), ipc.Path(), logger)
	defer ep.RemoveState()
	defer ep.Disable()
	disabled := cfg.Settings.MCPConnectionsDisabled
	if disabled {
		ep.Disable() // records the disabled state for bridges
	} else if err := ep.Enable(); err != nil {
		return fmt.Errorf("MCP listener: %w", err)
	}
	om := newHostExporter(h, logger)
	defer om.close()
	om.apply(cfg.Settings)
	logger.Info("host ready", "pid", pid, "instance", h.InstanceID, "mcp_connections_disabled", disabled, "listener", ep.State())
	ready.report("ready %d", pid)
	watchSettings(ctx, cfgPath, filepath.Join(dir, ipc.HostLockName), disabled, ep, om, logger)
	logger.Info("host stopping")
	return nil
}

// watchSettings watches inquest.toml until ctx ends (settingsWaker) and applies changes of
// mcp_connections_disabled to the listener and of openmetrics_listen and
// openmetrics_allow_remote to the exporter (om). An unreadable file is logged
// and leaves the listener as it is. It also returns when the host lock file
// disappears or is replaced (the runtime directory was removed, as at
// logout or when a test's temp dir is deleted): a host nobody can reach
// any more stops instead of sampling forever.
func watchSettings(ctx context.Context, path, lockPath string, disabled bool, ep *ipc.HostEndpoint, om *hostExporter, logger *slog.Logger) {
	lockInfo, _ := os.Stat(lockPath)
	type stamp struct {
		mod  time.Time
		size int64
		ok   bool
	}
	stat := func() stamp {
		fi, err := os.Stat(path)
		if err != nil {
			return stamp{}
		}
		return stamp{fi.ModTime(), fi.Size(), true}
	}
	// The first poll always reloads the file: a change saved between the
	// start-up read of inquest.toml (which gave disabled) and this point
	// would otherwise match the first stamp and be lost.
	last := stamp{}
	w := newSettingsWaker(path, lockPath)
	defer w.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.C():
		}
		w.Changed()
		if fi, err := os.Stat(lockPath); lockInfo != nil && (err != nil || !os.SameFile(fi, lockInfo)) {
			logger.Warn("the runtime directory holding the host lock was removed; stopping")
			return
		}
		now := stat()
		if now == last {
			continue
		}
		last = now
		cfg, err := config.LoadFrom(path)
		if err != nil {
			logger.Warn("inquest.toml changed but cannot be read; MCP listener and exporter unchanged", "err", explainConfigErr(err))
			continue
		}
		om.apply(cfg.Settings)
		if cfg.Settings.MCPConnectionsDisabled == disabled {
			continue
		}
		disabled = cfg.Settings.MCPConnectionsDisabled
		logger.Info("mcp_connections_disabled changed", "disabled", disabled)
		if err := ep.SetEnabled(!disabled); err != nil {
			logger.Error("MCP listener could not be reopened", "err", err)
		}
	}
}
