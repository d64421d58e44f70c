package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/jobs"
	"github.com/inquest-dev/inquest/internal/recording"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Recording (docs/recording.md): one host-owned session at
// a time writes the fixed tracked names' processes and the system to a new
// file in the recording directory. The session belongs to the host, not to
// the connection that started it: disconnects, MCP disablement and
// cancelled waits do not stop it; stop_recording with the exact session id,
// the 24-hour limit or the host's own stop do.

// RecordingIntervals are the accepted interval_seconds values.
var RecordingIntervals = []int{1, 2, 5, 10}

// MaxRecordingDuration is the recording duration limit; a session is
// stopped (reason duration_limit) when it is reached.
var MaxRecordingDuration = 24 * time.Hour

// MaxLogIDs bounds the log ids one host remembers (list_logs
// pages at most 5,000 per listing).
const MaxLogIDs = 20000

// CaptureKindLogs is the capture kind of a list_logs listing (rows log_id, name).
const CaptureKindLogs = "logs"

func init() {
	CaptureFields[CaptureKindLogs] = []string{"log_id", "name"}
}

// RecordingDirectory returns the configured recording directory: the
// recording_directory setting of inquest.toml, else
// $XDG_DATA_HOME/inquest/recordings (XDG_DATA_HOME defaults to
// ~/.local/share). source is "setting" or "default".
func RecordingDirectory() (dir, source string, err error) {
	if f, err := config.Load(); err != nil {
		return "", "", err
	} else if f.RecordingDirectory != "" {
		return f.RecordingDirectory, "setting", nil
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", err
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "inquest", "recordings"), "default", nil
}

var recorders sync.Map // *Host -> *recorder

func recorderOf(h *Host) *recorder {
	if v, ok := recorders.Load(h); ok {
		return v.(*recorder)
	}
	return nil
}

// recorder is the host's recording state and log-id table.
type recorder struct {
	h   *Host
	inv *investigation

	mu     sync.Mutex
	active *recSession
	ids    map[string]string // log_id -> file name under the root
	byName map[string]string

	logs *logHost
}

// recSession is one recording session.
type recSession struct {
	id       string
	names    []string
	interval time.Duration
	slack    time.Duration
	logID    string
	name     string
	path     string
	started  time.Time

	mu       sync.Mutex // guards everything below; held while writing
	w        *recording.Writer
	scope    *recScope
	latest   *sample.Snapshot
	lastSeq  uint64 // Seq of the last snapshot written
	writeErr error
	done     bool
	unsub    func()
	timer    *time.Timer
}

// installRecording creates the host's recorder and saved-log state, the
// stop hook that ends an active recording, and the recording section of
// get_status.
func installRecording(h *Host) {
	r := &recorder{h: h, inv: investigationOf(h), ids: map[string]string{}, byName: map[string]string{}}
	r.logs = newLogHost(h, r)
	recorders.Store(h, r)
	h.OnStop(func() { r.stopActive("host_stopped") })
	h.AddStatus(func(m map[string]any) {
		dir, src, err := RecordingDirectory()
		st := map[string]any{"active": false, "intervals_seconds": RecordingIntervals, "max_duration_ms": MaxRecordingDuration.Milliseconds(),
			"directory_source": src, "loaded_log_budget_bytes": LogBudget}
		if err != nil || dir == "" {
			st["directory_source"] = "unavailable"
		}
		r.mu.Lock()
		a := r.active
		r.mu.Unlock()
		st["write_error"] = nil
		if a != nil {
			st["active"] = true
			a.mu.Lock()
			st["lost_frames"] = a.w.LostFrames()
			if a.writeErr != nil && !a.done {
				st["write_error"] = writeErrorText(a.writeErr)
			}
			a.mu.Unlock()
		}
		m["recording"] = st
	})
}

// recordingConflict is ACTIVITY_CONFLICT while a recording is active: the
// tracking list and profile load/save are fixed during a recording
// (docs/recording.md, "Rules"). Callers hold inv.mu, which start_recording also holds
// while it starts a session.
func recordingConflict(h *Host) error {
	r := recorderOf(h)
	if r == nil {
		return nil
	}
	r.mu.Lock()
	a := r.active
	r.mu.Unlock()
	if a == nil {
		return nil
	}
	e := contract.Errorf(contract.CodeActivityConflict, "a recording is active (its tracked names are fixed): tracking changes and profile load/save are unavailable until it stops").
		WithDetail("recording_session_id", a.id)
	// Retryable: the unchanged call succeeds once the recording stops.
	e.NextAction = &contract.Action{Tool: "get_recording", Arguments: map[string]any{}}
	return e
}

// issueLogID returns the log id of name (one id per name per host).
func (r *recorder) issueLogID(name string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.issueLogIDLocked(name)
}

func (r *recorder) issueLogIDLocked(name string) (string, error) {
	if id, ok := r.byName[name]; ok {
		return id, nil
	}
	if len(r.ids) >= MaxLogIDs {
		return "", contract.Errorf(contract.CodeResourceLimit, "this host remembers %d log ids; restart the host to list more", MaxLogIDs)
	}
	b := make([]byte, 8)
	rand.Read(b)
	id := "log_" + hex.EncodeToString(b)
	r.ids[id], r.byName[name] = name, id
	return id, nil
}

// logPath resolves a log id to its path under the current root.
func (r *recorder) logPath(id string) (string, string, error) {
	r.mu.Lock()
	name, ok := r.ids[id]
	r.mu.Unlock()
	if !ok {
		e := contract.Errorf(contract.CodeReferenceInvalid, "this log_id was not issued by this host instance; list logs again")
		e.Field = "/log_id"
		e.NextAction = &contract.Action{Tool: "list_logs", Arguments: map[string]any{}}
		return "", "", e
	}
	dir, _, err := RecordingDirectory()
	if err != nil {
		return "", "", contract.Errorf(contract.CodeStateConflict, "the recording directory setting cannot be read (inquest.toml): %v", err)
	}
	return filepath.Join(dir, name), name, nil
}

var getRecordingTool = define(tool.Tool{
	Name:        "get_recording",
	Title:       "Recording state",
	Description: "Whether a recording is active: its session id, tracked names, interval and output log. No arguments.",
	Input:       schema(noArgs),
	Annotations: readOnly,
}, func(ctx context.Context, h *Host, s *Session, _ noArgsStruct) (*contract.Result, error) {
	return recorderOf(h).getRecording()
})

func (r *recorder) getRecording() (*contract.Result, error) {
	dir, src, derr := RecordingDirectory()
	data := map[string]any{"active": false, "recording_session_id": nil, "names": []string{}, "interval_seconds": nil, "log_id": nil,
		"output_directory_configured": derr == nil && dir != "", "output_directory_source": src, "write_error": nil}
	r.mu.Lock()
	a := r.active
	r.mu.Unlock()
	if a != nil {
		a.mu.Lock()
		if a.done {
			// Stopped and closed; only the active slot is not cleared yet.
			a.mu.Unlock()
			a = nil
		}
	}
	if a != nil {
		data["active"] = true
		data["recording_session_id"] = a.id
		data["names"] = a.names
		data["interval_seconds"] = int(a.interval / time.Second)
		data["log_id"] = a.logID
		data["name"] = a.name
		data["started_at"] = contract.TS(a.started)
		data["lost_frames"] = a.w.LostFrames()
		if a.writeErr != nil {
			data["write_error"] = writeErrorText(a.writeErr)
		}
		a.mu.Unlock()
	}
	res := contract.NewResult("live", r.h.sampler.Latest().Time, data)
	if a != nil && data["write_error"] != nil {
		res.Warn(RecordingWriteWarning)
	}
	return res, nil
}

// RecordingWriteWarning is the warning of get_recording and get_status
// while the active recording's frames cannot be written.
const RecordingWriteWarning = "the active recording cannot write frames (see recording write_error); it retries every interval and resumes when the write succeeds, marking the lost frames as a gap in the log"

// writeErrorText is the write_error text of an active recording.
func writeErrorText(err error) string {
	return "frames could not be written: " + strings.TrimPrefix(err.Error(), "recording: ")
}

// recordingWriteError is the typed error of a failed write to the
// recording directory dir: a full file system (ENOSPC, EDQUOT) is
// RESOURCE_LIMIT, not retryable, with details.directory; a denied write
// (EACCES, EPERM, EROFS) is PERMISSION_DENIED; any other I/O error is
// INTERNAL_ERROR with details.cause.
func recordingWriteError(what, dir string, err error) *contract.Error {
	var e *contract.Error
	switch {
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		e = contract.Errorf(contract.CodeResourceLimit, "%s: no space left on the file system holding the recording directory %s; free space there (or set recording_directory elsewhere), then repeat", what, dir)
		e.Retryable = false
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		e = contract.Errorf(contract.CodePermissionDenied, "%s: writing to the recording directory %s is not permitted (%v)", what, dir, err)
	default:
		e = contract.Errorf(contract.CodeInternalError, "%s: %v", what, err).WithDetail("cause", err.Error())
		e.Retryable = false
	}
	return e.WithDetail("directory", dir)
}

// startRecordingArgs are start_recording's arguments.
type startRecordingArgs struct {
	operationArgs
	IntervalSeconds int  `json:"interval_seconds"`
	WaitMS          *int `json:"wait_ms"`
}

func startRecordingTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "start_recording",
		Title:       "Start recording",
		Description: "Records the Tracking List's processes and the system to a new log file until stop_recording or 24 h. Required: operation_id, expected_revision, interval_seconds.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["operation_id","expected_revision","interval_seconds"],"properties":{` + operationFields + `,
"interval_seconds":{"type":"integer","enum":[1,2,5,10],"description":"seconds between recorded frames"},
` + waitField(d.waitDefault()) + `}}`),
		Annotations: mutation,
	}, func(ctx context.Context, h *Host, s *Session, a startRecordingArgs) (*contract.Result, error) {
		return recorderOf(h).startRecording(ctx, s, a)
	})
	t.Delivery = DeliverOperation
	return t
}

func (r *recorder) startRecording(ctx context.Context, s *Session, a startRecordingArgs) (*contract.Result, error) {
	raw := rawArgs(ctx)
	if !slices.Contains(RecordingIntervals, a.IntervalSeconds) {
		e := contract.Errorf(contract.CodeInvalidArgument, "interval_seconds must be 1, 2, 5 or 10")
		e.Field = "/interval_seconds"
		return nil, e
	}
	inv := r.inv
	op, reply, err, done := inv.begin(ctx, s, "start_recording", a.OperationID, raw)
	if done {
		return reply, err
	}
	op.SetRunning()
	inv.mu.Lock()
	out, err := r.startLocked(a)
	inv.mu.Unlock()
	op.Finish(out, err)
	res, err := inv.operationReply(op.Status())
	if res != nil {
		// A tracked name that names no process now is said in the
		// envelope too, not only in the outcome.
		w, _ := out["warnings"].([]string)
		for _, x := range w {
			res.Warn(x)
		}
	}
	return res, err
}

// startLocked runs with inv.mu held (the tracking list cannot change).
func (r *recorder) startLocked(a startRecordingArgs) (map[string]any, error) {
	inv := r.inv
	if err := inv.checkRevisionLocked(a.ExpectedRevision); err != nil {
		return nil, err
	}
	names := slices.Clone(inv.tracking)
	if len(names) == 0 {
		e := contract.Errorf(contract.CodeStateConflict, "the working Tracking List is empty; a recording needs at least one tracked name (update_tracking action add)")
		e.NextAction = &contract.Action{Tool: "get_tracking", Arguments: map[string]any{}}
		return nil, e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active != nil {
		e := contract.Errorf(contract.CodeActivityConflict, "a recording is already active; stop it first with its recording_session_id").WithDetail("recording_session_id", r.active.id)
		e.NextAction = &contract.Action{Tool: "get_recording", Arguments: map[string]any{}}
		return nil, e
	}
	dir, _, err := RecordingDirectory()
	if err != nil || dir == "" {
		return nil, contract.Errorf(contract.CodeStateConflict, "no recording directory: set recording_directory in inquest.toml (`inquest settings set recording_directory DIR`) or XDG_DATA_HOME")
	}
	if err := recording.PrepareDirectory(dir); err != nil {
		if ce := (*contract.Error)(nil); errors.As(err, &ce) {
			return nil, ce
		}
		return nil, recordingWriteError("the recording directory cannot be created", dir, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	sid := "rec_" + hex.EncodeToString(b)
	now := time.Now().UTC()
	hostname, _ := os.Hostname()
	snap := r.h.sampler.Latest()
	hdr := recording.Header{CreatedAt: now, IntervalMs: int64(a.IntervalSeconds) * 1000, SessionID: sid, Tracked: names,
		Hostname: hostname, BootID: snap.BootID, ClockTicks: 100}
	var w *recording.Writer
	var name string
	for i := 0; i < 100; i++ {
		name = "inquest-" + now.Format("20060102T150405Z") + "-" + sid[4:]
		if i > 0 {
			name += fmt.Sprintf("-%d", i+1)
		}
		name += ".log"
		w, err = recording.Create(filepath.Join(dir, name), hdr)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, recordingWriteError("the recording file cannot be created", dir, err)
	}
	id, err := r.issueLogIDLocked(name)
	if err != nil {
		w.Close("stopped")
		return nil, err
	}
	iv := time.Duration(a.IntervalSeconds) * time.Second
	rs := &recSession{id: sid, names: names, interval: iv, slack: r.h.sampler.Interval() / 2, logID: id, name: name,
		path: filepath.Join(dir, name), started: now, w: w, scope: newRecScope(names)}
	rs.unsub = r.h.sampler.Subscribe(rs.onSnapshot)
	rs.timer = time.AfterFunc(MaxRecordingDuration, func() { r.stopSession(rs, "duration_limit") })
	r.active = rs
	matches, warnings := r.h.nameMatches(snap, names)
	out := map[string]any{"recording_session_id": sid, "names": names, "scope": trackingScope, "interval_seconds": a.IntervalSeconds,
		"log_id": id, "name": name, "started_at": contract.TS(now), "max_duration_ms": MaxRecordingDuration.Milliseconds(),
		"name_matches": matches}
	if len(warnings) > 0 {
		out["warnings"] = warnings
	}
	return out, nil
}

// MaxNameMatchRefs bounds the identities start_recording lists per
// tracked name (count says how many match).
const MaxNameMatchRefs = 16

// nameMatches lists, per tracked name, the live processes of snap it
// names now by the one name rule (sample.NameFacts.Matches): {name,
// count, identities: [{process_ref, pid, name}] (at most
// MaxNameMatchRefs)}, and a warning per name that names none (the
// recording then holds only what starts later under that name).
func (h *Host) nameMatches(snap *sample.Snapshot, names []string) ([]map[string]any, []string) {
	out := make([]map[string]any, 0, len(names))
	var warnings []string
	for _, n := range names {
		ids := []map[string]any{}
		count := 0
		for i := range snap.Procs {
			p := &snap.Procs[i]
			if p.State == 'Z' && !p.LeaderExited || !p.NameFacts().Matches(n) {
				continue
			}
			count++
			if len(ids) < MaxNameMatchRefs {
				ids = append(ids, map[string]any{"process_ref": h.Ref(p.ID()), "pid": p.PID, "name": p.Name})
			}
		}
		out = append(out, map[string]any{"name": n, "count": count, "identities": ids})
		if count == 0 {
			warnings = append(warnings, "tracked name "+strconv.Quote(n)+" names no running process now (exe base name, comm or argv[0]); the recording holds it only once such a process starts")
		}
	}
	return out, warnings
}

// onSnapshot runs on the sampler goroutine: it writes a frame when the
// interval has elapsed since the last frame (less half a sampling period
// of scheduling slack), so consecutive frames are never closer than
// interval - slack. The frame is written with one write(2) before the
// sampler takes its next sample.
func (rs *recSession) onSnapshot(snap *sample.Snapshot) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.done || snap.Time.Before(rs.started) {
		return
	}
	rs.latest = snap
	// The cadence follows the last attempt, written or lost, so a full
	// disk loses one frame per interval and the writer retries each one.
	if last := rs.w.LastAttemptAt(); !last.IsZero() && snap.Time.Sub(last) < rs.interval-rs.slack {
		return
	}
	rs.writeLocked(snap)
}

// writeLocked writes snap; a failure is kept in writeErr until a later
// write succeeds (the writer counts the frame as lost).
func (rs *recSession) writeLocked(snap *sample.Snapshot) {
	rs.lastSeq = snap.Seq
	rs.writeErr = rs.w.WriteSnapshot(snap, rs.scope.pick(snap))
}

// stopRecordingArgs are stop_recording's arguments.
type stopRecordingArgs struct {
	OperationID        string `json:"operation_id"`
	RecordingSessionID string `json:"recording_session_id"`
	WaitMS             *int   `json:"wait_ms"`
}

func stopRecordingTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "stop_recording",
		Title:       "Stop recording",
		Description: "Stops the recording recording_session_id and closes its log file. Required: operation_id, recording_session_id; the outcome names log_id, frames and bytes.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["operation_id","recording_session_id"],"properties":{
"operation_id":{"type":"string","minLength":1,"maxLength":128,"pattern":"^[A-Za-z0-9._:-]+$","description":"a repeat returns the kept outcome"},
"recording_session_id":{"type":"string","minLength":1,"maxLength":64,"description":"from start_recording or get_recording"},
` + waitField(d.waitDefault()) + `}}`),
		Annotations: mutation,
	}, func(ctx context.Context, h *Host, s *Session, a stopRecordingArgs) (*contract.Result, error) {
		return recorderOf(h).stopRecording(ctx, s, a)
	})
	t.Delivery = DeliverOperation
	return t
}

func (r *recorder) stopRecording(ctx context.Context, s *Session, a stopRecordingArgs) (*contract.Result, error) {
	raw := rawArgs(ctx)
	inv := r.inv
	op, reply, err, done := inv.begin(ctx, s, "stop_recording", a.OperationID, raw)
	if done {
		return reply, err
	}
	op.SetRunning()
	r.mu.Lock()
	rs := r.active
	r.mu.Unlock()
	if rs == nil {
		e := contract.Errorf(contract.CodeStateConflict, "no recording is active: this recording_session_id names a session that already stopped or never existed; nothing was changed")
		e.Field = "/recording_session_id"
		e.NextAction = &contract.Action{Tool: "get_recording", Arguments: map[string]any{}}
		op.Finish(nil, e)
		return inv.operationReply(op.Status())
	}
	if rs.id != a.RecordingSessionID {
		e := contract.Errorf(contract.CodeStateConflict, "recording_session_id is stale: it does not name the active recording session, which was left running").WithDetail("active_recording_session_id", rs.id)
		e.Field = "/recording_session_id"
		e.NextAction = &contract.Action{Tool: "get_recording", Arguments: map[string]any{}}
		op.Finish(nil, e)
		return inv.operationReply(op.Status())
	}
	out, err := r.stopSession(rs, "stopped")
	op.Finish(out, err)
	return inv.operationReply(op.Status())
}

// stopSession stops rs (once): unsubscribes, writes the partial window
// (the latest snapshot not yet written), the end record, syncs and closes.
// The outcome is known only after the close.
func (r *recorder) stopSession(rs *recSession, reason string) (map[string]any, error) {
	// The session stays the active one until its file is closed, so
	// get_recording never reports "not active" for a file whose end record
	// is not written yet.
	defer func() {
		r.mu.Lock()
		if r.active == rs {
			r.active = nil
		}
		r.mu.Unlock()
	}()
	rs.unsub()
	rs.timer.Stop()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.done {
		e := contract.Errorf(contract.CodeStateConflict, "this recording session already stopped")
		return nil, e
	}
	rs.done = true
	// The sampler publishes a snapshot (Latest, which get_metrics reads)
	// before it hands it to subscribers: a stop in between must still end
	// the log with the newest sample a caller could have seen.
	if l := r.h.sampler.Latest(); l != nil && !l.Time.Before(rs.started) && (rs.latest == nil || l.Seq > rs.latest.Seq) {
		rs.latest = l
	}
	if rs.latest != nil && rs.latest.Seq != rs.lastSeq {
		rs.writeLocked(rs.latest)
	}
	end, err := rs.w.Close(reason)
	out := map[string]any{"recording_session_id": rs.id, "log_id": rs.logID, "name": rs.name, "reason": reason,
		"frames": end.Frames, "lost_frames": end.LostFrames, "bytes": rs.w.Bytes(), "started_at": contract.TS(rs.started), "stopped_at": contract.TS(end.EndedAt)}
	if err != nil {
		out["reason"] = "write_error"
		e := recordingWriteError("the recording's end record could not be written, so the log ends without it; the file keeps every complete frame", filepath.Dir(rs.path), err)
		return nil, e.WithDetail("outcome", out)
	}
	return out, nil
}

func (r *recorder) stopActive(reason string) {
	r.mu.Lock()
	rs := r.active
	r.mu.Unlock()
	if rs != nil {
		r.stopSession(rs, reason)
	}
}

// recScope is the fixed recording scope: processes a tracked name names
// by the one name rule (sample.NameFacts.Matches, as live tracking), and
// their observed descendants (a child whose verified parent is in scope).
type recScope struct {
	names map[string]bool
	in    map[sample.Identity]bool
}

func newRecScope(names []string) *recScope {
	sc := &recScope{names: map[string]bool{}, in: map[sample.Identity]bool{}}
	for _, n := range names {
		sc.names[history.NormalizeName(n)] = true
	}
	return sc
}

// matches reports whether a tracked name names p.
func (sc *recScope) matches(p *sample.Process) bool {
	f := p.NameFacts()
	for n := range sc.names {
		if f.Matches(n) {
			return true
		}
	}
	return false
}

func (sc *recScope) pick(snap *sample.Snapshot) []*sample.Process {
	memo := make(map[int32]bool, len(snap.Procs))
	var incl func(p *sample.Process, depth int) bool
	incl = func(p *sample.Process, depth int) bool {
		if v, ok := memo[p.PID]; ok {
			return v
		}
		v := sc.in[p.ID()] || sc.matches(p)
		if !v && depth < 64 {
			if par := snap.Find(p.PPID); par != nil && par.PID != p.PID && par.StartTicks <= p.StartTicks {
				v = incl(par, depth+1)
			}
		}
		memo[p.PID] = v
		return v
	}
	var out []*sample.Process
	next := make(map[sample.Identity]bool, len(sc.in))
	for i := range snap.Procs {
		p := &snap.Procs[i]
		if incl(p, 0) {
			out = append(out, p)
			next[p.ID()] = true
		}
	}
	sc.in = next
	return out
}

// listLogsArgs are list_logs' arguments (wait_ms, read and retain_capture
// are the bridge's delivery options).
type listLogsArgs struct {
	Filter *nameFilter `json:"filter"`
	WaitMS *int        `json:"wait_ms"`
	// Read sizes the first page the bridge delivers.
	Read          *pageLimit `json:"read"`
	RetainCapture *bool      `json:"retain_capture"`
}

// pageLimit is a first-page selection that only sizes the page.
type pageLimit struct {
	Limit int `json:"limit"`
}

// nameFilter selects by a case-insensitive name substring.
type nameFilter struct {
	Name string `json:"name"`
}

func listLogsTool(d Delivery) Decl {
	wd := d.waitDefault()
	t := define(tool.Tool{
		Name:        "list_logs",
		Title:       "List saved recordings",
		Description: "Lists saved recordings as a job: rows {log_id, name}, optionally only names containing filter.name. No required arguments; more rows with read_capture.",
		Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"filter":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string","minLength":1,"maxLength":256,"description":"substring of the file name"}}},
"wait_ms":{"type":"integer","minimum":0,"maximum":$MAX_WAIT_MS,"description":"ms to wait, default ` + wd + `"},
"read":{"type":"object","additionalProperties":false,"properties":{"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"first-page rows, default ` + d.limitDefault() + `"}},"description":"first page size"},
"retain_capture":{"type":"boolean","description":"keep the listing until release_capture"}}}`),
		Annotations: readOnly,
		Job:         true,
	}, func(ctx context.Context, h *Host, s *Session, a listLogsArgs) (*contract.Result, error) {
		return recorderOf(h).listLogs(s, a)
	})
	t.Delivery = DeliverJob
	return t
}

// listLogs starts a job listing the recording directory: regular files
// with a .log extension (case-insensitive), optionally whose name contains
// filter.name (case-insensitive). Formats are not validated until opened.
func (r *recorder) listLogs(s *Session, a listLogsArgs) (*contract.Result, error) {
	sub := ""
	if a.Filter != nil {
		sub = strings.ToLower(a.Filter.Name)
	}
	js := jobSessionOf(s)
	if js == nil {
		return nil, contract.Errorf(contract.CodeUnsupported, "jobs are not enabled in this host")
	}
	j, err := js.Start(hooked(jobs.Spec{Kind: CaptureKindLogs, Run: func(ctx context.Context) (*capture.Capture, error) {
		c := &capture.Capture{Kind: CaptureKindLogs, Started: time.Now()}
		dir, _, err := RecordingDirectory()
		if err != nil {
			return nil, contract.Errorf(contract.CodeStateConflict, "the recording directory setting cannot be read (inquest.toml)")
		}
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			ents, err = nil, nil
			c.Coverage = map[string]any{"directory_exists": false}
		}
		if err != nil {
			return nil, contract.Errorf(contract.CodeAccessDenied, "the recording directory cannot be listed")
		}
		var names []string
		skipped := 0
		for _, e := range ents {
			n := e.Name()
			if !strings.EqualFold(filepath.Ext(n), ".log") {
				continue
			}
			if !e.Type().IsRegular() {
				skipped++
				continue
			}
			if sub != "" && !strings.Contains(strings.ToLower(n), sub) {
				continue
			}
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) > MaxPageRows {
			return nil, contract.Errorf(contract.CodeResultTooLarge, "%d logs match; narrow the listing with filter.name (at most %d rows per listing)", len(names), MaxPageRows)
		}
		for _, n := range names {
			id, err := r.issueLogID(n)
			if err != nil {
				return nil, err
			}
			c.Rows = append(c.Rows, capture.Row{Path: n, Fields: []capture.Field{{Key: "log_id", Value: id}, {Key: "name", Value: n}}})
		}
		if c.Coverage == nil {
			c.Coverage = map[string]any{"directory_exists": true}
		}
		c.Coverage["log_files"] = len(names)
		c.Coverage["not_regular_skipped"] = skipped
		c.Finished = time.Now()
		return c, nil
	}}))
	if err != nil {
		return nil, err
	}
	return jobResult(j), nil
}
