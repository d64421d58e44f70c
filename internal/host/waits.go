package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Condition-wait limits (docs/investigation.md, "wait_condition").
const (
	// MaxWaitTimeout is the largest timeout_ms.
	MaxWaitTimeout = 60 * time.Second
	// MaxReplyWait bounds how long one wait_condition call blocks in the
	// host before replying "running" with a continuation, so a call stays
	// well inside the IPC response deadline.
	MaxReplyWait = 5 * time.Second
	// MaxActiveWaits is the number of unfinished waits one connection may
	// hold; one more is BUSY.
	MaxActiveWaits = 4
	// WaitRetention keeps a finished wait's outcome readable.
	WaitRetention = 5 * time.Minute
)

// waitJob is one connection-owned condition wait.
type waitJob struct {
	id       string
	cond     map[string]any
	started  time.Time
	deadline time.Time // started + timeout_ms: the wait ends by then
	done     chan struct{}
	finished time.Time
	res      *contract.Result
	err      error
	cancel   context.CancelFunc
	// cancelRequested is set by cancel_job on a running wait.
	cancelRequested atomic.Bool
	// cancelErr, when set before cancel, is the wait's failure instead of
	// the plain CANCELLED (the host entering Log view).
	cancelErr atomic.Pointer[contract.Error]
}

// stop ends a running wait with e (nil: the plain CANCELLED of
// cancel_job) and returns once it has ended (a wait ends promptly on
// cancellation). A finished wait keeps its outcome; stop reports whether
// the wait was still running.
func (j *waitJob) stop(e *contract.Error) bool {
	select {
	case <-j.done:
		return false
	default:
	}
	if e != nil {
		j.cancelErr.CompareAndSwap(nil, e)
	}
	j.cancelRequested.Store(true)
	j.cancel()
	<-j.done
	return true
}

type waitStore struct {
	once sync.Once
	mu   sync.Mutex
	next int
	jobs map[string]*waitJob
}

type waitKey struct{}

func waitsOf(s *Session) *waitStore {
	ws := s.Value(waitKey{}, func() any { return &waitStore{jobs: map[string]*waitJob{}} }).(*waitStore)
	ws.once.Do(func() {
		// Disconnect ends the connection's waits.
		s.OnClose(func() {
			ws.mu.Lock()
			defer ws.mu.Unlock()
			for _, j := range ws.jobs {
				j.cancel()
			}
		})
	})
	return ws
}

// waitArgs are wait_condition's arguments (pid is resolved to process_ref
// by the bridge before the host sees the call).
type waitArgs struct {
	JobID       string          `json:"job_id"`
	WaitMS      *int            `json:"wait_ms"`
	Condition   string          `json:"condition"`
	ProcessName string          `json:"process_name"`
	ProcessRef  string          `json:"process_ref"`
	PID         *int64          `json:"pid"`
	System      bool            `json:"system"`
	MetricID    string          `json:"metric_id"`
	Comparison  string          `json:"comparison"`
	Threshold   json.RawMessage `json:"threshold"`
	TimeoutMS   int             `json:"timeout_ms"`
}

func waitConditionTool(d Delivery) Decl {
	wd := d.waitDefault()
	t := define(tool.Tool{
		Name:        "wait_condition",
		Title:       "Wait for a condition",
		Description: "Waits until a process appears (process_present: process_name), exits (process_exit: process_ref or pid) or a metric crosses a threshold (metric_threshold: metric_id, comparison, threshold; process_ref or system). Required: condition and timeout_ms; if wait_ms covers timeout_ms one call returns the outcome (TIMEOUT too), else follow job_id.",
		Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"condition":{"type":"string","enum":["process_present","process_exit","metric_threshold"]},
"process_name":{"type":"string","minLength":1,"maxLength":256},
"process_ref":{"type":"string","minLength":1,"maxLength":128},
` + pidField + `,
"system":{"const":true},
"metric_id":{"type":"string","enum":$METRIC_IDS},
"comparison":{"type":"string","enum":[">",">=","<","<="]},
"threshold":{"type":["number","string"],"pattern":"^-?[0-9]+(\\.[0-9]+)?$","maxLength":64},
"timeout_ms":{"type":"integer","minimum":1,"maximum":60000},
"job_id":{"type":"string","minLength":1,"maxLength":64,"description":"continue an earlier wait"},
` + waitField(wd) + `}}`),
		Annotations: tool.Annotations{ReadOnly: true},
		Job:         true,
	}, func(ctx context.Context, h *Host, s *Session, a waitArgs) (*contract.Result, error) {
		return investigationOf(h).waitCondition(ctx, s, a)
	})
	t.Delivery = DeliverSlices
	t.PIDAt = PIDTop
	t.PIDLeave = func(m map[string]json.RawMessage) bool {
		var cond string
		json.Unmarshal(m["condition"], &cond)
		return cond == "process_present" || m["job_id"] != nil
	}
	return t
}

// waitArgsFor lists the arguments each condition uses besides condition,
// timeout_ms and wait_ms (docs/investigation.md, "wait_condition").
var waitArgsFor = map[string][]string{
	"process_present":  {"process_name"},
	"process_exit":     {"process_ref"},
	"metric_threshold": {"metric_id", "comparison", "threshold", "process_ref", "system"},
}

// checkWaitArgs rejects arguments the call does not use, before anything
// starts: a continuation takes job_id and wait_ms only, and a new wait
// only its condition's arguments (process_ref with process_present,
// process_name with process_exit, ...) and needs condition and
// timeout_ms. INVALID_ARGUMENT names the argument in field.
func checkWaitArgs(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return contract.Errorf(contract.CodeInvalidArgument, "arguments could not be decoded")
	}
	if _, ok := m["job_id"]; !ok {
		if _, ok := m["condition"]; !ok {
			return argErr("condition", "condition is required to start a wait")
		}
		if _, ok := m["timeout_ms"]; !ok {
			return argErr("timeout_ms", "timeout_ms is required to start a wait")
		}
	}
	allowed := map[string]bool{"wait_ms": true}
	var what string
	if _, ok := m["job_id"]; ok {
		allowed["job_id"] = true
		what = "a continuation (job_id) takes only job_id and wait_ms"
	} else {
		var cond string
		json.Unmarshal(m["condition"], &cond)
		for _, k := range append([]string{"condition", "timeout_ms"}, waitArgsFor[cond]...) {
			allowed[k] = true
		}
		what = "condition " + cond + " takes " + strings.Join(waitArgsFor[cond], ", ") + " besides condition, timeout_ms and wait_ms"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !allowed[k] {
			e := contract.Errorf(contract.CodeInvalidArgument, "%s does not apply here: %s; remove it", k, what)
			e.Field = "/" + k
			return e
		}
	}
	return nil
}

func (inv *investigation) waitCondition(ctx context.Context, s *Session, a waitArgs) (*contract.Result, error) {
	if err := checkWaitArgs(rawArgs(ctx)); err != nil {
		return nil, err
	}
	replyWait := MaxReplyWait
	if a.WaitMS != nil {
		replyWait = min(time.Duration(*a.WaitMS)*time.Millisecond, MaxReplyWait)
	}
	ws := waitsOf(s)
	if a.JobID != "" {
		ws.mu.Lock()
		ws.expireLocked()
		j := ws.jobs[a.JobID]
		ws.mu.Unlock()
		if j == nil {
			e := contract.Errorf(contract.CodeReferenceInvalid, "no wait with this job_id on this connection (it expired or belongs to another connection)")
			e.Field = "/job_id"
			return nil, e
		}
		return j.reply(ctx, replyWait)
	}
	check, err := inv.prepareWait(a)
	if err != nil {
		return nil, err
	}
	if a.TimeoutMS < 1 || time.Duration(a.TimeoutMS)*time.Millisecond > MaxWaitTimeout {
		return nil, argErr("timeout_ms", "timeout_ms must be 1..60000")
	}
	ws.mu.Lock()
	ws.expireLocked()
	active := 0
	for _, j := range ws.jobs {
		select {
		case <-j.done:
		default:
			active++
		}
	}
	if active >= MaxActiveWaits {
		e := ws.busyLocked(time.Now())
		ws.mu.Unlock()
		return nil, e
	}
	ws.next++
	// The wait belongs to the connection, not to this call: a call that
	// returns "running" leaves it going until its own deadline.
	wctx, cancel := context.WithTimeout(context.Background(), time.Duration(a.TimeoutMS)*time.Millisecond)
	now := time.Now()
	j := &waitJob{id: fmt.Sprintf("wait-%d", ws.next), cond: check.describe, started: now, deadline: now.Add(time.Duration(a.TimeoutMS) * time.Millisecond), done: make(chan struct{}), cancel: cancel}
	ws.jobs[j.id] = j
	ws.mu.Unlock()
	go func() {
		defer cancel()
		res, err := check.run(wctx, j)
		j.res, j.err, j.finished = res, err, time.Now()
		close(j.done)
	}()
	if inv.h.InLogView() {
		// Log view began after the activity gate let this call in: the
		// wait is live work and ends as if it had been running then.
		j.stop(logViewCancelled())
	}
	return j.reply(ctx, replyWait)
}

// busyLocked is the BUSY error of a wait refused because the connection
// already has MaxActiveWaits unfinished waits (ws.mu held). It names the
// way out: details.running_waits lists each unfinished wait ({job_id,
// condition, started_at, deadline}, earliest deadline first), since no
// call lists a connection's waits; each ends by itself at its deadline
// (timeout_ms), on its outcome, or at once on cancel_job {job_id}.
// details.retry_after_ms is the time until the earliest deadline (at
// most that long until a slot is free), and next_action continues the
// wait that ends first (wait_condition {job_id}), which returns once it
// has ended and a new wait can start.
func (ws *waitStore) busyLocked(now time.Time) *contract.Error {
	var running []*waitJob
	for _, j := range ws.jobs {
		select {
		case <-j.done:
		default:
			running = append(running, j)
		}
	}
	slices.SortFunc(running, func(a, b *waitJob) int {
		if c := a.deadline.Compare(b.deadline); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	list := make([]any, 0, len(running))
	ids := make([]string, 0, len(running))
	for _, j := range running {
		list = append(list, map[string]any{"job_id": j.id, "condition": j.cond, "started_at": contract.TS(j.started), "deadline": contract.TS(j.deadline)})
		ids = append(ids, j.id)
	}
	first := running[0]
	after := first.deadline.Sub(now)
	afterMS := (after + time.Millisecond - 1) / time.Millisecond
	if afterMS < 1 {
		afterMS = 1
	}
	e := contract.Errorf(contract.CodeBusy,
		"this connection already has %d unfinished waits (%s, listed in details.running_waits); each ends by itself at its deadline (timeout_ms) or on its outcome, and cancel_job {job_id} ends one at once; %s ends first, by %s (in %d ms): next_action waits for it to end, then retry this call",
		len(running), strings.Join(ids, ", "), first.id, first.deadline.UTC().Format(time.RFC3339Nano), afterMS)
	e.Retryable = true
	e.Details = map[string]any{
		"limit":             "max_active_waits",
		"limit_count":       MaxActiveWaits,
		"running_waits":     list,
		"earliest_deadline": contract.TS(first.deadline),
		"retry_after_ms":    int64(afterMS),
	}
	e.NextAction = &contract.Action{Tool: "wait_condition", Arguments: map[string]any{"job_id": first.id}}
	return e
}

func (ws *waitStore) expireLocked() {
	for id, j := range ws.jobs {
		select {
		case <-j.done:
			if time.Since(j.finished) > WaitRetention {
				delete(ws.jobs, id)
			}
		default:
		}
	}
}

// reply waits up to d for the job and renders its state.
func (j *waitJob) reply(ctx context.Context, d time.Duration) (*contract.Result, error) {
	select {
	case <-j.done:
		return j.res, j.err
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-j.done:
		return j.res, j.err
	case <-t.C:
	case <-ctx.Done():
	}
	data := map[string]any{"job_id": j.id, "state": "running", "condition": j.cond, "started_at": contract.TS(j.started)}
	res := contract.NewResult("live", time.Time{}, data)
	res.NextAction = &contract.Action{Tool: "wait_condition", Arguments: map[string]any{"job_id": j.id}}
	return res, nil
}

// waitCheck is a prepared condition.
type waitCheck struct {
	describe map[string]any
	run      func(ctx context.Context, j *waitJob) (*contract.Result, error)
}

func (inv *investigation) prepareWait(a waitArgs) (*waitCheck, error) {
	h := inv.h
	start := h.sampler.Latest()
	switch a.Condition {
	case "process_present":
		if a.ProcessName == "" {
			return nil, argErr("process_name", "process_present requires process_name")
		}
		name := history.NormalizeName(a.ProcessName)
		desc := map[string]any{"condition": "process_present", "process_name": name, "after_snapshot_seq": start.Seq}
		return &waitCheck{describe: desc, run: func(ctx context.Context, j *waitJob) (*contract.Result, error) {
			seq := start.Seq
			last := map[string]any{"snapshot_seq": start.Seq, "sampled_at": contract.TS(start.Time), "match_count": 0, "note": "the request's first snapshot is never evidence"}
			for {
				snap, err := h.sampler.WaitNewer(ctx, seq)
				if err != nil {
					return nil, waitEnded(ctx, j, last)
				}
				seq = snap.Seq
				var found []any
				for i := range snap.Procs {
					p := &snap.Procs[i]
					// the one name rule (name or comm); a zombie has exited
					// and is not present (targeted calls say PROCESS_EXITED)
					if p.State != 'Z' && p.NameFacts().Matches(name) {
						if len(found) < 20 {
							m := map[string]any{"process_ref": h.Ref(p.ID()), "pid": p.PID, "start_time": contract.TS(p.StartTime)}
							sample.TextFields("name", p.Name, func(k string, v any) { m[k] = v })
							sample.TextFields("comm", p.Comm, func(k string, v any) { m[k] = v })
							found = append(found, m)
						}
					}
				}
				if len(found) > 0 {
					return waitSucceeded(j, snap.Time, map[string]any{"snapshot_seq": snap.Seq, "sampled_at": contract.TS(snap.Time), "processes": found}), nil
				}
				last = map[string]any{"snapshot_seq": snap.Seq, "sampled_at": contract.TS(snap.Time), "match_count": 0}
			}
		}}, nil
	case "process_exit":
		if a.ProcessRef == "" {
			return nil, processChoice("", "condition process_exit")
		}
		p, _, err := h.ResolveLive(a.ProcessRef)
		if contract.CodeOf(err) == contract.CodeProcessExited {
			// The lifetime has already exited (a zombie has exited and only
			// awaits reaping): the condition holds, with fresh evidence of
			// what /proc shows now.
			if done := inv.alreadyExited(a.ProcessRef); done != nil {
				return done, nil
			}
		}
		if err != nil {
			contract.AsError(err).Field = "/process_ref"
			return nil, err
		}
		id, pname := p.ID(), p.Name
		desc := map[string]any{"condition": "process_exit", "process_ref": a.ProcessRef, "pid": id.PID, "name": pname}
		return &waitCheck{describe: desc, run: func(ctx context.Context, j *waitJob) (*contract.Result, error) {
			ev, last, err := watchExit(ctx, id, h.sampler.Interval())
			if err != nil {
				return nil, err
			}
			if ev == nil {
				return nil, waitEnded(ctx, j, last)
			}
			if st := exitedState(id); st != "" {
				ev["state"] = st // zombie: exited, not yet reaped; gone: reaped
			}
			return waitSucceeded(j, time.Now(), ev), nil
		}}, nil
	case "metric_threshold":
		if a.MetricID == "" || a.Comparison == "" || len(a.Threshold) == 0 {
			return nil, argErr("metric_id", "metric_threshold requires metric_id, comparison and threshold")
		}
		m, ok := sample.LookupMetric(a.MetricID)
		if !ok {
			return nil, argErr("metric_id", "unknown metric id; list_metrics gives the catalog")
		}
		kind := sample.TargetSystem
		if a.ProcessRef != "" {
			kind = sample.TargetProcess
		}
		if a.ProcessRef != "" && a.System {
			return nil, argErr("system", "give process_ref or system, not both")
		}
		if m.Target != kind {
			switch {
			case a.ProcessRef == "" && !a.System:
				// The caller gave no target: say the default is a default.
				return nil, argErr("metric_id", "no target given; the default system target does not have "+m.ID+" (a process metric); give process_ref or pid")
			case a.ProcessRef != "":
				return nil, argErr("metric_id", m.ID+" is a system metric and the target is a process (process_ref or pid); give system: true or omit the target")
			default:
				return nil, argErr("metric_id", m.ID+" is a process metric and the target is the system; give process_ref or pid")
			}
		}
		thr, err := parseThreshold(a.Threshold, m)
		if err != nil {
			return nil, err
		}
		desc := map[string]any{"condition": "metric_threshold", "metric_id": m.ID, "comparison": a.Comparison, "threshold": json.RawMessage(a.Threshold), "after_snapshot_seq": start.Seq}
		var id sample.Identity
		if kind == sample.TargetProcess {
			p, _, err := h.ResolveLive(a.ProcessRef)
			if err != nil {
				contract.AsError(err).Field = "/process_ref"
				return nil, err
			}
			id = p.ID()
			desc["process_ref"], desc["pid"], desc["name"] = a.ProcessRef, p.PID, p.Name
		} else {
			desc["system"] = true
		}
		return &waitCheck{describe: desc, run: func(ctx context.Context, j *waitJob) (*contract.Result, error) {
			seq := start.Seq
			last := map[string]any{"snapshot_seq": start.Seq, "sampled_at": contract.TS(start.Time), "note": "no fresh sample yet"}
			for {
				snap, err := h.sampler.WaitNewer(ctx, seq)
				if err != nil {
					return nil, waitEnded(ctx, j, last)
				}
				seq = snap.Seq
				var v uint64
				var have bool
				if kind == sample.TargetSystem {
					v, have = snap.System.Vals[m.Index], snap.System.Has(m.Index)
				} else {
					// A zombie has exited: its memory reads 0 and its CPU
					// stops, which are not values of the live lifetime, so
					// it ends the wait as a target that left the samples;
					// so does a process inside exit(), whose memory may be
					// released before it reads as a zombie.
					p := snap.Lookup(id)
					if p == nil || p.State == 'Z' || p.State == 'X' || p.Exiting {
						e := contract.Errorf(contract.CodeProcessExited, "the target exited (it left the samples or is a zombie awaiting reaping) before the threshold was met").WithDetail("last_observation", last).WithDetail("job_id", j.id)
						e.Field = "/process_ref"
						return nil, e
					}
					v, have = p.Vals[m.Index], p.Has(m.Index)
				}
				obs := map[string]any{"snapshot_seq": snap.Seq, "sampled_at": contract.TS(snap.Time)}
				enc, finite := EncodeValue(m, v)
				if !have || !finite {
					obs["unavailable"] = "unknown"
					last = obs
					continue
				}
				obs["value"] = enc
				last = obs
				if compare(m, v, thr, a.Comparison) {
					obs["comparison"], obs["threshold"] = a.Comparison, json.RawMessage(a.Threshold)
					return waitSucceeded(j, snap.Time, obs), nil
				}
			}
		}}, nil
	}
	return nil, argErr("condition", "condition must be process_present, process_exit or metric_threshold")
}

// parseThreshold reads a JSON number or decimal string exactly.
// alreadyExited is the process_exit check of a lifetime that no longer
// verifies as alive at request time: satisfied at once when /proc shows
// this lifetime as a zombie (exited, not yet reaped). nil otherwise: the
// caller then answers PROCESS_EXITED as for any exited reference, and an
// access failure is never taken as an exit.
func (inv *investigation) alreadyExited(ref string) *waitCheck {
	id, err := inv.h.ParseRef(ref)
	if err != nil {
		return nil
	}
	// Only a zombie of this very lifetime (same PID and start time) is
	// direct evidence about it; a PID that is gone or reused keeps the
	// PROCESS_EXITED answer for exited references (the ref is never
	// checked against another lifetime).
	state := exitedState(id)
	if state != "zombie" {
		return nil
	}
	desc := map[string]any{"condition": "process_exit", "process_ref": ref, "pid": id.PID}
	ev := map[string]any{"exited": true, "state": state, "method": "proc_stat", "detected_at": contract.TS(time.Now())}
	if state == "zombie" {
		ev["observed"] = "/proc/PID/stat shows this lifetime in state Z: it has exited and only awaits reaping by its parent"
	} else {
		ev["observed"] = "no process has this PID and start time any more"
	}
	return &waitCheck{describe: desc, run: func(ctx context.Context, j *waitJob) (*contract.Result, error) {
		return waitSucceeded(j, time.Now(), ev), nil
	}}
}

func parseThreshold(raw json.RawMessage, m sample.Metric) (*big.Rat, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, argErr("threshold", "threshold must be a number or a decimal string")
	}
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return nil, argErr("threshold", "threshold must be a number or a decimal string")
	}
	if len(s) > 64 {
		return nil, argErr("threshold", "threshold has more than 64 characters")
	}
	if strings.ContainsAny(s, "eE") {
		// Exponent forms go through float64, so 1e999999999 cannot make
		// the rational parser build a huge power of ten.
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, argErr("threshold", "threshold must be a finite number")
		}
		return new(big.Rat).SetFloat64(f), nil
	}
	if strings.ContainsAny(s, "/") {
		return nil, argErr("threshold", "threshold must be a decimal number")
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, argErr("threshold", "threshold must be a finite decimal number")
	}
	return r, nil
}

// compare tests value <op> threshold exactly (integers as big rationals,
// numbers as float64 converted exactly to rationals).
func compare(m sample.Metric, v uint64, thr *big.Rat, op string) bool {
	var val *big.Rat
	if m.Repr == sample.ReprNumber {
		f := sample.AsFloat(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		val = new(big.Rat).SetFloat64(f)
	} else {
		val = new(big.Rat).SetInt(new(big.Int).SetUint64(v))
	}
	c := val.Cmp(thr)
	switch op {
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	}
	return false
}

func waitSucceeded(j *waitJob, at time.Time, evidence map[string]any) *contract.Result {
	data := map[string]any{"job_id": j.id, "state": "succeeded", "condition": j.cond, "satisfied": true, "started_at": contract.TS(j.started), "observed_at": contract.TS(at), "evidence": evidence}
	return contract.NewResult("live", at, data)
}

// waitEnded is the failure of a wait whose deadline passed (TIMEOUT) or
// that was cancelled (connection closed): it carries the last observation.
// The TIMEOUT keeps TIMEOUT's default retryable true although timeout_ms
// is the caller's own limit: a wait watches for a future event (a process
// appears or exits, a metric crosses), so the unchanged call may succeed
// when sent again, unlike an analysis that redoes the same work within the
// same limit (perf's timeoutError, retryable false).
func waitEnded(ctx context.Context, j *waitJob, last map[string]any) error {
	if ctx.Err() == context.DeadlineExceeded {
		return contract.Errorf(contract.CodeTimeout, "the condition was not observed before timeout_ms").WithDetail("job_id", j.id).WithDetail("last_observation", last).WithDetail("condition", j.cond)
	}
	if e := j.cancelErr.Load(); e != nil {
		c := *e
		c.Details = map[string]any{}
		for k, v := range e.Details {
			c.Details[k] = v
		}
		return c.WithDetail("job_id", j.id).WithDetail("last_observation", last)
	}
	return contract.Errorf(contract.CodeCancelled, "the wait was cancelled").WithDetail("job_id", j.id).WithDetail("last_observation", last)
}

// waitJobPrefix marks condition-wait job ids ("wait-N"); get_job and
// cancel_job serve them beside capture jobs.
const waitJobPrefix = "wait-"

func findWait(s *Session, id string) (*waitJob, error) {
	ws := waitsOf(s)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.expireLocked()
	if j := ws.jobs[id]; j != nil {
		return j, nil
	}
	e := contract.Errorf(contract.CodeReferenceInvalid, "no job with this job_id on this connection (it expired or belongs to another connection)")
	e.Field = "/job_id"
	return nil, e
}

// jobView renders a wait in the get_job shape: state running, succeeded
// (result holds the evidence) or failed (result.error: TIMEOUT with the
// last observation, CANCELLED, PROCESS_EXITED). cancellation_requested
// (the capture jobs' field name) is true from the moment cancel_job asked
// a running wait to stop, in cancel_job's reply and every later get_job.
func (j *waitJob) jobView() *contract.Result {
	d := map[string]any{"job_id": j.id, "kind": "wait_condition", "state": "running", "condition": j.cond, "started_at": contract.TS(j.started),
		"finished_at": nil, "cancellation_requested": false, "native_work_running": false, "result_consumed": false, "capture_id": nil, "result": nil}
	select {
	case <-j.done:
		d["finished_at"] = contract.TS(j.finished)
		if j.err != nil {
			d["state"], d["result"] = "failed", map[string]any{"error": failedJobError(j.id, contract.AsError(j.err))}
		} else {
			d["state"], d["result"] = "succeeded", j.res.Data
		}
	default:
	}
	// Recorded when cancel_job (or disconnect) asked a running wait to
	// stop, so it stays true in every later get_job, whatever the outcome
	// (a wait that met its condition at that moment keeps its success).
	d["cancellation_requested"] = j.cancelRequested.Load()
	return contract.NewResult("live", time.Time{}, d)
}
