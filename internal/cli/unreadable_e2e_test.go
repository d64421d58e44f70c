//go:build linux

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// runAsOther runs the built binary with env, as uid 65534 when this test
// runs as root (root reads any file, so a permission is only denied to
// another user), else as this user.
func runAsOther(t *testing.T, e *heEnv, args ...string) (string, int) {
	t.Helper()
	bin := e.bin
	if os.Geteuid() == 0 {
		// The other user must reach the binary: a copy beside the test's
		// directories (mode 0711 on the way).
		bin = filepath.Join(e.base, "inquest-other")
		if _, err := os.Stat(bin); err != nil {
			b, err := os.ReadFile(e.bin)
			if err != nil || os.WriteFile(bin, b, 0o755) != nil {
				t.Fatalf("copy the binary: %v", err)
			}
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = e.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// TestSettingsGetUnreadableFile runs the built binary: `inquest settings
// get` with an inquest.toml it may not read says the file is unreadable
// (EACCES), and with a directory in its place says it is unreadable
// (EISDIR); neither blames a setting's type.
func TestSettingsGetUnreadableFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	cfg := filepath.Join(e.base, "config", "inquest", "inquest.toml")
	os.MkdirAll(filepath.Dir(cfg), 0o700)
	if err := os.WriteFile(cfg, []byte("[settings]\nmcp_connections_disabled = false\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// The other user reaches the file's directory but not the file.
		for _, d := range []string{filepath.Dir(e.base), e.base, filepath.Join(e.base, "config"), filepath.Dir(cfg)} {
			os.Chmod(d, 0o711)
		}
	}
	out, code := runAsOther(t, e, "settings", "get")
	if code == 0 || !strings.Contains(out, "unreadable") || !strings.Contains(out, "EACCES") || strings.Contains(out, "wrong type") {
		t.Fatalf("settings get on an unreadable file: exit %d\n%s", code, out)
	}
	os.Remove(cfg)
	os.Mkdir(cfg, 0o700)
	out, code = e.run("settings", "get")
	if code == 0 || !strings.Contains(out, "unreadable") || !strings.Contains(out, "EISDIR") || strings.Contains(out, "wrong type") {
		t.Fatalf("settings get with a directory as inquest.toml: exit %d\n%s", code, out)
	}
}

// TestLogShowUnreadableFile runs the built binary: `inquest log show` on a
// recording this user may not read is PERMISSION_DENIED naming the file
// and EACCES (not INVALID_ARGUMENT), as docs/errors.md says.
func TestLogShowUnreadableFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	p := filepath.Join(e.base, "secret.log")
	if err := os.WriteFile(p, []byte("not readable"), 0o000); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		os.Chmod(filepath.Dir(e.base), 0o711)
		os.Chmod(e.base, 0o711)
	}
	out, code := runAsOther(t, e, "log", "show", p)
	if code != 1 || !strings.Contains(out, "PERMISSION_DENIED") || !strings.Contains(out, "EACCES") {
		t.Fatalf("log show on an unreadable file: exit %d\n%s", code, out)
	}
}
