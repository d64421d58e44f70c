package tui

import "fmt"

// scroll is the one scrolling window every pane of the TUI pages with:
// the process table, the capture panes, help, settings, the agent
// activity pane, the Tracking and profiles pane, the Saved recordings
// list, the graphs and the confirmation overlay. Top is the first item
// shown; Sel the selected item in a pane that selects (-1 in one that
// only shows lines: help, the activity pane, the confirmation details).
// The keys are the table's: Up/Down (k/j) one item, PgUp/PgDn a window,
// Home/End the ends.
type scroll struct {
	top, sel int
}

// scrollStep is how far key moves in a window of shown items over n,
// and whether key is a movement key at all ("home" and "end" move by n,
// past either end; clamp stops there).
func scrollStep(key string, n, shown int) (int, bool) {
	switch key {
	case "up", "k":
		return -1, true
	case "down", "j":
		return 1, true
	case "pgup":
		return -max(shown, 1), true
	case "pgdown", " ":
		return max(shown, 1), true
	case "home":
		return -n - 1, true
	case "end":
		return n + 1, true
	}
	return 0, false
}

// key moves the window (and the selection, in a selecting pane) for a
// movement key over n items shown `shown` at a time; it reports whether
// key was one.
func (s *scroll) key(key string, n, shown int) bool {
	d, ok := scrollStep(key, n, shown)
	if !ok {
		return false
	}
	if s.sel >= 0 {
		s.sel = max(s.sel+d, 0) // stays a selection (-1 means none)
	} else {
		s.top += d
	}
	s.clamp(n, shown)
	return true
}

// clamp keeps the selection on an item (0 when there are none) and the
// window inside the items, holding the selection: a window never starts
// past the point where the last item is at its bottom.
func (s *scroll) clamp(n, shown int) {
	shown = max(shown, 1)
	if s.sel >= 0 {
		s.sel = max(min(s.sel, n-1), 0)
		s.top = follow(s.top, s.sel, shown)
	}
	s.top = max(min(s.top, n-shown), 0)
}

// follow returns the first item shown of a window of shown items that
// starts at top, moved just enough to hold item i.
func follow(top, i, shown int) int {
	if i < top {
		return i
	}
	if shown > 0 && i >= top+shown {
		return i - shown + 1
	}
	return top
}

// window returns the items shown, [from, to), of n.
func (s *scroll) window(n, shown int) (from, to int) {
	from = max(min(s.top, n), 0)
	return from, min(from+max(shown, 1), n)
}

// position is the line every paged pane shows when its items do not all
// fit: "rows 21–40 of 60" (noun "rows", "lines", "graphs"...); "" when
// all n fit in shown.
func (s *scroll) position(noun string, n, shown int) string {
	if n <= max(shown, 1) {
		return ""
	}
	from, to := s.window(n, shown)
	return fmt.Sprintf("%s %d–%d of %d", noun, from+1, to, n)
}
