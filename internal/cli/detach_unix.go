//go:build unix

package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// detachReadyTimeout bounds the wait of `serve --detach` for its host.
const detachReadyTimeout = 10 * time.Second

// maxLogBytes is the serve.log size at which the next detached start
// rotates it to serve.log.1.
const maxLogBytes = 8 << 20

// serveDetached starts `inquest serve` in a new session (setsid: its own
// session and process group, no controlling terminal), stdin from
// /dev/null, stdout and stderr appended to $XDG_STATE_HOME/inquest/serve.log,
// and waits for its readiness line on an inherited pipe.
func serveDetached(env *Env) error {
	sd, err := stateDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(sd, 0o700); err != nil {
		return err
	}
	logPath := filepath.Join(sd, "serve.log")
	// Keep the log bounded: past 8 MiB the old log becomes serve.log.1.
	if fi, err := os.Stat(logPath); err == nil && fi.Size() > maxLogBytes {
		os.Rename(logPath, logPath+".1")
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(exe, "serve")
	cmd.Env = append(os.Environ(), readyFDEnv+"=3")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		kind, rest, _ := strings.Cut(s, " ")
		switch kind {
		case "ready":
			fmt.Fprintf(env.Stdout, "inquest host started (pid %s); log: %s\n", rest, logPath)
			return nil
		case "exists":
			fmt.Fprintf(env.Stdout, "an inquest host is already running (pid %s)\n", rest)
			return nil
		case "error":
			return fmt.Errorf("the host did not start: %s (log: %s)", rest, logPath)
		}
		return fmt.Errorf("the host exited before it was ready (log: %s)", logPath)
	case <-time.After(detachReadyTimeout):
		return fmt.Errorf("the host did not report readiness within %s (pid %d; log: %s)", detachReadyTimeout, cmd.Process.Pid, logPath)
	}
}
