package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
	"github.com/mattn/go-runewidth"
)

// detailMetrics are the series the detail pane draws as sparklines.
var detailMetrics = []string{"cpu_percent", "rss_bytes", "threads", "fd_count"}

// history is the retained history of one lifetime (get_history raw, the
// last detailWindow): per metric the values in time order, with ok
// false where a sample did not measure it.
type history struct {
	ref    string
	series map[string][]point
	err    string
	loaded bool
}

type point struct {
	v  float64
	ok bool
}

type historyMsg struct {
	ref string
	h   *history
}

// detailWindow is how much retained history the sparklines cover.
const detailWindow = 120

func (m *Model) loadHistory(ref string) tea.Cmd {
	b := m.opt.Backend
	// The window ends at the displayed sample (a paused or scripted
	// display is not "now").
	end := time.Now()
	if m.frame != nil {
		end = m.frame.At
	}
	from := end.Add(-detailWindow * time.Second).UTC().Format(time.RFC3339Nano)
	src := m.log
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h := &history{ref: ref, series: map[string][]point{}, loaded: true}
		args := map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": detailMetrics, "mode": "raw", "from": from}
		if src != nil {
			args["source"], args["log_ref"] = "log", src.Ref
		}
		res, err := call(ctx, b, "get_history", args)
		if err != nil {
			h.err = errText(err)
			return historyMsg{ref, h}
		}
		var d struct {
			Rows []struct {
				Values map[string]any `json:"values"`
			} `json:"rows"`
		}
		if err := decode(res, &d); err != nil {
			h.err = err.Error()
		}
		for _, r := range d.Rows {
			for _, id := range detailMetrics {
				v, ok := number(r.Values[id])
				h.series[id] = append(h.series[id], point{v, ok})
			}
		}
		return historyMsg{ref, h}
	}
}

// captureView is one on-request capture (open files, modules, network,
// threads) of the selected lifetime, paged through with read_capture as
// an agent pages it: rows holds the pages read so far (in capture order),
// next the next_cursor of the last one ("" once the last page is read).
// top is the first row shown; moving past the rows read reads the next
// pages.
type captureView struct {
	ref, kind string
	id        string // capture_id
	loading   bool   // the capture is being taken
	fetching  bool   // a further page is being read
	toEnd     bool   // End: keep reading until the last page, then show it
	cols      []string
	right     []bool // numeric columns, right-aligned
	widths    []int  // cell widths of every column but the last
	rows      [][]string
	total     int // rows in the whole capture; -1 unknown
	next      string
	top       int
	err       string
	// sockets names the process's sockets by inode (open files only).
	sockets map[string]socketName
}

type captureMsg struct{ c *captureView }

// capturePageMsg is a further page of capture id (read at the cursor the
// view held); err is the read's failure.
type capturePageMsg struct {
	ref, kind, id string
	page          *capturePage
	err           error
}

// capturePageRows is the limit of each read_capture page; the host's
// result byte budget may end a page before it (the page then names the
// rest with next_cursor, which the view follows).
const capturePageRows = 500

// captureTimeout bounds taking a capture and reading one of its pages.
const captureTimeout = 2 * time.Minute

// captureCols are the columns shown per capture kind, in order: the
// capture's fields, or for open files and network the columns lsof and
// ss show (captureCells fills them).
var captureCols = map[string][]string{
	"open_files": {"FD", "TYPE", "NAME"},
	"modules":    {"size_bytes", "mapped_bytes", "path"},
	"network":    {"Netid", "State", "Local Address:Port", "Peer Address:Port"},
	"threads":    {"tid", "name", "state", "user_cpu_seconds", "system_cpu_seconds", "last_cpu"},
}

// captureCells is one capture row as the pane shows it. Open files read
// as lsof's FD, TYPE and NAME (the fd with its access mode, "3r", "4w",
// "5u"; a socket named by its protocol and addresses when the process's
// network capture holds its inode); network rows as ss's columns
// ("127.0.0.1:4567", "[::1]:80", a unix path and its inode). Other kinds
// show their fields. Every cell is escaped (escapeText).
func captureCells(kind string, cols []string, r map[string]json.RawMessage, sockets map[string]socketName) []string {
	switch kind {
	case "open_files":
		fd := rawText(r["fd"])
		if mode := fdMode(rawText(r["flags"])); mode != "" && fd != "-" {
			fd += mode
		}
		typ, name := rawText(r["kind"]), rawText(r["path"])
		if typ == "socket" {
			ino := strings.TrimSuffix(strings.TrimPrefix(name, "socket:["), "]")
			if s, ok := sockets[ino]; ok {
				typ, name = s.typ, s.name
			}
		}
		if d := rawText(r["deleted"]); d == "true" {
			name += " (deleted)"
		}
		return []string{escapeText(fd), escapeText(typ), escapeText(name)}
	case "network":
		proto, typ := rawText(r["protocol"]), rawText(r["socket_type"])
		local, ok1 := endpointText(r["local"])
		remote, ok2 := endpointText(r["remote"])
		if !ok1 {
			local = "-"
		}
		if !ok2 {
			remote = "-"
		}
		if proto == "unix" {
			ino := rawText(r["inode"])
			local += " " + ino
			remote = "*"
		}
		return []string{escapeText(ssNetid(proto, typ)), escapeText(ssState(strings.Trim(rawText(r["state"]), "-"))), local, remote}
	}
	line := make([]string, len(cols))
	for i, col := range cols {
		line[i] = escapeText(rawText(r[col]))
	}
	return line
}

// fdMode is lsof's access mode letter of open flags (octal, as
// /proc/PID/fdinfo prints them): r read, w write, u both; "" unknown.
func fdMode(flags string) string {
	f, err := strconv.ParseUint(flags, 8, 64)
	if err != nil {
		return ""
	}
	switch f & 3 { // O_ACCMODE
	case 0:
		return "r"
	case 1:
		return "w"
	case 2:
		return "u"
	}
	return ""
}

// socketName is lsof's TYPE and NAME of a socket.
type socketName struct{ typ, name string }

// socketNames maps socket inodes of a network capture to lsof's name
// for them (lsofSocket).
func socketNames(rows []map[string]json.RawMessage, into map[string]socketName) {
	for _, r := range rows {
		ino := rawText(r["inode"])
		if ino == "-" {
			continue
		}
		proto := rawText(r["protocol"])
		local, ok1 := endpointText(r["local"])
		remote, ok2 := endpointText(r["remote"])
		if !ok1 || !ok2 {
			continue
		}
		state := rawText(r["state"])
		if state == "-" {
			state = ""
		}
		typ := rawText(r["socket_type"])
		if typ == "-" {
			typ = ""
		}
		var n socketName
		n.typ, n.name = lsofSocket(proto, lsofWildcard(local), lsofWildcard(remote), state, typ)
		n.typ, n.name = escapeText(n.typ), escapeText(n.name)
		into[ino] = n
	}
}

// lsofWildcard spells an unspecified local address as lsof does ("*:22").
func lsofWildcard(hp string) string {
	for _, any := range []string{"0.0.0.0:", "[::]:"} {
		if strings.HasPrefix(hp, any) {
			return "*:" + strings.TrimPrefix(hp, any)
		}
	}
	return hp
}

// processSockets reads the network capture of a process (every page)
// and names its sockets by inode; nil when it cannot be taken (the
// sockets then keep their socket:[inode] names).
func processSockets(ctx context.Context, b Backend, ref string) map[string]socketName {
	page, err := runCaptureJob(ctx, b, "start_capture", map[string]any{"kind": "network", "process_ref": ref, "wait_ms": 5000}, capturePageRows)
	if err != nil {
		return nil
	}
	defer call(context.Background(), b, "release_capture", map[string]any{"capture_id": page.ID})
	out := map[string]socketName{}
	for pages := 0; page != nil && pages < 100; pages++ {
		socketNames(page.Rows, out)
		if page.Next == nil || *page.Next == "" {
			break
		}
		if page, err = readCapturePage(ctx, b, page.ID, *page.Next, capturePageRows); err != nil {
			break
		}
	}
	return out
}

func (m *Model) loadCapture(ref, kind string) tea.Cmd {
	b := m.opt.Backend
	return func() tea.Msg {
		// A hang guard only: the pane says "capturing..." meanwhile and
		// Esc drops it; a loaded machine may take long.
		ctx, cancel := context.WithTimeout(context.Background(), captureTimeout)
		defer cancel()
		c := &captureView{ref: ref, kind: kind, total: -1}
		page, err := runCaptureJob(ctx, b, "start_capture", map[string]any{"kind": kind, "process_ref": ref, "wait_ms": 5000}, capturePageRows)
		if err != nil {
			c.err = errText(err)
			return captureMsg{c}
		}
		c.id = page.ID
		if kind == "open_files" {
			c.sockets = processSockets(ctx, b, ref)
		}
		c.cols = captureCols[kind]
		if len(page.Rows) > 0 && c.cols == nil {
			for k := range page.Rows[0] {
				c.cols = append(c.cols, k)
			}
			sort.Strings(c.cols)
		}
		c.add(page)
		return captureMsg{c}
	}
}

// add appends a page's rows and takes its cursor and total.
func (c *captureView) add(p *capturePage) {
	for _, r := range p.Rows {
		c.rows = append(c.rows, captureCells(c.kind, c.cols, r, c.sockets))
	}
	c.next = ""
	if p.Next != nil {
		c.next = *p.Next
	}
	if p.Total >= 0 {
		c.total = p.Total
	}
	c.layout()
}

// layout sizes the columns over the rows read: each but the last as wide
// as its widest cell (at most 32 cells), numbers right-aligned.
func (c *captureView) layout() {
	n := len(c.cols)
	c.widths, c.right = make([]int, n), make([]bool, n)
	for i, col := range c.cols {
		c.widths[i] = runewidth.StringWidth(col)
		c.right[i] = len(c.rows) > 0
	}
	for _, r := range c.rows {
		for i, v := range r {
			c.widths[i] = max(c.widths[i], runewidth.StringWidth(v))
			if c.right[i] && v != "-" {
				if _, err := strconv.ParseFloat(v, 64); err != nil {
					c.right[i] = false
				}
			}
		}
	}
	if c.kind == "open_files" && n > 0 {
		c.right[0] = true // lsof right-aligns FD ("3r")
	}
	for i := range c.widths {
		c.widths[i] = min(c.widths[i], 32)
	}
}

// line draws one row (or the header) in the column layout.
func (c *captureView) line(cells []string) string {
	var b strings.Builder
	for i, v := range cells {
		if i > 0 {
			b.WriteString("  ")
		}
		switch {
		case i == len(cells)-1:
			b.WriteString(v)
		case c.right[i]:
			b.WriteString(rfit(v, c.widths[i]))
		default:
			b.WriteString(fit(v, c.widths[i]))
		}
	}
	return b.String()
}

// readMore reads the page after the rows read (at the view's cursor).
func (m *Model) readMore() tea.Cmd {
	c := m.capture
	if c == nil || c.next == "" || c.fetching || c.loading {
		return nil
	}
	c.fetching = true
	b, ref, kind, id, cursor := m.opt.Backend, c.ref, c.kind, c.id, c.next
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), captureTimeout)
		defer cancel()
		p, err := readCapturePage(ctx, b, id, cursor, capturePageRows)
		return capturePageMsg{ref: ref, kind: kind, id: id, page: p, err: err}
	}
}

// releaseCapture releases a capture the view no longer shows
// (release_capture; nil when c holds none). The host would drop it when it
// expires; releasing frees its rows at once.
func (m *Model) releaseCapture(c *captureView) tea.Cmd {
	if c == nil || c.id == "" {
		return nil
	}
	b, id := m.opt.Backend, c.id
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		call(ctx, b, "release_capture", map[string]any{"capture_id": id})
		return nil
	}
}

// captureShown is how many capture rows the detail pane shows.
func (m *Model) captureShown() int {
	n := m.detailHeight() - 3 // detail title, capture title, column header
	if m.capture != nil && m.capture.err != "" {
		n--
	}
	return max(n, 1)
}

// scrollCapture moves the first shown row by d (End: to the last rows,
// reading every page up to them) and reads the next page when the rows
// to show are not read yet.
func (m *Model) scrollCapture(d int, end bool) tea.Cmd {
	c := m.capture
	if c == nil || c.loading {
		return nil
	}
	c.toEnd = end
	c.top += d
	m.clampCapture()
	return m.fillCapture()
}

// clampCapture keeps top inside the capture: up to the last screenful of
// the whole capture when its size is known, of the rows read otherwise.
func (m *Model) clampCapture() {
	c := m.capture
	n := len(c.rows)
	if c.total > n {
		n = c.total
	}
	if c.toEnd {
		c.top = n
	}
	c.top = max(min(c.top, n-m.captureShown()), 0)
}

// fillCapture reads the next page while the rows to show (or, after End,
// the last rows) are not read yet.
func (m *Model) fillCapture() tea.Cmd {
	c := m.capture
	if c == nil || c.next == "" {
		if c != nil {
			c.toEnd = false
		}
		return nil
	}
	if c.toEnd || c.top+m.captureShown() > len(c.rows) {
		return m.readMore()
	}
	return nil
}

// rawText shows a JSON value as a cell: strings unquoted, null as "-".
func rawText(r json.RawMessage) string {
	if len(r) == 0 || string(r) == "null" {
		return "-"
	}
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(r))
}

// title names the capture and the rows shown: "rows X–Y of TOTAL" (the
// row count of the whole capture when the host gave it, else the rows
// read so far and whether more remain), as the MCP tool pages it.
func (c *captureView) title(shown int) string {
	t := map[string]string{"open_files": "Open files", "modules": "Modules", "network": "Network", "threads": "Threads"}[c.kind]
	switch {
	case c.loading:
		return t + " (capturing...)"
	case c.err != "" && len(c.rows) == 0:
		return t
	case len(c.rows) == 0 && c.next == "":
		return t + ": no rows"
	}
	last := min(c.top+shown, max(c.total, len(c.rows)))
	s := fmt.Sprintf("%s: rows %d–%d", t, c.top+1, last)
	switch {
	case c.total >= 0:
		s += fmt.Sprintf(" of %d", c.total)
	case c.next != "":
		s += fmt.Sprintf(" of %d read, more to read", len(c.rows))
	default:
		s += fmt.Sprintf(" of %d", len(c.rows))
	}
	if c.fetching {
		s += fmt.Sprintf(" (reading rows after %d...)", len(c.rows))
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// compact prints a confirmation value on one line (JSON for structures).
func compact(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return fmt.Sprint(v)
}
