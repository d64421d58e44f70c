package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
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
// threads) of the selected lifetime: start_capture's first page.
type captureView struct {
	ref, kind string
	loading   bool
	cols      []string
	rows      [][]string
	total     int
	more      bool
	err       string
}

type captureMsg struct{ c *captureView }

// captureCols are the columns shown per capture kind, in order.
var captureCols = map[string][]string{
	"open_files": {"fd", "kind", "path"},
	"modules":    {"size_bytes", "mapped_bytes", "path"},
	"network":    {"protocol", "state", "local", "remote"},
	"threads":    {"tid", "name", "state", "user_cpu_seconds", "system_cpu_seconds", "last_cpu"},
}

func (m *Model) loadCapture(ref, kind string) tea.Cmd {
	b := m.opt.Backend
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		c := &captureView{ref: ref, kind: kind}
		page, err := runCaptureJob(ctx, b, "start_capture", map[string]any{"kind": kind, "process_ref": ref, "wait_ms": 5000}, 500)
		if err != nil {
			c.err = errText(err)
			return captureMsg{c}
		}
		c.cols = captureCols[kind]
		if len(page.Rows) > 0 && c.cols == nil {
			for k := range page.Rows[0] {
				c.cols = append(c.cols, k)
			}
			sort.Strings(c.cols)
		}
		for _, r := range page.Rows {
			line := make([]string, len(c.cols))
			for i, col := range c.cols {
				line[i] = rawText(r[col])
			}
			c.rows = append(c.rows, line)
		}
		c.total = page.Total
		c.more = page.Next != nil
		return captureMsg{c}
	}
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

func (c *captureView) title() string {
	t := map[string]string{"open_files": "Open files", "modules": "Modules", "network": "Network", "threads": "Threads"}[c.kind]
	switch {
	case c.loading:
		return t + " (capturing...)"
	case c.err != "":
		return t
	}
	s := fmt.Sprintf("%s (%d rows", t, len(c.rows))
	if c.more {
		s += ", first page"
	}
	return s + ")"
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
