package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/openmetrics"
)

// hostExporter runs a host face's Prometheus exporter (GET /metrics) as
// the openmetrics_listen and openmetrics_allow_remote settings say; the
// settings watcher applies every change while the host runs.
type hostExporter struct {
	srv     *openmetrics.Server
	logger  *slog.Logger
	applied bool
	listen  string
	remote  bool
}

func newHostExporter(h *host.Host, logger *slog.Logger) *hostExporter {
	x := &openmetrics.Exporter{Source: h.OpenMetricsSource()}
	return &hostExporter{srv: openmetrics.NewServer(x), logger: logger}
}

// apply opens, moves or closes the listener when the settings changed
// since the last apply; an invalid setting or a failed bind leaves the
// exporter off and is logged with the setting to fix.
func (e *hostExporter) apply(s config.Settings) {
	if e.applied && s.OpenMetricsListen == e.listen && s.OpenMetricsAllowRemote == e.remote {
		return
	}
	e.applied, e.listen, e.remote = true, s.OpenMetricsListen, s.OpenMetricsAllowRemote
	if err := e.srv.Apply(s.OpenMetricsListen, s.OpenMetricsAllowRemote); err != nil {
		e.logger.Error("OpenMetrics exporter is off", "err", err)
		return
	}
	if addr := e.srv.Addr(); addr != "" {
		e.logger.Info("OpenMetrics exporter listening", "url", "http://"+addr+"/metrics", "max_series", openmetrics.DefaultMaxSeries)
	} else {
		e.logger.Info("OpenMetrics exporter off", openmetrics.SettingListen, "")
	}
}

func (e *hostExporter) close() { e.srv.Close() }

// setExporter saves openmetrics_listen or openmetrics_allow_remote (key)
// and, when a host runs, waits until it serves (or stops serving) the
// exporter. A value the exporter would refuse (not HOST:PORT, or not
// loopback without openmetrics_allow_remote true) is an error naming the
// setting, and nothing is saved.
func setExporter(ctx context.Context, env *Env, key, value string, noWait bool) error {
	var before, after config.Settings
	if _, err := config.Update(func(f *config.File) error {
		before = f.Settings
		s := f.Settings
		if key == openmetrics.SettingListen {
			if value != "" && value != before.OpenMetricsListen {
				if err := checkFree(value); err != nil {
					return err
				}
			}
			s.OpenMetricsListen = value
		} else {
			v, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("%s takes true or false", key)
			}
			s.OpenMetricsAllowRemote = v
		}
		if err := openmetrics.CheckListen(s.OpenMetricsListen, s.OpenMetricsAllowRemote); err != nil {
			var re *openmetrics.RemoteError
			if key == openmetrics.SettingAllowRemote && errors.As(err, &re) {
				return fmt.Errorf("%s is %q, not a loopback address: set it to a loopback address (or unset it) before setting %s false", openmetrics.SettingListen, s.OpenMetricsListen, key)
			}
			return err
		}
		f.Settings, after = s, s
		return nil
	}); err != nil {
		return explainConfigErr(err)
	}
	if key == openmetrics.SettingListen {
		if value == "" {
			fmt.Fprintf(env.Stdout, "%s = \"\" (off)\n", key)
		} else {
			fmt.Fprintf(env.Stdout, "%s = %s\n", key, value)
		}
	} else {
		fmt.Fprintf(env.Stdout, "%s = %t\n", key, after.OpenMetricsAllowRemote)
	}
	running, pid, _ := ipc.HostRunning(ipc.Dir())
	if !running || before.OpenMetricsListen == after.OpenMetricsListen {
		return nil
	}
	_, port, _ := net.SplitHostPort(after.OpenMetricsListen)
	if noWait || port == "0" {
		fmt.Fprintf(env.Stdout, "the running host (pid %d) applies it within a second (its log names the address)\n", pid)
		return nil
	}
	if before.OpenMetricsListen != "" {
		if err := waitExporter(ctx, before.OpenMetricsListen, false); err != nil {
			return fmt.Errorf("saved, but the running host (pid %d) did not apply it: %v", pid, err)
		}
	}
	if after.OpenMetricsListen == "" {
		fmt.Fprintf(env.Stdout, "the running host (pid %d) closed its exporter\n", pid)
		return nil
	}
	if err := waitExporter(ctx, after.OpenMetricsListen, true); err != nil {
		return fmt.Errorf("saved, but the running host (pid %d) did not apply it: %v", pid, err)
	}
	fmt.Fprintf(env.Stdout, "the running host (pid %d) serves http://%s/metrics\n", pid, after.OpenMetricsListen)
	return nil
}

// checkFree refuses an openmetrics_listen address another program already
// listens on (binding it here fails with EADDRINUSE), so the setting is
// not saved for a host that could never serve it. Other bind failures
// (a name that does not resolve, a port below 1024) are left to the
// host, which logs them.
func checkFree(addr string) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
		return nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s %s: another program already listens on that address (%v); choose another port, nothing was saved", openmetrics.SettingListen, addr, err)
	}
	return nil
}

// waitExporter waits up to settingApplyWait until GET /metrics at addr
// answers 200 (up) or addr refuses connections (down).
func waitExporter(ctx context.Context, addr string, up bool) error {
	ctx, cancel := context.WithTimeout(ctx, settingApplyWait)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if up && resp.StatusCode == http.StatusOK {
				return nil
			}
		} else if !up {
			return nil
		}
		select {
		case <-ctx.Done():
			if up {
				return fmt.Errorf("http://%s/metrics did not answer within %v (see the host's log: the address may be in use)", addr, settingApplyWait)
			}
			return fmt.Errorf("http://%s/metrics still answers after %v", addr, settingApplyWait)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
