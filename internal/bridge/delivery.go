package bridge

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tool"
)

const (
	// pollInterval separates get_job calls to a host that answers a
	// running job at once instead of waiting for its end (one older than
	// the waiting get_job).
	pollInterval = 20 * time.Millisecond
	// managedLifetime bounds bridge continuation bookkeeping.
	managedLifetime = 5 * time.Minute
)

// CallFunc reaches the backend (connecting lazily) and runs one method.
type CallFunc func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error)

// managed is the bridge's one-pass continuation bookkeeping: source
// captures it will release after their final page is copied.
type managed struct {
	mu   sync.Mutex
	caps map[string]time.Time
}

func (m *managed) add(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for k, t := range m.caps {
		if now.Sub(t) > managedLifetime {
			delete(m.caps, k)
		}
	}
	m.caps[id] = now
}

func (m *managed) take(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.caps[id]
	delete(m.caps, id)
	return ok
}

func (m *managed) has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.caps[id]
	return ok
}

// delivery implements bounded completion and first-page retrieval.
type delivery struct {
	mode    Mode
	call    CallFunc
	managed *managed
	// retained remembers jobs started with retain_capture: true, so a
	// later get_job without the flag never releases what the caller kept.
	retained *managed
}

// newDelivery is the one job delivery of a bridge (its managed and
// retained captures span every job tool).
func newDelivery(mode Mode, call CallFunc) *delivery {
	return &delivery{mode: mode, call: call, managed: &managed{caps: map[string]time.Time{}}, retained: &managed{caps: map[string]time.Time{}}}
}

// waitDefault is wait_ms when the caller leaves it out, in ms.
func (d *delivery) waitDefault() int {
	if d.mode.Raw {
		return 0
	}
	return host.DefaultWaitMS
}

// options are the delivery arguments removed before native dispatch.
type options struct {
	waitMS  int
	read    map[string]any
	hasRead bool
	retain  bool
	// own: the call started the job (a job tool, not get_job), so a
	// cancelled call cancels it (cancelWait).
	own bool
}

// jobOptions are the delivery arguments of a job tool, decoded once.
type jobOptions struct {
	WaitMS        *int           `json:"wait_ms"`
	Read          map[string]any `json:"read"`
	RetainCapture bool           `json:"retain_capture"`
}

// split separates the delivery options from the arguments the host
// receives (every other argument, unchanged).
func (d *delivery) split(args json.RawMessage) (map[string]json.RawMessage, options, error) {
	var m map[string]json.RawMessage
	var jo jobOptions
	if json.Unmarshal(args, &m) != nil || m == nil || json.Unmarshal(args, &jo) != nil {
		return nil, options{}, contract.Errorf(contract.CodeInvalidArgument, "arguments could not be decoded")
	}
	o := options{waitMS: d.waitDefault(), read: jo.Read, hasRead: jo.Read != nil, retain: jo.RetainCapture}
	if jo.WaitMS != nil {
		o.waitMS = *jo.WaitMS
	}
	delete(m, "wait_ms")
	delete(m, "read")
	delete(m, "retain_capture")
	return m, o, nil
}

func (d *delivery) start(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	native, o, err := d.split(args)
	if err != nil {
		return nil, err
	}
	o.own = true
	deadline := time.Now().Add(time.Duration(o.waitMS) * time.Millisecond)
	b, _ := json.Marshal(native)
	res, err := d.call(ctx, method, b)
	if err != nil {
		return nil, err
	}
	res, err = d.complete(ctx, res, o, deadline)
	if err != nil {
		return nil, err
	}
	// A starter whose job failed within the bounded wait returned no result:
	// that is a tool execution failure (isError), carrying the job's error
	// and its job_id. get_job stays a getter (docs/captures.md):
	// isError false, outcome under data.result.error.
	if data, _ := res.Data.(map[string]any); data != nil && data["state"] == "failed" {
		return nil, jobFailure(data)
	}
	return res, nil
}

// jobFailure is the error of a job that failed: data.result.error with
// details.job_id added.
func jobFailure(data map[string]any) *contract.Error {
	var e contract.Error
	if r, _ := data["result"].(map[string]any); r != nil {
		b, _ := json.Marshal(r["error"])
		_ = json.Unmarshal(b, &e)
	}
	if e.Code == "" {
		e = *contract.Errorf(contract.CodeInternalError, "the job failed without an error")
	}
	id, _ := data["job_id"].(string)
	return e.WithDetail("job_id", id)
}

func (d *delivery) poll(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	native, o, err := d.split(args)
	if err != nil {
		return nil, err
	}
	// The getter itself waits on the host for the job's end (at most one
	// slice; complete follows with more).
	deadline := time.Now().Add(time.Duration(o.waitMS) * time.Millisecond)
	if slice := waitSliceUntil(deadline); slice > 0 {
		native["wait_ms"], _ = json.Marshal(slice.Milliseconds())
	}
	b, _ := json.Marshal(native)
	res, err := d.call(ipc.WithReplyOnCancel(ctx), method, b)
	if ctx.Err() != nil {
		return nil, contract.AsError(ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	return d.complete(ctx, res, o, deadline)
}

// waitSliceUntil is the host-side wait of one get_job call: what is left
// until deadline, at most waitSlice, in whole milliseconds; 0 when less
// than a millisecond is left.
func waitSliceUntil(deadline time.Time) time.Duration {
	return min(time.Until(deadline), waitSlice).Truncate(time.Millisecond)
}

func jobData(res *contract.Result) map[string]any {
	var m map[string]any
	b, _ := json.Marshal(res.Data)
	_ = json.Unmarshal(b, &m)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// complete waits until deadline (the call's wait_ms) for the job in res,
// then reads the first page on success (unless raw mode without read)
// into data (rows, page, next_cursor beside the job's fields; a failed
// read is data.read_error) and releases a one-pass capture whose rows
// were all copied.
func (d *delivery) complete(ctx context.Context, res *contract.Result, o options, deadline time.Time) (*contract.Result, error) {
	data := jobData(res)
	jobID, _ := data["job_id"].(string)
	if o.retain {
		d.retained.add(jobID)
	} else if d.retained.has(jobID) {
		o.retain = true
	}
	for data["state"] == "running" {
		// The host holds get_job until the job ends (or the slice does):
		// the outcome arrives as soon as it exists, with no polling. A
		// cancelled wait gets the host's prompt answer, so the connection
		// and its captures are kept (ipc.WithReplyOnCancel).
		slice := waitSliceUntil(deadline)
		if slice <= 0 {
			break
		}
		b, _ := json.Marshal(map[string]any{"job_id": jobID, "wait_ms": slice.Milliseconds()})
		asked := time.Now()
		r, err := d.call(ipc.WithReplyOnCancel(ctx), "get_job", b)
		if ctx.Err() != nil {
			// The client cancelled the call that started the job: the
			// job, its worker slot and its capture go with it.
			if o.own {
				cancelWait(ctx, d.call, jobID)
			}
			return nil, contract.AsError(ctx.Err())
		}
		if err != nil {
			return nil, err
		}
		res, data = r, jobData(r)
		if data["state"] == "running" && time.Since(asked) < slice {
			// A host that answered before the slice ended without an
			// outcome does not wait (one that predates waiting get_job):
			// it is asked again every pollInterval.
			select {
			case <-ctx.Done():
				if o.own {
					cancelWait(ctx, d.call, jobID)
				}
				return nil, contract.AsError(ctx.Err())
			case <-time.After(min(pollInterval, time.Until(deadline))):
			}
		}
	}
	res.Data = data
	res.NextAction = nil
	switch data["state"] {
	case "running":
		// Both modes name the exact next call; raw mode only leaves out the
		// managed retain_capture flag.
		a := map[string]any{"job_id": jobID}
		if o.hasRead {
			a["read"] = o.read
		}
		if o.retain && !d.mode.Raw {
			a["retain_capture"] = true
		}
		res.NextAction = &contract.Action{Tool: "get_job", Arguments: a}
		return res, nil
	case "failed":
		return res, nil
	}
	capID, _ := data["capture_id"].(string)
	if capID == "" {
		return res, nil // a job without a capture (a condition wait)
	}
	if consumed, _ := data["result_consumed"].(bool); consumed {
		data["capture_retained"] = false
		return res, nil
	}
	if d.mode.Raw && !o.hasRead {
		// Raw mode reads nothing inline; the next call reads the result.
		res.NextAction = &contract.Action{Tool: "read_capture", Arguments: map[string]any{"capture_id": capID}}
		return res, nil
	}
	ra := map[string]any{}
	for k, v := range o.read {
		ra[k] = v
	}
	ra["capture_id"] = capID
	if _, ok := ra["limit"]; !ok && d.mode.Raw {
		ra["limit"] = host.RawPageRows
	}
	rb, _ := json.Marshal(ra)
	// The first page is a prompt read: a cancel gets the host's answer and
	// keeps the connection (ipc.WithReplyOnCancel).
	page, err := d.call(ipc.WithReplyOnCancel(ctx), "read_capture", rb)
	if ctx.Err() != nil {
		return nil, contract.AsError(ctx.Err())
	}
	if err != nil {
		// A failed first-page selection leaves the source retained for
		// correction; the envelope says so and names the corrected read.
		e := contract.AsError(err)
		data["read_error"] = e
		if gone, why := captureGone(err); gone {
			// Nothing is claimed that the host did not confirm.
			data["capture_retained"] = false
			res.Warnings = append(res.Warnings, "the first-page read failed ("+string(e.Code)+": "+e.Message+"); capture "+capID+" no longer exists: "+why+"; start the capture again")
			return res, nil
		}
		data["capture_retained"] = true
		data["retained_capture_ids"] = []string{capID}
		res.Warnings = append(res.Warnings, "the first-page read failed ("+string(e.Code)+": "+e.Message+"); capture "+capID+
			" is retained for a corrected read_capture (next_action) and must be released with release_capture")
		res.NextAction = &contract.Action{Tool: "read_capture", Arguments: correctedRead(o.read, capID, e)}
		return res, nil
	}
	pd := jobData(page)
	page.Data = pd
	// The first page's completeness is the result's: a partial page makes
	// the outer envelope partial with the same warnings and coverage.
	if page.Status == contract.StatusPartial {
		res.Status = contract.StatusPartial
	}
	for _, w := range page.Warnings {
		if !slices.Contains(res.Warnings, w) {
			res.Warnings = append(res.Warnings, w)
		}
	}
	res.Coverage = page.Coverage
	more := pd["next_cursor"] != nil
	switch {
	case d.mode.Raw || o.retain:
		ids := []string{capID}
		if v, _ := pd["capture_id"].(string); v != "" && v != capID {
			ids = append(ids, v)
		}
		if !d.mode.Raw {
			data["capture_retained"] = true
		}
		data["retained_capture_ids"] = ids
	case more:
		// One-pass continuation: the bridge keeps the chain and releases it
		// after the final page; the caller never needs to release it.
		d.managed.add(capID)
		data["capture_retained"] = false
		pd["capture_retained"] = false
	default:
		rel, _ := json.Marshal(map[string]any{"capture_id": capID})
		if _, err := d.call(ctx, "release_capture", rel); err != nil {
			if gone, why := captureGone(err); gone {
				data["capture_retained"] = false
				pd["capture_retained"] = false
				res.Warnings = append(res.Warnings, "the automatic release of capture "+capID+" did not complete ("+string(contract.CodeOf(err))+"), but the capture no longer exists: "+why+"; the page above is whole")
			} else {
				// The host answered and refused: the capture is still there.
				data["capture_retained"] = true
				data["retained_capture_ids"] = []string{capID}
				res.Warnings = append(res.Warnings, "the automatic release of capture "+capID+" failed ("+string(contract.CodeOf(err))+"); release it with release_capture")
			}
		} else {
			data["capture_retained"] = false
			pd["capture_retained"] = false
		}
	}
	// The first page is flat in data (rows, page, next_cursor, actions,
	// expires_at beside the job's fields), never a nested envelope; its
	// status, warnings, coverage and next_action are the envelope's, never
	// repeated under data. capture_id stays the source capture (next_action
	// reads it); a selected view is named view_capture_id.
	for k, v := range pd {
		switch k {
		case "capture_id":
			if v != capID {
				data["view_capture_id"] = v
			}
		case "source_capture_id", "next_action", "coverage":
		default:
			data[k] = v
		}
	}
	if res.CaptureStartedAt == nil {
		res.CaptureStartedAt, res.CaptureFinishedAt = page.CaptureStartedAt, page.CaptureFinishedAt
	}
	if page.NextAction != nil {
		res.NextAction = page.NextAction
	}
	return res, nil
}

// captureGone reports whether a failed call on a capture proves the
// capture no longer exists, and why: OUTCOME_UNKNOWN means the bridge
// dropped its host connection, and BACKEND_UNAVAILABLE (after the capture
// was made) that it found the connection dead and could not reconnect; a
// dropped connection releases every capture it owned; REFERENCE_INVALID means
// the host no longer knows the capture. Any other failure is an answer of
// a host that still holds it.
func captureGone(err error) (bool, string) {
	switch contract.CodeOf(err) {
	case contract.CodeOutcomeUnknown:
		return true, "the host connection was lost or reset, which released every capture of this client"
	case contract.CodeBackendUnavailable:
		// The capture was made on a connection this call could no longer
		// use: it was found lost and no new one could be made.
		return true, "the host connection was lost, which released every capture of this client, and no host could be reached again"
	case contract.CodeReferenceInvalid:
		return true, "the host no longer holds it"
	}
	return false, ""
}

// correctedRead is the read_capture arguments that recover from a failed
// first-page selection read on capture capID: the selector the error
// names (e.Field) is dropped (an invalid projection keeps its valid
// fields); a failure without a field (a derived view over the budget)
// falls back to the unmodified read, which allocates nothing.
func correctedRead(read map[string]any, capID string, e *contract.Error) map[string]any {
	out := map[string]any{"capture_id": capID}
	if v, ok := read["limit"]; ok {
		out["limit"] = v
	}
	if e == nil || e.Field == "" {
		return out
	}
	for k, v := range read {
		out[k] = v
	}
	key := strings.TrimPrefix(e.Field, "/")
	if i := strings.IndexByte(key, '/'); i >= 0 {
		key = key[:i]
	}
	switch key {
	case "projection":
		var allowed, asked []string
		b, _ := json.Marshal(e.Details["fields"])
		_ = json.Unmarshal(b, &allowed)
		b, _ = json.Marshal(read["projection"])
		_ = json.Unmarshal(b, &asked)
		var keep []string
		for _, f := range asked {
			if slices.Contains(allowed, f) {
				keep = append(keep, f)
			}
		}
		if len(keep) > 0 {
			out["projection"] = keep
		} else {
			delete(out, "projection")
			delete(out, "distinct_paths")
		}
	default:
		delete(out, key)
	}
	return out
}

// read forwards a read of a capture; in normal mode a bridge-managed
// one-pass capture is released once its final page has been copied.
func (d *delivery) read(ctx context.Context, forward tool.Handler, args json.RawMessage) (*contract.Result, error) {
	res, err := forward(ctx, args)
	if err != nil || d.mode.Raw {
		return res, err
	}
	pd := jobData(res)
	src, _ := pd["source_capture_id"].(string)
	if src == "" || !d.managed.has(src) {
		return res, nil
	}
	res.Data = pd
	if pd["next_cursor"] != nil {
		pd["capture_retained"] = false
		return res, nil
	}
	d.managed.take(src)
	rel, _ := json.Marshal(map[string]any{"capture_id": src})
	if _, err := d.call(ctx, "release_capture", rel); err == nil {
		pd["capture_retained"] = false
	}
	return res, nil
}
