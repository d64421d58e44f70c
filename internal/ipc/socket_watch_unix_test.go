//go:build unix

package ipc_test

import (
	"context"
	"github.com/inquest-dev/inquest/internal/ipc"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSocketFileRecreated (issue case 5): when the socket file is deleted
// the host listens anew and listener.state says listening; when the path
// cannot be listened on, listener.state and get_status say failed with the
// error, and a later check recovers. Connections accepted before stay open
// throughout.
func TestSocketFileRecreated(t *testing.T) {
	_, ep := startHost(t)
	path := ipc.Path()
	c1 := ipc.DialClient(t, path)
	srv := ep.Server()

	os.Remove(path)
	ep.CheckSocket(srv)
	if ep.State() != ipc.StateListening || ipc.ReadListenerState(filepath.Dir(path)) != ipc.StateListening {
		t.Fatalf("after the socket file was deleted: state %s, listener.state %q", ep.State(), ipc.ReadListenerState(filepath.Dir(path)))
	}
	c2 := ipc.DialClient(t, path)
	if st := statusMCP(t, c2); st["listener_starts"] != float64(2) || st["connections"] != float64(2) {
		t.Fatalf("status after recreation: %v", st)
	}
	statusMCP(t, c1) // the connection accepted before still works

	// A path that cannot be listened on (a regular file) is a failure,
	// said in listener.state and get_status.
	// Renamed over the socket in one step: the watcher, woken by the
	// change, must not recreate the socket in between.
	if err := os.WriteFile(path+".file", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".file", path); err != nil {
		t.Fatal(err)
	}
	ep.CheckSocket(srv)
	if ep.State() != ipc.StateFailed || ipc.ReadListenerState(filepath.Dir(path)) != ipc.StateFailed {
		t.Fatalf("unlistenable path: state %s, listener.state %q", ep.State(), ipc.ReadListenerState(filepath.Dir(path)))
	}
	if st := statusMCP(t, c1); st["listener"] != ipc.StateFailed || st["last_error"] == nil {
		t.Fatalf("get_status does not report the failure: %v", st)
	}
	os.Remove(path)
	ep.CheckSocket(srv)
	if ep.State() != ipc.StateListening {
		t.Fatalf("not recovered: %s", ep.State())
	}
	c2.Close()
	// The host notices the close asynchronously; until it does, the
	// allowance may still count c2 (BUSY). Wait for the condition, bounded.
	for deadline := time.Now().Add(3 * time.Minute); ; {
		c, err := ipc.Connect(context.Background(), ipc.ConnectOptions{Path: path, BridgeVersion: "t"})
		if err == nil {
			c.Close()
			break
		}
		if !strings.Contains(err.Error(), "BUSY") || time.Now().After(deadline) {
			t.Fatalf("dial after recovery: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A deleted listener.state is written again.
	os.Remove(filepath.Join(filepath.Dir(path), ipc.StateFileName))
	ep.CheckSocket(srv)
	if ipc.ReadListenerState(filepath.Dir(path)) != ipc.StateListening {
		t.Fatal("listener.state was not rewritten")
	}

	// The watcher does the same on its own: wait (bounded) until the
	// deleted socket answers again.
	os.Remove(path)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, _, err := ipc.Dial(ctx, path)
		cancel()
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher did not recreate the socket: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
