// Package jobs runs capture collectors as bounded jobs and keeps their
// frozen results (docs/captures.md, "Limits"): per-session job records
// and retained captures with byte budgets and expiry, global worker slots,
// the one-global-file-users-scan rule, a job deadline, honest cancellation,
// and derived captures for changed read queries. Reads never rescan: a
// capture is collected once and every later view slices or derives from
// its frozen rows.
//
// A Manager is global (one per host); a Session is one connection's owner
// of jobs and captures. Limits and the clock are injectable so tests can
// exercise every limit and the 5-minute expiry without waiting.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
)

// Limits are the job and retention limits (docs/captures.md, "Limits").
type Limits struct {
	// ActivePerSession: collection jobs whose native work still runs, per
	// session (2). One more is BUSY.
	ActivePerSession int
	// RecordsPerSession: running and completed job records until expiry
	// (64). One more is RESOURCE_LIMIT.
	RecordsPerSession int
	// RetainedPerSession: retained source captures (8). One more is
	// RESOURCE_LIMIT.
	RetainedPerSession int
	// RetainedBytes: serialized rows of retained and derived captures per
	// session (64 MiB). A capture over budget is RESULT_TOO_LARGE and is
	// never truncated.
	RetainedBytes int64
	// Workers: global worker slots (8), held until the native collector
	// returns. None free is BUSY.
	Workers int
	// Deadline: per-job collection deadline (60 s); TIMEOUT when exceeded.
	Deadline time.Duration
	// CaptureLifetime: captures expire this long after completion (5 min);
	// reads do not renew it.
	CaptureLifetime time.Duration
	// JobLifetime: completed job records expire this long after
	// completion (5 min).
	JobLifetime time.Duration
}

// DefaultLimits returns the documented limits (docs/captures.md, "Limits").
func DefaultLimits() Limits {
	return Limits{
		ActivePerSession:   2,
		RecordsPerSession:  64,
		RetainedPerSession: 8,
		RetainedBytes:      64 << 20,
		Workers:            8,
		Deadline:           60 * time.Second,
		CaptureLifetime:    5 * time.Minute,
		JobLifetime:        5 * time.Minute,
	}
}

// Manager holds the global job resources: worker slots and the file-users
// scan slot. It is safe for concurrent use.
type Manager struct {
	limits Limits
	now    func() time.Time

	mu       sync.Mutex
	busy     int
	scanning bool
	nextSess int
}

// NewManager returns a manager with limits l and clock now (nil = time.Now).
func NewManager(l Limits, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{limits: l, now: now}
}

// Limits returns the manager's limits.
func (m *Manager) Limits() Limits { return m.limits }

// Busy returns the number of occupied worker slots.
func (m *Manager) Busy() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.busy
}

// State is a job's state.
type State string

// Job states, as get_job reports them in data.state.
const (
	Running   State = "running"
	Succeeded State = "succeeded"
	Failed    State = "failed"
)

// Spec describes a job to start.
type Spec struct {
	// Kind is the capture kind (capture.Kind*).
	Kind string
	// Exclusive jobs take the single global file-users scan slot.
	Exclusive bool
	// Run collects; it should observe ctx (cancellation, deadline) but a
	// native call may finish late, which the job reports honestly.
	Run func(ctx context.Context) (*capture.Capture, error)
	// Prepare, when set, runs in the worker on a successful capture before
	// it is encoded and budgeted (the host adds process_ref fields here).
	Prepare func(*capture.Capture)
	// Filter is the start_capture collection filter: rows that do not
	// match are dropped in the worker before encoding, so they are never
	// retained or charged to the budget (collectors that can apply it
	// earlier already did; this pass makes it exact for every kind). A
	// non-zero filter is named in the capture's coverage
	// (collection_filter, rows_filtered_out).
	Filter capture.Filter
	// Live says the job inspects live processes (every capture kind and
	// process info); a saved-log job (list_logs) leaves it false.
	// CancelLive ends only live jobs: entering the TUI's Log view cancels
	// the live jobs of MCP sessions while their saved-log reads go on
	// (a Log view shows no live state; docs/tui.md, "Recording and Log view").
	Live bool
}

// Job is one job record. Fields are guarded by the session lock; readers
// get copies through View.
type Job struct {
	ID              string
	Kind            string
	State           State
	CaptureID       string
	Err             *contract.Error
	Started         time.Time
	Finished        time.Time
	CancelRequested bool
	// NativeRunning says the collector goroutine has not returned yet
	// (also after a cancellation or timeout made the job terminal).
	NativeRunning bool
	// Consumed says the job's capture was released after being read.
	Consumed bool
	// Partial and Warnings repeat the capture's completeness on success
	// (a limited useful result that get_job returns as a success).
	Partial  bool
	Warnings []string
	// Live repeats Spec.Live.
	Live bool

	cancel context.CancelFunc
	done   chan struct{}
}

// Session owns one connection's jobs and captures.
type Session struct {
	m *Manager

	mu       sync.Mutex
	id       int
	next     int
	jobs     map[string]*Job
	jobOrder []string
	caps     map[string]*Capture
	bytes    int64
	closed   bool
}

// NewSession opens a session on m.
func (m *Manager) NewSession() *Session {
	m.mu.Lock()
	m.nextSess++
	id := m.nextSess
	m.mu.Unlock()
	return &Session{m: m, id: id, jobs: map[string]*Job{}, caps: map[string]*Capture{}}
}

// Close cancels the session's jobs and releases its captures (connection
// cleanup). Native work still running finishes in the background and
// frees its worker slot then. Idempotent.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for _, j := range s.jobs {
		if j.State == Running {
			j.CancelRequested = true
			j.cancel()
		}
	}
	s.caps = map[string]*Capture{}
	s.bytes = 0
	s.mu.Unlock()
}

// expireLocked drops expired captures and job records.
func (s *Session) expireLocked() {
	now := s.m.now()
	for id, c := range s.caps {
		if !now.Before(c.Expires) {
			s.dropLocked(id)
		}
	}
	keep := s.jobOrder[:0]
	for _, id := range s.jobOrder {
		j := s.jobs[id]
		if j.State != Running && !j.NativeRunning && !now.Before(j.Finished.Add(s.m.limits.JobLifetime)) {
			delete(s.jobs, id)
			continue
		}
		keep = append(keep, id)
	}
	s.jobOrder = keep
}

func (s *Session) dropLocked(id string) {
	c, ok := s.caps[id]
	if !ok {
		return
	}
	delete(s.caps, id)
	s.bytes -= c.Bytes
	for _, d := range c.derived {
		s.dropLocked(d.ID)
	}
}

func (s *Session) activeLocked() int {
	n := 0
	for _, j := range s.jobs {
		if j.State == Running || j.NativeRunning {
			n++
		}
	}
	return n
}

func (s *Session) retainedLocked() int {
	n := 0
	for _, c := range s.caps {
		if c.Parent == "" {
			n++
		}
	}
	return n
}

// Start starts spec as a job. Errors: BUSY (ActivePerSession collection
// jobs active, no global worker slot, or another file-users scan running),
// RESOURCE_LIMIT (job records or retained captures full).
func (s *Session) Start(spec Spec) (Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Job{}, contract.Errorf(contract.CodeBackendUnavailable, "the session is closed")
	}
	s.expireLocked()
	l := s.m.limits
	if s.activeLocked() >= l.ActivePerSession {
		return Job{}, contract.Errorf(contract.CodeBusy, "this connection already has %d active collection jobs; wait for one (get_job) or cancel it (cancel_job)", l.ActivePerSession)
	}
	if len(s.jobs) >= l.RecordsPerSession && !s.evictReleasedLocked() {
		return Job{}, s.recordLimitErr()
	}
	if s.retainedLocked() >= l.RetainedPerSession {
		return Job{}, s.retainedLimitErr()
	}
	m := s.m
	m.mu.Lock()
	if m.busy >= l.Workers {
		m.mu.Unlock()
		return Job{}, contract.Errorf(contract.CodeBusy, "all %d global capture worker slots are in use; retry shortly", l.Workers)
	}
	if spec.Exclusive && m.scanning {
		m.mu.Unlock()
		return Job{}, contract.Errorf(contract.CodeBusy, "another file-users scan is running (one at a time host-wide); retry shortly")
	}
	m.busy++
	if spec.Exclusive {
		m.scanning = true
	}
	m.mu.Unlock()

	s.next++
	// A capture's rows can never exceed the whole retained budget: the
	// collector stops once they certainly would (capture.RowBudget).
	ctx, cancel := context.WithTimeout(capture.WithRowBudget(context.Background(), &capture.RowBudget{Limit: l.RetainedBytes}), l.Deadline)
	j := &Job{ID: fmt.Sprintf("job-%d-%d", s.id, s.next), Kind: spec.Kind, State: Running, Started: m.now(),
		NativeRunning: true, Live: spec.Live, cancel: cancel, done: make(chan struct{})}
	s.jobs[j.ID] = j
	s.jobOrder = append(s.jobOrder, j.ID)
	native := make(chan struct{})
	go s.watch(ctx, j, native)
	go s.run(ctx, j, spec, native)
	return *j, nil
}

// evictReleasedLocked makes room for one job record when the session
// holds RecordsPerSession of them: it drops the oldest completed record
// whose capture was released (Consumed; its native work has returned), so
// releasing a capture frees its job record for the next job. A dropped
// record then reads as unknown (REFERENCE_INVALID) instead of reporting
// result_consumed. It reports whether a record was dropped; running jobs,
// failed ones and those whose capture is still retained keep theirs until
// expiry.
func (s *Session) evictReleasedLocked() bool {
	for i, id := range s.jobOrder {
		j := s.jobs[id]
		if j.State != Running && !j.NativeRunning && j.Consumed {
			delete(s.jobs, id)
			s.jobOrder = append(s.jobOrder[:i], s.jobOrder[i+1:]...)
			return true
		}
	}
	return false
}

// recordLimitErr is the RESOURCE_LIMIT of a full job-record table: it
// names how to free a record. With a retained capture, next_action is
// release_capture of the oldest one (its record is then reused), and the
// details list every retained capture; without one (the records are
// running or failed jobs), the error is retryable and details.next_expiry_at
// says when the first completed record expires (5 minutes after its
// completion), null while every record is still running.
func (s *Session) recordLimitErr() *contract.Error {
	l := s.m.limits
	var ids []string
	oldest := ""
	var next time.Time
	for _, id := range s.jobOrder {
		j := s.jobs[id]
		if c, ok := s.caps[j.CaptureID]; ok && c.Parent == "" {
			ids = append(ids, j.CaptureID)
			if oldest == "" {
				oldest = j.CaptureID
			}
		}
		if j.State != Running && !j.NativeRunning {
			if exp := j.Finished.Add(l.JobLifetime); next.IsZero() || exp.Before(next) {
				next = exp
			}
		}
	}
	if oldest != "" {
		e := contract.Errorf(contract.CodeResourceLimit, "this connection holds %d job records (the limit); release a retained capture with release_capture (next_action names the oldest) and its job record is reused; completed records also expire 5 minutes after completion", l.RecordsPerSession).
			WithDetail("retained_capture_ids", ids)
		e.NextAction = &contract.Action{Tool: "release_capture", Arguments: map[string]any{"capture_id": oldest}}
		return e
	}
	e := contract.Errorf(contract.CodeResourceLimit, "this connection holds %d job records (the limit), none with a capture to release: they are running or failed jobs; completed records expire 5 minutes after completion (details.next_expiry_at), or reconnect for a fresh connection", l.RecordsPerSession)
	e.Retryable = true
	var exp any
	if !next.IsZero() {
		exp = contract.TS(next)
	}
	return e.WithDetail("next_expiry_at", exp)
}

func (s *Session) retainedLimitErr() *contract.Error {
	ids := make([]string, 0, len(s.caps))
	for id, c := range s.caps {
		if c.Parent == "" {
			ids = append(ids, id)
		}
	}
	return contract.Errorf(contract.CodeResourceLimit, "this connection retains %d captures; release one with release_capture", s.m.limits.RetainedPerSession).
		WithDetail("retained_capture_ids", ids)
}

// watch ends the job at the deadline or on cancellation even when the
// native collector has not returned.
func (s *Session) watch(ctx context.Context, j *Job, native chan struct{}) {
	select {
	case <-native:
		return
	case <-ctx.Done():
	}
	// run closes native before it cancels ctx, so a collector that
	// returned is seen here even when select picked ctx.Done: its result
	// (or error) is run's to record, not a cancellation
	select {
	case <-native:
		return
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.State != Running {
		return
	}
	if j.CancelRequested || errors.Is(ctx.Err(), context.Canceled) {
		j.Err = contract.Errorf(contract.CodeCancelled, "the job was cancelled")
	} else {
		j.Err = contract.Errorf(contract.CodeTimeout, "the collection did not finish within the %s job deadline", s.m.limits.Deadline)
	}
	s.finishLocked(j, Failed)
}

func (s *Session) finishLocked(j *Job, st State) {
	j.State = st
	j.Finished = s.m.now()
	close(j.done)
}

func (s *Session) run(ctx context.Context, j *Job, spec Spec, native chan struct{}) {
	c, err := spec.Run(ctx)
	late := ctx.Err()
	var stored *Capture
	if err == nil && c != nil && late == nil {
		applyFilter(c, spec.Filter)
		if spec.Prepare != nil {
			spec.Prepare(c)
		}
		stored = newCapture(c)
	}
	close(native)
	m := s.m
	m.mu.Lock()
	m.busy--
	if spec.Exclusive {
		m.scanning = false
	}
	m.mu.Unlock()
	j.cancel()

	s.mu.Lock()
	defer s.mu.Unlock()
	j.NativeRunning = false
	if j.State != Running || s.closed {
		return // cancelled or timed out already; the late result is dropped
	}
	switch {
	case late != nil:
		if j.CancelRequested || errors.Is(late, context.Canceled) {
			j.Err = contract.Errorf(contract.CodeCancelled, "the job was cancelled")
		} else {
			j.Err = contract.Errorf(contract.CodeTimeout, "the collection did not finish within the %s job deadline", s.m.limits.Deadline)
		}
		s.finishLocked(j, Failed)
		return
	case err != nil:
		var ob *capture.OverBudgetError
		if errors.As(err, &ob) {
			j.Err = captureTooLarge(spec, ob.Counted, s.bytes, m.limits.RetainedBytes, true).
				WithDetail("collection_stopped", map[string]any{"items_read": ob.Read, "items_listed": ob.Total, "rows_counted": ob.Rows})
			s.finishLocked(j, Failed)
			go debug.FreeOSMemory() // the rows collected until then are garbage now
			return
		}
		j.Err = contract.AsError(err)
		s.finishLocked(j, Failed)
		return
	case c == nil:
		j.Err = contract.Errorf(contract.CodeCollectionFailed, "the collector returned no result")
		s.finishLocked(j, Failed)
		return
	}
	// Recheck capacity now: other work may have used it while this ran.
	s.expireLocked()
	if s.retainedLocked() >= m.limits.RetainedPerSession {
		j.Err = s.retainedLimitErr()
		s.finishLocked(j, Failed)
		return
	}
	if s.bytes+stored.Bytes > m.limits.RetainedBytes {
		j.Err = captureTooLarge(spec, stored.Bytes, s.bytes, m.limits.RetainedBytes, false)
		s.finishLocked(j, Failed)
		if stored.Bytes > m.limits.RetainedBytes/4 {
			go debug.FreeOSMemory() // a large refused capture: return its memory
		}
		return
	}
	j.Partial, j.Warnings = stored.Partial, stored.Warnings
	s.finishLocked(j, Succeeded)
	stored.ID = fmt.Sprintf("cap-%d-%d", s.id, s.nextID())
	stored.JobID = j.ID
	stored.Created = j.Finished
	stored.Expires = j.Finished.Add(m.limits.CaptureLifetime)
	s.caps[stored.ID] = stored
	s.bytes += stored.Bytes
	j.CaptureID = stored.ID
}

func (s *Session) nextID() int { s.next++; return s.next }

// applyFilter drops the rows of c that f rejects and records the filter in
// c's coverage (collection_filter, rows_filtered_out including rows the
// collector dropped itself). A zero filter changes nothing.
func applyFilter(c *capture.Capture, f capture.Filter) {
	if f.IsZero() {
		return
	}
	keep := c.Rows[:0]
	for i := range c.Rows {
		if f.Match(&c.Rows[i]) {
			keep = append(keep, c.Rows[i])
		} else {
			c.FilteredOut++
		}
	}
	clear(c.Rows[len(keep):])
	c.Rows = keep
	if c.Coverage == nil {
		c.Coverage = map[string]any{}
	}
	c.Coverage["collection_filter"] = f
	c.Coverage["rows_filtered_out"] = c.FilteredOut
}

// captureTooLarge is the RESULT_TOO_LARGE of a collected capture: the
// capture is never truncated; the message and details say how to narrow
// the collection itself (start_capture filter terms of the kind) or free
// budget. atLeast says need is a lower bound: the collector stopped as
// soon as its rows could never fit the whole budget (capture.RowBudget),
// and details.needed_bytes_is_lower_bound is true.
func captureTooLarge(spec Spec, need, used, budget int64, atLeast bool) *contract.Error {
	terms := capture.FilterTerms(spec.Kind)
	needs := "needs"
	if atLeast {
		needs = "needs more than"
	}
	msg := "the %s capture " + needs + " %d bytes but this connection has %d of its %d-byte retained budget free; it is not truncated. Release retained captures (release_capture)"
	if len(terms) > 0 {
		msg += ", or start the capture again with filter (" + strings.Join(terms, ", ") + ") so only matching rows are collected"
	}
	e := contract.Errorf(contract.CodeResultTooLarge, msg, spec.Kind, need, budget-used, budget).
		WithDetail("needed_bytes", need).WithDetail("needed_bytes_is_lower_bound", atLeast).WithDetail("budget_bytes", budget).WithDetail("free_bytes", budget-used)
	if len(terms) > 0 {
		e = e.WithDetail("filter_terms", terms)
	}
	if !spec.Filter.IsZero() {
		e = e.WithDetail("collection_filter", spec.Filter)
	}
	return e
}

func tooLarge(need, used, budget int64) *contract.Error {
	return contract.Errorf(contract.CodeResultTooLarge, "the result needs %d bytes but this connection has %d of its %d-byte retained budget free; release captures or narrow the query", need, budget-used, budget).
		WithDetail("needed_bytes", need).WithDetail("budget_bytes", budget)
}

// Job returns a copy of job id. Unknown or expired: REFERENCE_INVALID.
func (s *Session) Job(id string) (Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, contract.Errorf(contract.CodeReferenceInvalid, "job_id is unknown, expired (5 minutes after completion) or belongs to another connection")
	}
	return *j, nil
}

// Wait blocks until job id is terminal or ctx ends, and returns it.
func (s *Session) Wait(ctx context.Context, id string) (Job, error) {
	s.mu.Lock()
	j, ok := s.jobs[id]
	s.mu.Unlock()
	if !ok {
		return s.Job(id)
	}
	select {
	case <-j.done:
	case <-ctx.Done():
	}
	return s.Job(id)
}

// Cancel requests cancellation of job id. A terminal job is unchanged.
// The returned copy says whether native work is still running (it may not
// stop immediately; its worker slot stays taken until it returns).
func (s *Session) Cancel(id string) (Job, error) { return s.CancelWith(id, nil) }

// CancelWith is Cancel with the failure e as the job's outcome (nil: the
// plain CANCELLED of cancel_job); the host uses it for a live job that
// must end because the TUI entered Log view.
func (s *Session) CancelWith(id string, e *contract.Error) (Job, error) {
	s.mu.Lock()
	j, ok := s.jobs[id]
	if !ok {
		s.mu.Unlock()
		return s.Job(id)
	}
	if j.State == Running {
		j.CancelRequested = true
		j.Err = e
		if j.Err == nil {
			j.Err = contract.Errorf(contract.CodeCancelled, "the job was cancelled")
		}
		s.finishLocked(j, Failed)
		j.cancel()
	}
	out := *j
	s.mu.Unlock()
	return out, nil
}

// CancelLive ends every running live job (Spec.Live) of the session now
// with the failure e (its code, message and details are what get_job then
// reports under result.error; nil means the plain CANCELLED of
// cancel_job) and requests cancellation of its collector, as Cancel does:
// native work still running finishes in the background and its result is
// dropped. Jobs that are not live, and jobs already terminal, are left
// alone. It returns copies of the jobs it ended, in start order.
func (s *Session) CancelLive(e *contract.Error) []Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Job
	for _, id := range s.jobOrder {
		j := s.jobs[id]
		if j == nil || !j.Live || j.State != Running {
			continue
		}
		j.CancelRequested = true
		j.Err = e
		if j.Err == nil {
			j.Err = contract.Errorf(contract.CodeCancelled, "the job was cancelled")
		}
		s.finishLocked(j, Failed)
		j.cancel()
		out = append(out, *j)
	}
	return out
}

// Capture returns capture id. Unknown, released or expired:
// REFERENCE_INVALID.
func (s *Session) Capture(id string) (*Capture, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	c, ok := s.caps[id]
	if !ok {
		return nil, contract.Errorf(contract.CodeReferenceInvalid, "capture_id is unknown, released, expired (5 minutes after completion) or belongs to another connection")
	}
	return c, nil
}

// Release drops capture id and its derived captures; idempotent. It
// reports whether something was released. The job that produced it then
// reports Consumed.
func (s *Session) Release(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.caps[id]
	if !ok {
		return false
	}
	if c.Parent != "" {
		if p, ok := s.caps[c.Parent]; ok {
			delete(p.derived, c.key)
		}
	}
	s.dropLocked(id)
	if j, ok := s.jobs[c.JobID]; ok && c.Parent == "" {
		j.Consumed = true
	}
	return true
}

// Usage reports retained captures (source only), derived captures, bytes
// and active jobs of the session.
func (s *Session) Usage() (retained, derived int, bytes int64, active int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	r := s.retainedLocked()
	return r, len(s.caps) - r, s.bytes, s.activeLocked()
}
