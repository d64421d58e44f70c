//go:build linux

package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// BenchmarkCallAgedHost measures the MCP call latency a bridge adds (a tool
// call through tool.Registry, the IPC backend, the unix socket, framing
// and the host's session) against the same call made in process
// (bridge.Local), on one host, interleaved call by call, first on a fresh
// host and then after aging it: an hour of samples for every live
// process, 256 tracked lifetimes with an hour of samples each and 4,000
// short untracked lifetimes that end, all through the store's own Apply.
// Identity pruning then leaves the retained maximum of ended lifetimes.
//
// It reports p50 of each side and their difference (p50 ipc minus p50
// in-process, in µs) per call; the figure the host's age must not move.
// Run with -benchtime=400x for stable medians.
func BenchmarkCallAgedHost(b *testing.B) {
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		b.Setenv(k, b.TempDir())
	}
	b.Setenv("INQUEST_CONFIG", "")
	h, err := host.New(host.Options{Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer h.Stop()
	ep := ipc.NewHostEndpoint(h.IPCService(), "", nil)
	if err := ep.Enable(); err != nil {
		b.Fatal(err)
	}
	defer ep.Disable()
	local := &Local{Host: h, Session: h.NewSession()}
	defer local.Close()
	remote := NewIPC(ipc.ConnectOptions{BridgeVersion: "bench"})
	defer remote.Close()
	over := func(be Backend) *tool.Registry {
		reg := tool.NewRegistry()
		if err := reg.Add(Tools(func(context.Context) (Backend, error) { return be, nil }, Mode{})...); err != nil {
			b.Fatal(err)
		}
		return reg
	}
	regs := [2]*tool.Registry{over(local), over(remote)}
	ctx := context.Background()
	calls := []struct{ name, args string }{
		{"get_status", `{}`},
		{"list_processes", `{"limit":20}`},
	}
	measure := func(b *testing.B, name, args string) {
		call := func(side int) time.Duration {
			t0 := time.Now()
			if _, err := regs[side].Call(ctx, name, json.RawMessage(args)); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			return time.Since(t0)
		}
		for i := 0; i < 10; i++ {
			call(0)
			call(1)
		}
		var d [2][]time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			first := i % 2 // alternate which side goes first
			d[first] = append(d[first], call(first))
			d[1-first] = append(d[1-first], call(1-first))
		}
		b.StopTimer()
		p50 := func(x []time.Duration) float64 {
			sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
			return float64(x[len(x)/2].Nanoseconds()) / 1e3
		}
		l, r := p50(d[0]), p50(d[1])
		b.ReportMetric(l, "p50-inprocess-us")
		b.ReportMetric(r, "p50-ipc-us")
		b.ReportMetric(r-l, "added-us")
		b.ReportMetric(float64(len(h.HistoryStore().Lifetimes())), "retained-lifetimes")
	}
	for _, c := range calls {
		b.Run("fresh/"+c.name, func(b *testing.B) { measure(b, c.name, c.args) })
	}
	ageHost(b, h)
	for _, c := range calls {
		b.Run("aged/"+c.name, func(b *testing.B) { measure(b, c.name, c.args) })
	}
}

// ageHost feeds h's history store an hour of snapshots ending now: the
// latest real snapshot's processes in every one (an hour of samples for
// each live lifetime), two batches of 128 tracked processes that live for
// half an hour each, then 20 batches of 200 untracked processes that
// live for 120 samples each. The fake PIDs are above any pid_max, so no
// real process is ever taken for one. It returns once the host's sampler
// has applied a real snapshot after them (the fakes are ended then).
func ageHost(b *testing.B, h *host.Host) {
	b.Helper()
	st := h.HistoryStore()
	st.SetTracking([]string{"aged-tracked"})
	real := h.Sampler().Latest()
	const tracked, trackedBatches, trackedLife = 128, 2, 1800
	const untracked, untrackedBatches, untrackedLife = 200, 20, 120
	total := trackedBatches*trackedLife + untrackedBatches*untrackedLife
	step := time.Hour / time.Duration(total)
	at := time.Now().Add(-time.Hour)
	pid := int32(1 << 23) // above PID_MAX_LIMIT (4,194,304)
	batch := func(n int, name string, life int) {
		procs := make([]sample.Process, 0, len(real.Procs)+n)
		procs = append(procs, real.Procs...)
		for i := 0; i < n; i++ {
			p := sample.Process{PID: pid, PPID: 1, StartTicks: uint64(pid), Name: name, Comm: name, State: 'S'}
			pid++
			procs = append(procs, p)
		}
		for k := 0; k < life; k++ {
			s := &sample.Snapshot{Time: at, Procs: procs, System: real.System}
			for i := len(real.Procs); i < len(procs); i++ {
				procs[i].Set(sample.PRSS, uint64(4096*(k+i)))
			}
			st.Apply(s)
			at = at.Add(step)
		}
	}
	for i := 0; i < trackedBatches; i++ {
		batch(tracked, "aged-tracked", trackedLife)
	}
	for i := 0; i < untrackedBatches; i++ {
		batch(untracked, fmt.Sprintf("aged-%d", i), untrackedLife)
	}
	seq := h.Sampler().Latest().Seq
	deadline := time.Now().Add(2 * time.Minute)
	for h.Sampler().Latest().Seq <= seq+1 {
		if time.Now().After(deadline) {
			b.Fatal("the sampler published no snapshot in 2 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "aged: %d retained lifetimes, %d encoded bytes\n", len(st.Lifetimes()), st.MemoryBytes())
}
