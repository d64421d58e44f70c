package host

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// BenchmarkListProcessesPS is the host's side of `inquest ps`: one
// list_processes call with the table's metric_ids on the latest snapshot,
// and the envelope encoded as the IPC server sends it (contract.Marshal).
// It reports the envelope's bytes and the rows per call.
func BenchmarkListProcessesPS(b *testing.B) {
	b.Setenv("INQUEST_CONFIG", filepath.Join(b.TempDir(), "inquest.toml"))
	h, err := New(Options{Version: "bench", Interval: 200 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer h.Stop()
	s := h.NewSession()
	defer s.Close()
	args := json.RawMessage(`{"sort":"pid","metric_ids":["cpu_percent","rss_bytes","threads","fd_count"]}`)
	ctx := context.Background()
	// The first call waits for the second sample (CPU% needs an interval).
	if _, err := h.Dispatch(ctx, s, "list_processes", args); err != nil {
		b.Fatal(err)
	}
	var size, rows int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := h.Dispatch(ctx, s, "list_processes", args)
		if err != nil {
			b.Fatal(err)
		}
		body, isErr := contract.Marshal(res, nil)
		if isErr {
			b.Fatalf("list_processes failed: %s", body)
		}
		size = len(body)
		if i == 0 {
			var d struct {
				Data struct {
					Rows []json.RawMessage `json:"rows"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &d); err != nil {
				b.Fatal(err)
			}
			rows = len(d.Data.Rows)
		}
	}
	b.ReportMetric(float64(size), "bytes/op")
	b.ReportMetric(float64(rows), "rows")
}
