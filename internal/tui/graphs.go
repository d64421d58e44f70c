package tui

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

// GraphInfo is one graph of the host's workspace as the TUI draws it
// (read_graph_series): its label, unit and points in the visible range.
type GraphInfo struct {
	ID, Label, MetricID, Unit string
	At                        []time.Time
	Values                    []float64
	OK                        []bool
}

// Workspace is the shared graph workspace (get_graphs' workspace object).
type Workspace struct {
	Revision string
	// Source is the displayed source: "live", or "log" while the TUI shows
	// a saved recording (LogName) in Log view.
	Source, LogName string
	Paused          bool
	End             time.Time
	From            time.Time
	Seconds         int
	A, B            *time.Time
	Graphs          []GraphInfo
	ExportRange     []string

	// gen orders reads: taken from wsReads when the read started, so a
	// read that began later (after an edit was applied) replaces one that
	// began earlier, whatever order their messages arrive in. 0: unstamped.
	gen uint64
}

// wsReads stamps workspace reads (Workspace.gen); wsEdits runs one
// workspace edit and its re-read at a time, so the re-read that starts last
// reflects every edit made before it (A then B pressed together must both
// show).
var (
	wsReads atomic.Uint64
	wsEdits sync.Mutex
)

// newer reports whether ws should replace cur on screen.
func (ws *Workspace) newer(cur *Workspace) bool {
	return cur == nil || ws.gen == 0 || cur.gen == 0 || ws.gen >= cur.gen
}

type wsJSON struct {
	Revision string `json:"revision"`
	Source   string `json:"source"`
	Log      *struct {
		Name string `json:"name"`
	} `json:"log"`
	Paused  bool   `json:"display_paused"`
	End     string `json:"timestamp"`
	Visible struct {
		From    string `json:"from"`
		Seconds int    `json:"seconds"`
	} `json:"visible_range"`
	Markers *struct {
		A *string `json:"a"`
		B *string `json:"b"`
	} `json:"markers"`
	Graphs []struct {
		ID       string `json:"graph_id"`
		MetricID string `json:"metric_id"`
		Unit     string `json:"unit"`
		Label    string `json:"label"`
	} `json:"graphs"`
	Ranges []string `json:"export_ranges"`
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// fetchGraphs reads the workspace and the visible points of its graphs.
func fetchGraphs(ctx context.Context, b Backend) (*Workspace, error) {
	gen := wsReads.Add(1)
	res, err := call(ctx, b, "read_graph_series", map[string]any{})
	if err != nil {
		return nil, err
	}
	var d struct {
		WS     wsJSON `json:"workspace"`
		Series []struct {
			ID     string     `json:"graph_id"`
			At     []int64    `json:"at"`
			Values []*float64 `json:"values"`
		} `json:"series"`
	}
	if err := decode(res, &d); err != nil {
		return nil, err
	}
	ws := &Workspace{Revision: d.WS.Revision, Source: d.WS.Source, Paused: d.WS.Paused, End: parseTime(d.WS.End), From: parseTime(d.WS.Visible.From),
		Seconds: d.WS.Visible.Seconds, ExportRange: d.WS.Ranges}
	if d.WS.Log != nil {
		ws.LogName = d.WS.Log.Name
	}
	if d.WS.Markers != nil {
		if d.WS.Markers.A != nil {
			t := parseTime(*d.WS.Markers.A)
			ws.A = &t
		}
		if d.WS.Markers.B != nil {
			t := parseTime(*d.WS.Markers.B)
			ws.B = &t
		}
	}
	for i, g := range d.WS.Graphs {
		gi := GraphInfo{ID: g.ID, Label: g.Label, MetricID: g.MetricID, Unit: g.Unit}
		if i < len(d.Series) && d.Series[i].ID == g.ID {
			for k, ms := range d.Series[i].At {
				gi.At = append(gi.At, time.UnixMilli(ms).UTC())
				v := d.Series[i].Values[k]
				gi.OK = append(gi.OK, v != nil)
				if v != nil {
					gi.Values = append(gi.Values, *v)
				} else {
					gi.Values = append(gi.Values, 0)
				}
			}
		}
		ws.Graphs = append(ws.Graphs, gi)
	}
	ws.gen = gen
	return ws, nil
}

// valueAt is the graph's value at or just before t (the sample a marker
// sits on); ok false when there is none or it was not measured.
func (g *GraphInfo) valueAt(t time.Time) (float64, bool) {
	for i := len(g.At) - 1; i >= 0; i-- {
		if !g.At[i].After(t) {
			return g.Values[i], g.OK[i]
		}
	}
	return 0, false
}

// FormatValue writes v in the metric's unit.
func FormatValue(v float64, unit string) string {
	switch unit {
	case "bytes":
		if v < 0 {
			return "-" + Bytes(uint64(-v))
		}
		return Bytes(uint64(v))
	case "percent":
		return fmt.Sprintf("%.1f%%", v)
	case "nanoseconds":
		return time.Duration(int64(v)).String()
	case "seconds":
		return fmt.Sprintf("%.0fs", v)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// Braille draws points as a braille line chart of w x h cells: each cell
// holds 2x4 dots. xs are in [0,1] (left to right), ys in [0,1] (bottom
// to top); a NaN y leaves a gap. Consecutive points are joined.
func Braille(xs, ys []float64, w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	dots := make([][]bool, h*4)
	for i := range dots {
		dots[i] = make([]bool, w*2)
	}
	set := func(x, y int) {
		if x >= 0 && x < w*2 && y >= 0 && y < h*4 {
			dots[h*4-1-y][x] = true
		}
	}
	px := func(i int) (int, int) {
		return int(math.Round(xs[i] * float64(w*2-1))), int(math.Round(ys[i] * float64(h*4-1)))
	}
	prev := -1
	for i := range xs {
		if math.IsNaN(ys[i]) {
			prev = -1
			continue
		}
		x, y := px(i)
		set(x, y)
		if prev >= 0 {
			x0, y0 := px(prev)
			n := max(abs(x-x0), abs(y-y0))
			for k := 1; k < n; k++ {
				set(x0+(x-x0)*k/n, y0+(y-y0)*k/n)
			}
		}
		prev = i
	}
	// braille dot bits: (col, row) -> bit
	bit := [4][2]rune{{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}}
	out := make([]string, h)
	for r := 0; r < h; r++ {
		var sb strings.Builder
		for c := 0; c < w; c++ {
			var v rune
			for dy := 0; dy < 4; dy++ {
				for dx := 0; dx < 2; dx++ {
					if dots[r*4+dy][c*2+dx] {
						v |= bit[dy][dx]
					}
				}
			}
			if v == 0 {
				sb.WriteRune(' ')
			} else {
				sb.WriteRune(0x2800 + v)
			}
		}
		out[r] = sb.String()
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// graphMetricFor is the process metric the table's sort column graphs.
func graphMetricFor(k SortKey) string {
	switch k {
	case SortMem:
		return "rss_bytes"
	case SortThreads:
		return "threads"
	case SortIO:
		return "read_bytes"
	}
	return "cpu_percent"
}

type graphMsg struct {
	ws   *Workspace
	text string
	err  error
	// follow is the operation still running after its wait (add_graphs,
	// export_graphs): the TUI keeps reading it with get_operation and
	// says its outcome with done once it ends.
	follow string
	done   func(map[string]any) string
}

// operationFollow bounds how long a graph operation is followed after
// its wait: a hang guard only (an export of hours of history on a loaded
// machine takes long, and its outcome is still worth showing).
const operationFollow = 30 * time.Minute

// followOperation reads operation id with get_operation until it ends,
// then says its outcome (done) or failure, and re-reads the workspace.
func (m *Model) followOperation(id string, done func(map[string]any) string) tea.Cmd {
	b := m.opt.Backend
	return func() tea.Msg {
		deadline := time.Now().Add(operationFollow)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			res, err := call(ctx, b, "get_operation", map[string]any{"operation_id": id})
			cancel()
			if err != nil {
				return graphMsg{text: fmt.Sprintf("operation %s: %s", id, errText(err))}
			}
			var d map[string]any
			decode(res, &d)
			switch st, _ := d["state"].(string); st {
			case "succeeded":
				text := fmt.Sprintf("operation %s succeeded", id)
				if o, ok := d["outcome"].(map[string]any); ok && done != nil {
					text = done(o)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				ws, err := fetchGraphs(ctx, b)
				cancel()
				return graphMsg{ws: ws, text: text, err: err}
			case "pending", "running":
			default:
				msg := st
				if e, ok := d["error"].(map[string]any); ok {
					msg = fmt.Sprintf("%s %v: %v", st, e["code"], e["message"])
				}
				return graphMsg{text: fmt.Sprintf("operation %s %s", id, msg)}
			}
			if time.Now().After(deadline) {
				return graphMsg{text: fmt.Sprintf("operation %s still running after %v; get_operation reads it", id, operationFollow)}
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// graphCall runs a workspace method and re-reads the workspace.
func (m *Model) graphCall(method string, args map[string]any, done func(map[string]any) string) tea.Cmd {
	b := m.opt.Backend
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		wsEdits.Lock()
		defer wsEdits.Unlock()
		text, follow := "", ""
		if method != "" {
			res, err := call(ctx, b, method, args)
			if err != nil {
				return graphMsg{text: method + ": " + errText(err)}
			}
			var d map[string]any
			decode(res, &d)
			// add_graphs and export_graphs answer with their operation:
			// the outcome once it finished, else its state (and the TUI
			// follows it to its outcome).
			if st, _ := d["state"].(string); st == "pending" || st == "running" {
				text = fmt.Sprintf("%s still %s in the background (operation %v)", method, st, d["operation_id"])
				follow, _ = d["operation_id"].(string)
			} else if done != nil {
				if o, ok := d["outcome"].(map[string]any); ok {
					d = o
				}
				text = done(d)
			}
		}
		ws, err := fetchGraphs(ctx, b)
		return graphMsg{ws: ws, text: text, err: err, follow: follow, done: done}
	}
}

func (m *Model) addGraph(sources []map[string]any) tea.Cmd {
	return m.graphCall("add_graphs", map[string]any{"metrics": sources, "wait_ms": 10000}, func(d map[string]any) string {
		return addedNotice(d["added"], d["already_present"])
	})
}

// addedNotice says in a sentence what add_graphs did: "graph g1 added;
// g opens the graphs", "graphs g1 and g2 added", "graph g1 was already
// there".
func addedNotice(added, present any) string {
	ids := func(v any) []string {
		var out []string
		if l, ok := v.([]any); ok {
			for _, x := range l {
				out = append(out, escapeText(fmt.Sprint(x)))
			}
		}
		return out
	}
	list := func(l []string) string {
		if len(l) <= 1 {
			return strings.Join(l, "")
		}
		return strings.Join(l[:len(l)-1], ", ") + " and " + l[len(l)-1]
	}
	plural := func(l []string) string {
		if len(l) == 1 {
			return "graph " + list(l)
		}
		return "graphs " + list(l)
	}
	a, p := ids(added), ids(present)
	var parts []string
	if len(a) > 0 {
		parts = append(parts, plural(a)+" added")
	}
	if len(p) > 0 {
		verb := " was already there"
		if len(p) > 1 {
			verb = " were already there"
		}
		parts = append(parts, plural(p)+verb)
	}
	if len(parts) == 0 {
		parts = append(parts, "no graph added")
	}
	return strings.Join(parts, ", ") + "; g opens the graphs"
}

// exportCSV asks the host to write every graph to a new CSV file in the
// TUI's working directory or Options.ExportDir, made absolute on this side
// (export_graphs, the same writer MCP uses).
func (m *Model) exportCSV(rng string) tea.Cmd {
	dir, err := os.Getwd()
	if err != nil {
		return func() tea.Msg { return graphMsg{text: "export: " + err.Error()} }
	}
	if m.opt.ExportDir != "" {
		// The host requires an absolute directory: resolve a relative one
		// here, against the TUI's working directory, not the host's.
		if dir, err = filepath.Abs(m.opt.ExportDir); err != nil {
			return func() tea.Msg { return graphMsg{text: "export: " + err.Error()} }
		}
	}
	return m.graphCall("export_graphs", map[string]any{"output_directory": dir, "range": rng, "wait_ms": 10000}, func(d map[string]any) string {
		return fmt.Sprintf("exported %v rows to %v", d["rows"], d["output_path"])
	})
}

func (m *Model) workspaceEdit(args map[string]any) tea.Cmd {
	return m.graphCall("update_graph_workspace", args, nil)
}

var visibleSteps = []int{30, 60, 120, 300, 600, 1800, 3600}

func (m *Model) graphKey(s string) tea.Cmd {
	ws := m.ws
	switch s {
	case "esc", "g", "q":
		m.mode = modeTable
		return nil
	case "left", "h":
		m.cursorBack++
	case "right", "l":
		if m.cursorBack > 0 {
			m.cursorBack--
		}
	case "A", "B":
		if ws == nil {
			return nil
		}
		at := ws.End.Add(-time.Duration(m.cursorBack) * time.Second)
		action := map[string]string{"A": "marker_a", "B": "marker_b"}[s]
		return m.workspaceEdit(map[string]any{"action": action, "at": at.UTC().Format(time.RFC3339Nano)})
	case "c":
		return m.workspaceEdit(map[string]any{"action": "clear_markers"})
	case "p", " ":
		action := "pause"
		if ws != nil && ws.Paused {
			action = "resume"
		}
		return m.workspaceEdit(map[string]any{"action": action})
	case "+", "-":
		cur := DefaultVisible
		if ws != nil {
			cur = ws.Seconds
		}
		i := 0
		for i < len(visibleSteps)-1 && visibleSteps[i] < cur {
			i++
		}
		if s == "+" && i > 0 {
			i--
		} else if s == "-" && i < len(visibleSteps)-1 {
			i++
		}
		return m.workspaceEdit(map[string]any{"action": "visible", "seconds": visibleSteps[i]})
	case "d":
		if ws != nil && m.graphScr.sel < len(ws.Graphs) {
			return m.workspaceEdit(map[string]any{"action": "remove", "graph_id": ws.Graphs[m.graphScr.sel].ID})
		}
	case "s":
		return m.addGraph([]map[string]any{{"metric_id": "system_cpu_percent"}, {"metric_id": "memory_used_bytes"}})
	case "x":
		return m.exportCSV("all")
	case "X":
		return m.exportCSV("ab")
	default:
		// Up/Down, PgUp/PgDn, Home/End select a graph; the view moves
		// the window of graphs to hold it.
		if ws != nil {
			_, shown := m.graphsLayout(len(ws.Graphs))
			m.graphScr.key(s, len(ws.Graphs), shown)
		}
	}
	return nil
}

// DefaultVisible is the visible range (seconds) before the host reports one.
const DefaultVisible = 120

// graphsView draws the workspace: per graph a title with the last value
// and A/B values and delta, a braille chart with a y axis (unit) and a
// shared time axis with the cursor and markers.
func (m *Model) graphsView(w, h int) []string {
	ws := m.ws
	var lines []string
	add := func(s string) { lines = append(lines, fit(s, w)) }
	if ws == nil {
		add("Graphs: loading...")
		return lines
	}
	state := "live"
	if ws.Source == "log" {
		state = "recording " + ws.LogName + " (ends " + ws.End.Local().Format("15:04:05") + ")"
	}
	if ws.Paused {
		state += ", PAUSED at " + ws.End.Local().Format("15:04:05")
		if ws.Source != "log" {
			state = "PAUSED at " + ws.End.Local().Format("15:04:05")
		}
	}
	add(fmt.Sprintf("Graphs (%d)  visible %ds  %s  cursor %s   ←/→ cursor  A/B markers  c clear  p pause  +/- range  s system  d remove  x CSV  X CSV A–B",
		len(ws.Graphs), ws.Seconds, state, ws.End.Add(-time.Duration(m.cursorBack)*time.Second).Local().Format("15:04:05")))
	if len(ws.Graphs) == 0 {
		add("")
		if ws.Source == "log" {
			add("No graphs of this recording yet. In the table press + to graph the selected recorded process")
			add("(by the sort column's metric), or s here for the recorded system CPU and memory.")
			add("The Live graphs come back when L returns to Live.")
		} else {
			add("No graphs yet. In the table press + to graph the selected process (by the sort column's metric),")
			add("or s here for system CPU and memory. Agents add graphs with add_graphs.")
		}
		return lines
	}
	cursor := ws.End.Add(-time.Duration(m.cursorBack) * time.Second)
	per, shown := m.graphsLayoutIn(h, len(ws.Graphs))
	m.graphScr.clamp(len(ws.Graphs), shown)
	first, _ := m.graphScr.window(len(ws.Graphs), shown)
	if pos := m.graphScr.position("graphs", len(ws.Graphs), shown); pos != "" {
		add("  " + pos + " (Up/Down, PgUp/PgDn, Home/End)")
	}
	const axisW = 9
	cw := max(w-axisW-1, 4)
	span := ws.End.Sub(ws.From).Seconds()
	xOf := func(t time.Time) float64 {
		if span <= 0 {
			return 1
		}
		return min(max(t.Sub(ws.From).Seconds()/span, 0), 1)
	}
	for gi := first; gi < first+shown && gi < len(ws.Graphs); gi++ {
		g := &ws.Graphs[gi]
		top := 0.0
		last, lastOK := 0.0, false
		for i, v := range g.Values {
			if g.OK[i] {
				top = math.Max(top, v)
				last, lastOK = v, true
			}
		}
		if g.Unit == "percent" {
			top = math.Max(top, 100)
		}
		if top == 0 {
			top = 1
		}
		sel := "  "
		if gi == m.graphScr.sel {
			sel = "> "
		}
		title := sel + g.ID + " " + g.Label + " (" + g.Unit + ")"
		if lastOK {
			title += "  last " + FormatValue(last, g.Unit)
		} else {
			title += "  last -"
		}
		if v, ok := g.valueAt(cursor); ok {
			title += "  cursor " + FormatValue(v, g.Unit)
		}
		var av, bv float64
		var aok, bok bool
		if ws.A != nil {
			av, aok = g.valueAt(*ws.A)
			title += "  A " + optValue(av, aok, g.Unit)
		}
		if ws.B != nil {
			bv, bok = g.valueAt(*ws.B)
			title += "  B " + optValue(bv, bok, g.Unit)
		}
		if aok && bok {
			title += "  Δ " + FormatValue(bv-av, g.Unit)
		}
		add(title)
		xs := make([]float64, len(g.At))
		ys := make([]float64, len(g.At))
		for i := range g.At {
			xs[i] = xOf(g.At[i])
			ys[i] = math.NaN()
			if g.OK[i] {
				ys[i] = g.Values[i] / top
			}
		}
		ch := per - 1
		chart := Braille(xs, ys, cw, ch)
		for r, row := range chart {
			label := ""
			switch r {
			case 0:
				label = FormatValue(top, g.Unit)
			case ch - 1:
				label = FormatValue(0, g.Unit)
			}
			add(rfit(label, axisW) + "│" + row)
		}
	}
	// time axis with the cursor (^) and markers (A, B)
	axis := []rune(strings.Repeat("─", cw))
	mark := func(t time.Time, r rune) {
		if t.Before(ws.From) || t.After(ws.End) {
			return
		}
		i := int(math.Round(xOf(t) * float64(cw-1)))
		axis[i] = r
	}
	mark(cursor, '^')
	if ws.A != nil {
		mark(*ws.A, 'A')
	}
	if ws.B != nil {
		mark(*ws.B, 'B')
	}
	add(strings.Repeat(" ", axisW) + "└" + string(axis))
	from, to := ws.From.Local().Format("15:04:05"), ws.End.Local().Format("15:04:05")
	add(strings.Repeat(" ", axisW+1) + from + strings.Repeat(" ", max(cw-len(from)-len(to), 1)) + to)
	return lines
}

// graphsLayout is graphsLayoutIn for the screen's graphs pane.
func (m *Model) graphsLayout(n int) (per, shown int) {
	return m.graphsLayoutIn(m.height-4-m.confirmHeight(), n)
}

// graphsLayoutIn lays n graphs out in h lines: per is the lines of one
// graph (its title and at least two chart rows), shown how many graphs
// fit at once. Besides the graphs go the header, the time axis and its
// labels, and, when not all graphs fit, the position line.
func (m *Model) graphsLayoutIn(h, n int) (per, shown int) {
	avail := h - 3 // header, time axis, marker line
	if n == 0 {
		return max(avail, 3), 0
	}
	per = max(avail/n, 3)
	if per*n <= avail {
		return per, n
	}
	avail-- // the position line
	return per, max(avail/per, 1)
}

func optValue(v float64, ok bool, unit string) string {
	if !ok {
		return "-"
	}
	return FormatValue(v, unit)
}
