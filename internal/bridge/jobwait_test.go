package bridge

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tool"
)

// recordingBackend forwards to inner and records the arguments of every
// get_job it forwards; the first one is also sent on first.
type recordingBackend struct {
	inner Backend
	first chan struct{}

	mu   sync.Mutex
	jobs []map[string]any
}

func (r *recordingBackend) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	if method == "get_job" {
		var a map[string]any
		json.Unmarshal(args, &a)
		r.mu.Lock()
		r.jobs = append(r.jobs, a)
		if len(r.jobs) == 1 {
			close(r.first)
		}
		r.mu.Unlock()
	}
	return r.inner.Call(ctx, method, args)
}

func (r *recordingBackend) Close() error { return r.inner.Close() }

// TestJobDeliveryWaitsOnTheHost: completing a job call, the bridge asks
// the host to hold get_job until the job ends (wait_ms on every get_job)
// instead of polling it: a condition wait that a process started only
// once the bridge is waiting ends it, and the bridge made at most one
// get_job per waitSlice of the whole wait (polling every 20 ms would make
// one per 20 ms until the host's next sample sees the process).
func TestJobDeliveryWaitsOnTheHost(t *testing.T) {
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	h, err := host.New(host.Options{Version: "test", Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	rb := &recordingBackend{inner: &Local{Host: h, Session: h.NewSession()}, first: make(chan struct{})}
	reg := tool.NewRegistry()
	if err := reg.Add(Tools(func(context.Context) (Backend, error) { return rb, nil }, Mode{})...); err != nil {
		t.Fatal(err)
	}
	// A copy of sleep under a name no other process has.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	name := "inqjw" + strconv.Itoa(os.Getpid()%100000)
	exe := filepath.Join(t.TempDir(), name)
	copyFile(t, sleep, exe)

	d, _, err := regCall(t, reg, "wait_condition", `{"condition":"process_present","process_name":"`+name+`","timeout_ms":60000,"wait_ms":0}`)
	if err != nil || d["state"] != "running" {
		t.Fatalf("wait_condition: %v %v", d, err)
	}
	go func() {
		<-rb.first
		c := exec.Command(exe, "60")
		if err := c.Start(); err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}()
	start := time.Now()
	g, _, err := regCall(t, reg, "get_job", `{"job_id":"`+d["job_id"].(string)+`","wait_ms":10000}`)
	elapsed := time.Since(start)
	if err != nil || g["state"] != "succeeded" {
		t.Fatalf("get_job: %v %v", g, err)
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	for _, a := range rb.jobs {
		if ms, _ := a["wait_ms"].(float64); ms <= 0 {
			t.Fatalf("a get_job without a host-side wait: %v", a)
		}
	}
	if most := 1 + int(elapsed/waitSlice); len(rb.jobs) > most {
		t.Fatalf("%d get_job calls in %v (at most %d when the host holds each one)", len(rb.jobs), elapsed, most)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCancelledJobWaitKeepsTheConnection: an MCP call cancelled while the
// bridge waits for a job through a real IPC host is CANCELLED, and the
// connection with its jobs stays: the same job is still there, running,
// and the next result carries no reset warning.
func TestCancelledJobWaitKeepsTheConnection(t *testing.T) {
	startTestHost(t)
	be := NewIPC(ipc.ConnectOptions{BridgeVersion: "test", Client: ipc.ClientMCPBridge})
	defer be.Close()
	rb := &recordingBackend{inner: be, first: make(chan struct{})}
	reg := tool.NewRegistry()
	if err := reg.Add(Tools(func(context.Context) (Backend, error) { return rb, nil }, Mode{})...); err != nil {
		t.Fatal(err)
	}
	d, _, err := regCall(t, reg, "wait_condition", `{"condition":"process_present","process_name":"no-such-process-inquest-jw","timeout_ms":60000,"wait_ms":0}`)
	if err != nil || d["state"] != "running" {
		t.Fatalf("wait_condition: %v %v", d, err)
	}
	conn := be.client
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-rb.first; cancel() }()
	_, err = reg.Call(ctx, "get_job", json.RawMessage(`{"job_id":"`+d["job_id"].(string)+`","wait_ms":10000}`))
	if contract.CodeOf(err) != contract.CodeCancelled {
		t.Fatalf("cancelled wait: %v", err)
	}
	if be.client != conn {
		t.Fatal("the cancelled wait replaced the host connection")
	}
	g, res, err := regCall(t, reg, "get_job", `{"job_id":"`+d["job_id"].(string)+`","wait_ms":0}`)
	if err != nil || g["state"] != "running" || len(res.Warnings) != 0 || be.client != conn {
		t.Fatalf("the job after the cancelled wait: %v %v %v", g, err, res)
	}
}
