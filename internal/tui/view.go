package tui

import (
	"fmt"
	"github.com/inquest-dev/inquest/internal/sample"
	"math"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
)

// styles are the few styles of the TUI; with NoColor every one renders
// text unchanged (selection and ghosts stay readable through the ">"
// marker and the "x" state).
type styles struct {
	head, sel, ghost, badge, warn, dim, title lipgloss.Style
}

func (m *Model) styles() styles {
	if m.opt.NoColor {
		p := lipgloss.NewStyle()
		return styles{p, p, p, p, p, p, p}
	}
	return styles{
		head:  lipgloss.NewStyle().Bold(true).Reverse(true),
		sel:   lipgloss.NewStyle().Reverse(true),
		ghost: lipgloss.NewStyle().Faint(true),
		badge: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("6")),
		warn:  lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("3")),
		dim:   lipgloss.NewStyle().Faint(true),
		title: lipgloss.NewStyle().Bold(true),
	}
}

// printableASCII reports whether every byte of s is printable ASCII
// (0x20..0x7e): then each byte is one cell and no grapheme segmentation
// is needed. Most of a frame (numbers, process names, the footer) is; the
// segmentation of go-runewidth was the largest cost of drawing an idle
// frame.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// fit cuts or pads s to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if printableASCII(s) {
		if len(s) > w {
			return s[:w-1] + "…"
		}
		return s + spaces(w-len(s))
	}
	s = escapeText(s)
	if runewidth.StringWidth(s) > w {
		s = runewidth.Truncate(s, w, "…")
	}
	return runewidth.FillRight(s, w)
}

// rfit right-aligns s in w cells.
func rfit(s string, w int) string {
	if printableASCII(s) {
		if len(s) > w {
			return s[:w]
		}
		return spaces(w-len(s)) + s
	}
	s = escapeText(s)
	if runewidth.StringWidth(s) > w {
		s = runewidth.Truncate(s, w, "")
	}
	return strings.Repeat(" ", w-runewidth.StringWidth(s)) + s
}

// blanks backs spaces: a run of spaces without allocating.
const blanks = "                                                                                                                                                                                                                                                                "

// spaces returns n spaces (n <= 0: "").
func spaces(n int) string {
	if n <= 0 {
		return ""
	}
	if n <= len(blanks) {
		return blanks[:n]
	}
	return strings.Repeat(" ", n)
}

// Bytes formats a byte count with binary units as htop does (K, M, G, T).
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	f, u := float64(n), 0
	for f >= unit && u < 5 {
		f /= unit
		u++
	}
	s := "BKMGTP"[u : u+1]
	if f >= 100 {
		return fmt.Sprintf("%.0f%s", f, s)
	}
	return fmt.Sprintf("%.1f%s", f, s)
}

// tableHeight is how many process rows fit.
func (m *Model) tableHeight() int {
	h := m.height - 5 - m.detailHeight() - m.activityHeight() - m.confirmHeight()
	if h < 1 {
		h = 1
	}
	return h
}

func (m *Model) detailHeight() int {
	if !m.detail {
		return 0
	}
	if m.height < 20 {
		return m.height / 2
	}
	return 12
}

func (m *Model) activityHeight() int {
	if !m.activity {
		return 0
	}
	return 7
}

// confirmHeight is the confirmation overlay's height: its head and the
// whole of the shown confirmation, at least 7 lines and, when the
// confirmation is longer, at most half the screen below the meters.
func (m *Model) confirmHeight() int {
	if m.frame == nil || len(m.frame.Pending) == 0 {
		return 0
	}
	return min(1+len(m.confirmLines()), max(7, (m.height-4)/2))
}

// confirmLines is the body of the shown confirmation: its operation, each
// field of the action it would run, and when it expires.
func (m *Model) confirmLines() []string {
	if m.frame == nil || m.confirmSel >= len(m.frame.Pending) {
		return nil
	}
	p := m.frame.Pending[m.confirmSel]
	lines := []string{"  operation " + p.ID}
	if a, ok := p.Confirm["action"].(map[string]any); ok {
		for _, k := range sortedKeys(a) {
			lines = append(lines, fmt.Sprintf("  %s: %v", k, compact(a[k])))
		}
	}
	if exp, ok := p.Confirm["expires_at"]; ok {
		lines = append(lines, fmt.Sprintf("  expires %v", exp))
	}
	return lines
}

// View draws the whole screen: exactly height lines of width cells.
func (m *Model) View() string {
	if m.drawn == "" {
		m.drawn = m.draw()
	}
	return m.drawn
}

func (m *Model) draw() string {
	st := m.styles()
	w := m.width
	var lines []string
	add := func(s string) { lines = append(lines, s) }
	add(m.header(st))
	add(m.meterLine(0))
	add(m.meterLine(1))
	switch m.mode {
	case modeHelp:
		lines = append(lines, m.help(w)...)
		return m.finish(lines, st)
	case modeSettings:
		lines = append(lines, m.settingsView(w)...)
		return m.finish(lines, st)
	case modeLogs:
		lines = append(lines, m.logsView(w)...)
		return m.finish(lines, st)
	case modeTable:
		if m.pick != nil {
			lines = append(lines, m.pickerView(st, w)...)
			return m.finish(lines, st)
		}
	}
	switch m.mode {
	case modeSortMenu:
		lines = append(lines, st.head.Render(fit("Sort by", w)))
		for k := SortKey(0); k < numSortKeys; k++ {
			mark, cur := "  ", ""
			if int(k) == m.sortSel {
				mark = "> "
			}
			if k == m.sortKey {
				cur = "  (current)"
			}
			line := fit(mark+k.String()+cur, w)
			if int(k) == m.sortSel {
				line = st.sel.Render(line)
			}
			lines = append(lines, line)
		}
		return m.finish(lines, st)
	case modeGraphs, modeProfiles:
		if m.mode == modeGraphs {
			lines = append(lines, m.graphsView(w, m.height-4-m.confirmHeight())...)
		} else {
			lines = append(lines, m.profilesView(w)...)
		}
		for len(lines) < m.height-1-m.confirmHeight() {
			lines = append(lines, strings.Repeat(" ", w))
		}
		if n := m.confirmHeight(); n > 0 {
			cut := min(max(m.height-1-n, 0), len(lines))
			lines = append(lines[:cut], m.confirmView(st, w, n)...)
		}
		return m.finish(lines, st)
	}
	cols := m.columns()
	add(st.head.Render(fit(cols.header(m), w)))
	th := m.tableHeight()
	for i := m.top; i < m.top+th; i++ {
		if i >= len(m.rows) {
			add(strings.Repeat(" ", w))
			continue
		}
		v := m.rows[i]
		line := fit(cols.row(v, i == m.sel), w)
		switch {
		case i == m.sel:
			add(st.sel.Render(line))
		case v.r.Ended:
			add(st.ghost.Render(line))
		default:
			add(line)
		}
	}
	if m.detail {
		lines = append(lines, m.detailView(st, w, m.detailHeight())...)
	}
	if m.activity {
		lines = append(lines, m.activityView(st, w, m.activityHeight())...)
	}
	if n := m.confirmHeight(); n > 0 {
		lines = append(lines, m.confirmView(st, w, n)...)
	}
	return m.finish(lines, st)
}

// finish adds the footer line and pads or cuts to the screen height.
func (m *Model) finish(lines []string, st styles) string {
	foot := m.footer()
	for len(lines) < m.height-1 {
		lines = append(lines, strings.Repeat(" ", m.width))
	}
	if len(lines) > m.height-1 {
		lines = lines[:max(m.height-1, 0)]
	}
	lines = append(lines, st.dim.Render(fit(foot, m.width)))
	return strings.Join(lines, "\n")
}

func (m *Model) header(st styles) string {
	who := "inquest host"
	pid := m.opt.HostPID
	if a, ok := m.opt.Backend.(Attachment); ok {
		if p, _, _ := a.Host(); p > 0 {
			pid = p
		}
	}
	if m.opt.Attached {
		who = fmt.Sprintf("inquest view of host pid %d", pid)
	}
	activity := "LIVE"
	if m.frame != nil && m.frame.Activity != "" {
		activity = strings.ToUpper(m.frame.Activity)
	}
	if m.log != nil {
		activity = "LOG " + m.log.Name
	}
	if m.frame != nil && m.frame.Recording.Active {
		activity = "REC " + activity
	}
	right := activity
	if m.paused {
		right += " PAUSED"
	}
	if m.frame != nil {
		right += " " + m.frame.At.Local().Format("15:04:05")
	}
	if m.err != nil {
		// What is shown is stale: say so instead of the activity.
		right = "ERROR"
		if hostGone(m.err) {
			right = "NO HOST CONNECTION, reconnecting"
			if m.opt.Attached {
				who = "inquest view (disconnected)"
			}
		}
		if m.frame != nil {
			right += " (last " + m.frame.At.Local().Format("15:04:05") + ")"
		}
		space := m.width - runewidth.StringWidth(who) - runewidth.StringWidth(right)
		if space < 1 {
			return fit(right, m.width)
		}
		return who + strings.Repeat(" ", space) + right
	}
	badge := ""
	if m.frame != nil && m.frame.Bridges > 0 {
		badge = "MCP"
		if m.frame.Bridges > 1 {
			badge = fmt.Sprintf("MCP×%d", m.frame.Bridges)
		}
	}
	// At narrow widths the activity and freshness win over the badge.
	space := m.width - runewidth.StringWidth(who) - runewidth.StringWidth(right) - 1
	if badge != "" && space >= runewidth.StringWidth(badge)+2 {
		pad := space - runewidth.StringWidth(badge) - 1
		return fit(who, runewidth.StringWidth(who)) + strings.Repeat(" ", pad+1) + st.badge.Render(badge) + " " + right
	}
	if space < 1 {
		return fit(right, m.width)
	}
	return who + strings.Repeat(" ", space+1) + right
}

// meterLine draws the system meters: line 0 CPU and memory, line 1 per
// core (or swap/load when there is no room) and the task count.
func (m *Model) meterLine(n int) string {
	w := m.width
	if m.frame == nil {
		if n == 0 {
			if m.err != nil {
				return fit("error: "+errText(m.err), w)
			}
			return fit("waiting for the first sample...", w)
		}
		return strings.Repeat(" ", w)
	}
	s := m.frame.Sys
	half := w / 2
	if n == 0 && m.err != nil {
		return fit("error: "+errText(m.err), w)
	}
	if n == 0 {
		cpu := meter("CPU", s.CPU, 100, s.CPUOK, fmt.Sprintf("%5.1f%%", s.CPU), half-1)
		mem := meter("Mem", float64(s.MemUsed), float64(s.MemTotal), s.MemOK,
			Bytes(s.MemUsed)+"/"+Bytes(s.MemTotal), w-half)
		return fit(cpu+" "+mem, w) // at 1 column there is room for no meter
	}
	live, ended := 0, 0
	for _, r := range m.frame.Rows {
		if r.Ended {
			ended++
		} else {
			live++
		}
	}
	swap := meter("Swp", float64(s.SwapUsed), float64(s.SwapTotal), s.SwapOK,
		Bytes(s.SwapUsed)+"/"+Bytes(s.SwapTotal), half-1)
	load := "-"
	if s.LoadOK {
		load = fmt.Sprintf("%.2f", s.Load1)
	}
	cores := "-" // not measured (a recording keeps no per-core values)
	if len(s.Cores) > 0 {
		cores = fmt.Sprint(len(s.Cores))
	}
	info := fmt.Sprintf(" Tasks %d, %d ended  Load %s  Cores %s", live, ended, load, cores)
	if half < 1 {
		return fit(info, w) // no room for the swap meter
	}
	return swap + " " + fit(info, w-half)
}

// meter draws "LBL[|||||    value]" in w cells; unknown values show "-".
func meter(label string, v, total float64, ok bool, text string, w int) string {
	inner := w - len(label) - 2
	if inner < 1 {
		return fit(label, w)
	}
	if !ok {
		text = "-"
	}
	bar := make([]rune, inner)
	for i := range bar {
		bar[i] = ' '
	}
	if ok && total > 0 {
		n := int(math.Round(v / total * float64(inner)))
		for i := 0; i < n && i < inner; i++ {
			bar[i] = '|'
		}
	}
	t := []rune(text)
	if len(t) <= inner {
		copy(bar[inner-len(t):], t)
	}
	return label + "[" + string(bar) + "]"
}

// columns lays out the table for the width: the command takes what the
// fixed columns leave. cores is the number of cores CPU% is scaled by
// (per core: 100% is one core, as htop shows it); 0 shows the share of
// all cores (the setting, or a recording that kept no core count).
type columns struct {
	cmd      int
	cores    int
	showCmd  bool
	showCont bool
}

// contCol is the width of the CONTAINER column ("podman:" and a
// 12-digit id).
const contCol = 19

// fixedCols is the width of every column but COMMAND.
const fixedCols = 61

func (m *Model) columns() columns {
	n := max(m.width-fixedCols, 8)
	c := columns{cmd: n, showCmd: m.showCmd, showCont: m.showCont}
	if c.showCont {
		c.cmd = max(n-contCol-1, 8)
	}
	if !m.cpuAllCores && m.frame != nil {
		c.cores = len(m.frame.Sys.Cores)
	}
	return c
}

// cpuLabel is the CPU column's header: CPU% per core, ALL% as a share of
// all cores.
func (c columns) cpuLabel() string {
	if c.cores > 0 {
		return "CPU%"
	}
	return "ALL%"
}

func (c columns) header(m *Model) string {
	mark := func(k SortKey, s string, w int, right bool) string {
		if m.sortKey == k {
			arrow := "▼"
			if k.descByDefault() == m.reverse {
				arrow = "▲"
			}
			s += arrow
		}
		if right {
			return rfit(s, w)
		}
		return fit(s, w)
	}
	return "  " + mark(SortPID, "PID", 7, true) + " " + fit("USER", 9) + " S " + mark(SortCPU, c.cpuLabel(), 6, true) + " " +
		mark(SortMem, "MEM", 7, true) + " " + mark(SortIO, "IO/s", 7, true) + " " +
		mark(SortThreads, "THR", 4, true) + " " + mark(SortTime, "TIME+", 9, true) + "  " + c.contHeader() + mark(SortName, "COMMAND", c.cmd, false)
}

// contHeader and contCell are the CONTAINER column while it is shown.
func (c columns) contHeader() string {
	if !c.showCont {
		return ""
	}
	return fit("CONTAINER", contCol) + " "
}

func (c columns) contCell(r *Row) string {
	if !c.showCont {
		return ""
	}
	v := r.Container
	if v == "" {
		v = "?"
	}
	return fit(escapeText(v), contCol) + " "
}

// stateLetter is ps's one-letter state; an ended lifetime is "x"; a
// state not known (a recorded row, which keeps no state) is "-".
func stateLetter(r *Row) string {
	if r.Ended {
		return "x"
	}
	if l := sample.StateLetter(r.State); l != "" {
		return l
	}
	return "-"
}

func (c columns) row(v view, sel bool) string {
	r := v.r
	mark := "  "
	if sel {
		mark = "> "
	}
	cpu, mem, io, thr, tm, user := "-", "-", "-", "-", "-", "-"
	if r.CPUOK {
		pct := r.CPU
		if c.cores > 0 {
			pct *= float64(c.cores)
		}
		cpu = fmt.Sprintf("%.1f", pct)
	}
	if r.RSSOK {
		mem = Bytes(r.RSS)
	}
	if r.IORateOK {
		io = Bytes(uint64(r.IORate))
	}
	if r.ThreadsOK {
		thr = fmt.Sprint(r.Threads)
	}
	if r.CPUTimeOK {
		tm = cpuTime(r.CPUTime)
	}
	if r.User != "" {
		user = escapeText(r.User)
	}
	return mark + rfit(itoa(r.PID), 7) + " " + fit(user, 9) + " " + stateLetter(r) + " " + rfit(cpu, 6) + " " + rfit(mem, 7) + " " +
		rfit(io, 7) + " " + rfit(thr, 4) + " " + rfit(tm, 9) + "  " + c.contCell(r) + fit(v.prefix+c.command(r), c.cmd)
}

// command is the COMMAND cell: the process name, or while command lines
// are shown its command line (arguments joined by spaces, each escaped;
// "[name]" for a process without one, a kernel thread, as ps shows it;
// the name when it could not be read).
func (c columns) command(r *Row) string {
	if !c.showCmd || !r.ArgsOK {
		return escapeText(r.Name)
	}
	if len(r.Args) == 0 {
		return "[" + escapeText(r.Name) + "]"
	}
	parts := make([]string, len(r.Args))
	for i, a := range r.Args {
		parts[i] = escapeText(a)
	}
	return strings.Join(parts, " ")
}

func (m *Model) footer() string {
	if m.mode == modeHelp {
		return m.helpFooter()
	}
	if m.mode == modeFilter {
		return "Filter: " + escapeText(m.filter) + "█  (Enter keep, Esc clear)"
	}
	if m.mode == modeSearch {
		miss := ""
		if m.searchMiss {
			miss = "  not found"
		}
		return "Search: " + escapeText(m.search) + "█" + miss + "  (F3 next, Enter/Esc done)"
	}
	if m.mode == modeSortMenu {
		return "Sort by: Up/Down choose, Enter sort, Esc cancel"
	}
	if m.pick != nil && m.mode == modeTable && m.notice == "" {
		return "Graph picker: Up/Down PgUp/PgDn choose, Enter graph it, Esc close"
	}
	if m.confirmStop {
		return "Stop the recording? y stops it (the file is completed and closed), any other key keeps it running"
	}
	if m.notice != "" {
		return m.notice
	}
	if m.detail && m.capture != nil {
		return "Up/Down PgUp/PgDn Home/End: rows  Esc: close  f l n T: another capture  q: close detail"
	}
	if m.mode == modeSettings {
		s := "Space: toggle  Esc: back"
		if pos := m.setScr.position("lines", len(m.settingsLines(m.width)), m.settingsShown()); pos != "" {
			s += "  Up/Down PgUp/PgDn: scroll  " + pos
		}
		return s
	}
	if m.activity && m.mode == modeTable {
		return "Up/Down PgUp/PgDn Home/End: agent calls  Esc/a: close agent activity  q: quit"
	}
	// The most important keys first; as many as fit, the rest are in
	// help (?). What the table shows (filter, tree) comes after the
	// first keys.
	parts := []string{"q:quit", "?:help"}
	if m.filter != "" {
		f := []rune(escapeText(m.filter))
		if len(f) > 16 {
			f = append(f[:15], '…')
		}
		parts = append(parts, "[filter: "+string(f)+"]")
	}
	if m.tree {
		parts = append(parts, "[tree]")
	}
	parts = append(parts, "/:filter", "F6:sort", "F3:search", "Enter:detail", "t:tree", "c:cmdline", "+:graph", "g:graphs",
		"a:agents", "o:profiles", "R:rec", "L:log", "S:settings", "p:pause")
	return fitParts(parts, m.width)
}

// fitParts joins parts with spaces, keeping the leading ones that fit in
// w cells whole (never a key cut in half).
func fitParts(parts []string, w int) string {
	var b strings.Builder
	for _, p := range parts {
		n := runewidth.StringWidth(p)
		if b.Len() > 0 {
			n++
		}
		if runewidth.StringWidth(b.String())+n > w {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

// helpEntry is one key of the help screen and what it does.
type helpEntry struct{ key, text string }

var helpEntries = []helpEntry{
	{"q F10", "quit (q closes a pane first)"},
	{"? F1", "this help"},
	{"Up/Down j", "move the selection; PgUp/PgDn, Home/End by a page, to the ends"},
	{"/ F4", "incremental filter by name, PID or shown command line (Enter keeps it, Esc clears it)"},
	{"F3", "search: move the selection to the next row whose name, PID or command line matches (F3 again: the next; Enter/Esc done)"},
	{"F6", "sort menu: choose the sort column"},
	{"P M I H T N #", "sort by CPU, memory, IO rate, threads, TIME+, name, PID (again: reverse)"},
	{"< > / r", "previous / next sort column; reverse the order"},
	{"t F5", "tree: children under their verified parents"},
	{"c", "show command lines in COMMAND instead of names (again: names)"},
	{"C", "show the CONTAINER column (runtime:id from the cgroup path; - host, ? no rule fits); the filter and search match it"},
	{"F9 k", "nothing to kill or renice: the monitor is read-only (below)"},
	{"p", "pause the display"},
	{"Enter", "detail of the selected lifetime (history sparklines; the managed runtime, jvm or dotnet, and its collection state, with heap and GC values while collecting)"},
	{"m", "in detail: the graph picker: every process metric of the catalog (the jvm_* family first for a JVM); Enter graphs the selected one for this process"},
	{"f l n T", "in detail: open files, modules, network, threads (captured on request); Up/Down, PgUp/PgDn, Home/End page through all the rows; Esc closes"},
	{"+", "graph the selected process (metric of the sort column)"},
	{"g", "graph workspace: Left/Right cursor, A/B markers, p pause, +/- range, x CSV; Up/Down, PgUp/PgDn, Home/End select a graph"},
	{"a", "agent activity: tool calls MCP clients are making; while it is open Up/Down, PgUp/PgDn, Home/End page through them; Esc or a closes it"},
	{"S", "settings: Disable MCP connections"},
	{"*", "track / untrack the selected process name"},
	{"o", "tracking and profiles: track names, load/save/rename/delete profiles; Up/Down, PgUp/PgDn, Home/End select"},
	{"R", "start a recording of the tracked processes; again: stop (asks first)"},
	{"L", "Log view: open a saved recording (table, detail, graphs); L again: Live"},
	{"y / n / Tab", "decide the action awaiting confirmation / show the next one (Shift+Tab: the previous)"},
	{"q Esc", "close a pane; q in the table quits"},
}

var helpNotes = []string{
	"Read-only: the monitor never kills, renices or signals a process (F9 and k do nothing but say so); it observes, so nothing a key or an agent does here can end or slow a process.",
	"CPU% is per core as in htop (one core = 100%, a process using two cores 200%); ALL% in the header is the share of all cores (Settings: c).",
	"Rows marked x are ended lifetimes whose history is still retained; they sort after the live rows.",
	"'-' means not measured (never zero).",
}

// helpKeyWidth is the key column of the help screen.
const helpKeyWidth = 14

// helpLines lays the help text out for width w: descriptions wrap at word
// boundaries beside the key column, or below the key on narrow screens.
func helpLines(w int) []string {
	out := []string{"Keys"}
	wrap := func(s string, width int) []string {
		if width < 1 {
			width = 1
		}
		return strings.Split(ansi.Wrap(s, width, ""), "\n")
	}
	for _, e := range helpEntries {
		if w >= 40 {
			indent := 2 + helpKeyWidth + 1
			for i, l := range wrap(e.text, w-indent) {
				k := ""
				if i == 0 {
					k = e.key
				}
				out = append(out, "  "+fit(k, helpKeyWidth)+" "+strings.TrimRight(l, " "))
			}
			continue
		}
		out = append(out, "  "+e.key)
		for _, l := range wrap(e.text, w-4) {
			out = append(out, "    "+strings.TrimRight(l, " "))
		}
	}
	out = append(out, "")
	for _, n := range helpNotes {
		out = append(out, wrap(n, w)...)
	}
	return out
}

// helpShown is how many help lines fit between the meters and the footer.
func (m *Model) helpShown() int { return max(m.height-4, 1) }

// help draws the help lines the window shows (a resize may have moved
// the end of the text).
func (m *Model) help(w int) []string {
	text := helpLines(w)
	m.helpScr.clamp(len(text), m.helpShown())
	var out []string
	from, to := m.helpScr.window(len(text), m.helpShown())
	for _, l := range text[from:to] {
		out = append(out, fit(l, w))
	}
	return out
}

// helpFooter says how to close and scroll the help and which lines show.
func (m *Model) helpFooter() string {
	n, shown := len(helpLines(m.width)), m.helpShown()
	pos := m.helpScr.position("lines", n, shown)
	if pos == "" {
		return "Esc/q: close help"
	}
	// the longest form that fits: closing first, the position always
	for _, f := range []string{
		"Esc/q: close help  ↑/↓ PgUp/PgDn: scroll  ",
		"Esc/q: close help  ↑/↓ PgUp/PgDn  ",
		"Esc/q: close help  ",
	} {
		if s := f + pos; runewidth.StringWidth(s) <= m.width {
			return s
		}
	}
	return "Esc/q: close  " + strings.TrimPrefix(pos, "lines ")
}

// settingsShown is how many settings lines fit between the meters and
// the footer.
func (m *Model) settingsShown() int { return max(m.height-4, 1) }

// settingsView draws the settings lines the window shows; the footer
// says which when they do not all fit.
func (m *Model) settingsView(w int) []string {
	lines := m.settingsLines(w)
	m.setScr.clamp(len(lines), m.settingsShown())
	from, to := m.setScr.window(len(lines), m.settingsShown())
	return lines[from:to]
}

// settingsLines is the whole settings text, w cells wide.
func (m *Model) settingsLines(w int) []string {
	box := "[ ]"
	if m.settings.MCPConnectionsDisabled {
		box = "[x]"
	}
	dir := m.settings.RecordingDirectory
	if dir == "" {
		dir = "(default)"
	}
	listener := "-"
	if m.frame != nil && m.frame.Listener != "" {
		listener = m.frame.Listener
	}
	lines := []string{
		"Settings (saved in inquest.toml; Space toggles MCP, c the CPU% scale, Esc returns)",
		"",
		"  " + box + " Disable MCP connections",
		"      MCP listener: " + listener,
		"",
		"  " + map[bool]string{true: "[x]", false: "[ ]"}[m.cpuAllCores] + " CPU% as a share of all cores (c toggles and saves it; off: one core = 100%, as htop)",
		"",
		"  Recording directory: " + dir,
		"      change with: inquest settings set recording_directory DIR",
	}
	if m.settingErr != "" {
		lines = append(lines, "", "  error: "+m.settingErr)
	}
	for i := range lines {
		lines[i] = fit(lines[i], w)
	}
	return lines
}

// sparkBlocks are the eight levels of a sparkline.
var sparkBlocks = []rune("▁▂▃▄▅▆▇█")

// sparkline draws the last w points scaled to their own maximum (or to
// max when max > 0); unmeasured points are blank.
func sparkline(ps []point, w int, maxV float64) string {
	if w <= 0 {
		return ""
	}
	if len(ps) > w {
		ps = ps[len(ps)-w:]
	}
	top := maxV
	if top <= 0 {
		for _, p := range ps {
			if p.ok && p.v > top {
				top = p.v
			}
		}
	}
	var b strings.Builder
	for _, p := range ps {
		if !p.ok {
			b.WriteByte(' ')
			continue
		}
		i := 0
		if top > 0 {
			i = int(p.v / top * float64(len(sparkBlocks)-1))
		}
		i = min(max(i, 0), len(sparkBlocks)-1)
		b.WriteRune(sparkBlocks[i])
	}
	return b.String()
}

func (m *Model) detailView(st styles, w, h int) []string {
	r := m.selected()
	var lines []string
	if r == nil {
		return nil
	}
	life := "live"
	if r.Ended {
		life = "ended (retained history)"
	}
	lines = append(lines, st.title.Render(fit(fmt.Sprintf("── %s  pid %d  parent %d  %s  started %s", escapeText(r.Name), r.PID, r.PPID, life, r.StartTime), w)))
	if c := m.capture; c != nil {
		shown := m.captureShown()
		lines = append(lines, fit(c.title(shown)+"   (Esc closes)", w))
		if c.err != "" {
			lines = append(lines, fit("  "+c.err, w))
		}
		if len(c.cols) > 0 && len(c.rows) > 0 {
			lines = append(lines, fit("  "+c.line(c.cols), w))
		}
		for i := c.top; i < c.top+shown && i < len(c.rows); i++ {
			lines = append(lines, fit("  "+c.line(c.rows[i]), w))
		}
		if c.fetching && c.top+shown > len(c.rows) {
			lines = append(lines, fit("  reading the next page...", w))
		}
	} else {
		cols := m.columns()
		cpuScale := 1.0 // the table's scale: per core, or the share of all cores
		if cols.cores > 0 {
			cpuScale = float64(cols.cores)
		}
		labels := map[string]string{"cpu_percent": cols.cpuLabel(), "rss_bytes": "RSS", "threads": "Threads", "fd_count": "FDs"}
		switch {
		case m.hist == nil || !m.hist.loaded:
			lines = append(lines, fit("  loading history...", w))
		case m.hist.err != "":
			lines = append(lines, fit("  history: "+m.hist.err, w))
		default:
			sw := w - 24
			for _, id := range detailMetrics {
				ps := m.hist.series[id]
				last := "-"
				for i := len(ps) - 1; i >= 0; i-- {
					if ps[i].ok {
						if id == "rss_bytes" {
							last = Bytes(uint64(ps[i].v))
						} else if id == "cpu_percent" {
							last = fmt.Sprintf("%.1f", ps[i].v*cpuScale)
						} else {
							last = fmt.Sprint(uint64(ps[i].v))
						}
						break
					}
				}
				lines = append(lines, fit(fmt.Sprintf("  %-8s %8s  %s", labels[id], last, sparkline(ps, sw, 0)), w))
			}
			lines = append(lines, fit(fmt.Sprintf("  last %d samples of retained history", len(m.hist.series["cpu_percent"])), w))
		}
		for _, l := range m.runtimeLines(r) {
			lines = append(lines, fit(l, w))
		}
		lines = append(lines, fit("  f open files  l modules  n network  T threads (on request)  m graph a metric", w))
	}
	for len(lines) < h {
		lines = append(lines, strings.Repeat(" ", w))
	}
	return lines[:h]
}

// activityRows is how many agent calls the activity pane holds.
func (m *Model) activityRows() int {
	if m.frame == nil {
		return 0
	}
	return len(m.frame.Calls)
}

// activityShown is how many agent calls the pane shows at once (below
// its title line).
func (m *Model) activityShown() int { return max(m.activityHeight()-1, 1) }

// activityView draws the agent activity pane: a title with the position
// ("rows 7–12 of 32": the running calls, then the finished ones the host
// keeps, newest first) and the calls of the window.
func (m *Model) activityView(st styles, w, h int) []string {
	n, shown := m.activityRows(), m.activityShown()
	m.actScr.clamp(n, shown)
	title := "── Agent activity"
	if pos := m.actScr.position("rows", n, shown); pos != "" {
		title += " " + pos
	}
	lines := []string{st.title.Render(fit(title+" (tool calls of MCP clients; arguments are never shown)", w))}
	if n == 0 {
		lines = append(lines, fit("  no agent calls yet", w))
	} else {
		from, to := m.actScr.window(n, shown)
		for _, c := range m.frame.Calls[from:to] {
			out := c.Code
			if out == "" {
				out = "ok"
				if c.State == "running" {
					out = ""
				}
			}
			lines = append(lines, fit(fmt.Sprintf("  %-24s %-9s %8dms  %s", c.Tool, c.State, c.DurationMS, out), w))
		}
	}
	for len(lines) < h {
		lines = append(lines, strings.Repeat(" ", w))
	}
	return lines[:h]
}

func (m *Model) confirmView(st styles, w, h int) []string {
	p := m.frame.Pending[m.confirmSel]
	next := "Tab next"
	if len(m.frame.Pending) > 1 {
		next = "Tab/Shift+Tab next/previous"
	}
	head := fmt.Sprintf("── Confirm %s (%d of %d): y confirm, n deny, %s", p.Tool, m.confirmSel+1, len(m.frame.Pending), next)
	body := m.confirmLines()
	// a confirmation longer than half the screen: its first lines, and
	// which; `inquest confirm` lists it whole
	sc, shown := scroll{sel: -1}, h-1
	pos := sc.position("lines", len(body), shown)
	if pos != "" {
		shown-- // the last line says which show
	}
	lines := []string{st.warn.Render(fit(head, w))}
	from, to := sc.window(len(body), shown)
	for _, l := range body[from:to] {
		lines = append(lines, fit(l, w))
	}
	if pos != "" {
		pos = sc.position("lines", len(body), shown)
		lines = append(lines, fit("  "+pos+" (inquest confirm lists it whole)", w))
	}
	for len(lines) < h {
		lines = append(lines, strings.Repeat(" ", w))
	}
	return lines[:h]
}
