package tea

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is the renderer's terminal: what it wrote, read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until out holds want; the bound only catches a renderer
// that never draws.
func waitFor(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the renderer never drew %q; wrote %q", want, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRendererDrawsOnWriteOnly checks the renderer that wakes on a write:
// each new view is drawn (the last of a burst included), a view equal to
// the frame on the terminal leaves no wake pending and draws nothing, and
// a repaint draws the same view again.
func TestRendererDrawsOnWriteOnly(t *testing.T) {
	tests := []struct {
		name   string
		views  []string // written in a burst, one after the other
		repeat bool     // write the last view again once it is drawn
		paint  bool     // repaint, then write the last view again
	}{
		{name: "one view", views: []string{"first view"}},
		{name: "burst: the last is drawn", views: []string{"a1", "a2", "a3 last"}},
		{name: "same view again", views: []string{"unchanged view"}, repeat: true},
		{name: "repaint draws it again", views: []string{"painted view"}, paint: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &lockedBuffer{}
			r := newRenderer(out, false, 20).(*standardRenderer)
			r.start()
			defer r.kill()
			for _, v := range tt.views {
				r.write(v)
			}
			last := tt.views[len(tt.views)-1]
			waitFor(t, out, last)
			drawn := out.String()
			switch {
			case tt.repeat:
				r.write(last)
				r.mtx.Lock()
				pending := len(r.kick)
				r.mtx.Unlock()
				if pending != 0 {
					t.Fatalf("writing the view on the terminal again left a wake pending")
				}
				r.flush()
				if got := out.String(); got != drawn {
					t.Fatalf("the same view was drawn again: %q after %q", got, drawn)
				}
			case tt.paint:
				r.mtx.Lock()
				r.repaint()
				r.mtx.Unlock()
				r.write(last)
				deadline := time.Now().Add(10 * time.Second)
				for strings.Count(out.String(), last) < 2 {
					if time.Now().After(deadline) {
						t.Fatalf("after a repaint the view was not drawn again; wrote %q", out.String())
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
}
