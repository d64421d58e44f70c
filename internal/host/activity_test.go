package host

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/ipc"
)

// activityOf is get_status's activity as a session sees it.
func activityOf(t *testing.T, h *Host, s *Session) string {
	t.Helper()
	d, _ := mustCall(t, h, s, "get_status", map[string]any{})
	a, _ := d["activity"].(string)
	return a
}

// TestLogViewBelongsToSession: Log view is held by the sessions that set
// it; "live" releases only the caller's claim, and closing a session (a
// TUI view quitting, its connection dropping) releases its claim, so the
// host returns to Live and list_processes works again for everyone.
func TestLogViewBelongsToSession(t *testing.T) {
	h := testHost(t, time.Hour, nil)
	other := h.NewSession()
	defer other.Close()
	a, b := h.NewSession(), h.NewSession()
	liveCall := func() error {
		_, _, err := call(t, h, other, "list_processes", map[string]any{"limit": 1})
		return err
	}
	if err := liveCall(); err != nil {
		t.Fatalf("before Log view: %v", err)
	}
	mustCall(t, h, a, ActivityMethod, map[string]any{"activity": "log"})
	mustCall(t, h, a, ActivityMethod, map[string]any{"activity": "log"}) // twice: one claim
	mustCall(t, h, b, ActivityMethod, map[string]any{"activity": "log"})
	wantCode(t, liveCall(), contract.CodeActivityConflict)

	// b returns to Live; a still shows its recording.
	d, _ := mustCall(t, h, b, ActivityMethod, map[string]any{"activity": "live"})
	if d["activity"] != "log" {
		t.Fatalf("after b's live the host activity is %v, want log (a holds it)", d["activity"])
	}
	if got := activityOf(t, h, other); got != "log" {
		t.Fatalf("get_status activity %q, want log", got)
	}
	// a goes away without saying live (a view that quit or lost its connection).
	a.Close()
	if got := activityOf(t, h, other); got == "log" {
		t.Fatalf("get_status activity %q after the owner closed", got)
	}
	if err := liveCall(); err != nil {
		t.Fatalf("after the owner closed: %v", err)
	}
	// a closed session cannot claim Log view.
	mustCall(t, h, a, ActivityMethod, map[string]any{"activity": "log"})
	if err := liveCall(); err != nil {
		t.Fatalf("a closed session held Log view: %v", err)
	}
	b.Close()
}

// TestLogViewReleasedWhenViewDisconnects: a TUI view attached over the
// local socket sets Log view and its connection closes without "live";
// the host's session for that connection closes and the host is Live.
func TestLogViewReleasedWhenViewDisconnects(t *testing.T) {
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		t.Setenv(k, t.TempDir())
	}
	h := testHost(t, time.Hour, nil)
	ep := ipc.NewHostEndpoint(h.IPCService(), "", nil)
	if err := ep.Enable(); err != nil {
		t.Fatal(err)
	}
	defer ep.Disable()
	ctx := context.Background()
	before := h.Sessions()
	c, err := ipc.Connect(ctx, ipc.ConnectOptions{BridgeVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, ActivityMethod, json.RawMessage(`{"activity":"log"}`)); err != nil {
		t.Fatal(err)
	}
	s := h.NewSession()
	defer s.Close()
	if _, _, err := call(t, h, s, "list_processes", map[string]any{"limit": 1}); contract.CodeOf(err) != contract.CodeActivityConflict {
		t.Fatalf("list_processes in Log view: %v", err)
	}
	c.Close()
	// The host notices the closed connection asynchronously: wait for its
	// session to close (no timing is asserted; the bound only ends a hang).
	for end := time.Now().Add(time.Minute); h.Sessions() > before+1; {
		if time.Now().After(end) {
			t.Fatalf("the view's session stayed open: %d sessions", h.Sessions())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := activityOf(t, h, s); got == "log" {
		t.Fatal("host still in Log view after the view disconnected")
	}
	if _, _, err := call(t, h, s, "list_processes", map[string]any{"limit": 1}); err != nil {
		t.Fatalf("list_processes after the view disconnected: %v", err)
	}
}
