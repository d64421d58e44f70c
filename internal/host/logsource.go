package host

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/recording"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Saved-log analysis (docs/recording.md): open_log loads a recording in
// a bounded background job into a connection-owned log_ref; list_processes,
// get_metrics and get_history with source "log" read it. Loaded logs are
// released by close_log, expiry (LogLifetime after the load finished; reads
// do not renew it) or the connection closing.

// LogBudget is the memory all loaded logs of a host may reserve together
// (a 256 MiB cap across connections). Each load reserves
// recording.Reservation(file size) before reading; over budget is
// LIMIT_EXCEEDED and nothing is loaded.
var LogBudget int64 = 256 << 20

// LogLifetime is how long a loaded log stays usable after its load.
var LogLifetime = 5 * time.Minute

// LogDeadline bounds one load job.
var LogDeadline = 60 * time.Second

// MaxLoadedLogs is the most loaded (or loading) logs per connection.
const MaxLoadedLogs = 8

// logWaitMax bounds how long one open_log call waits for its job.
const logWaitMax = 4 * time.Second

type logHost struct {
	h *Host
	r *recorder

	mu       sync.Mutex
	reserved int64
	serial   uint32
}

func newLogHost(h *Host, r *recorder) *logHost { return &logHost{h: h, r: r} }

type loadedKey struct{}

// logSession is one connection's loaded logs and load jobs.
type logSession struct {
	mu   sync.Mutex
	refs map[string]*loadedLog // log_ref -> log
	jobs map[string]*loadedLog // job id -> log
	next int
}

type loadedLog struct {
	jobID    string
	ref      string
	serial   uint32
	logID    string
	name     string
	started  time.Time
	finished time.Time
	expires  time.Time
	reserved int64
	done     chan struct{}
	log      *recording.Log
	err      *contract.Error
	closed   bool
	// cancel stops the load (its reader checks before every read).
	cancel context.CancelFunc
}

func (lh *logHost) session(s *Session) *logSession {
	created := false
	ls := s.Value(loadedKey{}, func() any {
		created = true
		return &logSession{refs: map[string]*loadedLog{}, jobs: map[string]*loadedLog{}}
	}).(*logSession)
	if created {
		s.OnClose(func() { lh.closeAll(ls) })
	}
	return ls
}

func (lh *logHost) release(l *loadedLog) {
	lh.mu.Lock()
	lh.reserved -= l.reserved
	l.reserved = 0
	lh.mu.Unlock()
}

func (lh *logHost) closeAll(ls *logSession) {
	ls.mu.Lock()
	var all []*loadedLog
	for _, l := range ls.jobs {
		all = append(all, l)
	}
	ls.refs, ls.jobs = map[string]*loadedLog{}, map[string]*loadedLog{}
	ls.mu.Unlock()
	for _, l := range all {
		l.cancel() // a load still running stops: nobody can read it now
		lh.dispose(l)
	}
}

// dispose returns a log's reservation to the budget once its load has
// finished. The log itself is left to the collector: a query that looked
// it up before the close may still be reading it.
func (lh *logHost) dispose(l *loadedLog) {
	go func() {
		<-l.done
		lh.release(l)
	}()
}

// expireLocked drops expired loaded logs and job records.
func (lh *logHost) expireLocked(ls *logSession, now time.Time) {
	for id, l := range ls.jobs {
		select {
		case <-l.done:
		default:
			continue
		}
		if now.After(l.expires) {
			delete(ls.jobs, id)
			delete(ls.refs, l.ref)
			lh.dispose(l)
		}
	}
}

// openLogArgs are open_log's arguments.
type openLogArgs struct {
	LogID  string `json:"log_id"`
	JobID  string `json:"job_id"`
	WaitMS *int   `json:"wait_ms"`
}

func openLogTool(d Delivery) Decl {
	wd := d.waitDefault()
	t := define(tool.Tool{
		Name:        "open_log",
		Title:       "Load a saved recording",
		Description: "Loads the saved recording log_id as a job and returns log_ref, for list_processes, get_metrics and get_history with source log. A damaged file loads as partial; continue a long load with job_id.",
		Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"log_id":{"type":"string","minLength":1,"maxLength":64},
"job_id":{"type":"string","minLength":1,"maxLength":64,"description":"continue an earlier load"},
` + waitField(wd) + `}}`),
		Annotations: readOnly,
		Job:         true,
	}, func(ctx context.Context, h *Host, s *Session, a openLogArgs) (*contract.Result, error) {
		return recorderOf(h).logs.openLog(ctx, s, a)
	})
	t.Delivery = DeliverSlices
	return t
}

// closeLogArgs are close_log's arguments.
type closeLogArgs struct {
	LogRef string `json:"log_ref"`
}

var closeLogTool = define(tool.Tool{
	Name:        "close_log",
	Title:       "Release a loaded log",
	Description: "Releases log_ref (required) and everything that depends on it; idempotent.",
	Input:       schema(`{"type":"object","additionalProperties":false,"required":["log_ref"],"properties":{"log_ref":{"type":"string","minLength":1,"maxLength":128}}}`),
	Annotations: mutation,
}, func(ctx context.Context, h *Host, s *Session, a closeLogArgs) (*contract.Result, error) {
	return recorderOf(h).logs.closeLog(s, a)
})

func (lh *logHost) openLog(ctx context.Context, s *Session, a openLogArgs) (*contract.Result, error) {
	if (a.LogID == "") == (a.JobID == "") {
		e := contract.Errorf(contract.CodeInvalidArgument, "give exactly one of log_id (start a load) and job_id (continue one)")
		e.Field = "/log_id"
		return nil, e
	}
	wait := logWaitMax
	if a.WaitMS != nil {
		wait = min(time.Duration(*a.WaitMS)*time.Millisecond, logWaitMax)
	}
	ls := lh.session(s)
	var l *loadedLog
	started := a.JobID == ""
	if !started {
		ls.mu.Lock()
		lh.expireLocked(ls, time.Now())
		l = ls.jobs[a.JobID]
		ls.mu.Unlock()
		if l == nil {
			e := contract.Errorf(contract.CodeReferenceInvalid, "no load job with this job_id on this connection (expired, closed or never started)")
			e.Field = "/job_id"
			return nil, e
		}
	} else {
		var err error
		if l, err = lh.start(ls, a.LogID); err != nil {
			return nil, err
		}
	}
	select {
	case <-l.done:
	case <-time.After(wait):
	case <-ctx.Done():
	}
	if ctx.Err() != nil && lh.abandon(ls, l, started) {
		return nil, contract.Errorf(contract.CodeCancelled, "open_log was cancelled: the load of %s was stopped and its slot and memory reservation freed; open it again to load it", l.name).
			WithDetail("job_id", l.jobID)
	}
	return lh.jobReply(l)
}

// abandon ends the load job of a cancelled open_log call: a load still
// running is stopped, and the job, its slot (one of MaxLoadedLogs) and its
// reservation of LogBudget are freed. A finished load is dropped too when
// the cancelled call was the one that started it (started), since its
// caller never learned the job_id; a finished load that an earlier reply
// named stays. It reports whether the job was dropped.
func (lh *logHost) abandon(ls *logSession, l *loadedLog, started bool) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	finished := false
	select {
	case <-l.done:
		finished = true
	default:
	}
	if finished && !started {
		return false
	}
	if ls.jobs[l.jobID] != l {
		return true // closed or expired meanwhile
	}
	delete(ls.jobs, l.jobID)
	if l.ref != "" {
		delete(ls.refs, l.ref)
	}
	l.cancel()
	lh.dispose(l)
	return true
}

func (lh *logHost) start(ls *logSession, logID string) (*loadedLog, error) {
	path, name, err := lh.r.logPath(logID)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			e := contract.Errorf(contract.CodeReferenceInvalid, "the log file named by this log_id no longer exists in the recording directory; list logs again")
			e.Field = "/log_id"
			return nil, e
		}
		return nil, contract.Errorf(contract.CodeAccessDenied, "the log file cannot be read")
	}
	if !st.Mode().IsRegular() {
		return nil, contract.Errorf(contract.CodeDecodeFailed, "the log is not a regular file")
	}
	need := recording.Reservation(st.Size())
	ls.mu.Lock()
	defer ls.mu.Unlock()
	lh.expireLocked(ls, time.Now())
	if len(ls.jobs) >= MaxLoadedLogs {
		return nil, contract.Errorf(contract.CodeResourceLimit, "this connection holds %d loaded or loading logs; close one with close_log", MaxLoadedLogs)
	}
	lh.mu.Lock()
	if lh.reserved+need > LogBudget {
		free := LogBudget - lh.reserved
		lh.mu.Unlock()
		return nil, contract.Errorf(contract.CodeLimitExceeded, "loading this log reserves %d bytes (2 MiB plus twice its %d-byte file) and the loaded-log budget has %d of %d bytes free; close other logs or split the recording", need, st.Size(), free, LogBudget).
			WithDetail("reservation_bytes", need).WithDetail("budget_bytes", LogBudget)
	}
	lh.reserved += need
	lh.serial++
	serial := lh.serial
	lh.mu.Unlock()
	ls.next++
	l := &loadedLog{jobID: fmt.Sprintf("logjob-%d", ls.next), serial: serial, logID: logID, name: name, started: time.Now(), reserved: need, done: make(chan struct{})}
	// The deadline, or a cancelled open_log (abandon), also stops the
	// reader itself (checked before every read), so an abandoned load does
	// not keep reading.
	ctx, cancel := context.WithTimeout(context.Background(), LogDeadline)
	l.cancel = cancel
	ls.jobs[l.jobID] = l
	go lh.load(ctx, ls, l, path, need)
	return l, nil
}

func (lh *logHost) load(ctx context.Context, ls *logSession, l *loadedLog, path string, need int64) {
	type result struct {
		log *recording.Log
		err error
	}
	ch := make(chan result, 1)
	defer l.cancel()
	go func() {
		lg, err := recording.LoadContext(ctx, path, need)
		ch <- result{lg, err}
	}()
	var res result
	select {
	case res = <-ch:
		if res.err != nil && errors.Is(ctx.Err(), context.Canceled) {
			res.err = contract.Errorf(contract.CodeCancelled, "the load was cancelled")
		}
	case <-time.After(LogDeadline):
		res.err = contract.Errorf(contract.CodeTimeout, "the load did not finish within %v", LogDeadline)
		go func() { <-ch }()
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l.finished = time.Now()
	l.expires = l.finished.Add(LogLifetime)
	if res.err != nil {
		l.err = loadError(res.err)
		lh.release(l)
	} else {
		l.log = res.log
		l.ref = lh.logRef(l.serial)
		if _, still := ls.jobs[l.jobID]; still {
			ls.refs[l.ref] = l
		}
	}
	close(l.done)
}

func loadError(err error) *contract.Error {
	var fe *recording.FormatError
	var be *recording.BudgetError
	var nr *recording.NotRegularError
	switch {
	case errors.As(err, &nr):
		return contract.Errorf(contract.CodeDecodeFailed, "the log is not a regular file (%s is refused without reading: reading it could wait forever)", nr.Mode.Type())
	case errors.As(err, &fe):
		return contract.Errorf(contract.CodeDecodeFailed, "the file is not a readable inquest recording: %s at byte offset %d", fe.Msg, fe.Offset).WithDetail("offset", fe.Offset)
	case errors.As(err, &be):
		return contract.Errorf(contract.CodeLimitExceeded, "%v", be)
	}
	if ce, ok := err.(*contract.Error); ok {
		return ce
	}
	return contract.Errorf(contract.CodeCollectionFailed, "the log could not be read")
}

func (lh *logHost) logRef(serial uint32) string {
	b := make([]byte, 4, 16)
	binary.LittleEndian.PutUint32(b, serial)
	b = append(b, lh.h.refs.mac(append([]byte("log"), b...))...)
	return "lr_" + base64.RawURLEncoding.EncodeToString(b)
}

// procRef encodes a log process reference: bound to the log (serial) and
// the recorded identity (file index); it never names a live process.
func (lh *logHost) procRef(serial, index uint32) string {
	b := make([]byte, 8, 20)
	binary.LittleEndian.PutUint32(b, serial)
	binary.LittleEndian.PutUint32(b[4:], index)
	b = append(b, lh.h.refs.mac(append([]byte("logproc"), b...))...)
	return "lp_" + base64.RawURLEncoding.EncodeToString(b)
}

func (lh *logHost) parseProcRef(l *loadedLog, ref, field string) (*recording.Proc, error) {
	bad := func(msg string) error {
		e := contract.Errorf(contract.CodeReferenceInvalid, "%s", msg)
		e.Field = field
		e.NextAction = &contract.Action{Tool: "list_processes", Arguments: map[string]any{"source": "log", "log_ref": l.ref, "scope": "all"}}
		return e
	}
	if strings.HasPrefix(ref, refPrefix) {
		return nil, bad("a live process_ref cannot target a log; list the log's processes for log references")
	}
	if !strings.HasPrefix(ref, "lp_") || len(ref) > 64 {
		return nil, bad("this process_ref is not a log process reference")
	}
	b, err := base64.RawURLEncoding.DecodeString(ref[3:])
	if err != nil || len(b) != 20 || !hmac.Equal(b[8:], lh.h.refs.mac(append([]byte("logproc"), b[:8]...))) {
		return nil, bad("this process_ref was not issued by this host instance")
	}
	if binary.LittleEndian.Uint32(b) != l.serial {
		return nil, bad("this process_ref belongs to another loaded log")
	}
	p := l.log.ProcByIndex(binary.LittleEndian.Uint32(b[4:]))
	if p == nil {
		return nil, bad("this process_ref names no identity of the log")
	}
	return p, nil
}

func (lh *logHost) jobReply(l *loadedLog) (*contract.Result, error) {
	d := map[string]any{"job_id": l.jobID, "log_id": l.logID, "name": l.name, "state": "running", "started_at": contract.TS(l.started), "finished_at": nil, "log_ref": nil}
	select {
	case <-l.done:
	default:
		res := contract.NewResult("live", time.Time{}, d)
		res.NextAction = &contract.Action{Tool: "open_log", Arguments: map[string]any{"job_id": l.jobID}}
		return res, nil
	}
	d["finished_at"] = contract.TS(l.finished)
	if l.err != nil {
		e := *l.err
		e.Details = map[string]any{"job_id": l.jobID}
		for k, v := range l.err.Details {
			e.Details[k] = v
		}
		return nil, &e
	}
	d["state"] = "succeeded"
	d["log_ref"] = l.ref
	d["expires_at"] = contract.TS(l.expires)
	d["recording"] = recordingMeta(l)
	res := logResult(l.log, d)
	logWarnings(res, l)
	res.NextAction = &contract.Action{Tool: "list_processes", Arguments: map[string]any{"source": "log", "log_ref": l.ref, "scope": "all"}}
	return res, nil
}

// NoFramesWarning is the warning of every result over a log with no
// sample frame: captured_at is left out because nothing was sampled.
const NoFramesWarning = "the recording holds no sample frames (it was stopped before its first sample): captured_at is unknown and left out, and no process or system value was recorded"

// NoReadableFramesWarning replaces NoFramesWarning when the file is
// damaged or torn (recording.Info.Damaged, Torn): samples may well have
// been recorded, but none could be read, so the log's damage warnings
// say what was lost; nothing claims the recording stopped early.
const NoReadableFramesWarning = "no sample frame of the recording could be read: its frames are damaged, torn or depend on damaged bytes (see the damage warnings), so captured_at is unknown and left out, and no process or system value can be read from it"

// logResult is a "log" result captured at the log's final frame; a log
// with no readable sample frame has no sample time, so captured_at is
// left out (unknown) and NoFramesWarning (a clean file: nothing was
// sampled) or NoReadableFramesWarning (a damaged or torn file) says why.
// The status is not changed.
func logResult(lg *recording.Log, data any) *contract.Result {
	t, ok := lg.FinalTime()
	res := contract.NewResult("log", t, data)
	if !ok {
		if lg.Info != nil && (len(lg.Info.Damaged) > 0 || lg.Info.Torn != nil) {
			res.Warnings = append(res.Warnings, NoReadableFramesWarning)
		} else {
			res.Warnings = append(res.Warnings, NoFramesWarning)
		}
	}
	return res
}

// finalFrameAt is the final frame's time, or nil when the log has none.
func finalFrameAt(lg *recording.Log) any {
	if t, ok := lg.FinalTime(); ok {
		return contract.TS(t)
	}
	return nil
}

// procTime is a recorded identity's frame time ms, or nil when the
// identity was never sampled (defined without a sample).
func procTime(p *recording.Proc, ms int64) any {
	if p.Samples == 0 {
		return nil
	}
	return contract.TS(time.UnixMilli(ms))
}

// recordingMeta is the source metadata every log result carries.
func recordingMeta(l *loadedLog) map[string]any {
	in := l.log.Info
	m := map[string]any{"log_ref": l.ref, "log_id": l.logID, "name": l.name, "interval_seconds": l.log.Interval.Seconds(),
		"format_version": in.Header.Version, "recording_session_id": in.Header.SessionID, "tracked_names": in.Header.Tracked,
		"frames": in.Frames, "identities": len(l.log.Procs), "complete": in.Complete(), "recorded_from": nil, "recorded_to": nil,
		"end_reason": nil, "torn": in.Torn, "damaged": in.Damaged, "gaps": orEmptyGaps(in.Gaps), "lost_frames": in.LostFrames(), "reserved_bytes": l.reserved}
	if in.Frames > 0 {
		m["recorded_from"] = contract.TS(time.UnixMilli(in.First))
		m["recorded_to"] = contract.TS(time.UnixMilli(in.Last))
	}
	if in.End != nil {
		m["end_reason"] = in.End.Reason
	}
	if len(l.log.Unmapped) > 0 {
		m["unmapped_metric_ids"] = l.log.Unmapped
	}
	if len(l.log.Absent) > 0 {
		m["absent_metric_ids"] = l.log.Absent
	}
	return m
}

// logWarnings makes a result over an interrupted or damaged file partial
// with one merged warning.
func logWarnings(res *contract.Result, l *loadedLog) {
	if p := l.log.Info.Problems(); len(p) > 0 {
		res.Warn("the recording is incomplete: " + strings.Join(p, "; "))
		res.Status = contract.StatusPartial
	}
}

func (lh *logHost) closeLog(s *Session, a closeLogArgs) (*contract.Result, error) {
	ls := lh.session(s)
	ls.mu.Lock()
	l := ls.refs[a.LogRef]
	if l != nil {
		delete(ls.refs, a.LogRef)
		delete(ls.jobs, l.jobID)
	}
	ls.mu.Unlock()
	if l != nil {
		lh.dispose(l)
	}
	return contract.NewResult("live", time.Time{}, map[string]any{"log_ref": a.LogRef, "released": l != nil}), nil
}

// loaded returns the open log behind ref for s.
func (lh *logHost) loaded(s *Session, ref string) (*loadedLog, error) {
	ls := lh.session(s)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	lh.expireLocked(ls, time.Now())
	l := ls.refs[ref]
	if l == nil {
		e := contract.Errorf(contract.CodeReferenceInvalid, "log_ref names no loaded log of this connection (closed, expired 5 minutes after loading, or from another connection); open the log again")
		e.Field = "/log_ref"
		e.NextAction = &contract.Action{Tool: "list_logs", Arguments: map[string]any{}}
		return nil, e
	}
	return l, nil
}

// logQuery reports whether a source-selecting query (list_processes,
// get_metrics, get_history) reads a loaded log: source "log", or log_ref
// without a source. source log without log_ref, and
// log_ref with source live, are INVALID_ARGUMENT.
func logQuery(source, logRef string) (bool, error) {
	switch {
	case source == "log" || (source == "" && logRef != ""):
		if logRef == "" {
			// The caller sent source (log_ref is what is missing).
			e := contract.Errorf(contract.CodeInvalidArgument, "source log requires log_ref (from open_log), which is missing")
			e.Field = "/source"
			e.NextAction = &contract.Action{Tool: "list_logs", Arguments: map[string]any{}}
			return false, e
		}
		return true, nil
	case logRef != "":
		e := contract.Errorf(contract.CodeInvalidArgument, "log_ref applies only to source log; remove it or set source to log")
		e.Field = "/log_ref"
		return false, e
	}
	return false, nil
}

func (lh *logHost) listProcesses(ctx context.Context, s *Session, a listProcessesArgs) (*contract.Result, error) {
	raw := rawArgs(ctx)
	l, err := lh.loaded(s, a.LogRef)
	if err != nil {
		return nil, err
	}
	if a.Cursor != "" {
		fl, off, err := lh.h.resumeList(s, "list_processes", raw, a.Cursor)
		if err != nil {
			return nil, err
		}
		return lh.page(ctx, l, "list_processes", fl, raw, off, a.Limit)
	}
	if a.Sort != "" && a.Sort != "pid" && a.Sort != "name" {
		// A metric sort orders by the latest live snapshot's values; a log
		// listing has none, so it is refused rather than silently ordered by pid.
		return nil, invalidAt("/sort", "with source log, sort must be pid or name; rank a recording's processes by a metric with get_history on its log process_refs")
	}
	if a.Filter != nil && a.Filter.User != "" {
		// A recording keeps no owner of its processes: nothing could match.
		return nil, invalidAt("/filter/user", "with source log, filter.user is not available: recordings do not store process owners")
	}
	scope := a.Scope
	if scope == "" {
		scope = "live"
	}
	lg := l.log
	var list []*recording.Proc
	for _, p := range lg.Procs {
		if scope == "live" && !p.InFinal {
			continue
		}
		if f := a.Filter; f != nil {
			if f.PID != nil && p.PID != *f.PID {
				continue
			}
			if f.Name != "" && !sample.ContainsFold(p.Name, f.Name) {
				continue
			}
			if f.Path != "" && (p.Exe == "" || !sample.ContainsFold(p.Exe, f.Path)) {
				continue
			}
		}
		list = append(list, p)
	}
	if a.Sort == "name" {
		sort.SliceStable(list, func(i, j int) bool { return sample.FoldBytes(list[i].Name) < sample.FoldBytes(list[j].Name) })
	}
	fields := processFields(a.Projection, scope)
	// metric_ids: each row's values in the final recorded frame (what
	// get_metrics with this log_ref reads); an identity absent from that
	// frame has them unavailable as not_in_final_frame (get_history has
	// its recorded values).
	var rowMetrics []sample.Metric
	for i, id := range a.MetricIDs {
		m, ok := sample.LookupMetric(id)
		if !ok || m.Target != sample.TargetProcess {
			return nil, invalidAt("/metric_ids/"+itoa(i), "metric_ids must be process metric ids (list_metrics)")
		}
		rowMetrics = append(rowMetrics, m)
	}
	rows := make([]json.RawMessage, 0, len(list))
	for _, p := range list {
		row := map[string]any{}
		if len(rowMetrics) > 0 {
			values, unav := map[string]any{}, map[string]any{}
			for _, m := range rowMetrics {
				if !p.InFinal {
					unav[m.ID] = "not_in_final_frame"
				} else if v, ok := EncodeValue(m, p.Final.Vals[m.Index]); ok && p.Final.Avail&(1<<uint(m.Index)) != 0 {
					values[m.ID] = v
				} else {
					unav[m.ID] = "unknown"
				}
			}
			row["values"], row["unavailable"] = values, unav
		}
		for _, f := range fields {
			switch f {
			case "process_ref":
				row[f] = lh.procRef(l.serial, p.Index)
			case "pid":
				row[f] = p.PID
			case "name":
				row[f] = p.Name
			case "path":
				if p.Exe != "" {
					row[f] = p.Exe
				} else {
					row[f] = nil
				}
			case "parent":
				par := map[string]any{"pid": p.PPID, "relationship": "unknown"}
				if p.ParentOK && lg.ProcByIndex(p.Parent) != nil {
					par["relationship"] = "verified"
					par["process_ref"] = lh.procRef(l.serial, p.Parent)
				}
				row[f] = par
			case "start_time":
				row[f] = contract.TS(p.StartTime)
			case "state":
				row[f] = nil // not recorded
			case "uid":
				if p.UIDKnown {
					row[f] = p.UID
				} else {
					row[f] = nil
				}
			case "user":
				if p.UIDKnown {
					row[f] = sample.UserName(p.UID)
				} else {
					row[f] = nil
				}
			case "lifecycle":
				row[f] = "unknown"
			case "last_seen_at":
				row[f] = procTime(p, p.Last)
			case "history":
				row[f] = map[string]any{"history_from": procTime(p, p.First), "history_to": procTime(p, p.Last), "frames": p.Samples}
			case "command_line":
				row[f] = map[string]any{"unavailable": "not_recorded"}
			}
		}
		b, err := json.Marshal(row)
		if err != nil {
			return nil, contract.Errorf(contract.CodeInternalError, "a row could not be encoded")
		}
		rows = append(rows, b)
	}
	cov := map[string]any{"scope": scope, "identities_in_log": len(lg.Procs), "matched": len(rows)}
	if len(rowMetrics) > 0 {
		cov["values_at"] = finalFrameAt(lg)
	}
	fl := frozenOf(s).put("llist", rows, cov, map[string]any{"log_ref": l.ref})
	return lh.page(ctx, l, "list_processes", fl, raw, 0, a.Limit)
}

// page renders one page of a frozen log listing (processes or raw
// history) with the log's source metadata.
func (lh *logHost) page(ctx context.Context, l *loadedLog, tool string, fl *frozenList, raw json.RawMessage, off, limit int) (*contract.Result, error) {
	if ref, _ := fl.meta["log_ref"].(string); ref != l.ref {
		return nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor belongs to another log or listing")
	}
	if limit <= 0 {
		limit = MaxPageRows
	}
	data, action, byBytes, err := lh.h.listPage(ctx, tool, fl, raw, off, limit)
	if err != nil {
		return nil, err
	}
	delete(data, "log_ref")
	data["recording"] = recordingMeta(l)
	res := logResult(l.log, data)
	res.Coverage = liftCoverage(data)
	res.NextAction = action
	pageEnvelope(res, byBytes)
	logWarnings(res, l)
	return res, nil
}

func (lh *logHost) getMetrics(ctx context.Context, s *Session, a metricsArgs) (*contract.Result, error) {
	l, err := lh.loaded(s, a.LogRef)
	if err != nil {
		return nil, err
	}
	lg := l.log
	if lg.Info.Frames == 0 {
		return nil, contract.Errorf(contract.CodeStateConflict, "the log holds no readable frame")
	}
	targets := a.Targets
	if len(targets) == 0 {
		targets = []metricTarget{{System: true}}
	}
	metrics := make([]sample.Metric, 0, len(a.MetricIDs))
	for _, id := range a.MetricIDs {
		m, ok := sample.LookupMetric(id)
		if !ok {
			return nil, contract.Errorf(contract.CodeInvalidArgument, "unknown metric id; list_metrics gives the catalog")
		}
		metrics = append(metrics, m)
	}
	samples := make([]map[string]any, 0, len(targets))
	failed := 0
	var firstErr error
	for ti, t := range targets {
		kind := sample.TargetProcess
		if t.System {
			kind = sample.TargetSystem
		}
		for _, m := range metrics {
			if m.Target != kind {
				e := contract.Errorf(contract.CodeInvalidArgument, "metric %s is a %s metric and targets/%d is a %s target", m.ID, m.Target, ti, kind)
				e.Field = "/targets/" + itoa(ti)
				return nil, e
			}
		}
		values, unav := map[string]any{}, map[string]any{}
		row := map[string]any{}
		var avail uint32
		var vals []uint64
		if t.System {
			row["target"] = map[string]any{"system": true}
			avail, vals = lg.FinalSystem.Avail, lg.FinalSystem.Vals[:]
		} else {
			field := "/targets/" + itoa(ti) + "/process_ref"
			p, err := lh.parseProcRef(l, t.ProcessRef, field)
			if err == nil && !p.InFinal {
				e := contract.Errorf(contract.CodeProcessExited, "this identity is not in the final recorded frame (last recorded %s); its recorded values are in get_history", time.UnixMilli(p.Last).UTC().Format(time.RFC3339Nano))
				if p.Samples == 0 {
					e = contract.Errorf(contract.CodeProcessExited, "this identity was defined but never sampled in the recording; it has no recorded values")
				}
				e.Field = field
				err = e
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				failed++
				samples = append(samples, map[string]any{"target": map[string]any{"process_ref": t.ProcessRef}, "error": contract.AsError(err)})
				continue
			}
			row["target"] = map[string]any{"process_ref": t.ProcessRef, "pid": p.PID, "name": p.Name}
			avail, vals = p.Final.Avail, p.Final.Vals[:]
		}
		for _, m := range metrics {
			if v, ok := EncodeValue(m, vals[m.Index]); ok && avail&(1<<uint(m.Index)) != 0 {
				values[m.ID] = v
			} else {
				unav[m.ID] = "unknown"
			}
		}
		row["values"], row["unavailable"] = values, unav
		samples = append(samples, row)
	}
	if failed == len(targets) {
		return nil, firstErr
	}
	res := logResult(lg, map[string]any{"frame_at": finalFrameAt(lg), "samples": samples, "recording": recordingMeta(l)})
	if failed > 0 {
		res.Warn(itoa(failed) + " of " + itoa(len(targets)) + " targets could not be read; their samples carry error instead of values")
		res.Status = contract.StatusPartial
	}
	logWarnings(res, l)
	return res, nil
}

func (lh *logHost) getHistory(ctx context.Context, s *Session, a historyArgs) (*contract.Result, error) {
	raw := rawArgs(ctx)
	l, err := lh.loaded(s, a.LogRef)
	if err != nil {
		return nil, err
	}
	if a.Mode == "" {
		a.Mode = "summary"
	}
	if a.Cursor != "" {
		if a.Mode != "raw" {
			e := contract.Errorf(contract.CodeInvalidArgument, "cursor applies to mode raw only")
			e.Field = "/cursor"
			return nil, e
		}
		fl, off, err := lh.h.resumeList(s, "get_history", raw, a.Cursor)
		if err != nil {
			return nil, err
		}
		return lh.page(ctx, l, "get_history", fl, raw, off, a.Limit)
	}
	var iv history.Interval
	exactFrom, exactTo := false, false
	if a.From != "" {
		if iv.From, exactFrom, err = parseBound(a.From, "from", true); err != nil {
			return nil, err
		}
		iv.HasFrom = true
	}
	if a.To != "" {
		if iv.To, exactTo, err = parseBound(a.To, "to", false); err != nil {
			return nil, err
		}
		iv.HasTo = true
	}
	if iv.HasFrom && iv.HasTo && mustTime(a.From).After(mustTime(a.To)) {
		e := contract.Errorf(contract.CodeInvalidArgument, "from is after to")
		e.Field = "/from"
		return nil, e
	}
	kind := sample.TargetSystem
	var target map[string]any
	var view *history.View
	if a.Target == nil || a.Target.System {
		view = l.log.System.View()
		target = map[string]any{"system": true}
	} else {
		kind = sample.TargetProcess
		p, err := lh.parseProcRef(l, a.Target.ProcessRef, "/target/process_ref")
		if err != nil {
			return nil, err
		}
		view = p.Series.View()
		target = map[string]any{"process_ref": a.Target.ProcessRef, "pid": p.PID, "name": p.Name, "start_time": contract.TS(p.StartTime), "lifecycle": "unknown"}
	}
	metrics := make([]sample.Metric, 0, len(a.MetricIDs))
	slots := make([]int, 0, len(a.MetricIDs))
	for i, id := range a.MetricIDs {
		m, ok := sample.LookupMetric(id)
		if !ok || m.Target != kind {
			e := contract.Errorf(contract.CodeInvalidArgument, "metric_ids/%d is not a %s metric; list_metrics gives the catalog", i, kind)
			e.Field = "/metric_ids/" + itoa(i)
			return nil, e
		}
		metrics = append(metrics, m)
		slots = append(slots, m.Index)
	}
	temporal := temporalCoverage(view.Coverage(iv))
	meta := recordingMeta(l)
	if a.Mode == "summary" {
		sums := map[string]any{}
		for _, m := range metrics {
			sm := view.Summarize(iv, m.Index)
			if !(exactFrom && exactTo) {
				sm.HasDelta = false
			}
			sums[m.ID] = summaryJSON(m, sm)
		}
		data := map[string]any{"mode": "summary", "target": target, "metrics": sums, "recording": meta}
		res := logResult(l.log, data)
		res.Coverage = temporal
		logWarnings(res, l)
		return res, nil
	}
	rows, err := rawHistoryRows(view.Raw(iv, slots), metrics)
	if err != nil {
		return nil, err
	}
	fl := frozenOf(s).put("lhist", rows, map[string]any{}, map[string]any{"log_ref": l.ref, "mode": "raw", "target": target, "temporal_coverage": temporal})
	return lh.page(ctx, l, "get_history", fl, raw, 0, a.Limit)
}

// orEmptyGaps is gaps, or an empty list for none.
func orEmptyGaps(g []recording.Gap) []recording.Gap {
	if g == nil {
		return []recording.Gap{}
	}
	return g
}
