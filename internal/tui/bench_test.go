package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
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

// BenchmarkFetchLive measures one refresh's host calls (FetchParts)
// against a real in-process host sampling this machine, the face's idle
// cost, both ways in each iteration (interleaved): json reads the table
// as list_processes pages (a view's path), direct as Go values
// (host.ProcessTable, the TUI host's path). It reports json-ns and
// direct-ns per refresh and direct/json.
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
	js := BackendFunc(func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		return h.Dispatch(ctx, s, method, args)
	})
	direct := benchDirect{js, h}
	var prevJ, prevD *Frame
	var nsJ, nsD time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f, err := FetchParts(context.Background(), js, prevJ, nil, Parts{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		g, err := FetchParts(context.Background(), direct, prevD, nil, Parts{})
		if err != nil {
			b.Fatal(err)
		}
		nsJ, nsD = nsJ+t1.Sub(t0), nsD+time.Since(t1)
		prevJ, prevD = f, g
	}
	b.ReportMetric(float64(nsJ.Nanoseconds())/float64(b.N), "json-ns")
	b.ReportMetric(float64(nsD.Nanoseconds())/float64(b.N), "direct-ns")
	b.ReportMetric(float64(nsD)/float64(nsJ), "direct/json")
}

// benchDirect is the TUI host's in-process backend (tui.TableSource).
type benchDirect struct {
	BackendFunc
	h *host.Host
}

func (d benchDirect) ProcessTable(ctx context.Context, q host.ProcessTableQuery) (*host.ProcessTable, error) {
	return d.h.ProcessTable(ctx, q)
}
