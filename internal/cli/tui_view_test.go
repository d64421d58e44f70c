package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
)

// TestViewBackendReattaches: a TUI view's backend over a real host socket.
// When the host's listener is closed (mcp_connections_disabled) calls fail
// BACKEND_UNAVAILABLE naming the running host; when it reopens they work
// again on the same host. When the host stops, calls fail saying the host
// is gone, and no host is started; when a new host starts, the view
// attaches to it (a new backend_instance_id).
func TestViewBackendReattaches(t *testing.T) {
	base := t.TempDir()
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		d := filepath.Join(base, k)
		os.MkdirAll(d, 0o700)
		t.Setenv(k, d)
	}
	t.Setenv("INQUEST_CONFIG", "")
	t.Setenv("INQUEST_DATA_DIR", "")
	type running struct {
		ep   *ipc.HostEndpoint
		stop func()
	}
	start := func() running {
		t.Helper()
		lock, err := ipc.AcquireHostLock(ipc.Dir(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		h, err := host.New(host.Options{Version: Version, Interval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ep := ipc.NewHostEndpoint(h.IPCService(), "", nil)
		if err := ep.Enable(); err != nil {
			t.Fatal(err)
		}
		return running{ep, func() { ep.Disable(); h.Stop(); lock.Release() }}
	}
	ctx := context.Background()
	h1 := start()
	defer func() { h1.stop() }()
	c, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: Version})
	if err != nil {
		t.Fatal(err)
	}
	v := &viewBackend{dir: ipc.Dir(), c: c, pid: os.Getpid()}
	defer v.Close()
	status := func() error {
		_, err := v.Call(ctx, "get_status", nil)
		return err
	}
	if err := status(); err != nil {
		t.Fatal(err)
	}
	_, inst1, up := v.Host()
	if inst1 == "" || !up {
		t.Fatalf("attached: instance %q up %v", inst1, up)
	}
	// failing calls until the view's reconnect attempt is refused: the
	// first may be the in-flight call of the lost connection (OUTCOME_UNKNOWN).
	refused := func(what string) *contract.Error {
		t.Helper()
		for i := 0; i < 3; i++ {
			err := status()
			if err == nil {
				t.Fatalf("%s: get_status succeeded", what)
			}
			if ce, ok := err.(*contract.Error); ok && ce.Code == contract.CodeBackendUnavailable {
				return ce
			}
			if contract.CodeOf(err) != contract.CodeOutcomeUnknown {
				t.Fatalf("%s: %v", what, err)
			}
		}
		t.Fatalf("%s: never BACKEND_UNAVAILABLE", what)
		return nil
	}

	h1.ep.Disable() // mcp_connections_disabled true
	if ce := refused("listener closed"); !strings.Contains(ce.Message, "does not accept connections") {
		t.Fatalf("listener closed: %v", ce)
	}
	if err := h1.ep.Enable(); err != nil { // and false again
		t.Fatal(err)
	}
	if err := status(); err != nil {
		t.Fatalf("after the listener reopened: %v", err)
	}
	if _, inst, _ := v.Host(); inst != inst1 {
		t.Fatalf("same host, instance %q -> %q", inst1, inst)
	}

	h1.stop()
	h1.stop = func() {}
	if ce := refused("host stopped"); !strings.Contains(ce.Message, "host is gone") {
		t.Fatalf("host stopped: %v", ce)
	}
	if running, _, _ := ipc.HostRunning(ipc.Dir()); running {
		t.Fatal("the view started a host")
	}
	h2 := start()
	defer h2.stop()
	if err := status(); err != nil {
		t.Fatalf("after a new host started: %v", err)
	}
	if _, inst, up := v.Host(); inst == "" || inst == inst1 || !up {
		t.Fatalf("new host: instance %q (old %q) up %v", inst, inst1, up)
	}
}

// TestRootHelpNamesTUI: `inquest --help`, and plain `inquest` without a
// terminal, say that plain `inquest` on a terminal opens the TUI.
func TestRootHelpNamesTUI(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {}} {
		out, errs, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "Plain `inquest` on a terminal opens the TUI") {
			t.Fatalf("%v: %d %s %s", args, code, out, errs)
		}
	}
}
