package bridge

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Delivery defaults of seed 000 section 4.
const (
	// DefaultWaitMS is how long a normal-mode job tool waits for completion.
	DefaultWaitMS = 5000
	// MaxWaitMS keeps bridge completion inside the 10 s request envelope.
	MaxWaitMS = 10000
	// pollInterval separates get_job polls while waiting.
	pollInterval = 20 * time.Millisecond
	// managedLifetime bounds bridge continuation bookkeeping.
	managedLifetime = 5 * time.Minute
)

func init() { AddDefinitions(captureDefinitions, "read_capture") }

// readSelectionSchema is the read_capture selection, shared by the `read`
// argument of job tools.
func readSelectionSchema(limitDefault string) string {
	return filterSchema + `,
"distinct_paths":{"type":"boolean","description":"one row per exact path in first-observed order; requires projection [\"path\"]"},
"projection":{"type":"array","minItems":1,"uniqueItems":true,"items":{"type":"string","enum":` + enumJSON(host.AllCaptureFields()) + `},"description":"row fields to return, in order"},
"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"rows per page, default ` + limitDefault + `"}`
}

// filterSchema holds the row selectors shared by read selections and the
// start_capture collection filter. path and owner_name must contain a
// non-space character (an all-space path would match every row).
const filterSchema = `"path":{"type":"string","minLength":1,"maxLength":4096,"pattern":"\\S","description":"all-term case-insensitive path match: every whitespace-separated term must occur in the row path (file_users, open_files, modules, network unix paths)"},
"path_bytes":{"type":"string","minLength":4,"maxLength":5464,"pattern":"^[A-Za-z0-9+/]*={0,2}$","description":"path for a query that is not valid UTF-8: standard base64 of its bytes, same all-term match on exact bytes (as a row's path_bytes)"},
"owner_name":{"type":"string","minLength":1,"maxLength":256,"pattern":"\\S","description":"exact case-insensitive owner executable name (rows of file_users, network, threads and scheduling captures, and of a get_process_info result read with read_capture; open_files and modules rows have no owner: INVALID_ARGUMENT)"},
"extension":{"type":"string","minLength":2,"maxLength":32,"pattern":"^\\.[^/\\\\]+$","description":"file-name extension including the leading dot, e.g. .log"}`

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

func captureDefinitions(mode Mode, call CallFunc) []tool.Tool {
	limitDefault, waitDefault := "5000", "5000"
	if mode.Raw {
		limitDefault, waitDefault = "100", "0"
	}
	sel := readSelectionSchema(limitDefault)
	deliveryProps := `"wait_ms":{"type":"integer","minimum":0,"maximum":` + strconv.Itoa(MaxWaitMS) + `,"description":"how long to wait for completion, default ` + waitDefault + `; 0 returns the job handle immediately"},
"read":{"type":"object","additionalProperties":false,"properties":{` + sel + `},"description":"selection for the first page read on success (rows/fields); optional"},
"retain_capture":{"type":"boolean","description":"keep the capture for repeated reads; release it with release_capture. Default false: a one-pass result is released after its last page"}`
	d := &delivery{mode: mode, call: call, managed: &managed{caps: map[string]time.Time{}}, retained: &managed{caps: map[string]time.Time{}}}
	oneshot := "Returns completion and the first page under data.result_page by default (wait_ms default " + waitDefault + "); follow data.next_action when present."
	if mode.Raw {
		oneshot = "Raw mode: returns the job handle immediately unless wait_ms is set (next_action: get_job, or read_capture once succeeded); pass read to get a first page; captures stay until release_capture or expiry."
	}
	oneshot += " A job that fails within the wait is an error result with the job's code and details.job_id."
	return []tool.Tool{
		{
			Name:  "start_capture",
			Title: "Start a capture job",
			Description: "Starts a bounded capture job of kind (required): file_users (host-wide: every process holding each path, with process_ref when verified, pid, name, path, handle_count), " +
				"open_files (fds of process_ref or a live pid: fd, path, kind, size, flags, position), modules (file-backed mappings of process_ref with size, mtime, build id), " +
				"network (tcp/tcp6/udp/udp6/unix endpoints host-wide or of process_ref; no DNS), threads and scheduling (of process_ref). " +
				"Optional filter {path, extension, owner_name} keeps only matching rows at collection time (never retained otherwise), the way to inspect a process whose full capture exceeds the budget. " + oneshot +
				" Limits: 2 active jobs, 8 retained captures, 64 MiB per connection; one file_users scan host-wide; 60 s deadline; captures expire 5 minutes after completion.",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["kind"],"properties":{
"kind":{"type":"string","enum":` + enumJSON(capture.Kinds) + `,"description":"what to capture"},
"process_ref":{"type":"string","minLength":1,"maxLength":128,"description":"target process (from list_processes); required (or pid) for open_files, modules, threads, scheduling; optional for network; not accepted for file_users"},
` + pidField + `,
"filter":{"type":"object","additionalProperties":false,"properties":{` + filterSchema + `},"description":"collection filter: only rows matching every term are collected and retained (coverage names the filter and rows_filtered_out); use it when a capture is RESULT_TOO_LARGE"},
` + deliveryProps + `}}`),
			Annotations: tool.Annotations{ReadOnly: true},
			Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
				return d.start(ctx, "start_capture", args)
			},
		},
		{
			Name:  "get_process_info",
			Title: "Process metadata",
			Description: "Metadata of process_ref or pid (one required) as a job: exe, cwd, image (size, mtime, ELF build id), parent, start_time, cgroup, namespaces; command_line and user only when listed in fields; never the environment. " +
				"Each field is {value} or {unavailable: reason}. " + oneshot,
			Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"process_ref":{"type":"string","minLength":1,"maxLength":128,"description":"target process (from list_processes); or pid"},
` + pidField + `,
"fields":{"type":"array","minItems":1,"uniqueItems":true,"items":{"type":"string","enum":` + enumJSON(capture.InfoFields) + `},"description":"fields to collect; default all but command_line and user"},
` + deliveryProps + `}}`),
			Annotations: tool.Annotations{ReadOnly: true},
			Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
				return d.start(ctx, "get_process_info", args)
			},
		},
		{
			Name:  "get_job",
			Title: "Job status",
			Description: "State of job_id (required): running, succeeded (capture_id) or failed (error under data.result.error, named in a warning; the envelope itself is not an error; CANCELLED and TIMEOUT are failed outcomes). " +
				"Waits up to wait_ms and on success returns the first page under data.result_page like start_capture; a consumed result reports result_consumed: true.",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["job_id"],"properties":{
"job_id":{"type":"string","minLength":1,"maxLength":128,"description":"job id from start_capture or get_process_info"},
` + deliveryProps + `}}`),
			Annotations: readOnly,
			Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
				return d.poll(ctx, args)
			},
		},
		{
			Name:  "read_capture",
			Title: "Read a capture",
			Description: "Pages the frozen rows of capture_id (required) without collecting again. Selectors: path (all-term, case-insensitive), owner_name (exact), extension, distinct_paths (requires projection [\"path\"]); projection; limit (default " + limitDefault + ", max 5000); cursor. " +
				"A changed query makes a derived capture counted in the connection budget; an unmodified read allocates nothing and may change limit. Expired captures are REFERENCE_INVALID (by id) or CURSOR_INVALID (by cursor).",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["capture_id"],"properties":{
"capture_id":{"type":"string","minLength":1,"maxLength":128,"description":"capture to read"},
` + sel + `,
"cursor":{"type":"string","minLength":1,"maxLength":4096,"description":"next_cursor of the previous page; other arguments unchanged (limit may change for an unmodified read)"}}}`),
			Annotations: readOnly,
			Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
				return d.read(ctx, args)
			},
		},
		{
			Name:        "cancel_job",
			Title:       "Cancel a job",
			Description: "Requests cancellation of job_id (required) without changing an already terminal outcome. Reports cancellation_requested and native_work_running (a native call may still be finishing); inspect get_job for the outcome.",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["job_id"],"properties":{
"job_id":{"type":"string","minLength":1,"maxLength":128,"description":"job to cancel"}}}`),
			Annotations: tool.Annotations{Idempotent: true},
		},
		{
			Name:        "release_capture",
			Title:       "Release a capture",
			Description: "Releases capture_id (required) and its derived captures; idempotent (released: false when already gone).",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["capture_id"],"properties":{
"capture_id":{"type":"string","minLength":1,"maxLength":128,"description":"capture to release"}}}`),
			Annotations: tool.Annotations{Idempotent: true, Destructive: false},
		},
	}
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

// options are the delivery arguments removed before native dispatch.
type options struct {
	waitMS  int
	read    map[string]any
	hasRead bool
	retain  bool
}

func (d *delivery) split(args json.RawMessage) (map[string]any, options, error) {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return nil, options{}, contract.Errorf(contract.CodeInvalidArgument, "arguments could not be decoded")
	}
	o := options{waitMS: DefaultWaitMS}
	if d.mode.Raw {
		o.waitMS = 0
	}
	if v, ok := m["wait_ms"].(float64); ok {
		o.waitMS = int(v)
	}
	if v, ok := m["read"].(map[string]any); ok {
		o.read, o.hasRead = v, true
	}
	if v, ok := m["retain_capture"].(bool); ok {
		o.retain = v
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
	b, _ := json.Marshal(native)
	res, err := d.call(ctx, method, b)
	if err != nil {
		return nil, err
	}
	res, err = d.complete(ctx, res, o)
	if err != nil {
		return nil, err
	}
	// A starter whose job failed within the bounded wait returned no result:
	// that is a tool execution failure (isError), carrying the job's error
	// and its job_id. get_job keeps the getter semantics of seed 000
	// section 8 (isError false, outcome under data.result.error).
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

func (d *delivery) poll(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	native, o, err := d.split(args)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(native)
	res, err := d.call(ctx, "get_job", b)
	if err != nil {
		return nil, err
	}
	return d.complete(ctx, res, o)
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

// complete waits up to o.waitMS for the job in res, then reads the first
// page on success (unless raw mode without read) and releases a one-pass
// capture whose rows were all copied.
func (d *delivery) complete(ctx context.Context, res *contract.Result, o options) (*contract.Result, error) {
	data := jobData(res)
	jobID, _ := data["job_id"].(string)
	if o.retain {
		d.retained.add(jobID)
	} else if d.retained.has(jobID) {
		o.retain = true
	}
	deadline := time.Now().Add(time.Duration(o.waitMS) * time.Millisecond)
	for data["state"] == "running" && time.Now().Before(deadline) {
		wait := min(pollInterval, time.Until(deadline))
		select {
		case <-ctx.Done():
			return nil, contract.AsError(ctx.Err())
		case <-time.After(wait):
		}
		b, _ := json.Marshal(map[string]any{"job_id": jobID})
		r, err := d.call(ctx, "get_job", b)
		if err != nil {
			return nil, err
		}
		res, data = r, jobData(r)
	}
	res.Data = data
	res.NextAction = nil
	data["next_action"] = nil
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
		data["next_action"] = res.NextAction
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
		data["next_action"] = res.NextAction
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
	page, err := d.call(ctx, "read_capture", rb)
	if err != nil {
		// A failed first-page selection leaves the source retained for
		// correction; the envelope says so and names the corrected read.
		body, _ := contract.Marshal(nil, err)
		data["result_page"] = json.RawMessage(body)
		e := contract.AsError(err)
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
		data["next_action"] = res.NextAction
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
	data["result_page"] = page
	if page.NextAction != nil {
		res.NextAction = page.NextAction
		data["next_action"] = page.NextAction
	}
	return res, nil
}

// captureGone reports whether a failed call on a capture proves the
// capture no longer exists, and why: OUTCOME_UNKNOWN means the bridge
// dropped its host connection (or found it dead), and a dropped
// connection releases every capture it owned; REFERENCE_INVALID means
// the host no longer knows the capture. Any other failure is an answer of
// a host that still holds it.
func captureGone(err error) (bool, string) {
	switch contract.CodeOf(err) {
	case contract.CodeOutcomeUnknown:
		return true, "the host connection was lost or reset, which released every capture of this client"
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

// read forwards read_capture; in raw mode the limit defaults to 100, and
// in normal mode a bridge-managed one-pass capture is released once its
// final page has been copied.
func (d *delivery) read(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
	if d.mode.Raw {
		args = withDefault(args, "limit", host.RawPageRows, true)
	}
	res, err := d.call(ctx, "read_capture", args)
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
