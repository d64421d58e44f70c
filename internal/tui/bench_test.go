package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
)

// BenchmarkFrame2000 measures one refresh of the table with 2,000
// processes at 120x40: arranging (filter, sort) the new frame and drawing
// the view, as a tick does. Target: under 16 ms.
func BenchmarkFrame2000(b *testing.B) {
	for _, tree := range []bool{false, true} {
		b.Run(fmt.Sprintf("tree=%v", tree), func(b *testing.B) {
			f := &Frame{At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
			for i := 0; i < 2000; i++ {
				ppid := 1
				if i > 10 {
					ppid = 2 + i%50
				}
				f.Rows = append(f.Rows, Row{Ref: fmt.Sprint("r", i), PID: i + 1, PPID: ppid, ParentVerified: true,
					Name: fmt.Sprintf("proc-%d", i%97), State: "sleeping", Ended: i%40 == 0,
					CPU: float64(i%300) / 3, CPUOK: true, RSS: uint64(i) << 20, RSSOK: true, Threads: uint64(i % 17), ThreadsOK: true,
					IORate: float64(i * 10), IORateOK: i%3 == 0})
			}
			f.Sys = System{CPU: 50, CPUOK: true, MemTotal: 8 << 30, MemUsed: 3 << 30, MemOK: true, Cores: []float64{50, 50}}
			m := New(Options{NoColor: false})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			m.tree = tree
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Update(frameMsg{f: f})
				_ = m.View()
			}
		})
	}
}

// BenchmarkFetchLive measures one refresh's host calls (Fetch) against a
// real in-process host sampling this machine: the face's idle cost.
func BenchmarkFetchLive(b *testing.B) {
	b.Setenv("INQUEST_CONFIG", b.TempDir()+"/inquest.toml")
	h, err := host.New(host.Options{Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer h.Stop()
	s := h.NewSession()
	be := BackendFunc(func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		return h.Dispatch(ctx, s, method, args)
	})
	var prev *Frame
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := FetchParts(context.Background(), be, prev, nil, Parts{})
		if err != nil {
			b.Fatal(err)
		}
		prev = f
	}
}
