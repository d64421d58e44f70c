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
	logf, logPath, err := openServeLog(sd)
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

// openServeLog opens DIR/serve.log for appending (0600), creating DIR
// (0700) when missing. DIR must be a real directory owned by this user and
// not writable by group or others; serve.log is opened with O_NOFOLLOW and
// must be a regular file of this user, so a symbolic link planted there is
// never followed. Past maxLogBytes the log is first renamed to serve.log.1
// (rename never follows a link).
func openServeLog(dir string) (*os.File, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, "", err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return nil, "", fmt.Errorf("the state directory %s is not a directory (a symbolic link?); the host log is not opened through it", dir)
	case st != nil && int(st.Uid) != os.Getuid():
		return nil, "", fmt.Errorf("the state directory %s is owned by uid %d, not by this user; the host log is not written there", dir, st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, "", fmt.Errorf("the state directory %s is writable by group or others (mode %04o); run chmod go-w on it", dir, fi.Mode().Perm())
	}
	logPath := filepath.Join(dir, "serve.log")
	if fi, err := os.Lstat(logPath); err == nil && fi.Mode().IsRegular() && fi.Size() > maxLogBytes {
		os.Rename(logPath, logPath+".1")
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("the host log %s cannot be opened (a symbolic link is never followed): %w", logPath, err)
	}
	fi, err = logf.Stat()
	st, _ = fi.Sys().(*syscall.Stat_t)
	if err != nil || !fi.Mode().IsRegular() || (st != nil && int(st.Uid) != os.Getuid()) {
		logf.Close()
		return nil, "", fmt.Errorf("the host log %s is not a regular file of this user; move it away", logPath)
	}
	return logf, logPath, nil
}
