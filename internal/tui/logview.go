package tui

import (
	"context"
	"fmt"
	"time"

	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

// logEntry is one saved recording of list_logs.
type logEntry struct{ ID, Name string }

// LogSource is the recording the Log view shows (open_log's log_ref).
type LogSource struct {
	ID, Name, Ref string
}

type logsMsg struct {
	logs []logEntry
	err  error
}

type logOpenMsg struct {
	src *LogSource // nil: back to Live
	err error
}

// listLogs lists the recording directory (list_logs job, every page of
// its capture).
func (m *Model) listLogs() tea.Cmd {
	b := m.opt.Backend
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		p, err := runCaptureJob(ctx, b, "list_logs", map[string]any{}, 500)
		var out []logEntry
		for err == nil {
			for _, r := range p.Rows {
				out = append(out, logEntry{ID: rawText(r["log_id"]), Name: rawText(r["name"])})
			}
			if p.Next == nil || *p.Next == "" {
				return logsMsg{logs: out}
			}
			// every page: the list shows all the recordings
			p, err = readCapturePage(ctx, b, p.ID, *p.Next, 500)
		}
		return logsMsg{err: err}
	}
}

// openLog loads a recording (open_log, following its job) and switches
// the host to Log view activity (set_activity log): live inspection is
// then ACTIVITY_CONFLICT for every client.
func (m *Model) openLog(e logEntry) tea.Cmd {
	b := m.opt.Backend
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ref, err := loadLog(ctx, b, e.ID)
		if err != nil {
			return logOpenMsg{err: err}
		}
		// The graph workspace shows the recording too (log_ref).
		if _, err := call(ctx, b, "set_activity", map[string]any{"activity": "log", "log_ref": ref}); err != nil {
			call(context.Background(), b, "close_log", map[string]any{"log_ref": ref})
			return logOpenMsg{err: err}
		}
		return logOpenMsg{src: &LogSource{ID: e.ID, Name: e.Name, Ref: ref}}
	}
}

// loadLog runs open_log for logID to its end and returns the log_ref.
func loadLog(ctx context.Context, b Backend, logID string) (string, error) {
	res, err := call(ctx, b, "open_log", map[string]any{"log_id": logID, "wait_ms": 5000})
	for err == nil {
		var d struct {
			JobID  string  `json:"job_id"`
			State  string  `json:"state"`
			LogRef *string `json:"log_ref"`
		}
		decode(res, &d)
		if d.LogRef != nil {
			return *d.LogRef, nil
		}
		if d.State != "running" && d.State != "pending" {
			return "", fmt.Errorf("open_log ended %s", d.State)
		}
		res, err = call(ctx, b, "open_log", map[string]any{"job_id": d.JobID, "wait_ms": 5000})
	}
	return "", err
}

// logRenewMsg carries a recording loaded again for the Log view (old is
// the source whose log_ref had expired).
type logRenewMsg struct {
	old, src *LogSource
	err      error
}

// renewLog loads the shown recording again: a loaded log expires 5
// minutes after loading (reads do not renew it), while the Log view stays
// open as long as the user keeps it.
func (m *Model) renewLog() tea.Cmd {
	b, old := m.opt.Backend, m.log
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ref, err := loadLog(ctx, b, old.ID)
		if err != nil {
			return logRenewMsg{old: old, err: err}
		}
		// The same recording again: the graph workspace keeps its log
		// graphs and reads the new load.
		if _, err := call(ctx, b, "set_activity", map[string]any{"activity": "log", "log_ref": ref}); err != nil {
			call(context.Background(), b, "close_log", map[string]any{"log_ref": ref})
			return logRenewMsg{old: old, err: err}
		}
		src := *old
		src.Ref = ref
		return logRenewMsg{old: old, src: &src}
	}
}

// leaveLog releases the recording and returns the host to Live.
func (m *Model) leaveLog() tea.Cmd {
	b, src := m.opt.Backend, m.log
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if src != nil {
			call(ctx, b, "close_log", map[string]any{"log_ref": src.Ref})
		}
		_, err := call(ctx, b, "set_activity", map[string]any{"activity": "live"})
		return logOpenMsg{err: err}
	}
}

// quit ends the program; in Log view it first releases the recording and
// returns the host to Live (the host also does so when the session closes).
func (m *Model) quit() tea.Cmd {
	if m.log == nil {
		return tea.Quit
	}
	b, src := m.opt.Backend, m.log
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		call(ctx, b, "close_log", map[string]any{"log_ref": src.Ref})
		call(ctx, b, "set_activity", map[string]any{"activity": "live"})
		return tea.Quit()
	}
}

func (m *Model) logsKey(s string) tea.Cmd {
	switch s {
	case "esc", "q", "L":
		m.mode = modeTable
	case "enter":
		if m.logScr.sel < len(m.logs) {
			m.notice = "opening " + m.logs[m.logScr.sel].Name + "..."
			return m.openLog(m.logs[m.logScr.sel])
		}
	default:
		m.logScr.key(s, len(m.logs), m.logsShown())
	}
	return nil
}

func (m *Model) logsView(w int) []string {
	lines := []string{fit("Saved recordings (Enter opens in Log view, Esc returns)", w), ""}
	if m.logsErr != "" {
		lines = append(lines, fit("  "+m.logsErr, w))
	}
	if len(m.logs) == 0 && m.logsErr == "" {
		lines = append(lines, fit("  no recordings in the recording directory (R starts one of the tracked processes)", w))
	}
	// a window of the list that holds the selection
	n := m.logsShown()
	m.logScr.clamp(len(m.logs), n)
	from, to := m.logScr.window(len(m.logs), n)
	for i := from; i < to; i++ {
		mark := "  "
		if i == m.logScr.sel {
			mark = "> "
		}
		lines = append(lines, fit(mark+m.logs[i].Name, w))
	}
	if pos := m.logScr.position("recordings", len(m.logs), n); pos != "" {
		lines[1] = fit("  "+pos+" (Up/Down, PgUp/PgDn, Home/End)", w)
	}
	return lines
}

// logsShown is how many recordings the list shows at once (below the
// meters, its title and a line of position, above the footer).
func (m *Model) logsShown() int {
	n := m.height - 4 - 2
	if m.logsErr != "" {
		n--
	}
	return max(n, 1)
}

// recState is the host's recording (get_recording).
type recState struct {
	Active    bool    `json:"active"`
	SessionID *string `json:"recording_session_id"`
	Name      string  `json:"name"`
}

type recMsg struct{ text string }

// toggleRecording starts a recording of the tracked processes (1 s
// frames), or asks to confirm stopping the active one.
func (m *Model) toggleRecording() tea.Cmd {
	if m.frame != nil && m.frame.Recording.Active {
		m.confirmStop = true
		return nil
	}
	b := m.opt.Backend
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		res, err := call(ctx, b, "get_tracking", map[string]any{})
		if err != nil {
			return recMsg{"recording: " + errText(err)}
		}
		var tr struct {
			Revision string `json:"revision"`
		}
		decode(res, &tr)
		res, err = call(ctx, b, "start_recording", map[string]any{"operation_id": fmt.Sprintf("tui-rec-%d", time.Now().UnixNano()),
			"expected_revision": tr.Revision, "interval_seconds": 1})
		if err != nil {
			return recMsg{"recording: " + errText(err)}
		}
		// start_recording is an operation: the file name is in its outcome.
		var d struct {
			State   string `json:"state"`
			Outcome struct {
				Name string `json:"name"`
			} `json:"outcome"`
		}
		decode(res, &d)
		name := d.Outcome.Name
		if name == "" {
			// not in the reply (an operation still running): the host's
			// active recording names it
			if res, err := call(ctx, b, "get_recording", map[string]any{}); err == nil {
				var r recState
				decode(res, &r)
				name = r.Name
			}
		}
		if name == "" {
			return recMsg{"recording started (" + d.State + "); R stops it"}
		}
		return recMsg{"recording to " + name + " (R stops)"}
	}
}

func (m *Model) stopRecording() tea.Cmd {
	b := m.opt.Backend
	sid := ""
	if m.frame != nil && m.frame.Recording.SessionID != nil {
		sid = *m.frame.Recording.SessionID
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := call(ctx, b, "stop_recording", map[string]any{"operation_id": fmt.Sprintf("tui-stop-%d", time.Now().UnixNano()),
			"recording_session_id": sid})
		if err != nil {
			return recMsg{"stop recording: " + errText(err)}
		}
		var d struct {
			State   string `json:"state"`
			Outcome *struct {
				Name   string `json:"name"`
				Frames int64  `json:"frames"`
			} `json:"outcome"`
		}
		decode(res, &d)
		if o := d.Outcome; o != nil && o.Name != "" {
			return recMsg{fmt.Sprintf("recording stopped: %s (%d frames)", o.Name, o.Frames)}
		}
		return recMsg{"recording stopped (" + d.State + ")"}
	}
}

// toggleTracking adds or removes the selected process's name on the
// Tracking List (update_tracking; removal that would discard history
// waits for confirmation in the overlay like an agent's).
func (m *Model) toggleTracking(r *Row) tea.Cmd {
	b := m.opt.Backend
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		res, err := call(ctx, b, "get_tracking", map[string]any{})
		if err != nil {
			return recMsg{"tracking: " + errText(err)}
		}
		var tr struct {
			Revision string   `json:"revision"`
			Names    []string `json:"names"`
		}
		decode(res, &tr)
		action := "add"
		for _, n := range tr.Names {
			if equalFold(n, r.Name) {
				action = "remove"
			}
		}
		_, err = call(ctx, b, "update_tracking", map[string]any{"operation_id": fmt.Sprintf("tui-track-%d", time.Now().UnixNano()),
			"expected_revision": tr.Revision, "action": action, "process_name": r.Name, "wait_ms": 0})
		if err != nil {
			return recMsg{"tracking: " + errText(err)}
		}
		if action == "add" {
			return recMsg{"now tracking " + escapeText(r.Name) + " (its history is kept about two hours)"}
		}
		return recMsg{"no longer tracking " + escapeText(r.Name)}
	}
}
