//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRuntimeDirWithoutXDG: a client started without XDG_RUNTIME_DIR (the
// MCP Inspector, cron, a non-login SSH session) finds the host that a
// client with XDG_RUNTIME_DIR=/run/user/<uid> started, because both
// resolve the endpoint directory to /run/user/<uid>/inquest: one host, one
// history, and get_status names the one socket.
func TestRuntimeDirWithoutXDG(t *testing.T) {
	runUser := filepath.Join("/run/user", strconv.Itoa(os.Getuid()))
	fi, err := os.Lstat(runUser)
	switch {
	case err == nil && (!fi.IsDir() || fi.Mode().Perm()&0o077 != 0):
		t.Skipf("%s exists but is not a private directory (mode %v): the rule does not apply to it", runUser, fi.Mode())
	case os.IsNotExist(err) && os.Getuid() == 0:
		// As root (CI), make the directory systemd-logind would make for
		// a session, and remove it afterwards.
		if err := os.MkdirAll(runUser, 0o700); err != nil {
			t.Skipf("cannot create %s: %v", runUser, err)
		}
		t.Cleanup(func() { os.RemoveAll(runUser) })
	case err != nil:
		t.Skipf("%s is absent and only root may create it here: %v", runUser, err)
	}

	a := newHeEnv(t)
	a.setRuntimeDir(runUser)
	if pid := a.hostPID(); hostAlive(pid) {
		t.Skipf("a host (pid %d) already serves %s; this test starts its own", pid, a.runDir())
	}
	b := newHeEnv(t)
	var env []string
	for _, kv := range b.env {
		if !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			env = append(env, kv)
		}
	}
	b.env = env
	b.setRuntimeDir(runUser) // for its cleanup: the same lock

	first := a.bridge()
	sa := first.status()
	if sa.pid <= 0 {
		t.Fatalf("bridge with XDG_RUNTIME_DIR: no host pid in get_status")
	}
	second := b.bridge()
	sb := second.status()
	if sb.pid != sa.pid || sb.instance != sa.instance {
		t.Fatalf("bridge without XDG_RUNTIME_DIR reached host pid %d (instance %s), want the one host pid %d (instance %s)", sb.pid, sb.instance, sa.pid, sa.instance)
	}
	want := filepath.Join(runUser, "inquest", "mcp.v1.sock")
	for i, br := range []*heBridge{first, second} {
		m := br.mustCall("get_status", nil)
		if got, _ := dig(m, "data", "mcp", "socket_path").(string); got != want {
			t.Errorf("bridge %d: get_status socket_path %q, want %q", i+1, got, want)
		}
	}
}
