package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/sample"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

// stepsFixture is a host replaying the given snapshots (one per Step,
// the last repeated) with the names in track tracked, so their ended
// lifetimes stay retained as ghost rows. It returns the host and a TUI
// driver after the first sample.
func stepsFixture(t *testing.T, steps [][]sample.Process, track ...string) (*host.Host, *driver) {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	c := &scripted{t0: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), steps: steps}
	h, err := host.New(host.Options{Version: "test", Collector: c, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	s := h.NewSession()
	host.MarkLocalFace(s)
	b := BackendFunc(func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		return h.Dispatch(ctx, s, method, args)
	})
	if _, err := h.Sampler().Step(); err != nil {
		t.Fatal(err)
	}
	for i, name := range track {
		res, err := call(context.Background(), b, "get_tracking", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		var tr struct {
			Revision string `json:"revision"`
		}
		decode(res, &tr)
		if _, err := call(context.Background(), b, "update_tracking", map[string]any{"operation_id": fmt.Sprintf("track-%d", i),
			"expected_revision": tr.Revision, "action": "add", "process_name": name}); err != nil {
			t.Fatal(err)
		}
	}
	return h, newDriver(t, b)
}

// step samples the next snapshot and shows it.
func (d *driver) step(h *host.Host) {
	d.t.Helper()
	if _, err := h.Sampler().Step(); err != nil {
		d.t.Fatal(err)
	}
	d.refresh()
}

func without(ps []sample.Process, pid int32) []sample.Process {
	var out []sample.Process
	for _, p := range ps {
		if p.PID != pid {
			out = append(out, p)
		}
	}
	return out
}

// When the selected process ends, the selection moves to the live row
// that takes its place (its neighbour), in CPU order, after an M sort and
// under a filter; its ghost row goes after every live row.
func TestSelectionStaysOnLiveRow(t *testing.T) {
	procs := []sample.Process{
		proc(1, 0, 1, "init", 1, 10, 1, 'S'),
		proc(201, 1, 10, "py-a", 50, 100, 1, 'R'),
		proc(202, 1, 11, "py-b", 40, 400, 1, 'R'),
		proc(203, 1, 12, "py-c", 30, 300, 1, 'R'),
		proc(204, 1, 13, "py-d", 20, 200, 1, 'R'),
	}
	cases := []struct {
		name     string
		keys     []string
		selected int32 // the PID selected before it ends
		want     int32 // the PID selected after
	}{
		{"cpu order", []string{"down"}, 202, 203},
		{"M sort", []string{"M", "down"}, 203, 204},
		{"filter", []string{"/", "p", "y", "enter", "down", "down"}, 203, 204},
		{"last live row", []string{"/", "p", "y", "enter", "end"}, 204, 203},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// the selected process ends at the second sample
			h, d := stepsFixture(t, [][]sample.Process{procs, without(procs, tc.selected)}, "py-a", "py-b", "py-c", "py-d")
			d.keys(tc.keys...)
			if r := d.m.selected(); r == nil || int32(r.PID) != tc.selected {
				t.Fatalf("before: selected %+v, want pid %d:\n%s", r, tc.selected, d.m.View())
			}
			d.step(h)
			r := d.m.selected()
			if r == nil || r.Ended || int32(r.PID) != tc.want {
				t.Fatalf("after pid %d ended: selected %+v, want live pid %d:\n%s", tc.selected, r, tc.want, d.m.View())
			}
			last := d.m.rows[len(d.m.rows)-1].r
			if !last.Ended || int32(last.PID) != tc.selected {
				t.Fatalf("the ended lifetime is not the last row:\n%s", d.m.View())
			}
		})
	}
}

// At start-up, and until the person moves it, the selection is the top
// row, also when the order changes between samples.
func TestStartupSelectsTopRow(t *testing.T) {
	a := []sample.Process{proc(1, 0, 1, "init", 1, 10, 1, 'S'), proc(10, 1, 2, "busy", 5, 10, 1, 'R'), proc(11, 1, 3, "calm", 50, 10, 1, 'S')}
	b := []sample.Process{proc(1, 0, 1, "init", 1, 10, 1, 'S'), proc(10, 1, 2, "busy", 90, 10, 1, 'R'), proc(11, 1, 3, "calm", 1, 10, 1, 'S')}
	h, d := stepsFixture(t, [][]sample.Process{a, b})
	if r := d.m.selected(); r == nil || r.Name != "calm" || d.m.sel != 0 {
		t.Fatalf("start-up selection %+v:\n%s", r, d.m.View())
	}
	d.step(h)
	if r := d.m.selected(); r == nil || r.Name != "busy" || d.m.sel != 0 {
		t.Fatalf("after the order changed, selection %+v is not the top row:\n%s", r, d.m.View())
	}
	// once moved, it follows the process
	d.keys("down", "up")
	d.step(h)
	if r := d.m.selected(); r == nil || r.Name != "busy" {
		t.Fatalf("moved selection %+v", r)
	}
}

// Ended lifetimes never push live matches off the screen: with far more
// ghost rows than fit, every live match of a filter shows, first.
func TestGhostsNeverHideLiveRows(t *testing.T) {
	var first []sample.Process
	first = append(first, proc(1, 0, 1, "init", 1, 10, 1, 'S'))
	for i := int32(0); i < 40; i++ {
		first = append(first, proc(100+i, 1, uint64(10+i), "py-gone", 30, 10, 1, 'S'))
	}
	live := []sample.Process{proc(1, 0, 1, "init", 1, 10, 1, 'S')}
	for i := int32(0); i < 3; i++ {
		live = append(live, proc(900+i, 1, uint64(100+i), "py-live", 1, 10, 1, 'S'))
	}
	h, d := stepsFixture(t, [][]sample.Process{first, live}, "py-gone")
	d.m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	d.keys("end") // the selection at the bottom, among the rows that will end
	d.step(h)
	for _, ks := range [][]string{{"#"}, {"/", "p", "y", "enter"}, {"M"}, {"N", "N"}} {
		d.keys(ks...)
		v := d.m.View()
		for i := 0; i < 3; i++ {
			if !strings.Contains(v, fmt.Sprintf("%d root", 900+i)) {
				t.Fatalf("after %q live pid %d is off the screen:\n%s", ks, 900+i, v)
			}
		}
		if r := d.m.selected(); r == nil || r.Ended {
			t.Fatalf("after %q the selection is on an ended row: %+v\n%s", ks, r, v)
		}
	}
}

// The htop function keys: F1 help, F3 search, F4 filter, F5 tree, F6 the
// sort menu, F9 (and k) say the monitor is read-only, F10 quits.
func TestHtopFunctionKeys(t *testing.T) {
	_, d := stepsFixture(t, [][]sample.Process{{
		proc(1, 0, 1, "init", 1, 10, 1, 'S'), proc(100, 1, 2, "bash", 5, 10, 1, 'S'),
		proc(101, 100, 3, "worker", 50, 300, 4, 'R'), proc(102, 1, 4, "postgres", 10, 900, 9, 'S'),
	}})
	d.keys("f1")
	if d.m.mode != modeHelp || !strings.Contains(strings.ToLower(d.m.View()), "read-only") {
		t.Fatalf("F1:\n%s", d.m.View())
	}
	d.keys("f1")
	d.keys("f3", "p", "o", "s")
	if r := d.m.selected(); d.m.mode != modeSearch || r == nil || r.Name != "postgres" || !strings.Contains(d.m.View(), "Search: pos") {
		t.Fatalf("F3 pos: %+v\n%s", r, d.m.View())
	}
	d.keys("x")
	if !strings.Contains(d.m.View(), "not found") {
		t.Fatalf("F3 with no match:\n%s", d.m.View())
	}
	d.keys("backspace", "esc")
	if r := d.m.selected(); d.m.mode != modeTable || r == nil || r.Name != "postgres" || len(d.m.rows) != 4 {
		t.Fatalf("Esc after search: %+v rows %d", r, len(d.m.rows))
	}
	d.keys("f4", "b", "a", "f4")
	if d.m.mode != modeTable || d.m.filter != "ba" || len(d.m.rows) != 1 {
		t.Fatalf("F4 filter %q rows %d", d.m.filter, len(d.m.rows))
	}
	d.keys("esc", "f5", "#")
	if !d.m.tree || !strings.Contains(d.m.View(), "└─ worker") {
		t.Fatalf("F5 tree:\n%s", d.m.View())
	}
	d.keys("f5", "f6")
	if d.m.mode != modeSortMenu || !strings.Contains(d.m.View(), "Sort by") {
		t.Fatalf("F6:\n%s", d.m.View())
	}
	golden(t, "sort_menu", d.m.View())
	d.keys("home", "down", "enter") // MEM
	if d.m.mode != modeTable || d.m.sortKey != SortMem || d.m.rows[0].r.Name != "postgres" {
		t.Fatalf("F6 Down Enter: sort %v, top %s", d.m.sortKey, d.m.rows[0].r.Name)
	}
	for _, k := range []string{"f9", "k"} {
		d.keys(k)
		if v := d.m.View(); !strings.Contains(v, "read-only monitor: no kill or renice") {
			t.Fatalf("%s:\n%s", k, v)
		}
	}
	_, cmd := d.m.Update(tea.KeyMsg{Type: tea.KeyF10})
	if cmd == nil || cmd() != tea.Quit() {
		t.Fatal("F10 does not quit")
	}
}

// The footer shows the most important keys first and whole keys only: at
// any width q:quit comes first; at 80 columns quit, help, filter and sort.
func TestFooterFitsAnyWidth(t *testing.T) {
	h, b := fixture(t, 3)
	_ = h
	d := newDriver(t, b)
	for w := 6; w <= 200; w++ {
		d.m.Update(tea.WindowSizeMsg{Width: w, Height: 24})
		for _, filter := range []string{"", "a-very-long-filter-text-indeed"} {
			d.m.filter = filter
			d.m.rearrange()
			f := d.m.footer()
			if !strings.HasPrefix(f, "q:quit") || len([]rune(f)) > w || strings.HasSuffix(f, " ") {
				t.Fatalf("width %d: footer %q", w, f)
			}
			for _, part := range strings.Fields(f) {
				if strings.HasSuffix(part, "…") && !strings.HasPrefix(part, "[filter") {
					t.Fatalf("width %d: a key cut: %q", w, f)
				}
			}
		}
	}
	d.m.filter = ""
	d.m.rearrange()
	d.m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	if f := d.m.footer(); !strings.HasPrefix(f, "q:quit ?:help /:filter F6:sort") {
		t.Fatalf("80 columns: %q", f)
	}
}

// CPU% is per core by default, as htop shows it (the host's share of all
// cores times the core count: 57% of 2 cores is 114%); the Settings
// switch shows the share of all cores, headed ALL%.
func TestCPUPerCoreAndShareSetting(t *testing.T) {
	_, b := fixture(t, 3)
	d := newDriver(t, b)
	w := d.m.rows[0].r
	if w.Name != "worker" || len(d.m.frame.Sys.Cores) != 2 {
		t.Fatalf("fixture: %+v cores %v", w, d.m.frame.Sys.Cores)
	}
	line := func() string {
		for _, l := range strings.Split(d.m.View(), "\n") {
			if strings.Contains(l, "worker") {
				return l
			}
		}
		return ""
	}
	if want := fmt.Sprintf(" %.1f ", w.CPU*2); !strings.Contains(line(), want) || !strings.Contains(d.m.View(), "CPU%▼") {
		t.Fatalf("per core: want %q in %q", want, line())
	}
	d.keys("S", "c")
	if !strings.Contains(d.m.View(), "[x] CPU% as a share of all cores") {
		t.Fatalf("setting:\n%s", d.m.View())
	}
	d.keys("esc")
	if want := fmt.Sprintf(" %.1f ", w.CPU); !strings.Contains(line(), want) || !strings.Contains(d.m.View(), "ALL%▼") {
		t.Fatalf("share of all cores: want %q in %q\n%s", want, line(), d.m.View())
	}
}

// Text from processes is escaped: control characters (C0, C1) and bidi
// controls can neither move the cursor nor reorder the screen.
func TestEscapeText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"worker", "worker"},
		{"名前", "名前"},
		{"a\tb\nc\r", `a\tb\nc\r`},
		{"\x1b[2Jevil\x07", `\x1b[2Jevil\x07`},
		{"x\u0085y\u009b", `x\u0085y\u009b`},
		{"invoice\u202efdp.exe", `invoice\u202efdp.exe`},
		{"\u2066a\u2069\u200e\u061c", `\u2066a\u2069\u200e\u061c`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"\x7f", `\x7f`},
		{"\uFFFD", "\uFFFD"},
	}
	for _, tc := range cases {
		if got := escapeText(tc.in); got != tc.want {
			t.Errorf("escapeText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	_, d := stepsFixture(t, [][]sample.Process{{
		proc(1, 0, 1, "init", 1, 10, 1, 'S'), proc(66, 1, 2, "ev\x1b]0;x\x07\u202eil", 5, 10, 1, 'S'),
	}})
	d.keys("enter")
	v := d.m.View()
	if strings.ContainsAny(v, "\x1b\x07\u202e") || strings.Count(v, `ev\x1b]0;x\x07\u202eil`) != 2 {
		t.Fatalf("name not escaped in the table and the detail:\n%q", v)
	}
}

// The notices read as sentences.
func TestAddedNotice(t *testing.T) {
	cases := []struct {
		added, present []any
		want           string
	}{
		{[]any{"g1"}, []any{}, "graph g1 added; g opens the graphs"},
		{[]any{"g1", "g2"}, nil, "graphs g1 and g2 added; g opens the graphs"},
		{[]any{"g1", "g2", "g3"}, []any{"g0"}, "graphs g1, g2 and g3 added, graph g0 was already there; g opens the graphs"},
		{nil, []any{"g1", "g2"}, "graphs g1 and g2 were already there; g opens the graphs"},
	}
	for _, tc := range cases {
		if got := addedNotice(tc.added, tc.present); got != tc.want {
			t.Errorf("addedNotice(%v, %v) = %q, want %q", tc.added, tc.present, got, tc.want)
		}
	}
}

// cpuTime spells TIME+ as htop does.
func TestCPUTime(t *testing.T) {
	cases := []struct {
		ns   uint64
		want string
	}{
		{0, "0:00.00"},
		{1_230_000_000, "0:01.23"},
		{187_250_000_000, "3:07.25"},
		{(12*3600 + 4*60 + 5) * 1e9, "12h04:05"},
		{(5*86400 + 3*3600) * 1e9, "5d03h"},
	}
	for _, tc := range cases {
		if got := cpuTime(tc.ns); got != tc.want {
			t.Errorf("cpuTime(%d) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}

// rowsJSON decodes capture rows as read_capture gives them.
func rowsJSON(t *testing.T, s string) []map[string]json.RawMessage {
	t.Helper()
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// The network and open-files panes at 80 and 120 columns, from fixed
// capture rows in the host's row shape: ss's and lsof's spelling of
// addresses, never JSON; a socket without a network row keeps its
// socket:[inode]; a path holding control characters is escaped.
func TestCapturePaneGoldens(t *testing.T) {
	network := rowsJSON(t, `[
{"protocol":"tcp","local":{"address":"127.0.0.1","port":4567},"remote":{"address":"0.0.0.0","port":0},"state":"LISTEN","inode":"267528","pid":101,"owner_name":"worker"},
{"protocol":"tcp6","local":{"address":"::1","port":80},"remote":{"address":"::1","port":51234},"state":"ESTABLISHED","inode":"267529","pid":101,"owner_name":"worker"},
{"protocol":"udp","local":{"address":"0.0.0.0","port":53},"remote":{"address":"0.0.0.0","port":0},"state":"UNCONNECTED","inode":"267530","pid":101,"owner_name":"worker"},
{"protocol":"unix","local":{"path":"/run/worker.sock"},"remote":null,"state":"LISTEN","socket_type":"stream","inode":"267531","pid":101,"owner_name":"worker"},
{"protocol":"unix","local":{"path":null},"remote":null,"state":"CONNECTED","socket_type":"dgram","inode":"267532","pid":101,"owner_name":"worker"}]`)
	files := rowsJSON(t, `[
{"fd":"0","path":"/dev/null","deleted":false,"kind":"device","flags":"0100000"},
{"fd":"1","path":"/var/log/worker.log","deleted":false,"kind":"file","size_bytes":"4096","flags":"0102001","position":"4096"},
{"fd":"3","path":"socket:[267528]","deleted":false,"kind":"socket","flags":"02"},
{"fd":"4","path":"socket:[267529]","deleted":false,"kind":"socket","flags":"02"},
{"fd":"5","path":"socket:[267531]","deleted":false,"kind":"socket","flags":"02"},
{"fd":"6","path":"socket:[999999]","deleted":false,"kind":"socket","flags":"02"},
{"fd":"7","path":"/tmp/evil\u001b[2J\u202etxt","deleted":true,"kind":"file","flags":"01"},
{"fd":"8","path":"pipe:[1234]","deleted":false,"kind":"pipe"}]`)
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		for _, kind := range []string{"network", "open_files"} {
			name := fmt.Sprintf("capture_%s_%dx%d", kind, sz[0], sz[1])
			t.Run(name, func(t *testing.T) {
				_, b := fixture(t, 3)
				d := newDriver(t, b)
				d.m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
				d.keys("#", "down", "down", "enter") // worker's detail
				c := &captureView{ref: d.m.selected().Ref, kind: kind, cols: captureCols[kind], total: -1, sockets: map[string]socketName{}}
				socketNames(network, c.sockets)
				rows := network
				if kind == "open_files" {
					rows = files
				}
				c.add(&capturePage{Rows: rows, Total: len(rows)})
				d.m.capture = c
				d.m.drawn = ""
				v := d.m.View()
				checkShape(t, v, sz[0], sz[1])
				if strings.ContainsAny(v, "{}\x1b\u202e") {
					t.Fatalf("raw JSON or control characters on screen:\n%s", v)
				}
				golden(t, name, v)
			})
		}
	}
}

// An add_graphs or export_graphs still running after its wait is followed
// with get_operation to its outcome, said as the finished call says it;
// an operation that cannot be read says why.
func TestFollowOperation(t *testing.T) {
	_, b := fixture(t, 3)
	d := newDriver(t, b)
	res, err := call(context.Background(), b, "add_graphs", map[string]any{"metrics": []map[string]any{{"metric_id": "load1"}}, "wait_ms": 0})
	if err != nil {
		t.Fatal(err)
	}
	var op struct {
		ID string `json:"operation_id"`
	}
	decode(res, &op)
	if op.ID == "" {
		t.Fatalf("add_graphs gave no operation: %+v", res.Data)
	}
	msg, ok := d.m.followOperation(op.ID, func(o map[string]any) string { return addedNotice(o["added"], o["already_present"]) })().(graphMsg)
	if !ok || !strings.HasPrefix(msg.text, "graph g") || !strings.HasSuffix(msg.text, " added; g opens the graphs") || msg.ws == nil {
		t.Fatalf("followed outcome: %+v", msg)
	}
	msg = d.m.followOperation("no-such-op", nil)().(graphMsg)
	if !strings.Contains(msg.text, "operation no-such-op: ") {
		t.Fatalf("unknown operation: %q", msg.text)
	}
}

// The CPU% scale toggle is saved through SetCPUShareOfAllCores, a model
// whose saved settings say "share of all cores" opens with it, and a save
// that fails keeps the toggle for the session and says so.
func TestCPUShareSettingSaved(t *testing.T) {
	_, b := fixture(t, 3)
	saved := Settings{}
	var saveErr error
	opts := Options{Backend: b, NoColor: true,
		LoadSettings: func() (Settings, error) { return saved, nil },
		SetCPUShareOfAllCores: func(v bool) error {
			if saveErr == nil {
				saved.CPUShareOfAllCores = v
			}
			return saveErr
		}}
	d := &driver{t, New(opts)}
	d.m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	d.refresh()
	d.keys("S", "c", "esc")
	if !saved.CPUShareOfAllCores || !strings.Contains(d.m.View(), "ALL%") {
		t.Fatalf("toggle not saved: %+v\n%s", saved, d.m.View())
	}
	d2 := &driver{t, New(opts)}
	d2.m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	d2.refresh()
	if !strings.Contains(d2.m.View(), "ALL%▼") {
		t.Fatalf("a new model did not open with the saved scale:\n%s", d2.m.View())
	}
	saveErr = errors.New("read-only file system")
	d2.keys("S", "c")
	if v := d2.m.View(); !strings.Contains(v, "[ ] CPU% as a share of all cores") || !strings.Contains(v, "not saved (this session only): read-only file system") {
		t.Fatalf("failed save:\n%s", v)
	}
	if !saved.CPUShareOfAllCores {
		t.Fatal("a failed save changed the saved value")
	}
}
