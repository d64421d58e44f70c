//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/bridge"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGetStatusRoundTrip compares one get_status round trip over the
// shared host (IPC: unix socket, framing, a host in another process)
// against the in-process host, at two levels:
//
//   - registry: tool.Registry.Call in this process (schema validation +
//     backend), the IPC backend against `inquest serve` vs bridge.Local;
//   - mcp-stdio: a full MCP tools/call through an `inquest mcp` process
//     (Go SDK client over stdio), bridge over IPC vs `--in-process`.
//
// Run with -benchtime=1000x for the 1,000-call p50/p99 figures
// (reported as p50-us and p99-us beside ns/op).
func BenchmarkGetStatusRoundTrip(b *testing.B) {
	e := newHeEnv(b)
	for _, kv := range e.env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "XDG_") || k == "TMPDIR" {
			b.Setenv(k, v)
		}
	}
	b.Setenv("INQUEST_CONFIG", "")
	if out, code := e.run("serve", "--detach"); code != 0 {
		b.Fatalf("serve --detach: %s", out)
	}
	ctx := context.Background()

	registryOver := func(be bridge.Backend) *tool.Registry {
		reg := tool.NewRegistry()
		if err := reg.Add(bridge.Tools(func(context.Context) (bridge.Backend, error) { return be, nil }, bridge.Mode{})...); err != nil {
			b.Fatal(err)
		}
		return reg
	}
	measure := func(b *testing.B, call func() error) {
		for i := 0; i < 20; i++ { // warm up connections and caches
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		d := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if err := call(); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(t0))
		}
		b.StopTimer()
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-us")
		b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-us")
	}

	b.Run("registry/in-process", func(b *testing.B) {
		l, err := bridge.NewLocal(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		reg := registryOver(l)
		measure(b, func() error { _, err := reg.Call(ctx, "get_status", json.RawMessage(`{}`)); return err })
	})
	b.Run("registry/ipc", func(b *testing.B) {
		be := bridge.NewIPC(ipc.ConnectOptions{BridgeVersion: "bench"})
		defer be.Close()
		reg := registryOver(be)
		measure(b, func() error { _, err := reg.Call(ctx, "get_status", json.RawMessage(`{}`)); return err })
	})
	mcpOver := func(b *testing.B, args ...string) {
		br := e.bridgeArgs(args...)
		measure(b, func() error {
			res, err := br.cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_status", Arguments: map[string]any{}})
			if err == nil && res.IsError {
				b.Fatalf("get_status failed: %v", res.Content)
			}
			return err
		})
		br.cs.Close()
	}
	b.Run("mcp-stdio/in-process", func(b *testing.B) { mcpOver(b, "--in-process") })
	b.Run("mcp-stdio/ipc", func(b *testing.B) { mcpOver(b) })
}

// BenchmarkPsCommand runs `inquest ps` in this process against a warm
// `inquest serve` host, b.N times: the command's whole path after process
// start-up (runtime and registry, connect and handshake, list_processes,
// decoding and the table). Process start-up and the host's share are what
// bench/compare.sh adds; profile this side with -cpuprofile.
func BenchmarkPsCommand(b *testing.B) {
	e := newHeEnv(b)
	defer e.killHosts()
	for _, kv := range e.env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "XDG_") || k == "TMPDIR" {
			b.Setenv(k, v)
		}
	}
	b.Setenv("INQUEST_CONFIG", "")
	if out, code := e.run("serve", "--detach"); code != 0 {
		b.Fatalf("serve --detach: %s", out)
	}
	ctx := context.Background()
	run := func() {
		for {
			var out, errOut strings.Builder
			code := Run(ctx, []string{"ps"}, strings.NewReader(""), &out, &errOut)
			if code != 0 && strings.Contains(out.String(), `"BUSY"`) {
				// The host has not yet seen the previous run's connection
				// close (a separate process never comes this quickly).
				continue
			}
			if code != 0 || !strings.HasPrefix(strings.TrimSpace(out.String()), "PID") {
				b.Fatalf("inquest ps: exit %d: %s%s", code, out.String(), errOut.String())
			}
			return
		}
	}
	run() // the host's first CPU% waits for its second sample
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
}
