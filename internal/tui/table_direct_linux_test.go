//go:build linux

package tui

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
)

// directBackend is the TUI host's in-process backend (as the CLI wires
// it): host methods through Dispatch and the process table as Go values.
type directBackend struct {
	BackendFunc
	h *host.Host
}

func (d directBackend) ProcessTable(ctx context.Context, q host.ProcessTableQuery) (*host.ProcessTable, error) {
	return d.h.ProcessTable(ctx, q)
}

// tableHost starts a host sampling this machine every 2 s (a window in
// which both sides read one snapshot, even on a loaded machine under the
// race detector) and returns it with a JSON-only backend (list_processes
// pages) and the direct one.
func tableHost(t *testing.T) (*host.Host, Backend, Backend) {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	h, err := host.New(host.Options{Version: "test", Interval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	s := h.NewSession()
	host.MarkLocalFace(s)
	js := BackendFunc(func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		return h.Dispatch(ctx, s, method, args)
	})
	return h, js, directBackend{BackendFunc: js, h: h}
}

// oddChild starts a copy of sh whose executable name is not valid UTF-8
// and holds HTML-sensitive bytes, with such an argument too, and returns
// it (killed and reaped at cleanup unless the test did).
func oddChild(t *testing.T) *exec.Cmd {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "s\xffh<&>")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, "-c", "sleep 3600; true", "x\xfe<y>\u2028z")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			c.Process.Kill()
			c.Wait()
		}
	})
	return c
}

// waitTable polls the direct table until ok holds for it (bounded by
// minutes, to catch a hang).
func waitTable(t *testing.T, h *host.Host, what string, ok func(*host.ProcessTable) bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		tab, err := h.ProcessTable(context.Background(), host.ProcessTableQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if ok(tab) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process table never showed %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func hasPID(tab *host.ProcessTable, pid int, ended bool) bool {
	for _, r := range tab.Rows {
		if r.PID == pid && (r.Lifecycle != "live") == ended {
			return true
		}
	}
	return false
}

// The in-process table (host.ProcessTable, no JSON) gives the TUI exactly
// the rows list_processes' JSON pages give it for the same snapshot, on
// this machine's processes: live rows, an ended (ghost) lifetime, a
// process whose name and argument are not valid UTF-8, with and without
// the command-line and container columns.
func TestDirectTableEqualsListProcesses(t *testing.T) {
	h, js, direct := tableHost(t)
	live := oddChild(t)
	gone := oddChild(t)
	waitTable(t, h, "both children live", func(tab *host.ProcessTable) bool {
		return hasPID(tab, live.Process.Pid, false) && hasPID(tab, gone.Process.Pid, false)
	})
	gone.Process.Kill()
	gone.Wait()
	waitTable(t, h, "the killed child as an ended lifetime", func(tab *host.ProcessTable) bool {
		return hasPID(tab, gone.Process.Pid, true)
	})
	for _, parts := range []Parts{{}, {CommandLines: true, Containers: true}} {
		q := host.ProcessTableQuery{CommandLines: parts.CommandLines, Containers: parts.Containers}
		ctx := context.Background()
		compared := false
		for deadline := time.Now().Add(3 * time.Minute); !compared && time.Now().Before(deadline); {
			// One snapshot on both sides: the table before and after the
			// JSON read are equal and from the snapshot the JSON names
			// (history applies a snapshot just after it is published, and
			// a command line is read at call time).
			before, err := h.ProcessTable(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			fj, err := FetchParts(ctx, js, nil, nil, parts)
			if err != nil {
				t.Fatal(err)
			}
			fd, err := FetchParts(ctx, direct, nil, nil, parts)
			if err != nil {
				t.Fatal(err)
			}
			after, err := h.ProcessTable(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if before.SnapshotSeq != after.SnapshotSeq || !fj.At.Equal(before.CapturedAt) || !fd.At.Equal(before.CapturedAt) ||
				!reflect.DeepEqual(before.Rows, after.Rows) {
				continue
			}
			compared = true
			if len(fj.Rows) != len(fd.Rows) {
				t.Fatalf("%+v: %d rows through JSON, %d direct", parts, len(fj.Rows), len(fd.Rows))
			}
			for i := range fj.Rows {
				if !reflect.DeepEqual(fj.Rows[i], fd.Rows[i]) {
					t.Errorf("%+v: row %d\nJSON   %+v\ndirect %+v", parts, i, fj.Rows[i], fd.Rows[i])
				}
			}
			var sawLive, sawGone bool
			for _, r := range fd.Rows {
				switch {
				case r.PID == live.Process.Pid && !r.Ended:
					sawLive = true
					if r.Name != "s\ufffdh<&>" {
						t.Errorf("odd child's name %q", r.Name)
					}
					if parts.CommandLines && (!r.ArgsOK || len(r.Args) != 4 || r.Args[3] != "x\ufffd<y>\u2028z") {
						t.Errorf("odd child's command line %q (read %v)", r.Args, r.ArgsOK)
					}
				case r.PID == gone.Process.Pid && r.Ended:
					sawGone = true
					if r.CPUOK || r.RSSOK || r.ArgsOK {
						t.Errorf("ended row carries live values: %+v", r)
					}
				}
			}
			if !sawLive || !sawGone {
				t.Errorf("%+v: live child shown %v, ended child shown %v", parts, sawLive, sawGone)
			}
		}
		if !compared {
			t.Fatalf("%+v: never read the JSON and direct tables from one snapshot", parts)
		}
	}
}

// A Log view never reads the live table: with a recording source the
// direct backend reads list_processes like any other.
func TestDirectTableNotForRecording(t *testing.T) {
	_, _, direct := tableHost(t)
	calls := 0
	d := direct.(directBackend)
	inner := d.BackendFunc
	d.BackendFunc = func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		if method == "list_processes" {
			calls++
		}
		return inner(ctx, method, args)
	}
	if _, err := FetchParts(context.Background(), d, nil, nil, Parts{}); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Fatalf("the live refresh of an in-process host called list_processes %d times", calls)
	}
	_, err := FetchParts(context.Background(), d, nil, &LogSource{Ref: "no-such-log"}, Parts{})
	if calls == 0 {
		t.Fatalf("a Log view refresh did not read list_processes (err %v)", err)
	}
}
