package tui

import (
	"encoding/json"
	"strings"
	"testing"

	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
	"github.com/mattn/go-runewidth"
)

// FuzzView: any process name (control bytes, wide runes, invalid UTF-8)
// and any terminal size give a view of exactly the terminal's height
// whose lines fit its width, without a panic, in every pane.
func FuzzView(f *testing.F) {
	f.Add("worker", "postgres: wal", 120, 40, "/wo")
	f.Add("\x1b[2Jevil\x07", "名前が長いプロセス名前が長い", 20, 5, "")
	f.Add("\xff\xfe", "", 1, 1, "x")
	f.Add("a\u202eb", "\u2066c\u0085", 80, 24, "a")
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
		fkeys := map[string]tea.KeyType{"F3": tea.KeyF3, "F6": tea.KeyF6, "F9": tea.KeyF9, "F4": tea.KeyF4}
		for _, keys := range [][]string{nil, {"t"}, {"enter"}, {"a"}, {"?"}, {"S"}, {"g"}, {"o"}, {"o", "+", "x"}, {"L"},
			{"F3", "w"}, {"F6"}, {"F9"}, {"c"}, {"F4", "p"}, {"S", "c"}} {
			for _, k := range keys {
				if ft, ok := fkeys[k]; ok {
					m.Update(tea.KeyMsg{Type: ft})
					continue
				}
				m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
			}
			// every pane pages: its movement keys, at any size
			for _, k := range []tea.KeyType{tea.KeyEnd, tea.KeyPgDown, tea.KeyUp, tea.KeyPgUp, tea.KeyHome, tea.KeyDown, tea.KeyShiftTab} {
				m.Update(tea.KeyMsg{Type: k})
				m.View()
			}
			v := m.View()
			lines := strings.Split(v, "\n")
			if len(lines) != h {
				t.Fatalf("%d lines at height %d", len(lines), h)
			}
			for _, l := range lines {
				if strings.ContainsAny(l, "\x1b\x07\u202e\u2066") {
					t.Fatalf("control byte reached the screen: %q", l)
				}
			}
			m.mode = modeTable
		}
		// a capture pane whose cells hold the names (a path may hold any
		// byte), scrolled; help scrolled
		m.detail = true
		m.capture = &captureView{ref: "1", kind: "open_files", cols: captureCols["open_files"], total: -1}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		next := "c"
		m.capture.add(&capturePage{Rows: []map[string]json.RawMessage{{"fd": ja, "kind": jb, "path": ja}, {"fd": json.RawMessage("3"), "path": jb}}, Next: &next, Total: -1})
		for _, k := range []tea.KeyMsg{{Type: tea.KeyDown}, {Type: tea.KeyPgDown}, {Type: tea.KeyHome}, {Type: tea.KeyRunes, Runes: []rune("?")}, {Type: tea.KeyPgDown}, {Type: tea.KeyEnd}} {
			if k.Type == tea.KeyRunes {
				m.capture.fetching = false
			}
			m.Update(k)
			v := m.View()
			lines := strings.Split(v, "\n")
			if len(lines) != h {
				t.Fatalf("%d lines at height %d", len(lines), h)
			}
			for _, l := range lines {
				if strings.ContainsAny(l, "\x1b\x07") {
					t.Fatalf("control byte reached the screen: %q", l)
				}
				if n := runewidth.StringWidth(l); n > w {
					t.Fatalf("line of %d cells at width %d: %q\n%q", n, w, l, v)
				}
			}
		}
	})
}

// FuzzFit: fit and rfit give exactly w cells for any text, and their
// printable-ASCII fast path gives what the general (grapheme-aware) path
// gives.
func FuzzFit(f *testing.F) {
	f.Add("worker", 10)
	f.Add("a long process name that is cut", 8)
	f.Add("名前", 3)
	f.Add("\x1b[2J\xff", 4)
	f.Add("evil\u202eexe.txt\u0085", 20)
	f.Fuzz(func(t *testing.T, s string, w int) {
		w %= 400
		if w < 1 {
			return
		}
		got := fit(s, w)
		if n := runewidth.StringWidth(got); n != w {
			t.Fatalf("fit(%q, %d) is %d cells: %q", s, w, n, got)
		}
		for _, r := range got {
			if needsEscape(r) {
				t.Fatalf("fit(%q, %d) keeps control or bidi character %U: %q", s, w, r, got)
			}
		}
		if r := rfit(s, w); runewidth.StringWidth(r) > w {
			t.Fatalf("rfit(%q, %d) is %d cells", s, w, runewidth.StringWidth(r))
		}
		if !printableASCII(s) {
			return
		}
		want := s
		if runewidth.StringWidth(want) > w {
			want = runewidth.Truncate(want, w, "…")
		}
		if want = runewidth.FillRight(want, w); got != want {
			t.Fatalf("fit(%q, %d) = %q, the general path gives %q", s, w, got, want)
		}
		rwant := s
		if runewidth.StringWidth(rwant) > w {
			rwant = runewidth.Truncate(rwant, w, "")
		}
		rwant = strings.Repeat(" ", w-runewidth.StringWidth(rwant)) + rwant
		if r := rfit(s, w); r != rwant {
			t.Fatalf("rfit(%q, %d) = %q, the general path gives %q", s, w, r, rwant)
		}
	})
}

// FuzzCaptureCells: any capture row JSON (addresses, paths, states of any
// shape) gives cells without control or bidi characters and never panics;
// escapeText output never needs escaping again.
func FuzzCaptureCells(f *testing.F) {
	f.Add("network", `{"protocol":"tcp6","local":{"address":"::1","port":80},"remote":{"address":"::","port":0},"state":"LISTEN","inode":"1"}`)
	f.Add("network", `{"protocol":"unix","local":{"path":"/run/\u001b[2J"},"remote":null,"state":"CONNECTED","socket_type":"dgram","inode":"2"}`)
	f.Add("open_files", `{"fd":"3","path":"socket:[1]","kind":"socket","flags":"02"}`)
	f.Add("open_files", `{"fd":"4","path":"/tmp/a\u202eb","kind":"file","flags":"zz","deleted":true}`)
	f.Add("threads", `{"tid":1,"name":"\u0085x"}`)
	f.Add("network", `{"protocol":"\u001b]0;x","state":"\u202e","inode":"3","local":{"address":"\u0007","port":1}}`)
	f.Fuzz(func(t *testing.T, kind, row string) {
		var r map[string]json.RawMessage
		if json.Unmarshal([]byte(row), &r) != nil {
			return
		}
		sockets := map[string]socketName{}
		socketNames([]map[string]json.RawMessage{r}, sockets)
		cells := captureCells(kind, captureCols[kind], r, sockets)
		for _, s := range sockets {
			cells = append(cells, s.typ, s.name)
		}
		for _, c := range cells {
			for _, ch := range c {
				if needsEscape(ch) {
					t.Fatalf("cell %q of %s row %s holds %U", c, kind, row, ch)
				}
			}
			if escapeText(c) != c {
				t.Fatalf("cell %q is escaped twice differently", c)
			}
		}
	})
}
