package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/jobs"
)

// AgentActivityMethod lists the tool calls MCP bridge sessions are making
// now and made recently (the TUI's agent activity panel). It is a host
// method, never an MCP tool. Data: {"calls": [{tool, state ("running",
// "succeeded", "failed"), started_at, duration_ms, code?}], "bridges": N}.
// Argument values, paths and command lines are never kept.
const AgentActivityMethod = "list_agent_activity"

// activityKeep is how many finished bridge calls the host remembers.
const activityKeep = 32

// AgentCall is one tool call of an MCP bridge session as the activity
// panel shows it: the tool name, its state, when it started, how long it
// ran (so far, while running) and the outcome's error code ("" on success
// or while running). Arguments are never recorded.
type AgentCall struct {
	Tool     string
	State    string
	Started  time.Time
	Duration time.Duration
	Code     string
	id       uint64
}

// activityLog keeps running and recent bridge calls; safe for concurrent use.
type activityLog struct {
	mu      sync.Mutex
	next    uint64
	running map[uint64]*AgentCall
	recent  []AgentCall // oldest first, at most activityKeep
}

var activities sync.Map // *Host -> *activityLog

func (h *Host) activity() *activityLog {
	v, _ := activities.LoadOrStore(h, &activityLog{running: map[uint64]*AgentCall{}})
	return v.(*activityLog)
}

// trackCall records the start of method for an MCP bridge session and
// returns the function that records its end; for other sessions it
// returns nil. It is the one hook in Dispatch.
func (h *Host) trackCall(s *Session, method string) func(error) {
	if s == nil || !isMCPBridge(s) {
		return nil
	}
	a := h.activity()
	a.mu.Lock()
	a.next++
	c := &AgentCall{Tool: method, State: "running", Started: time.Now(), id: a.next}
	a.running[c.id] = c
	a.mu.Unlock()
	return func(err error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.running, c.id)
		c.Duration = time.Since(c.Started)
		c.State = "succeeded"
		if err != nil {
			c.State = "failed"
			var ce *contract.Error
			if errors.As(err, &ce) {
				c.Code = string(ce.Code)
			} else {
				c.Code = string(contract.CodeInternalError)
			}
		}
		a.recent = append(a.recent, *c)
		if len(a.recent) > activityKeep {
			a.recent = a.recent[len(a.recent)-activityKeep:]
		}
	}
}

// AgentActivity returns the running bridge calls (oldest first) followed
// by the recent finished ones (newest first).
func (h *Host) AgentActivity() []AgentCall {
	a := h.activity()
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	out := make([]AgentCall, 0, len(a.running)+len(a.recent))
	for _, c := range a.running {
		cc := *c
		cc.Duration = now.Sub(c.Started)
		out = append(out, cc)
	}
	sortCalls(out)
	for i := len(a.recent) - 1; i >= 0; i-- {
		out = append(out, a.recent[i])
	}
	return out
}

func sortCalls(cs []AgentCall) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].id < cs[j-1].id; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// BridgeSessions counts open sessions of MCP bridge connections.
func (h *Host) BridgeSessions() int {
	h.mu.Lock()
	ss := make([]*Session, 0, len(h.sessions))
	for _, s := range h.sessions {
		ss = append(ss, s)
	}
	h.mu.Unlock()
	n := 0
	for _, s := range ss {
		if isMCPBridge(s) {
			n++
		}
	}
	return n
}

func (h *Host) agentActivity(ctx context.Context, s *Session, _ json.RawMessage) (*contract.Result, error) {
	calls := []any{}
	for _, c := range h.AgentActivity() {
		m := map[string]any{
			"tool":        c.Tool,
			"state":       c.State,
			"started_at":  c.Started.UTC().Format(time.RFC3339Nano),
			"duration_ms": c.Duration.Milliseconds(),
		}
		if c.Code != "" {
			m["code"] = c.Code
		}
		calls = append(calls, m)
	}
	return contract.NewResult("live", time.Time{}, map[string]any{"calls": calls, "bridges": h.BridgeSessions()}), nil
}

// registerTUI registers the host methods only the TUI calls (never MCP
// tools): agent activity, graph display state and series, and the Live/Log
// view activity; the graph tools themselves are in Tools.
func (h *Host) registerTUI() {
	h.methods[AgentActivityMethod] = h.agentActivity
	h.methods[GraphWorkspaceMethod] = h.updateGraphWorkspace
	h.methods[GraphSeriesMethod] = h.readGraphSeries
	h.methods[ActivityMethod] = h.setActivity
	h.status = append(h.status, func(m map[string]any) {
		if h.InLogView() {
			m["activity"] = "log"
		}
	})
}

// ActivityMethod switches the host between Live and Log view activity
// (the TUI's Log view): {"activity": "live"|"log", "log_ref"?}. A host
// method, never an MCP tool, refused for MCP bridge sessions. log_ref (a
// log this session loaded with open_log, finished) is the recording the
// view shows: the graph workspace then draws and exports its series until
// the session returns to Live (its Live graphs come back then); giving it
// again after loading the same recording anew keeps the log graphs. In Log view live inspection
// is ACTIVITY_CONFLICT for every session, and entering it cancels the
// live jobs MCP bridge sessions started before (captures, process info,
// condition waits; see logViewCancelled); saved-log reads (log_ref),
// status, catalogs, tracking reads, graphs and operations keep working.
// Log view belongs to the session that set it: "live" releases that
// session's claim, and so does closing the session (a view that quits or
// whose connection drops), so the host returns to Live once no open
// session holds Log view. The result's activity is the host's afterwards.
const ActivityMethod = "set_activity"

// logViewState is the set of open sessions that hold Log view, and when
// Log view was last entered.
type logViewState struct {
	mu     sync.Mutex
	owners map[*Session]bool
	// entered is when the host last went from Live into Log view: live
	// listings and live captures made before it no longer page (their
	// cursors are CURSOR_INVALID, in Log view and after it).
	entered time.Time
}

// liveCursorsBefore is when live cursors were last invalidated (the last
// entry into Log view); the zero time when never.
func (h *Host) liveCursorsBefore() time.Time {
	v, ok := logView.Load(h)
	if !ok {
		return time.Time{}
	}
	st := v.(*logViewState)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.entered
}

// liveCursorErr is the failure of a cursor over a live listing or capture
// made before the TUI last entered Log view (the transition invalidates
// live capture cursors; docs/tui.md, "Recording and Log view").
func liveCursorErr() *contract.Error {
	e := contract.Errorf(contract.CodeCursorInvalid, "the TUI entered Log view after this live listing or capture was made, which invalidates live cursors; start the listing again without a cursor (once the TUI is back in Live)").
		WithDetail("cause", "log_view")
	e.Field = "/cursor"
	return e
}

// liveListing reports whether a frozen listing id is a live one (process
// listings, live raw history and rankings; not saved-log or tracking
// listings).
func liveListing(id string) bool {
	return strings.HasPrefix(id, "plist-") || strings.HasPrefix(id, "hist-") || strings.HasPrefix(id, "rank-")
}

var logView sync.Map // *Host -> *logViewState

func (h *Host) logViewState() *logViewState {
	v, _ := logView.LoadOrStore(h, &logViewState{owners: map[*Session]bool{}})
	return v.(*logViewState)
}

// InLogView reports whether the TUI shows a saved recording (Log view):
// some open session holds Log view.
func (h *Host) InLogView() bool {
	v, ok := logView.Load(h)
	if !ok {
		return false
	}
	st := v.(*logViewState)
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.owners) > 0
}

// holdLogView makes s hold Log view until it sets live or closes.
func (h *Host) holdLogView(s *Session) {
	st := h.logViewState()
	st.mu.Lock()
	held := st.owners[s]
	if len(st.owners) == 0 {
		st.entered = time.Now()
	}
	st.owners[s] = true
	st.mu.Unlock()
	if held {
		return
	}
	s.OnClose(func() { h.releaseLogView(s) })
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		// closed before the closer was registered: it will never run
		h.releaseLogView(s)
	}
}

// releaseLogView drops s's claim on Log view (a no-op when it holds none)
// and returns the graph workspace to Live when s showed its recording.
func (h *Host) releaseLogView(s *Session) {
	st := h.logViewState()
	st.mu.Lock()
	delete(st.owners, s)
	st.mu.Unlock()
	w := h.workspace()
	w.mu.Lock()
	w.showLiveLocked(s)
	w.mu.Unlock()
}

func (h *Host) setActivity(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
	if isMCPBridge(s) {
		return nil, contract.Errorf(contract.CodePermissionDenied, "the activity is changed in the TUI")
	}
	var a struct {
		Activity string `json:"activity"`
		LogRef   string `json:"log_ref"`
	}
	if err := json.Unmarshal(raw, &a); err != nil || (a.Activity != "live" && a.Activity != "log") {
		return nil, argErr("activity", "activity is live or log")
	}
	var shown *loadedLog
	var lh *logHost
	if a.LogRef != "" {
		if a.Activity != "log" {
			return nil, argErr("log_ref", "log_ref applies to activity log")
		}
		r := recorderOf(h)
		if r == nil {
			return nil, contract.Errorf(contract.CodeUnsupported, "this host keeps no saved logs")
		}
		lh = r.logs
		l, err := lh.loaded(s, a.LogRef)
		if err != nil {
			return nil, err
		}
		select {
		case <-l.done:
		default:
			return nil, argErr("log_ref", "the log is still loading; wait for open_log to finish")
		}
		if l.log == nil {
			return nil, argErr("log_ref", "the log failed to load")
		}
		shown = l
	}
	if a.Activity == "log" {
		h.holdLogView(s)
		h.cancelLiveJobs(s)
		if shown != nil {
			w := h.workspace()
			w.mu.Lock()
			w.showLogLocked(lh, shown, s)
			w.mu.Unlock()
		}
	} else {
		h.releaseLogView(s)
	}
	now := "live"
	if h.InLogView() {
		now = "log"
	}
	return contract.NewResult("live", time.Time{}, map[string]any{"activity": now}), nil
}

// liveInspection are the methods that read live processes; in Log view
// they are ACTIVITY_CONFLICT unless they name a log_ref (saved-log reads)
// or continue a condition wait by job_id (reading its outcome).
var liveInspection = map[string]bool{
	"list_processes": true, "get_metrics": true, "get_history": true, "rank_processes": true,
	"start_capture": true, "get_process_info": true, "wait_condition": true, ResolvePIDMethod: true,
	"get_runtime_collection": true, "set_runtime_collection": true,
}

// logViewStateChange lists the tools that change the investigation's
// state (tracking, profiles, starting a recording): refused in Log view,
// for every session (the TUI's own too), so the live state the view left
// stays as it was until it returns to Live. Stopping a recording, closing
// logs and captures, cancelling jobs and graph edits stay allowed.
var logViewStateChange = map[string]bool{
	"update_tracking": true, "update_profile": true, "start_recording": true,
}

// activityGate is the Log view rule of Dispatch.
func (h *Host) activityGate(method string, args json.RawMessage) error {
	if logViewStateChange[method] && h.InLogView() {
		return contract.Errorf(contract.CodeActivityConflict, "the TUI is in Log view (showing a saved recording): %s changes live state and is refused until it returns to Live", method)
	}
	if !liveInspection[method] || !h.InLogView() {
		return nil
	}
	var a struct {
		LogRef string `json:"log_ref"`
		Source string `json:"source"`
		JobID  string `json:"job_id"`
	}
	json.Unmarshal(args, &a)
	if a.LogRef != "" && a.Source != "live" {
		return nil
	}
	if method == "wait_condition" && a.JobID != "" {
		// a continuation reads an existing wait's outcome (one that Log
		// view cancelled says so) and starts no live work
		return nil
	}
	return contract.Errorf(contract.CodeActivityConflict, "the TUI is in Log view (showing a saved recording): live inspection is unavailable until it returns to Live; saved-log reads with log_ref keep working")
}

// logViewCancelled is the failure of a live job that entering Log view
// ended: code CANCELLED (the job was cancelled, as by cancel_job; its
// outcome is final, so it is not retryable, while starting the work again
// is ACTIVITY_CONFLICT, retryable, until the TUI returns to Live),
// details.cause ACTIVITY_CONFLICT and
// details.activity "log" say why.
func logViewCancelled() *contract.Error {
	return contract.Errorf(contract.CodeCancelled, "the job was cancelled because the TUI entered Log view (showing a saved recording): live inspection is unavailable (ACTIVITY_CONFLICT) until it returns to Live; saved-log reads with log_ref keep working").
		WithDetail("cause", string(contract.CodeActivityConflict)).WithDetail("activity", "log")
}

// cancelLiveJobs ends the running live jobs of every open session but the
// TUI's with logViewCancelled (a transition to Log
// view cancels client-owned live investigation and condition-wait jobs):
// those of MCP bridges and of CLI commands (`inquest wait`, `inquest
// lsof`, ...) alike. It ends capture and process-info jobs
// (jobs.Session.CancelLive; a collector still in a native call finishes in
// the background and its result is dropped) and condition waits. Saved-log
// jobs (list_logs, log loads), the sessions of TUIs (MarkLocalFace) and
// entering (the session that entered Log view) are left alone. It returns
// the number of jobs ended.
func (h *Host) cancelLiveJobs(entering *Session) int {
	h.mu.Lock()
	ss := make([]*Session, 0, len(h.sessions))
	for _, s := range h.sessions {
		ss = append(ss, s)
	}
	h.mu.Unlock()
	n := 0
	for _, s := range ss {
		if s == entering || isLocalFace(s) {
			continue
		}
		if cs, ok := s.Value(captureKey{}, nil).(*captureSession); ok {
			n += len(cs.js.CancelLive(logViewCancelled()))
		}
		if ws, ok := s.Value(waitKey{}, nil).(*waitStore); ok {
			ws.mu.Lock()
			running := make([]*waitJob, 0, len(ws.jobs))
			for _, j := range ws.jobs {
				running = append(running, j)
			}
			ws.mu.Unlock()
			for _, j := range running {
				if j.stop(logViewCancelled()) {
					n++
				}
			}
		}
	}
	return n
}

// liveJobStarted closes the race between the activity gate and Log view:
// a live job started by a call the gate let in just before Log view began
// is cancelled like the jobs that were running then (no new live work in
// Log view). Log view is claimed before the sweep reads the sessions' jobs
// and the job is recorded before this check, so every live job is ended
// by one of the two. It returns the job as it stands.
func (h *Host) liveJobStarted(js *jobs.Session, j jobs.Job) jobs.Job {
	if !h.InLogView() {
		return j
	}
	if cur, err := js.CancelWith(j.ID, logViewCancelled()); err == nil {
		return cur
	}
	return j
}
