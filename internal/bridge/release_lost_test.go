//go:build linux

package bridge_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/bridge"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tool"
)

// dropOnRelease forwards to the real IPC backend, but closes the host's
// endpoint (every connection, as a killed host does) just before the
// bridge's first release_capture reaches it.
type dropOnRelease struct {
	bridge.Backend
	ep   *ipc.HostEndpoint
	once sync.Once
}

func (d *dropOnRelease) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	if method == "release_capture" {
		d.once.Do(d.ep.Disable)
	}
	return d.Backend.Call(ctx, method, args)
}

// TestAutoReleaseLostConnectionNotRetained (issue case 7): when the host
// connection is lost during the bridge's automatic release of a one-pass
// capture, start_capture does not claim capture_retained: true for a
// capture that went with the connection; it says so in a warning, and the
// capture really is gone on the next connection.
func TestAutoReleaseLostConnectionNotRetained(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(base))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(base, "state"))
	t.Setenv("INQUEST_CONFIG", filepath.Join(base, "inquest.toml"))
	h, err := host.New(host.Options{Version: "test", Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	ep := ipc.NewHostEndpoint(h.IPCService(), ipc.Path(), nil)
	if err := ep.Enable(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ep.Disable)
	b := bridge.NewIPC(ipc.ConnectOptions{Path: ipc.Path(), BridgeVersion: "test", Client: ipc.ClientMCPBridge})
	t.Cleanup(func() { b.Close() })
	be := &dropOnRelease{Backend: b, ep: ep}
	reg := tool.NewRegistry()
	if err := reg.Add(bridge.Tools(func(context.Context) (bridge.Backend, error) { return be, nil }, bridge.Mode{})...); err != nil {
		t.Fatal(err)
	}
	d := mustCall(t, reg, "start_capture", map[string]any{"kind": "file_users", "read": map[string]any{"path": "no-such-path-anywhere"}})
	capID, _ := d["capture_id"].(string)
	_, ws := envelope(d)
	if d["state"] != "succeeded" || capID == "" {
		t.Fatalf("capture did not succeed: %v", d)
	}
	if d["capture_retained"] != false || d["retained_capture_ids"] != nil {
		t.Fatalf("claims a retained capture the host no longer holds: capture_retained %v retained_capture_ids %v", d["capture_retained"], d["retained_capture_ids"])
	}
	if !anyContains(ws, "no longer exists") {
		t.Fatalf("no warning about the lost release: %q", ws)
	}
	if err := ep.Enable(); err != nil {
		t.Fatal(err)
	}
	// The next call reports the reset, then the capture is unknown.
	for range 2 {
		_, err = call(t, reg, "read_capture", map[string]any{"capture_id": capID})
		if err == nil {
			t.Fatal("the capture is still readable")
		}
	}
}
