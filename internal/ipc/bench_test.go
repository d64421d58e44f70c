package ipc

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"
)

// BenchmarkRoundTrip is the transport floor: one request/response over the
// unix socket (frame, strict decode, session call, reply) to an echo
// service in this process, beside the same call made directly.
func BenchmarkRoundTrip(b *testing.B) {
	report := func(b *testing.B, call func() error) {
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
	args := json.RawMessage(`{"metric_ids":["cpu_percent"],"targets":[{"system":true}]}`)
	b.Run("direct", func(b *testing.B) {
		s := newFake().NewSession(Peer{})
		report(b, func() error { _, err := s.Call(context.Background(), "echo", args); return err })
	})
	b.Run("socket", func(b *testing.B) {
		b.Setenv("XDG_RUNTIME_DIR", b.TempDir())
		ln, err := Listen(Path())
		if err != nil {
			b.Fatal(err)
		}
		srv := NewServer(newFake(), nil)
		go srv.Serve(ln)
		defer srv.Close()
		c, err := Connect(context.Background(), ConnectOptions{BridgeVersion: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		report(b, func() error { _, err := c.Call(context.Background(), "echo", args); return err })
	})
}
