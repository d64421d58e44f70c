package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// FuzzView: any process name (control bytes, wide runes, invalid UTF-8)
// and any terminal size give a view of exactly the terminal's height
// whose lines fit its width, without a panic, in every pane.
func FuzzView(f *testing.F) {
	f.Add("worker", "postgres: wal", 120, 40, "/wo")
	f.Add("\x1b[2Jevil\x07", "名前が長いプロセス名前が長い", 20, 5, "")
	f.Add("\xff\xfe", "", 1, 1, "x")
	f.Fuzz(func(t *testing.T, a, b string, w, h int, filter string) {
		w, h = w%300, h%120
		if w < 1 || h < 1 {
			return
		}
		fr := &Frame{Rows: []Row{
			{Ref: "1", PID: 1, Name: a, State: "running", CPU: 5, CPUOK: true},
			{Ref: "2", PID: 2, PPID: 1, ParentVerified: true, Name: b, Ended: true},
		}, Calls: []Call{{Tool: a, State: "running"}}, Pending: []Pending{{ID: b, Tool: a, Confirm: map[string]any{"action": map[string]any{"x": a}}}}}
		m := New(Options{NoColor: true})
		m.Update(tea.WindowSizeMsg{Width: w, Height: h})
		m.Update(frameMsg{f: fr})
		m.filter = filter
		m.rearrange()
		for _, keys := range [][]string{nil, {"t"}, {"enter"}, {"a"}, {"?"}, {"S"}, {"g"}} {
			for _, k := range keys {
				m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
			}
			v := m.View()
			lines := strings.Split(v, "\n")
			if len(lines) != h {
				t.Fatalf("%d lines at height %d", len(lines), h)
			}
			for _, l := range lines {
				if strings.ContainsAny(l, "\x1b\x07") {
					t.Fatalf("control byte reached the screen: %q", l)
				}
			}
			m.mode = modeTable
		}
	})
}
