//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/config"
)

// runEnv runs the binary with env instead of e.env.
func (e *heEnv) runEnv(env []string, args ...string) (string, int) {
	e.t.Helper()
	saved := e.env
	e.env = env
	defer func() { e.env = saved }()
	return e.run(args...)
}

// TestInProcessHostRefusesTrackingWhileHostServesConfig runs the built
// binary: with the shared host serving inquest.toml (tracking alpha), an
// in-process host's `track add beta` and `track remove alpha` are
// STATE_CONFLICT naming the host's pid and leave the file alone, so the
// shared host's list stays the file's and its next change (gamma) keeps
// every name. Once the shared host is gone the in-process host writes.
func TestInProcessHostRefusesTrackingWhileHostServesConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	defer e.killHosts()
	if out, code := e.run("track", "add", "alpha"); code != 0 {
		t.Fatalf("track add alpha: %d %s", code, out)
	}
	pid := e.hostPID()
	if pid == 0 {
		t.Fatal("no shared host runs after track add")
	}
	cfg := filepath.Join(e.base, "config", "inquest", "inquest.toml")
	tracking := func() []string {
		f, err := config.LoadFrom(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return f.Tracking
	}
	inProc := append(append([]string{}, e.env...), "INQUEST_IN_PROCESS=1")
	for _, args := range [][]string{{"track", "add", "beta"}, {"track", "remove", "alpha"}} {
		out, code := e.runEnv(inProc, args...)
		if code == 0 || !strings.Contains(out, "STATE_CONFLICT") || !strings.Contains(out, "pid "+strconv.Itoa(pid)) {
			t.Fatalf("in-process %v beside the shared host: exit %d\n%s", args, code, out)
		}
		if got := tracking(); len(got) != 1 || got[0] != "alpha" {
			t.Fatalf("in-process %v changed the file: %v", args, got)
		}
	}
	if out, code := e.run("track", "add", "gamma"); code != 0 {
		t.Fatalf("track add gamma: %d %s", code, out)
	}
	if got := strings.Join(tracking(), ","); got != "alpha,gamma" {
		t.Fatalf("file after the shared host's change: %s", got)
	}
	if out, _ := e.run("track", "list"); !strings.Contains(out, "alpha") || !strings.Contains(out, "gamma") {
		t.Fatalf("track list:\n%s", out)
	}
	e.killHosts()
	for deadline := time.Now().Add(time.Minute); !processGone(pid); { // its files (the writer lock) are closed
		if time.Now().After(deadline) {
			t.Fatalf("the killed host %d did not exit", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out, code := e.runEnv(inProc, "track", "add", "beta"); code != 0 {
		t.Fatalf("in-process track add with no host running: %d %s", code, out)
	}
	if got := strings.Join(tracking(), ","); got != "alpha,beta,gamma" {
		t.Fatalf("file after the in-process change: %s", got)
	}
	if _, err := os.Stat(cfg); err != nil {
		t.Fatal(err)
	}
}
