//go:build windows

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/inquest-dev/inquest/internal/ipc"
	"golang.org/x/sys/windows"
)

// serveDetached starts `inquest serve` detached from this console in a new
// process group, logging to the state directory, and waits until it holds
// the host lock (Windows has no inherited readiness pipe here).
func serveDetached(env *Env) error {
	sd, err := stateDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(sd, 0o700); err != nil {
		return err
	}
	logPath := filepath.Join(sd, "serve.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "serve")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if running, _, _ := ipc.HostRunning(ipc.Dir()); running {
			fmt.Fprintf(env.Stdout, "inquest host started (pid %d); log: %s\n", pid, logPath)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the host did not become ready within 10s (log: %s)", logPath)
}
