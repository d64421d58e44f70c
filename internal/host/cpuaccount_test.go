package host

import (
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/history"
)

// startedIn: a lifetime first seen inside the window started there only
// when its start time (where known) is not long before the window; one
// that ran long before its first sample (the host started later) did not.
func TestStartedIn(t *testing.T) {
	win := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	ms := win.UnixMilli()
	for _, c := range []struct {
		name          string
		first, start  time.Time
		samples, ring int
		want          bool
	}{
		{"first seen and started inside", win.Add(3 * time.Second), win.Add(2 * time.Second), 5, 120, true},
		{"start time unknown", win.Add(3 * time.Second), time.Time{}, 5, 120, true},
		{"start rounded just before the window", win.Add(time.Second), win.Add(-500 * time.Millisecond), 5, 120, true},
		{"ran for hours before its first sample", win.Add(3 * time.Second), win.Add(-3 * time.Hour), 5, 120, false},
		{"seen at the window's start", win, win.Add(-time.Hour), 5, 120, false},
		{"ring full: first sample dropped", win.Add(3 * time.Second), win.Add(2 * time.Second), 120, 120, false},
	} {
		lv := history.LifetimeView{Lifetime: history.Lifetime{From: c.first, StartTime: c.start, Samples: c.samples, Capacity: c.ring}}
		if got := startedIn(&lv, ms); got != c.want {
			t.Errorf("%s: startedIn %v, want %v", c.name, got, c.want)
		}
	}
}
