package ipc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// fakeLauncher "starts a host" the way `inquest serve` does: after a delay
// it takes the host lock, then listens with a fake service.
type fakeLauncher struct {
	t        *testing.T
	launches atomic.Int32
	delay    time.Duration
	mu       sync.Mutex
	stop     []func()
}

func (l *fakeLauncher) launch(ctx context.Context) error {
	l.launches.Add(1)
	go func() {
		time.Sleep(l.delay)
		lock, err := AcquireHostLock(Dir(), time.Second)
		if err != nil {
			l.t.Errorf("fake host lock: %v", err)
			return
		}
		ln, err := Listen(Path())
		if err != nil {
			l.t.Errorf("fake host listen: %v", err)
			lock.Release()
			return
		}
		srv := NewServer(newFake(), nil)
		go srv.Serve(ln)
		l.mu.Lock()
		l.stop = append(l.stop, func() { srv.Close(); lock.Release() })
		l.mu.Unlock()
	}()
	return nil
}

func (l *fakeLauncher) cleanup() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.stop {
		f()
	}
}

func TestConcurrentBridgesLaunchOnce(t *testing.T) {
	isolate(t)
	l := &fakeLauncher{t: t, delay: 300 * time.Millisecond}
	t.Cleanup(l.cleanup)
	var wg sync.WaitGroup
	ids := make(chan string, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Connect(context.Background(), ConnectOptions{Start: true, Launch: l.launch, BridgeVersion: "t"})
			if err != nil {
				t.Errorf("Connect: %v", err)
				return
			}
			ids <- c.Welcome.BackendInstanceID
			c.Close()
		}()
	}
	wg.Wait()
	close(ids)
	n := 0
	for range ids {
		n++
	}
	if n != 4 || l.launches.Load() != 1 {
		t.Fatalf("%d bridges connected, %d launches; want 4 and 1", n, l.launches.Load())
	}
}

func TestConnectWithoutStartNeverLaunches(t *testing.T) {
	isolate(t)
	l := &fakeLauncher{t: t}
	t.Cleanup(l.cleanup)
	_, err := Connect(context.Background(), ConnectOptions{Launch: l.launch})
	if contract.CodeOf(err) != contract.CodeBackendUnavailable || l.launches.Load() != 0 {
		t.Fatalf("%v, %d launches", err, l.launches.Load())
	}
}

func TestSavedDisabledNeverLaunches(t *testing.T) {
	isolate(t)
	cfg := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "inquest", "inquest.toml")
	os.MkdirAll(filepath.Dir(cfg), 0o700)
	os.WriteFile(cfg, []byte("[settings]\nmcp_connections_disabled = true\n"), 0o600)
	l := &fakeLauncher{t: t}
	t.Cleanup(l.cleanup)
	_, err := Connect(context.Background(), ConnectOptions{Start: true, Launch: l.launch})
	if contract.CodeOf(err) != contract.CodeBackendUnavailable || l.launches.Load() != 0 {
		t.Fatalf("%v, %d launches", err, l.launches.Load())
	}
	// Saved disablement needs the user's action: not retryable, and the
	// message names both remedies.
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Retryable || !strings.Contains(ce.Message, "mcp_connections_disabled false") || !strings.Contains(ce.Message, "INQUEST_IN_PROCESS=1") {
		t.Fatalf("saved disabled: %+v", ce)
	}
	// An unreadable configuration also blocks automatic startup.
	os.WriteFile(cfg, []byte("[settings\n"), 0o600)
	_, err = Connect(context.Background(), ConnectOptions{Start: true, Launch: l.launch})
	if contract.CodeOf(err) != contract.CodeBackendUnavailable || l.launches.Load() != 0 {
		t.Fatalf("broken config: %v, %d launches", err, l.launches.Load())
	}
}

// TestRunningHostWithoutListener: a host holds the lock but does not
// listen (disabled at runtime): the bridge waits out its deadline and
// never launches a second host.
func TestRunningHostWithoutListener(t *testing.T) {
	isolate(t)
	lock, err := AcquireHostLock(Dir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if running, pid, _ := HostRunning(Dir()); !running || pid != os.Getpid() {
		t.Fatalf("HostRunning = %v %d", running, pid)
	}
	if _, err := AcquireHostLock(Dir(), 100*time.Millisecond); err == nil {
		t.Fatal("a second host lock was granted")
	}
	l := &fakeLauncher{t: t}
	_, err = Connect(context.Background(), ConnectOptions{Start: true, Launch: l.launch, Deadline: time.Second})
	if contract.CodeOf(err) != contract.CodeBackendUnavailable || l.launches.Load() != 0 {
		t.Fatalf("%v, %d launches", err, l.launches.Load())
	}
	// A host that recorded why it does not listen makes bridges fail at
	// once, with that reason.
	for state, want := range map[string]string{StateDisabled: "disabled", StateFailed: "could not open"} {
		os.WriteFile(filepath.Join(Dir(), StateFileName), []byte(state+"\n"), 0o600)
		// The answer comes from the state file, not from the startup
		// deadline (whose error says "within"): no wall-clock bound needed.
		_, err = Connect(context.Background(), ConnectOptions{Start: true, Launch: l.launch})
		if contract.CodeOf(err) != contract.CodeBackendUnavailable || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "within") || l.launches.Load() != 0 {
			t.Fatalf("state %s: %v", state, err)
		}
	}
}

func TestConnectCancelledBeforeDispatch(t *testing.T) {
	isolate(t)
	ctx, cancel := context.WithCancel(context.Background())
	l := &fakeLauncher{t: t, delay: time.Hour}
	// Cancel once Connect has launched the (never ready) host and waits
	// for it, not after 200 ms: on a loaded machine Connect might not have
	// got that far, or (past its startup deadline) have given up already.
	launch := func(ctx context.Context) error {
		err := l.launch(ctx)
		cancel()
		return err
	}
	_, err := Connect(ctx, ConnectOptions{Start: true, Launch: launch})
	if contract.CodeOf(err) != contract.CodeCancelled {
		t.Fatalf("%v, want CANCELLED", err)
	}
}

// TestServerPIDMustHoldHostLock: a same-uid listener that is not the
// process holding the host lock is refused before any request.
func TestServerPIDMustHoldHostLock(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) not installed")
	}
	_, path := startServer(t, newFake())
	// Another process holds host.lock and has written its pid there.
	lockPath := filepath.Join(Dir(), HostLockName)
	holder := exec.Command(flock, "-x", lockPath, "sleep", "30")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	waitFor(t, func() bool { r, _, _ := HostRunning(Dir()); return r })
	os.WriteFile(lockPath, []byte(strconv.Itoa(holder.Process.Pid)+"\n"), 0o600)
	_, err = Connect(context.Background(), ConnectOptions{Path: path, Start: true, Launch: func(context.Context) error {
		t.Error("launched")
		return nil
	}})
	if contract.CodeOf(err) != contract.CodeBackendUnavailable || !strings.Contains(err.Error(), "host lock is held by pid") {
		t.Fatalf("%v", err)
	}
}
