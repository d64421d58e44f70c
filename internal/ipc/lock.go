package ipc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Lock file names inside Dir().
const (
	// HostLockName is held (exclusive) by the running host for its whole
	// life: one host per user. It holds the host's pid as text.
	HostLockName = "host.lock"
	// LaunchLockName is the launch marker: a bridge about to start a host
	// holds it until the host answers or the startup deadline passes, so
	// concurrent bridges start one host (docs/host.md, "Startup and failures").
	LaunchLockName = "launch.lock"
)

// ErrHostRunning is returned by AcquireHostLock when another host holds the
// lock; HostRunningError carries its pid.
var ErrHostRunning = errors.New("ipc: a host is already running for this user")

// HostRunningError reports the pid written by the running host (0 when
// unreadable).
type HostRunningError struct{ PID int }

func (e *HostRunningError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%v (pid %d)", ErrHostRunning, e.PID)
	}
	return ErrHostRunning.Error()
}

// Unwrap makes errors.Is(err, ErrHostRunning) true.
func (e *HostRunningError) Unwrap() error { return ErrHostRunning }

// HostLock is the held single-instance lock of a host.
type HostLock struct{ f *os.File }

// AcquireHostLock takes the host lock in dir (created 0700 and checked by
// PrepareDir), retrying for up to wait (a bridge probing the lock holds it
// shared for an instant). It records this process's pid in the file.
func AcquireHostLock(dir string, wait time.Duration) (*HostLock, error) {
	if err := PrepareDir(dir, true); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, HostLockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := tryLock(f, true)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			pid := readPID(p)
			f.Close()
			return nil, &HostRunningError{PID: pid}
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	// A listener state left by a host that died is not this host's.
	os.Remove(filepath.Join(dir, StateFileName))
	return &HostLock{f: f}, nil
}

// Release unlocks and closes the lock file (process exit does the same).
func (l *HostLock) Release() {
	if l != nil && l.f != nil {
		unlock(l.f)
		l.f.Close()
		l.f = nil
	}
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// HostRunning reports whether a host holds the lock in dir, without creating
// anything (a host holding the lock is never replaced, and inspecting it
// must not create it), and the pid it recorded. An unreadable lock counts as running (never
// launch over what cannot be inspected).
func HostRunning(dir string) (bool, int, error) {
	p := filepath.Join(dir, HostLockName)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return true, 0, err
	}
	defer f.Close()
	ok, err := tryLock(f, false)
	if err != nil {
		return true, 0, err
	}
	if ok {
		unlock(f)
		return false, 0, nil
	}
	return true, readPID(p), nil
}

// AcquireLaunchMarker takes the launch marker in dir, waiting until ctx ends.
// The returned release must be called; process death releases it too.
func AcquireLaunchMarker(ctx context.Context, dir string) (release func(), err error) {
	if err := PrepareDir(dir, true); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, LaunchLockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		ok, err := tryLock(f, true)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok {
			return func() { unlock(f); f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ConfigWriterError reports that another process holds the writer claim
// of a configuration file (ClaimConfigWriter): PID is the pid it recorded
// (0 when unreadable), Path the configuration file.
type ConfigWriterError struct {
	PID  int
	Path string
}

func (e *ConfigWriterError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("the inquest host with pid %d writes %s", e.PID, e.Path)
	}
	return fmt.Sprintf("another inquest host writes %s", e.Path)
}

var (
	configWritersMu sync.Mutex
	configWriters   = map[string]*os.File{}
)

// ClaimConfigWriter makes this process the one inquest host that writes
// the investigation state of the configuration file at path (tracking
// list, active profile, profiles): it holds an exclusive lock on
// .NAME.writer.lock beside the file (created 0600, recording this pid)
// until the process exits. A host keeps in memory what it loaded, so a
// second host writing the same file would be overwritten by, and would
// overwrite, the first. Claims inside one process always succeed (its
// hosts share the lock). Another process holding it is a
// *ConfigWriterError naming its pid; other failures are returned as is.
func ClaimConfigWriter(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	configWritersMu.Lock()
	defer configWritersMu.Unlock()
	if _, ok := configWriters[abs]; ok {
		return nil
	}
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	p := filepath.Join(dir, "."+filepath.Base(abs)+".writer.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	ok, err := tryLock(f, true)
	if err != nil {
		f.Close()
		return err
	}
	if !ok {
		f.Close()
		return &ConfigWriterError{PID: readPID(p), Path: abs}
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	configWriters[abs] = f
	return nil
}

// RunningElsewhere returns the host that holds the host lock in another of
// this user's endpoint directories (Dirs() after the first), or nil. A host
// started by a client with another environment (XDG_RUNTIME_DIR set or
// not) is still this user's one host: `inquest serve` and the TUI attach
// to it or report it instead of starting a second one.
func RunningElsewhere() *HostRunningError {
	for _, d := range Dirs()[1:] {
		if running, pid, err := HostRunning(d); running && err == nil {
			return &HostRunningError{PID: pid}
		}
	}
	return nil
}
