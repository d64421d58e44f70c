package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tui"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
	"github.com/spf13/cobra"
)

// runRoot is `inquest` without a subcommand: the TUI on a terminal, help
// otherwise.
func runRoot(env *Env, cmd *cobra.Command) error {
	in, inOK := env.Stdin.(*os.File)
	out, outOK := env.Stdout.(*os.File)
	if !inOK || !outOK || !writerIsTerminal(in) || !writerIsTerminal(out) {
		return cmd.Help()
	}
	return runTUI(cmd.Context(), env, in, out)
}

// tuiFPS is the most frames a second the TUI draws.
const tuiFPS = 20

// runTUI starts the host with a face, or, when a host already runs for
// this user, attaches to it over the local socket as a view (quitting a
// view leaves that host running).
func runTUI(ctx context.Context, env *Env, in, out *os.File) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opt := tui.Options{
		NoColor:      os.Getenv("NO_COLOR") != "",
		LoadSettings: loadTUISettings,
		SetMCPDisabled: func(disabled bool) error {
			// The host (this process or another) applies a change of
			// inquest.toml within configPollInterval.
			_, err := config.Update(func(f *config.File) error {
				f.Settings.MCPConnectionsDisabled = disabled
				return nil
			})
			return err
		},
		SetCPUShareOfAllCores: saveCPUShareOfAllCores,
	}
	dir := ipc.Dir()
	var lock *ipc.HostLock
	var err error
	if hr := ipc.RunningElsewhere(); hr != nil {
		err = hr
	} else {
		lock, err = ipc.AcquireHostLock(dir, 2*time.Second)
	}
	var hr *ipc.HostRunningError
	switch {
	case errors.As(err, &hr):
		c, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: Version, Client: ipc.ClientTUIView})
		if err != nil {
			return fmt.Errorf("a host runs (pid %d) but the TUI cannot attach to it: %w", hr.PID, err)
		}
		v := &viewBackend{dir: dir, c: c, pid: hr.PID}
		defer v.Close()
		opt.Backend, opt.Attached, opt.HostPID = v, true, hr.PID
	case err != nil:
		return err
	default:
		defer lock.Release()
		stop, b, err := startTUIHost(ctx, dir)
		if err != nil {
			return err
		}
		defer stop()
		opt.Backend, opt.HostPID = b, os.Getpid()
	}
	// 20 frames a second at most (bubbletea's default is 60); 50 ms is
	// still below what a typed key feels like waiting for. The renderer
	// (third_party/bubbletea) wakes only when a new view is written, so an
	// idle screen costs no wake-ups at this rate.
	p := tea.NewProgram(tui.New(opt), tea.WithAltScreen(), tea.WithInput(in), tea.WithOutput(out), tea.WithContext(ctx), tea.WithFPS(tuiFPS))
	_, err = p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// viewBackend is a TUI view's connection to a host in another process.
// When the connection is lost (the host died, or its listener was closed
// by mcp_connections_disabled) a call reconnects to whatever host runs
// now; with none, or with its listener off, the call fails
// BACKEND_UNAVAILABLE and the view says the host is gone. A view never
// starts a host: quitting it must not leave a sampler behind that the user
// did not ask for.
type viewBackend struct {
	dir  string
	dial sync.Mutex  // held while reconnecting
	mu   sync.Mutex  // guards c and pid
	c    *ipc.Client // nil after a failed reconnect
	pid  int
}

// Call runs method on the attached host, reconnecting first when the
// connection was lost.
func (v *viewBackend) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	c, err := v.client(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.Call(ctx, method, args)
	if ipc.NotSent(err) {
		// The host had already closed this connection: nothing was sent,
		// so reattach (or say why not) and send it there once.
		if c, err = v.client(ctx); err != nil {
			return nil, err
		}
		return c.Call(ctx, method, args)
	}
	return res, err
}

func (v *viewBackend) client(ctx context.Context) (*ipc.Client, error) {
	if c := v.current(); c != nil && c.Alive() {
		return c, nil
	}
	// One reconnect at a time; Host (the header) never waits for it.
	v.dial.Lock()
	defer v.dial.Unlock()
	if c := v.current(); c != nil && c.Alive() {
		return c, nil
	}
	v.mu.Lock()
	if v.c != nil {
		v.c.Close()
		v.c = nil
	}
	v.mu.Unlock()
	running, pid, _ := ipc.HostRunning(v.dir)
	c, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: Version, Client: ipc.ClientTUIView, Deadline: 2 * time.Second})
	if err != nil {
		if running {
			return nil, contract.Errorf(contract.CodeBackendUnavailable,
				"the connection to the host was lost; host pid %d runs but does not accept connections (is mcp_connections_disabled set? see `inquest settings`); this view reattaches when it does", pid)
		}
		return nil, contract.Errorf(contract.CodeBackendUnavailable,
			"the host is gone; this view reattaches when one starts (`inquest serve --detach`, or quit and run `inquest`)")
	}
	v.mu.Lock()
	v.c = c
	if running {
		v.pid = pid
	}
	v.mu.Unlock()
	return c, nil
}

func (v *viewBackend) current() *ipc.Client {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.c
}

// Host reports the attached host (tui.Attachment).
func (v *viewBackend) Host() (pid int, instance string, connected bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.c == nil {
		return v.pid, "", false
	}
	return v.pid, v.c.Welcome.BackendInstanceID, v.c.Alive()
}

// Close closes the connection.
func (v *viewBackend) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.c != nil {
		v.c.Close()
	}
}

// saveCPUShareOfAllCores saves the TUI's CPU% scale
// (cpu_share_of_all_cores in inquest.toml), so the next TUI opens with it.
func saveCPUShareOfAllCores(allCores bool) error {
	_, err := config.Update(func(f *config.File) error {
		f.Settings.CPUShareOfAllCores = allCores
		return nil
	})
	return explainConfigErr(err)
}

func loadTUISettings() (tui.Settings, error) {
	cfg, err := config.Load()
	if err != nil {
		return tui.Settings{}, explainConfigErr(err)
	}
	st := tui.Settings{MCPConnectionsDisabled: cfg.Settings.MCPConnectionsDisabled, CPUShareOfAllCores: cfg.Settings.CPUShareOfAllCores}
	if dir, source, err := host.RecordingDirectory(); err == nil {
		st.RecordingDirectory = dir + " (" + source + ")"
	}
	return st, nil
}

// startTUIHost is serveForeground for the TUI face: the host samples, the
// IPC endpoint serves bridges and CLI commands, the settings watcher
// applies the MCP toggle, and the log goes to
// $XDG_STATE_HOME/inquest/tui.log (the terminal belongs to the face).
// The TUI itself reads through an in-process session.
func startTUIHost(ctx context.Context, dir string) (stop func(), b tui.Backend, err error) {
	cfgPath, err := config.Path()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.LoadFrom(cfgPath)
	if err != nil {
		return nil, nil, fmt.Errorf("the MCP setting is unknown, so no host was started: %w", explainConfigErr(err))
	}
	var logw io.Writer = io.Discard
	if sd, err := stateDir(); err == nil && os.MkdirAll(sd, 0o700) == nil {
		if f, err := os.OpenFile(filepath.Join(sd, "tui.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			logw = f
			defer func() {
				if err != nil {
					f.Close()
				}
			}()
		}
	}
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h, err := host.New(host.Options{Version: Version})
	if err != nil {
		return nil, nil, err
	}
	pid := os.Getpid()
	h.AddStatus(func(m map[string]any) {
		m["host"] = map[string]any{"pid": pid, "face": "tui"}
	})
	if err := h.Start(ctx); err != nil {
		return nil, nil, err
	}
	ep := ipc.NewHostEndpoint(h.IPCService(), ipc.Path(), logger)
	disabled := cfg.Settings.MCPConnectionsDisabled
	if disabled {
		ep.Disable()
	} else if err := ep.Enable(); err != nil {
		// The face stays usable; Settings shows the listener state.
		logger.Error("MCP listener", "err", err)
	}
	om := newHostExporter(h, logger)
	om.apply(cfg.Settings)
	wctx, wcancel := context.WithCancel(ctx)
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		watchSettings(wctx, cfgPath, filepath.Join(dir, ipc.HostLockName), disabled, ep, om, logger)
	}()
	s := h.NewSession()
	host.MarkLocalFace(s) // the person at the TUI decides its own actions
	stop = func() {
		wcancel()
		<-wdone
		s.Close()
		om.close()
		ep.Disable()
		ep.RemoveState()
		h.Stop()
		if c, ok := logw.(io.Closer); ok {
			c.Close()
		}
	}
	return stop, inProcessBackend{h: h, s: s}, nil
}

// inProcessBackend is the TUI host's own session: host methods run in
// this process, and the process table comes as Go values
// (tui.TableSource), never through JSON.
type inProcessBackend struct {
	h *host.Host
	s *host.Session
}

// Call runs method in the host.
func (b inProcessBackend) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	return b.h.Dispatch(ctx, b.s, method, args)
}

// WaitSample waits for a snapshot newer than seq (host.Host.WaitSample).
func (b inProcessBackend) WaitSample(ctx context.Context, seq uint64) error {
	return b.h.WaitSample(ctx, seq)
}

// ProcessTable reads the host's process table (host.Host.ProcessTable).
func (b inProcessBackend) ProcessTable(ctx context.Context, q host.ProcessTableQuery) (*host.ProcessTable, error) {
	return b.h.ProcessTable(ctx, q)
}
