package tui

import (
	"context"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/host"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

// sampleBackend is the TUI host's in-process backend as the CLI wires it:
// host methods, the process table as Go values, and the wait for the
// host's next sample.
type sampleBackend struct {
	Backend
	h *host.Host
}

func (s sampleBackend) ProcessTable(ctx context.Context, q host.ProcessTableQuery) (*host.ProcessTable, error) {
	return s.h.ProcessTable(ctx, q)
}

func (s sampleBackend) WaitSample(ctx context.Context, seq uint64) error {
	return s.h.WaitSample(ctx, seq)
}

// TestRefreshFollowsSamples checks the refresh of the TUI host: the next
// refresh comes when the host publishes its next sample (the refresh
// period here is an hour, so a timer would never fire within the test),
// and a frame fetched at a key press while a refresh is scheduled does
// not schedule a second one (two refresh chains would each fetch every
// sample).
func TestRefreshFollowsSamples(t *testing.T) {
	tests := []struct {
		name   string
		frames int // frames delivered before the refresh fires
	}{
		{name: "one frame", frames: 1},
		{name: "a key's frame beside the refresh", frames: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, b := fixture(t, 2)
			sb := sampleBackend{b, h}
			m := New(Options{Backend: sb, NoColor: true, Refresh: time.Hour})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			var ticks []tea.Cmd
			for i := 0; i < tt.frames; i++ {
				f, err := Fetch(context.Background(), sb, m.frame, nil)
				if err != nil {
					t.Fatal(err)
				}
				if f.Seq == 0 {
					t.Fatalf("the in-process table gave no snapshot sequence number")
				}
				if _, cmd := m.Update(frameMsg{f: f}); cmd != nil {
					ticks = append(ticks, cmd)
				}
			}
			if len(ticks) != 1 {
				t.Fatalf("%d frames scheduled %d refreshes, want 1", tt.frames, len(ticks))
			}
			got := make(chan tea.Msg, 1)
			go func() { got <- ticks[0]() }()
			before := h.Sampler().Latest().Seq
			if _, err := h.Sampler().Step(); err != nil {
				t.Fatal(err)
			}
			select {
			case msg := <-got:
				if _, ok := msg.(tickMsg); !ok {
					t.Fatalf("the refresh gave %T, want tickMsg", msg)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no refresh after the host's sample %d (the last frame was of %d)", before+1, before)
			}
			// The refresh fetched: the next frame schedules the next one.
			m.Update(tickMsg{})
			f, err := Fetch(context.Background(), sb, m.frame, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, cmd := m.Update(frameMsg{f: f}); cmd == nil {
				t.Fatalf("the frame after a refresh scheduled no next refresh")
			}
		})
	}
}
