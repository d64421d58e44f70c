package ipc_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/ipc"
)

// TestSocketWatchByEvent: on Linux the endpoint learns of a change to its
// socket file or listener.state from inotify, not from a period: with the
// backstop set to an hour (so no periodic check can run during the test),
// a deleted socket file is listened on anew, a socket file or the whole
// endpoint directory renamed away is replaced (and the new directory is
// watched), and a deleted listener.state is written again.
func TestSocketWatchByEvent(t *testing.T) {
	defer ipc.SetSocketBackstop(time.Hour)()
	_, ep := startHost(t)
	path := ipc.Path()
	dir := filepath.Dir(path)
	dials := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, _, err := ipc.Dial(ctx, path)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	cases := []struct {
		name   string
		change func(t *testing.T)
		done   func() bool
	}{
		{"socket file deleted", func(t *testing.T) { os.Remove(path) }, dials},
		{"socket file renamed away", func(t *testing.T) {
			if err := os.Rename(path, filepath.Join(dir, "moved.sock")); err != nil {
				t.Fatal(err)
			}
		}, dials},
		{"endpoint directory renamed away", func(t *testing.T) {
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
		}, dials},
		// the directory made anew is watched: a later change is seen
		{"socket file deleted from the new directory", func(t *testing.T) { os.Remove(path) }, dials},
		{"listener.state deleted", func(t *testing.T) { os.Remove(filepath.Join(dir, ipc.StateFileName)) },
			func() bool { return ipc.ReadListenerState(dir) == ipc.StateListening }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// the previous case's check may still be running: start from a
			// served endpoint
			ipc.WaitFor(t, dials)
			tc.change(t)
			// bounded only to catch a hang: the hour-long backstop cannot fire
			deadline := time.Now().Add(3 * time.Minute)
			for !tc.done() {
				if time.Now().After(deadline) {
					t.Fatalf("%s: not noticed without the periodic check", tc.name)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if ep.State() != ipc.StateListening {
				t.Fatalf("state %s", ep.State())
			}
		})
	}
}
