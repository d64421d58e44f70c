package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

// Settings are the application settings the Settings view edits
// (inquest.toml): the same file `inquest settings` changes.
type Settings struct {
	MCPConnectionsDisabled bool
	RecordingDirectory     string
	// CPUShareOfAllCores is the saved CPU% scale (true: share of all
	// cores; false: per core, as htop).
	CPUShareOfAllCores bool
}

// Options configure a Model.
type Options struct {
	// Backend answers host methods (in-process session or IPC client).
	Backend Backend
	// Attached says the TUI is a view of a host running in another
	// process (the header says so); HostPID is that host's PID.
	Attached bool
	HostPID  int
	// Refresh is the refresh period (0 = 1 s, the sampling period).
	Refresh time.Duration
	// LoadSettings reads the saved settings; SetMCPDisabled saves and
	// applies "Disable MCP connections" at once. Nil hides Settings.
	LoadSettings   func() (Settings, error)
	SetMCPDisabled func(disabled bool) error
	// NoColor drops colours and styles (NO_COLOR).
	NoColor bool
	// ExportDir is where x writes CSV files (default: the working directory).
	ExportDir string
	// CPUShareOfAllCores shows CPU% as a share of all cores (all cores =
	// 100%) instead of htop's per-core scale (one core = 100%, a process
	// using two cores 200%). The saved setting (Settings.CPUShareOfAllCores
	// from LoadSettings) overrides it.
	CPUShareOfAllCores bool
	// SetCPUShareOfAllCores saves the CPU% scale when the Settings screen
	// toggles it (nil: the toggle lasts for the session only).
	SetCPUShareOfAllCores func(allCores bool) error
}

// mode is what has the keyboard.
type mode int

const (
	modeTable mode = iota
	modeFilter
	modeHelp
	modeSettings
	modeGraphs
	modeLogs
	modeProfiles
	modeSearch   // F3: incremental search moving the selection
	modeSortMenu // F6: choose the sort column
)

// Model is the bubbletea model of the TUI. Background data arrive only
// as messages (frameMsg, captureMsg, historyMsg).
type Model struct {
	opt           Options
	width, height int

	frame *Frame
	// seq is the snapshot sequence number of the last frame fetched
	// (Frame.Seq; kept while paused, when frame is not replaced).
	seq uint64
	// ticking says a refresh (tick) is scheduled: a frame fetched at a
	// key press does not schedule a second one beside it.
	ticking bool
	err     error
	paused  bool
	// instance is the attached host's backend_instance_id (Attachment);
	// a change means a new host, whose Log view state starts at Live.
	instance string

	sortKey SortKey
	reverse bool
	filter  string
	tree    bool
	rows    []view
	sel     int    // index into rows
	selRef  string // keeps the selection on the same lifetime across frames
	top     int    // first visible row
	// moved is set once the person moves the selection (or opens a
	// process): until then it stays on the top row, as htop's does at
	// start-up. selEnded says the selected lifetime had already ended
	// when it was selected (a ghost chosen on purpose stays selected).
	moved    bool
	selEnded bool
	// showCmd shows command lines in COMMAND (c); cpuAllCores shows CPU%
	// as a share of all cores (Settings).
	showCmd bool
	// showCont shows the CONTAINER column (C), whose cells the filter
	// and search also match.
	showCont    bool
	cpuAllCores bool
	search      string // F3's text
	searchMiss  bool   // no row matches it
	sortSel     int    // F6's highlighted column

	mode       mode
	detail     bool
	activity   bool
	hist       *history
	rt         *runtimeInfo // get_runtime_collection of the detail's lifetime
	pick       *picker      // the graph picker (m in the detail), when open
	capture    *captureView
	settings   Settings
	settingErr string
	notice     string
	confirmSel int

	log         *LogSource // Log view: the recording shown (nil: Live)
	logs        []logEntry
	logScr      scroll // the Saved recordings list (sel: the recording)
	logsErr     string
	confirmStop bool // the recording stop question is shown

	ws         *Workspace
	graphScr   scroll // the graphs shown (sel: the selected graph)
	cursorBack int    // graph cursor: seconds before the displayed end

	helpScr scroll // the help lines shown (no selection)
	actScr  scroll // the agent calls shown (no selection)
	setScr  scroll // the settings lines shown (no selection)

	profScr scroll  // Tracking and profiles: sel the item (name or profile), top the first body line shown
	prompt  *prompt // its text input, when open

	// drawn is the last View output; "" after a message that may have
	// changed what is shown.
	drawn string
}

// New returns the model; run it with tea.NewProgram.
func New(opt Options) *Model {
	if opt.Refresh <= 0 {
		opt.Refresh = time.Second
	}
	m := &Model{opt: opt, width: 80, height: 24, sortKey: SortCPU, cpuAllCores: opt.CPUShareOfAllCores,
		helpScr: scroll{sel: -1}, actScr: scroll{sel: -1}, setScr: scroll{sel: -1}}
	if opt.LoadSettings != nil {
		if s, err := opt.LoadSettings(); err == nil {
			m.settings = s
			m.cpuAllCores = m.cpuAllCores || s.CPUShareOfAllCores
		} else {
			m.settingErr = err.Error()
		}
	}
	return m
}

type frameMsg struct {
	f   *Frame
	err error
	src *LogSource // the source it was fetched from (stale after a switch)
	// instance is the host's backend_instance_id after the fetch ("" for
	// a backend that is no Attachment).
	instance string
}

type tickMsg struct{}

// Init starts the first fetch.
func (m *Model) Init() tea.Cmd { return m.fetch() }

func (m *Model) fetch() tea.Cmd {
	b, prev, src := m.opt.Backend, m.frame, m.log
	parts := Parts{Status: m.mode == modeSettings, Graphs: m.mode == modeGraphs, Profiles: m.mode == modeProfiles, CommandLines: m.showCmd, Containers: m.showCont}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f, err := FetchParts(ctx, b, prev, src, parts)
		inst := ""
		if a, ok := b.(Attachment); ok {
			_, inst, _ = a.Host()
		}
		return frameMsg{f, err, src, inst}
	}
}

// tick schedules the next refresh: with a host in this process
// (SampleWaiter) and a frame from its live table, as soon as the host has
// taken the next sample (at most twice the refresh period later, so a
// stalled sampler still refreshes the rest of the screen); otherwise after
// the refresh period.
func (m *Model) tick() tea.Cmd {
	if m.ticking {
		return nil
	}
	m.ticking = true
	if w, ok := m.opt.Backend.(SampleWaiter); ok && m.log == nil && m.seq != 0 {
		seq, d := m.seq, 2*m.opt.Refresh
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			w.WaitSample(ctx, seq) // a timeout refreshes all the same
			return tickMsg{}
		}
	}
	return tea.Tick(m.opt.Refresh, func(time.Time) tea.Msg { return tickMsg{} })
}

// Update handles one message. Bubbletea draws (View) after every
// message; a message that changes nothing visible (the refresh tick) keeps
// the last drawn screen, so an idle screen is drawn once per refresh.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tickMsg); !ok {
		m.drawn = ""
	}
	return m.update(msg)
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.clamp()
		return m, nil
	case frameMsg:
		if msg.instance != "" && msg.instance != m.instance {
			known := m.instance != ""
			m.instance = msg.instance
			if known && m.log != nil {
				// A new host: the recording opened on the old one is gone
				// and the new host is Live.
				m.log, m.detail, m.capture, m.hist = nil, false, nil, nil
				m.frame, m.rows, m.sel, m.top = nil, nil, 0, 0
				m.notice = "the host restarted: Log view closed, back to Live"
				return m, m.fetch()
			}
		}
		if msg.src != m.log {
			return m, nil // fetched before a Live/Log switch; the switch fetched anew
		}
		if msg.err != nil && m.log != nil && contract.CodeOf(msg.err) == contract.CodeReferenceInvalid {
			// The loaded log expired: load it again and go on.
			return m, m.renewLog()
		}
		m.seq = 0
		if msg.err != nil {
			m.err = msg.err
		} else {
			m.err, m.seq = nil, msg.f.Seq
			if !m.paused || m.frame == nil {
				m.frame = msg.f
				m.rearrange()
			} else {
				// paused: keep the displayed rows, but badge, activity
				// and confirmations stay current.
				m.frame.Bridges, m.frame.Calls, m.frame.Pending, m.frame.Listener, m.frame.Activity, m.frame.Recording, m.frame.Profiles =
					msg.f.Bridges, msg.f.Calls, msg.f.Pending, msg.f.Listener, msg.f.Activity, msg.f.Recording, msg.f.Profiles
			}
			if m.confirmSel >= len(m.frame.Pending) {
				m.confirmSel = 0
			}
			if n := len(m.profItems()); m.profScr.sel >= n {
				m.profScr.sel = max(n-1, 0)
			}
			if msg.f.Workspace != nil && msg.f.Workspace.newer(m.ws) {
				m.ws = msg.f.Workspace
				if m.graphScr.sel >= len(m.ws.Graphs) {
					m.graphScr.sel = max(len(m.ws.Graphs)-1, 0)
				}
			}
		}
		if r := m.selected(); m.detail && r != nil && m.log == nil && !r.Ended {
			// the runtime's state and values follow the samples
			return m, tea.Batch(m.tick(), m.loadRuntime(r.Ref))
		}
		return m, m.tick()
	case tickMsg:
		m.ticking = false
		return m, m.fetch()
	case historyMsg:
		if m.hist != nil && m.hist.ref == msg.ref {
			m.hist = msg.h
		}
		return m, nil
	case runtimeMsg:
		if r := m.selected(); m.detail && r != nil && r.Ref == msg.ref {
			m.rt = msg.rt
		}
		return m, nil
	case pickerMsg:
		if m.pick != nil && m.pick.ref == msg.ref {
			msg.p.scr = scroll{sel: 0}
			m.pick = msg.p
		}
		return m, nil
	case captureMsg:
		if m.capture != nil && m.capture.ref == msg.c.ref && m.capture.kind == msg.c.kind && m.capture.loading {
			m.capture = msg.c
			return m, m.fillCapture()
		}
		// closed or replaced meanwhile
		return m, m.releaseCapture(msg.c)
	case capturePageMsg:
		c := m.capture
		if c == nil || c.ref != msg.ref || c.kind != msg.kind || c.id != msg.id || !c.fetching {
			return m, nil
		}
		c.fetching = false
		if msg.err != nil {
			// The rows read stay shown; the failure (an expired capture
			// is CURSOR_INVALID) says why no more are.
			c.err, c.toEnd = "reading more rows: "+errText(msg.err), false
			m.clampCapture()
			return m, nil
		}
		c.err = ""
		c.add(msg.page)
		m.clampCapture()
		return m, m.fillCapture()
	case logsMsg:
		m.logs, m.logsErr = msg.logs, ""
		if msg.err != nil {
			m.logsErr = errText(msg.err)
		}
		m.logScr.sel = min(m.logScr.sel, max(len(m.logs)-1, 0))
		return m, nil
	case logRenewMsg:
		if m.log != msg.old {
			return m, nil // the view left that recording meanwhile
		}
		if msg.err != nil {
			m.err = msg.err
			return m, m.tick()
		}
		m.log, m.err = msg.src, nil
		m.capture, m.hist, m.detail = nil, nil, false // their refs were the expired log's
		return m, m.fetch()
	case logOpenMsg:
		if msg.err != nil {
			m.notice = "log view: " + errText(msg.err)
			return m, nil
		}
		m.log, m.mode, m.notice = msg.src, modeTable, ""
		m.frame, m.rows, m.sel, m.top, m.selRef = nil, nil, 0, 0, ""
		m.detail, m.capture, m.hist = false, nil, nil
		if m.log != nil {
			m.notice = "Log view: " + m.log.Name + " (L returns to Live)"
		}
		return m, m.fetch()
	case recMsg:
		m.notice = msg.text
		return m, nil
	case graphMsg:
		if msg.ws != nil && msg.ws.newer(m.ws) {
			m.ws = msg.ws
			if m.graphScr.sel >= len(m.ws.Graphs) {
				m.graphScr.sel = max(len(m.ws.Graphs)-1, 0)
			}
		}
		if msg.text != "" {
			m.notice = msg.text
		} else if msg.err != nil {
			m.notice = "graphs: " + errText(msg.err)
		}
		if msg.follow != "" {
			return m, m.followOperation(msg.follow, msg.done)
		}
		return m, nil
	case confirmedMsg:
		m.notice = msg.text
		return m, m.fetch()
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

// rearrange recomputes the displayed rows and keeps the selection on a
// live row: on the same lifetime while it is live and shown; when it
// ended (or the filter hides it), on the live row that took its place,
// its neighbour; before the person moved it, on the top row.
func (m *Model) rearrange() {
	if m.frame == nil {
		return
	}
	m.rows = arrange(m.frame.Rows, m.sortKey, m.reverse, m.filter, m.tree)
	live := 0
	for _, v := range m.rows {
		if !v.r.Ended {
			live++
		}
	}
	if !m.moved {
		m.sel = 0
	} else {
		at := -1
		for i, v := range m.rows {
			if v.r.Ref == m.selRef {
				at = i
				break
			}
		}
		switch {
		case at >= 0 && (!m.rows[at].r.Ended || m.selEnded || live == 0):
			m.sel = at
		case live > 0:
			m.sel = min(m.sel, live-1) // the neighbour now in its place
		}
	}
	m.clamp()
}

func (m *Model) clamp() {
	if m.sel >= len(m.rows) {
		m.sel = len(m.rows) - 1
	}
	if m.sel < 0 {
		m.sel = 0
	}
	if len(m.rows) > 0 {
		ref := m.rows[m.sel].r.Ref
		if ref != m.selRef {
			m.selEnded = m.rows[m.sel].r.Ended
		}
		m.selRef = ref
	}
	h := m.tableHeight()
	// the window holds the selection and never ends below the last row
	m.top = max(min(follow(m.top, m.sel, h), len(m.rows)-h), 0)
}

func (m *Model) selected() *Row {
	if m.sel < len(m.rows) && len(m.rows) > 0 {
		return m.rows[m.sel].r
	}
	return nil
}

func (m *Model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	// Typed keys that reach one read together ("/" and a filter typed
	// fast, or a slow machine) arrive as one message: handle each rune
	// as its own key press, so "/name" opens the filter and types "name".
	// Esc followed fast by a key reaches the program as one Alt+key
	// sequence (two Escs as Alt+Esc); the TUI binds no Alt keys, so it is
	// Esc, then the key.
	if k.Alt && !k.Paste && k.Type == tea.KeyEscape {
		// Esc pressed twice fast (close the capture, then the detail)
		_, c1 := m.key(tea.KeyMsg{Type: tea.KeyEsc})
		_, c2 := m.key(tea.KeyMsg{Type: tea.KeyEsc})
		return m, tea.Batch(c1, c2)
	}
	if k.Alt && !k.Paste && (k.Type == tea.KeyRunes || k.Type == tea.KeySpace) {
		_, c1 := m.key(tea.KeyMsg{Type: tea.KeyEsc})
		k.Alt = false
		_, c2 := m.key(k)
		return m, tea.Batch(c1, c2)
	}
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 && !k.Paste {
		var cmds []tea.Cmd
		for _, r := range k.Runes {
			_, c := m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: k.Alt})
			cmds = append(cmds, c)
		}
		return m, tea.Batch(cmds...)
	}
	s := k.String()
	if s == "ctrl+c" || (s == "f10" && m.prompt == nil) {
		return m, m.quit() // F10 quits everywhere, as in htop
	}
	m.notice = ""
	switch m.mode {
	case modeSearch:
		m.searchKey(k)
		return m, nil
	case modeSortMenu:
		m.sortMenuKey(s)
		return m, nil
	case modeHelp:
		switch s {
		case "esc", "q", "?", "f1", "enter":
			m.mode = modeTable
		default:
			m.helpScr.key(s, len(helpLines(m.width)), m.helpShown())
		}
		return m, nil
	case modeFilter:
		switch k.Type {
		case tea.KeyEnter, tea.KeyF4:
			m.mode = modeTable
		case tea.KeyEsc:
			m.filter, m.mode = "", modeTable
		case tea.KeyBackspace:
			if r := []rune(m.filter); len(r) > 0 {
				m.filter = string(r[:len(r)-1])
			}
		case tea.KeyRunes, tea.KeySpace:
			m.filter += string(k.Runes)
		}
		m.rearrange()
		return m, nil
	case modeLogs:
		return m, m.logsKey(s)
	case modeProfiles:
		if m.prompt == nil && m.frame != nil && len(m.frame.Pending) > 0 && (s == "y" || s == "n" || s == "tab" || s == "shift+tab") {
			break
		}
		return m, m.profilesKey(s, k)
	case modeGraphs:
		if m.frame != nil && len(m.frame.Pending) > 0 && (s == "y" || s == "n" || s == "tab" || s == "shift+tab") {
			break
		}
		return m, m.graphKey(s)
	case modeSettings:
		switch s {
		case "esc", "q", "S":
			m.mode = modeTable
		case " ", "enter", "d":
			m.toggleMCP()
		case "c":
			m.toggleCPUScale()
		default:
			m.setScr.key(s, len(m.settingsLines(m.width)), m.settingsShown())
		}
		return m, nil
	}
	if m.confirmStop {
		m.confirmStop = false
		if s == "y" || s == "Y" {
			return m, m.stopRecording()
		}
		m.notice = "recording continues"
		return m, nil
	}
	// A pending confirmation takes y/n first (the overlay is on top).
	if m.frame != nil && len(m.frame.Pending) > 0 {
		switch s {
		case "y", "Y":
			return m, m.decide(m.frame.Pending[m.confirmSel].ID, true)
		case "n", "N":
			return m, m.decide(m.frame.Pending[m.confirmSel].ID, false)
		case "tab":
			m.confirmSel = (m.confirmSel + 1) % len(m.frame.Pending)
			m.clamp() // the overlay's height follows the confirmation shown
			return m, nil
		case "shift+tab":
			m.confirmSel = (m.confirmSel + len(m.frame.Pending) - 1) % len(m.frame.Pending)
			m.clamp()
			return m, nil
		}
	}
	if m.pick != nil && m.mode == modeTable {
		return m, m.pickerKey(s)
	}
	if m.detail && m.capture != nil {
		// The capture pane has the movement keys: it pages through the
		// capture (reading further pages as needed); Esc closes it.
		c := m.capture
		switch s {
		case "esc":
			m.capture = nil
			return m, m.releaseCapture(c)
		case "end":
			// to the end of the whole capture, reading the pages to it
			return m, m.scrollCapture(0, true)
		}
		if d, ok := scrollStep(s, max(c.total, len(c.rows)), m.captureShown()); ok {
			return m, m.scrollCapture(d, false)
		}
	}
	if m.activity {
		// The agent activity pane has the movement keys while it is open,
		// as a capture pane does; Esc or a closes it.
		if s == "esc" {
			m.activity = false
			m.clamp()
			return m, nil
		}
		if m.actScr.key(s, m.activityRows(), m.activityShown()) {
			return m, nil
		}
	}
	switch s {
	case "q":
		if m.detail {
			c := m.capture
			m.detail, m.capture, m.hist, m.rt = false, nil, nil, nil
			return m, m.releaseCapture(c)
		}
		return m, m.quit()
	case "esc":
		if m.detail {
			m.detail, m.capture, m.hist, m.rt = false, nil, nil, nil
		} else if m.filter != "" {
			m.filter = ""
			m.rearrange()
		}
	case "?", "f1":
		m.mode, m.helpScr.top = modeHelp, 0
	case "/", "f4":
		m.mode = modeFilter
	case "f3":
		m.mode, m.search, m.searchMiss = modeSearch, "", false
	case "f5":
		m.tree = !m.tree
		m.rearrange()
	case "f6":
		m.mode, m.sortSel = modeSortMenu, int(m.sortKey)
	case "f9", "k":
		m.notice = readOnlyNote
	case "c":
		m.showCmd = !m.showCmd
		if m.showCmd {
			return m, m.fetch() // the command lines now, not at the next tick
		}
		m.rearrange()
	case "C":
		m.showCont = !m.showCont
		if m.showCont {
			return m, m.fetch() // the containers now, not at the next tick
		}
		m.rearrange()
	case "up", "down", "j", "pgup", "pgdown", " ", "home", "end":
		d, _ := scrollStep(s, len(m.rows), m.tableHeight())
		m.move(d)
	case "P":
		m.setSort(SortCPU)
	case "M":
		m.setSort(SortMem)
	case "I":
		m.setSort(SortIO)
	case "H":
		m.setSort(SortThreads)
	case "N":
		m.setSort(SortName)
	case "#":
		m.setSort(SortPID)
	case ">", ".":
		m.setSort((m.sortKey + 1) % numSortKeys)
	case "<", ",":
		m.setSort((m.sortKey + numSortKeys - 1) % numSortKeys)
	case "r":
		m.reverse = !m.reverse
		m.rearrange()
	case "t":
		m.tree = !m.tree
		m.rearrange()
	case "p":
		m.paused = !m.paused
	case "L":
		if m.log != nil {
			return m, m.leaveLog()
		}
		m.mode, m.logsErr = modeLogs, ""
		return m, m.listLogs()
	case "R":
		if m.log == nil {
			return m, m.toggleRecording()
		}
	case "*":
		if r := m.selected(); r != nil && m.log == nil {
			return m, m.toggleTracking(r)
		}
	case "g":
		m.mode = modeGraphs
		return m, m.graphCall("", nil, nil)
	case "o":
		m.mode, m.prompt = modeProfiles, nil
		return m, m.fetch() // the profiles now, not at the next tick
	case "+":
		if r := m.selected(); r != nil && !r.Ended {
			return m, m.addGraph([]map[string]any{{"metric_id": graphMetricFor(m.sortKey), "process_ref": r.Ref}})
		}
	case "a":
		m.activity, m.actScr.top = !m.activity, 0
		m.clamp()
	case "S":
		if m.opt.LoadSettings != nil {
			if st, err := m.opt.LoadSettings(); err == nil {
				m.settings, m.settingErr = st, ""
			} else {
				m.settingErr = err.Error()
			}
			m.mode, m.setScr.top = modeSettings, 0
			return m, m.fetch() // the listener state now, not at the next tick
		}
	case "enter":
		if r := m.selected(); r != nil {
			m.moved = true // the detail stays on this process
			m.detail = !m.detail
			release := m.releaseCapture(m.capture)
			m.capture = nil
			if m.detail {
				m.hist, m.rt = &history{ref: r.Ref}, nil
				m.clamp()
				return m, tea.Batch(release, m.loadHistory(r.Ref), m.loadRuntime(r.Ref))
			}
			m.hist, m.rt = nil, nil
			m.clamp()
			return m, release
		}
	case "m":
		if r := m.selected(); m.detail && r != nil {
			// Log view lists the jvm_* family too: a recording may hold it.
			jvm := m.log != nil || m.rt != nil && m.rt.ref == r.Ref && m.rt.runtime == "jvm"
			m.pick = &picker{ref: r.Ref, scr: scroll{sel: 0}}
			return m, m.openPicker(r.Ref, jvm)
		}
	case "f", "l", "n", "T":
		if s == "T" && !m.detail {
			m.setSort(SortTime) // htop's T: sort by TIME+
		} else if r := m.selected(); m.detail && r != nil && m.log != nil {
			m.notice = "a recording holds metrics only: open files, modules, network and threads were not recorded"
		} else if m.detail && r != nil {
			kind := map[string]string{"f": "open_files", "l": "modules", "n": "network", "T": "threads"}[s]
			release := m.releaseCapture(m.capture)
			m.capture = &captureView{ref: r.Ref, kind: kind, loading: true, total: -1}
			return m, tea.Batch(release, m.loadCapture(r.Ref, kind))
		}
	}
	m.clamp()
	return m, nil
}

func (m *Model) move(d int) {
	m.moved = true
	m.sel += d
	m.clamp()
	if r := m.selected(); r != nil && m.detail && (m.hist == nil || m.hist.ref != r.Ref) {
		m.hist, m.capture, m.rt = &history{ref: r.Ref}, nil, nil
	}
}

func (m *Model) setSort(k SortKey) {
	if m.sortKey == k {
		m.reverse = !m.reverse
	} else {
		m.sortKey, m.reverse = k, false
	}
	m.rearrange()
}

// toggleCPUScale switches CPU% between per core and the share of all
// cores and saves the choice (SetCPUShareOfAllCores); a save that fails
// keeps the switch for the session and shows the error.
func (m *Model) toggleCPUScale() {
	m.cpuAllCores = !m.cpuAllCores
	m.settings.CPUShareOfAllCores = m.cpuAllCores
	m.notice = map[bool]string{true: "CPU% shows a share of all cores (all cores = 100%)",
		false: "CPU% shows per-core use (one core = 100%, as htop)"}[m.cpuAllCores]
	if m.opt.SetCPUShareOfAllCores == nil {
		return
	}
	if err := m.opt.SetCPUShareOfAllCores(m.cpuAllCores); err != nil {
		m.settingErr = "CPU% scale not saved (this session only): " + err.Error()
		return
	}
	m.settingErr = ""
	m.notice += "; saved"
}

func (m *Model) toggleMCP() {
	if m.opt.SetMCPDisabled == nil {
		return
	}
	want := !m.settings.MCPConnectionsDisabled
	if err := m.opt.SetMCPDisabled(want); err != nil {
		m.settingErr = err.Error()
		return
	}
	m.settings.MCPConnectionsDisabled, m.settingErr = want, ""
	m.notice = fmt.Sprintf("MCP connections %s", map[bool]string{true: "disabled", false: "enabled"}[want])
}

type confirmedMsg struct{ text string }

func (m *Model) decide(id string, yes bool) tea.Cmd {
	b := m.opt.Backend
	decision := map[bool]string{true: "confirm", false: "deny"}[yes]
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := call(ctx, b, "confirm_operation", map[string]any{"operation_id": id, "decision": decision})
		if err != nil {
			return confirmedMsg{"decision failed: " + errText(err)}
		}
		var d struct {
			State string `json:"state"`
		}
		decode(res, &d)
		return confirmedMsg{fmt.Sprintf("operation %s: %s", id, d.State)}
	}
}

// readOnlyNote is what F9 and k (htop's kill) and help say: the monitor
// only observes.
const readOnlyNote = "read-only monitor: no kill or renice (F9/k), so nothing an agent or a key press does here can end or slow a process"

// searchKey handles a key of F3's search: typed text moves the selection
// to the first row at or after it whose name (or command line, or PID)
// matches; F3 again to the next match; Enter or Esc ends the search with
// the selection where it is.
func (m *Model) searchKey(k tea.KeyMsg) {
	switch k.Type {
	case tea.KeyEnter, tea.KeyEsc:
		m.mode = modeTable
		return
	case tea.KeyF3:
		m.findNext(m.sel + 1)
		return
	case tea.KeyBackspace:
		if r := []rune(m.search); len(r) > 0 {
			m.search = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		m.search += string(k.Runes)
	default:
		if d, ok := scrollStep(k.String(), len(m.rows), m.tableHeight()); ok {
			m.move(d)
		}
		return
	}
	m.findNext(m.sel)
}

// findNext selects the first row from index from on (wrapping around)
// that matches the search text.
func (m *Model) findNext(from int) {
	m.searchMiss = false
	if m.search == "" || len(m.rows) == 0 {
		return
	}
	for i := 0; i < len(m.rows); i++ {
		j := (from + i) % len(m.rows)
		if matches(m.rows[j].r, strings.ToLower(m.search), m.showCmd) {
			m.moved, m.sel = true, j
			m.clamp()
			return
		}
	}
	m.searchMiss = true
}

// sortMenuKey handles F6's sort menu: Up/Down choose a column, Enter
// sorts by it, Esc leaves the order as it was.
func (m *Model) sortMenuKey(s string) {
	switch s {
	case "esc", "q", "f6":
		m.mode = modeTable
	case "enter":
		m.mode = modeTable
		if SortKey(m.sortSel) != m.sortKey {
			m.sortKey, m.reverse = SortKey(m.sortSel), false
			m.rearrange()
		}
	default:
		if d, ok := scrollStep(s, int(numSortKeys), int(numSortKeys)); ok {
			m.sortSel = min(max(m.sortSel+d, 0), int(numSortKeys)-1)
		}
	}
}
