package host

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/jobs"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// CaptureConfig supplies the job limits and clock of each new Host's
// capture manager (jobs.DefaultLimits, time.Now). Tests replace it
// to exercise limits and expiry without waiting; it is read once per New.
var CaptureConfig = func() (jobs.Limits, func() time.Time) { return jobs.DefaultLimits(), nil }

// CaptureFields lists the row fields of each capture kind (projection
// targets, in row order).
var CaptureFields = map[string][]string{
	capture.KindFileUsers:  {"process_ref", "pid", "name", "name_bytes", "comm", "comm_bytes", "path", "path_bytes", "deleted", "handle_count", "access"},
	capture.KindOpenFiles:  {"fd", "path", "path_bytes", "deleted", "kind", "device", "inode", "size_bytes", "flags", "position", "inspect_path", "action_withheld", "actions"},
	capture.KindModules:    {"path", "path_bytes", "name", "name_bytes", "directory", "directory_bytes", "deleted", "replaced", "device", "inode", "size_bytes", "modified_at", "build_id", "metadata_unavailable", "mapping_count", "mapped_bytes", "permissions", "inspect_path", "action_withheld", "actions"},
	capture.KindNetwork:    {"protocol", "local", "remote", "state", "socket_type", "inode", "receive_queue", "send_queue", "pending_connections", "pid", "owner_name", "owner_name_bytes", "net_ns", "container"},
	capture.KindThreads:    {"tid", "name", "name_bytes", "state", "priority", "nice", "user_cpu_seconds", "system_cpu_seconds", "last_cpu", "voluntary_context_switches", "nonvoluntary_context_switches"},
	capture.KindScheduling: {"pid", "name", "name_bytes", "comm", "comm_bytes", "policy", "nice", "rt_priority", "affinity_mask", "affinity_cpus", "cgroup", "cpuset", "oom_score_adj", "io_priority"},
	capture.KindProcessInfo: append(append([]string{"pid", "name", "name_bytes", "comm", "comm_bytes"}, capture.InfoFields...),
		"command_line_truncated", "command_line_bytes", "command_line_sha256", "command_line_arguments", "command_line_next_offset"),
}

// AllCaptureFields is the sorted union of CaptureFields (the projection
// enum of read_capture).
func AllCaptureFields() []string {
	set := map[string]bool{}
	for _, fs := range CaptureFields {
		for _, f := range fs {
			set[f] = true
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

type captureKey struct{}

type captureSession struct {
	js   *jobs.Session
	once sync.Once
}

// installCaptures creates the host's capture job manager, the per-session
// job accessor and the captures section of get_status.
func installCaptures(h *Host) {
	limits, now := CaptureConfig()
	m := jobs.NewManager(limits, now)
	sess := func(s *Session) *jobs.Session {
		cs := s.Value(captureKey{}, func() any { return &captureSession{js: m.NewSession()} }).(*captureSession)
		cs.once.Do(func() { s.OnClose(cs.js.Close) })
		return cs.js
	}
	jobSessions.Store(h, sess)
	h.AddStatus(func(st map[string]any) {
		l := m.Limits()
		st["captures"] = map[string]any{
			"kinds":                   capture.Kinds,
			"active_jobs_per_session": l.ActivePerSession,
			"job_records_per_session": l.RecordsPerSession,
			"retained_per_session":    l.RetainedPerSession,
			"retained_bytes":          l.RetainedBytes,
			"worker_slots":            l.Workers,
			"worker_slots_busy":       m.Busy(),
			"job_deadline_ms":         l.Deadline.Milliseconds(),
			"capture_lifetime_ms":     l.CaptureLifetime.Milliseconds(),
		}
	})
}

// jobSessions maps a *Host to its per-session job accessor, for features
// that start jobs of their own kinds (list_logs).
var jobSessions sync.Map

// jobSessionOf returns s's job session, or nil without the captures feature.
func jobSessionOf(s *Session) *jobs.Session {
	if v, ok := jobSessions.Load(s.host); ok {
		return v.(func(*Session) *jobs.Session)(s)
	}
	return nil
}

// jobDelivery are the bridge's delivery options of a job tool (wait_ms,
// read, retain_capture); the bridge consumes them, so the host never sees
// them set, except get_job's wait_ms: the bridge's bounded wait for a
// job's end (jobWait).
type jobDelivery struct {
	WaitMS        *int           `json:"wait_ms"`
	Read          *readSelection `json:"read"`
	RetainCapture *bool          `json:"retain_capture"`
}

// deliverySchema is the schema of jobDelivery's properties; read takes a
// read_capture selection whose projection names the fields of fields (a
// JSON array, or "" for no enum where the tool's anyOf narrows it per
// kind). Its members carry no descriptions: read_capture's schema
// describes them, and read's own says so.
func deliverySchema(d Delivery, fields string) string {
	return `"wait_ms":{"type":"integer","minimum":0,"maximum":$MAX_WAIT_MS,"description":"ms to wait for completion, default ` + d.waitDefault() + `; 0 returns the job handle"},
"read":{"type":"object","additionalProperties":false,"properties":{` + readSelectionSchema(d, fields, false) + `},"description":"first page, selected as read_capture"},
"retain_capture":{"type":"boolean","description":"else released after the last page"}`
}

// readSelection selects and pages capture rows (read_capture, and the
// read option of job tools).
type readSelection struct {
	Path          string   `json:"path"`
	PathBytes     string   `json:"path_bytes"`
	OwnerName     string   `json:"owner_name"`
	Extension     string   `json:"extension"`
	DistinctPaths bool     `json:"distinct_paths"`
	Projection    []string `json:"projection"`
	Limit         int      `json:"limit"`
}

// readSelectionSchema is the schema of readSelection's properties: the
// projection items are the fields of the JSON array fields (no enum when
// fields is ""), and described says whether members carry descriptions.
func readSelectionSchema(d Delivery, fields string, described bool) string {
	items := `{"type":"string"}`
	if fields != "" {
		items = `{"type":"string","enum":` + fields + `}`
	}
	if !described {
		return filterSchemaBare + `,
"distinct_paths":{"type":"boolean"},
"projection":{"type":"array","minItems":1,"uniqueItems":true,"items":` + items + `},
"limit":{"type":"integer","minimum":1,"maximum":5000}`
	}
	return filterSchema + `,
"distinct_paths":{"type":"boolean","description":"one row per path; needs projection [\"path\"]"},
"projection":{"type":"array","minItems":1,"uniqueItems":true,"items":` + items + `,"description":"row fields, in order"},
"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"rows per page, default ` + d.limitDefault() + `"}`
}

// deliveryText says how a job tool delivers in mode d.
func deliveryText(d Delivery) string {
	if d.Raw {
		return "Raw mode: returns the job handle at once unless wait_ms is set (next_action: get_job, then read_capture)."
	}
	return "Waits up to wait_ms (default " + d.waitDefault() + ") and returns the first page in data (rows, page); next_action names the next call."
}

// deliveryDetails is the part of a job tool's guidance that tools/list
// leaves to `inquest mcp inspect --tool`: what a failure within the wait
// looks like.
const deliveryDetails = "A job that fails within the wait is returned as an error whose details.job_id names the job."

// startArgs are start_capture's arguments.
type startArgs struct {
	Kind       string         `json:"kind"`
	ProcessRef string         `json:"process_ref"`
	PID        *int64         `json:"pid"`
	Filter     *captureFilter `json:"filter"`
	jobDelivery
}

// captureFilter is start_capture's collection filter: the collector's
// path/extension/owner selectors and the row filters the host applies to
// the collected rows (the rows carry these fields): network state and
// protocol, and deleted for file_users and open_files.
type captureFilter struct {
	capture.Filter
	// State is a network row's state, exact and case-insensitive (LISTEN,
	// ESTABLISHED, ... for TCP; UNCONNECTED, CONNECTED, ... as rows name them).
	State string `json:"state"`
	// Protocol is a network row's protocol: tcp, tcp6, udp, udp6, mptcp
	// or unix.
	Protocol string `json:"protocol"`
	// Deleted keeps rows whose file was (true) or was not (false) unlinked;
	// rows whose deleted is unknown match neither and are counted.
	Deleted *bool `json:"deleted"`
}

// captureRowFilterSchema is the schema of captureFilter's own properties.
const captureRowFilterSchema = `"state":{"type":"string","minLength":1,"maxLength":32,"pattern":"^[A-Za-z_0-9]+$","description":"network, e.g. LISTEN"},
"protocol":{"type":"string","enum":["tcp","tcp6","udp","udp6","mptcp","unix"],"description":"network"},
"deleted":{"type":"boolean","description":"file_users, open_files: unlinked (true) or not; unknown rows excluded, counted"}`

// rowFilter applies f's host-side row filters to c and records them in
// c's coverage: row_filter, rows_filtered_out (with the collector's own),
// and deleted_unknown_excluded when deleted is asked.
func (f *captureFilter) rowFilter(c *capture.Capture) {
	if f == nil || (f.State == "" && f.Protocol == "" && f.Deleted == nil) {
		return
	}
	unknown := 0
	keep := c.Rows[:0]
	for i := range c.Rows {
		r := &c.Rows[i]
		ok := true
		if f.State != "" {
			v, _ := r.Get("state")
			st, _ := v.(string)
			ok = ok && strings.EqualFold(st, f.State)
		}
		if f.Protocol != "" {
			v, _ := r.Get("protocol")
			ok = ok && v == f.Protocol
		}
		if f.Deleted != nil && ok {
			v, _ := r.Get("deleted")
			d, known := v.(bool)
			if !known {
				unknown++
			}
			ok = known && d == *f.Deleted
		}
		if ok {
			keep = append(keep, *r)
		} else {
			c.FilteredOut++
		}
	}
	clear(c.Rows[len(keep):])
	c.Rows = keep
	if c.Coverage == nil {
		c.Coverage = map[string]any{}
	}
	rf := map[string]any{}
	if f.State != "" {
		rf["state"] = f.State
	}
	if f.Protocol != "" {
		rf["protocol"] = f.Protocol
	}
	if f.Deleted != nil {
		rf["deleted"] = *f.Deleted
		c.Coverage["deleted_unknown_excluded"] = unknown
	}
	c.Coverage["row_filter"] = rf
	c.Coverage["rows_filtered_out"] = c.FilteredOut
}

// NetworkStates are the states network rows name: TCP's (the kernel's
// tcp_states.h, as ss prints them), UNCONNECTED and ESTABLISHED for UDP,
// and the unix socket states (SS_* in linux/net.h, LISTEN for a listening
// one). filter.state must be one of them (case-insensitive): any other
// value would match no row and read as "no such sockets".
var NetworkStates = []string{"ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING", "NEW_SYN_RECV", "UNCONNECTED", "CONNECTING", "CONNECTED", "DISCONNECTING", "FREE"}

// validate rejects row filters of another kind (state and protocol are
// network's, deleted is file_users' and open_files') and a state no
// network row names.
func (f *captureFilter) validate(kind string) error {
	if f.State != "" && kind != capture.KindNetwork {
		return invalidAt("/filter/state", "filter.state applies to kind network only")
	}
	if f.State != "" && !slices.ContainsFunc(NetworkStates, func(s string) bool { return strings.EqualFold(s, f.State) }) {
		e := invalidAt("/filter/state", "filter.state is not a state network rows name; give one of %s", strings.Join(NetworkStates, ", "))
		e.Expected = map[string]any{"enum": NetworkStates}
		return e
	}
	if f.Protocol != "" && kind != capture.KindNetwork {
		return invalidAt("/filter/protocol", "filter.protocol applies to kind network only")
	}
	if f.Deleted != nil && kind != capture.KindFileUsers && kind != capture.KindOpenFiles {
		return invalidAt("/filter/deleted", "filter.deleted applies to kinds file_users and open_files only")
	}
	return nil
}

func startCaptureTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "start_capture",
		Title:       "Start a capture job",
		Description: "Captures rows of kind (required) as a bounded job: file_users (who uses which path) host-wide; open_files, modules, threads or scheduling of a process (process_ref or pid); network host-wide or of one. " + deliveryText(d),
		Details: "filter narrows what is collected, and coverage counts the rows it left out: e.g. {\"state\":\"LISTEN\"} or {\"protocol\":\"tcp\"} for network, {\"deleted\":true} for file_users and open_files; a capture that would be RESULT_TOO_LARGE can be narrowed this way. " +
			"file_users with filter.path also finds processes using a matching path as root, cwd, executable or mapping; its rows then carry access, fuser -v's letters (f or F open for writing, r, c, e, m). " +
			"read selects and projects the first page as read_capture does; more pages come from read_capture with the capture_id. " + deliveryDetails,
		Input: schema(`{"type":"object","additionalProperties":false,"required":["kind"],"properties":{
"kind":{"type":"string","enum":$CAPTURE_KINDS},
"process_ref":{"type":"string","minLength":1,"maxLength":128,"description":"target; needed (or pid) unless file_users or network"},
` + pidField + `,
"filter":{"type":"object","additionalProperties":false,"properties":{` + filterSchema + `,
` + captureRowFilterSchema + `},"description":"rows must match every term (coverage counts the rest); narrows a RESULT_TOO_LARGE capture"},
` + deliverySchema(d, "") + `},
"anyOf":` + kindProjections() + `}`),
		Annotations: tool.Annotations{ReadOnly: true},
		Job:         true,
	}, func(ctx context.Context, h *Host, s *Session, a startArgs) (*contract.Result, error) {
		return h.startCapture(jobSessionOf(s), a)
	})
	t.Delivery = DeliverJob
	t.PIDAt = PIDTop
	t.PIDLeave = func(m map[string]json.RawMessage) bool {
		var kind string
		json.Unmarshal(m["kind"], &kind)
		return kind == capture.KindFileUsers
	}
	return t
}

// kindProjections is the anyOf of start_capture that publishes, per
// capture kind, the row fields read.projection may name (CaptureFields):
// one branch per kind, fixing kind to that value and narrowing the
// projection items to that kind's fields, so the schema refuses a field
// the kind's rows do not have (user for network) and the error lists
// those that do.
func kindProjections() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, k := range capture.Kinds {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"object","properties":{"kind":{"type":"string","enum":[` + strconv.Quote(k) + `]},"read":{"type":"object","properties":{"projection":{"type":"array","items":{"type":"string","enum":` + enumJSON(CaptureFields[k]) + `}}}}}}`)
	}
	b.WriteByte(']')
	return b.String()
}

// processInfoArgs are get_process_info's arguments.
type processInfoArgs struct {
	ProcessRef string   `json:"process_ref"`
	PID        *int64   `json:"pid"`
	PidNS      *uint64  `json:"pid_ns"`
	Fields     []string `json:"fields"`
	// CommandLineOffset and CommandLineLimit page command_line: the index
	// of the first argument and the page size in bytes.
	CommandLineOffset *int `json:"command_line_offset"`
	CommandLineLimit  *int `json:"command_line_limit"`
	jobDelivery
}

func getProcessInfoTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "get_process_info",
		Title:       "Process metadata",
		Description: "Metadata of one process (process_ref or pid required): exe, cwd, image, parent, start time, cgroup, namespaces; command_line and user only when named in fields. " + deliveryText(d),
		Details:     deliveryDetails,
		Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"process_ref":{"type":"string","minLength":1,"maxLength":128,"description":"target process (or pid)"},
` + pidField + `,
` + pidNSField + `,
"fields":{"type":"array","minItems":1,"uniqueItems":true,"items":{"type":"string","enum":$INFO_FIELDS},"description":"fields; default all but command_line and user"},
"command_line_offset":{"type":"integer","minimum":0,"maximum":16777216,"description":"command_line page: index of the first argument (a row's command_line_next_offset); default 0"},
"command_line_limit":{"type":"integer","minimum":1,"maximum":` + strconv.Itoa(sample.MaxCommandLinePage) + `,"description":"command_line page size in bytes (arguments with their NUL separators); default ` + strconv.Itoa(sample.DefaultCommandLinePage) + `"},
` + deliverySchema(d, enumJSON(CaptureFields[capture.KindProcessInfo])) + `}}`),
		Annotations: tool.Annotations{ReadOnly: true},
		Job:         true,
	}, func(ctx context.Context, h *Host, s *Session, a processInfoArgs) (*contract.Result, error) {
		return h.getProcessInfo(jobSessionOf(s), a)
	})
	t.Delivery = DeliverJob
	t.PIDAt = PIDTop
	return t
}

// jobArgs are get_job's arguments.
type jobArgs struct {
	JobID string `json:"job_id"`
	jobDelivery
}

func getJobTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "get_job",
		Title:       "Job status",
		Description: "State of job_id (required): running, succeeded or failed (the job's error under data.result.error). Waits up to wait_ms and on success returns the first page in data (rows, page), like start_capture.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["job_id"],"properties":{
"job_id":{"type":"string","minLength":1,"maxLength":128},
` + deliverySchema(d, "$CAPTURE_FIELDS") + `}}`),
		Annotations: readOnly,
		Job:         true,
	}, func(ctx context.Context, h *Host, s *Session, a jobArgs) (*contract.Result, error) {
		wait := jobWait(a.WaitMS)
		// Condition waits (wait- ids) and capture jobs share get_job.
		if strings.HasPrefix(a.JobID, waitJobPrefix) {
			j, err := findWait(s, a.JobID)
			if err != nil {
				return nil, err
			}
			if wait > 0 {
				if testHookJobWait != nil {
					testHookJobWait(a.JobID)
				}
				t := time.NewTimer(wait)
				defer t.Stop()
				select {
				case <-j.done:
				case <-t.C:
				case <-ctx.Done():
				}
			}
			return j.jobView(), nil
		}
		js := jobSessionOf(s)
		if wait > 0 {
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			if testHookJobWait != nil {
				testHookJobWait(a.JobID)
			}
			j, err := js.Wait(wctx, a.JobID)
			if err != nil {
				return nil, err
			}
			return jobResult(j), nil
		}
		j, err := js.Job(a.JobID)
		if err != nil {
			return nil, err
		}
		return jobResult(j), nil
	})
	t.Delivery = DeliverJobStatus
	return t
}

// jobWait is how long the host's get_job holds its reply for a running
// job: wait_ms (nil or 0: answer at once), at most MaxReplyWait so one
// call stays inside the IPC response deadline. The reply comes as soon as
// the job is terminal (a channel closed when it ends, never a poll), or
// when the wait or the request ends (cancel, disconnect). The bridge
// sends it while it completes a job call, so the outcome reaches the
// client at once.
func jobWait(ms *int) time.Duration {
	if ms == nil || *ms <= 0 {
		return 0
	}
	return min(time.Duration(*ms)*time.Millisecond, MaxReplyWait)
}

// readArgs are read_capture's arguments.
type readArgs struct {
	CaptureID string `json:"capture_id"`
	readSelection
	Cursor string `json:"cursor"`
}

func readCaptureTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "read_capture",
		Title:       "Read a capture",
		Description: "Pages the frozen rows of capture_id (required) without collecting again, optionally selected (path, owner_name, extension, distinct_paths) and projected. next_action names the next page; an expired capture is REFERENCE_INVALID.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["capture_id"],"properties":{
"capture_id":{"type":"string","minLength":1,"maxLength":128},
` + readSelectionSchema(d, "$CAPTURE_FIELDS", true) + `,
"cursor":{"type":"string","minLength":1,"maxLength":4096}}}`),
		Annotations: readOnly,
		Paging:      tool.CursorPaging,
	}, func(ctx context.Context, h *Host, s *Session, a readArgs) (*contract.Result, error) {
		return h.readCapture(ctx, jobSessionOf(s), a)
	})
	t.Delivery = DeliverPages
	return t
}

// jobIDArgs name one job.
type jobIDArgs struct {
	JobID string `json:"job_id"`
}

var cancelJobTool = define(tool.Tool{
	Name:        "cancel_job",
	Title:       "Cancel a job",
	Description: "Requests cancellation of job_id (required); an outcome already reached is kept. get_job gives the outcome.",
	Input: schema(`{"type":"object","additionalProperties":false,"required":["job_id"],"properties":{
"job_id":{"type":"string","minLength":1,"maxLength":128}}}`),
	Annotations: tool.Annotations{Idempotent: true},
}, func(ctx context.Context, h *Host, s *Session, a jobIDArgs) (*contract.Result, error) {
	if strings.HasPrefix(a.JobID, waitJobPrefix) {
		j, err := findWait(s, a.JobID)
		if err != nil {
			return nil, err
		}
		j.stop(nil)
		return j.jobView(), nil
	}
	j, err := jobSessionOf(s).Cancel(a.JobID)
	if err != nil {
		return nil, err
	}
	res := jobResult(j)
	if j.CancelRequested && j.NativeRunning {
		res.Warn("cancellation was requested; the collector's native call is still running and its worker slot stays in use until it returns")
	}
	return res, nil
})

// captureIDArgs name one capture.
type captureIDArgs struct {
	CaptureID string `json:"capture_id"`
}

var releaseCaptureTool = define(tool.Tool{
	Name:        "release_capture",
	Title:       "Release a capture",
	Description: "Releases capture_id (required) and its derived captures; idempotent.",
	Input: schema(`{"type":"object","additionalProperties":false,"required":["capture_id"],"properties":{
"capture_id":{"type":"string","minLength":1,"maxLength":128}}}`),
	Annotations: tool.Annotations{Idempotent: true, Destructive: false},
}, func(ctx context.Context, h *Host, s *Session, a captureIDArgs) (*contract.Result, error) {
	released := jobSessionOf(s).Release(a.CaptureID)
	return contract.NewResult("live", time.Time{}, map[string]any{"capture_id": a.CaptureID, "released": released}), nil
})

// resolve re-verifies a process_ref now (PROCESS_EXITED for an ended
// lifetime, REFERENCE_INVALID for another instance); its errors carry
// field /process_ref.
func (h *Host) resolve(ref string) (sample.Identity, error) {
	p, _, err := h.ResolveLive(ref)
	if err != nil {
		// Every caller takes the ref at the top level: name it.
		if e := contract.AsError(err); e != nil && e.Field == "" {
			e.Field = "/process_ref"
		}
		return sample.Identity{}, err
	}
	return p.ID(), nil
}

// testHookJobRun, when set by a test, runs in the worker of every capture,
// process-info and list_logs job before its collector, with the job's
// context and kind (to hold a job running deterministically).
var testHookJobRun func(ctx context.Context, kind string)

// testHookJobWait, when set by a test, runs in get_job with a wait_ms
// just before it waits for job id's end.
var testHookJobWait func(id string)

// hooked returns spec with testHookJobRun, when set, run before its
// collector.
func hooked(spec jobs.Spec) jobs.Spec {
	run, hook := spec.Run, testHookJobRun
	if hook == nil {
		return spec
	}
	spec.Run = func(ctx context.Context) (*capture.Capture, error) {
		hook(ctx, spec.Kind)
		return run(ctx)
	}
	return spec
}

func (h *Host) startCapture(js *jobs.Session, a startArgs) (*contract.Result, error) {
	spec := jobs.Spec{Kind: a.Kind, Live: true}
	if a.Filter != nil {
		if err := a.Filter.Validate(a.Kind, "/filter"); err != nil {
			return nil, err
		}
		if err := a.Filter.validate(a.Kind); err != nil {
			return nil, err
		}
		spec.Filter = a.Filter.Filter
		spec.Prepare = a.Filter.rowFilter
	}
	filter := spec.Filter
	switch a.Kind {
	case capture.KindFileUsers:
		if a.ProcessRef != "" || a.PID != nil {
			e := contract.Errorf(contract.CodeInvalidArgument, "file_users is host-wide and takes no process_ref or pid; narrow it with filter.owner_name or filter.path")
			e.Field = "/process_ref"
			if a.PID != nil {
				e.Field = "/pid"
			}
			return nil, e
		}
		spec.Exclusive = true
		spec.Run = func(ctx context.Context) (*capture.Capture, error) { return capture.FileUsersFiltered(ctx, filter) }
		rowFilter := spec.Prepare
		spec.Prepare = func(c *capture.Capture) {
			if rowFilter != nil {
				rowFilter(c)
			}
			for i := range c.Rows {
				r := &c.Rows[i]
				if r.Verified && len(r.Fields) > 0 && r.Fields[0].Key == "process_ref" {
					r.Fields[0].Value = h.Ref(r.Proc)
				}
			}
			// the scan walks the same /proc the sampler lists: a view
			// that hides processes hides their open files too
			pv, restricted, warn := viewCoverage(h.sampler.Latest())
			if c.Coverage == nil {
				c.Coverage = map[string]any{}
			}
			c.Coverage["proc_view"] = pv
			if restricted {
				c.Partial = true
				c.Warnings = append(c.Warnings, warn)
			}
		}
	case capture.KindNetwork:
		if a.ProcessRef == "" {
			spec.Run = func(ctx context.Context) (*capture.Capture, error) { return capture.Network(ctx, nil) }
			break
		}
		id, err := h.resolve(a.ProcessRef)
		if err != nil {
			return nil, err
		}
		spec.Run = func(ctx context.Context) (*capture.Capture, error) { return capture.Network(ctx, &id) }
	case capture.KindOpenFiles, capture.KindModules, capture.KindThreads, capture.KindScheduling:
		if a.ProcessRef == "" {
			return nil, processChoice("", "kind "+string(a.Kind))
		}
		id, err := h.resolve(a.ProcessRef)
		if err != nil {
			return nil, err
		}
		fn := map[string]func(context.Context, sample.Identity) (*capture.Capture, error){
			capture.KindOpenFiles: func(ctx context.Context, id sample.Identity) (*capture.Capture, error) {
				return capture.OpenFilesFiltered(ctx, id, filter)
			},
			capture.KindModules: capture.Modules,
			capture.KindThreads: capture.Threads, capture.KindScheduling: capture.Scheduling,
		}[a.Kind]
		spec.Run = func(ctx context.Context) (*capture.Capture, error) { return fn(ctx, id) }
		if rowActionKinds[a.Kind] {
			rowFilter := spec.Prepare
			spec.Prepare = func(c *capture.Capture) {
				if rowFilter != nil {
					rowFilter(c)
				}
				addRowActions(c)
			}
		}
	default:
		return nil, contract.Errorf(contract.CodeInvalidArgument, "unknown capture kind")
	}
	j, err := js.Start(hooked(spec))
	if err != nil {
		return nil, err
	}
	return jobResult(h.liveJobStarted(js, j)), nil
}

func (h *Host) getProcessInfo(js *jobs.Session, a processInfoArgs) (*contract.Result, error) {
	if a.PidNS != nil && a.PID == nil {
		return nil, invalidAt("/pid_ns", "pid_ns names the PID namespace of pid: give pid too")
	}
	if a.ProcessRef == "" {
		return nil, processChoice("", "get_process_info")
	}
	id, err := h.resolve(a.ProcessRef)
	if err != nil {
		return nil, err
	}
	fields := a.Fields
	var opts capture.InfoOptions
	if a.CommandLineOffset != nil || a.CommandLineLimit != nil {
		if !slices.Contains(fields, "command_line") {
			at := "/command_line_offset"
			if a.CommandLineOffset == nil {
				at = "/command_line_limit"
			}
			return nil, invalidAt(at, "command_line_offset and command_line_limit page command_line: name it in fields")
		}
		if a.CommandLineOffset != nil {
			opts.CommandLineOffset = *a.CommandLineOffset
		}
		if a.CommandLineLimit != nil {
			opts.CommandLineLimit = *a.CommandLineLimit
		}
	}
	j, err := js.Start(hooked(jobs.Spec{Kind: capture.KindProcessInfo, Run: func(ctx context.Context) (*capture.Capture, error) {
		return capture.ProcessInfoPage(ctx, id, fields, opts)
	}, Prepare: func(c *capture.Capture) { h.addParentRef(c, id) }, Live: true}))
	if err != nil {
		return nil, err
	}
	return jobResult(h.liveJobStarted(js, j)), nil
}

// jobResult is the get_job envelope of j: data.state running, succeeded
// or failed; a failed job's error under data.result.error (the getter
// itself succeeded, so the envelope is not an error);
// capture_id on success.
//
// The outcome is also visible in the envelope: a failed job adds a warning
// naming its error code (status stays complete: the status describes the
// retrieval, and partial means a limited useful result, which a failure is
// not); a succeeded job whose capture is partial makes the envelope
// partial with the capture's warnings.
func jobResult(j jobs.Job) *contract.Result {
	d := map[string]any{
		"job_id":                 j.ID,
		"kind":                   j.Kind,
		"state":                  string(j.State),
		"started_at":             contract.TS(j.Started),
		"finished_at":            contract.TS(j.Finished),
		"cancellation_requested": j.CancelRequested,
		"native_work_running":    j.NativeRunning,
		"result_consumed":        j.Consumed,
		"capture_id":             nil,
		"result":                 nil,
	}
	switch j.State {
	case jobs.Succeeded:
		d["capture_id"] = j.CaptureID
		d["result"] = map[string]any{"capture_id": j.CaptureID}
	case jobs.Failed:
		d["result"] = map[string]any{"error": failedJobError(j.ID, j.Err)}
	}
	res := contract.NewResult("live", time.Time{}, d)
	switch {
	case j.State == jobs.Failed:
		res.Warnings = append(res.Warnings, JobFailedWarning(j.ID, j.Err))
	case j.State == jobs.Succeeded && j.Partial:
		for _, w := range j.Warnings {
			res.Warn(w)
		}
	}
	return res
}

// failedJobError is a failed job's data.result.error: a copy of e with
// details.job_id naming the job, as the starter's error carries it (nil
// stays nil).
func failedJobError(id string, e *contract.Error) *contract.Error {
	if e == nil {
		return nil
	}
	c := *e
	c.Details = maps.Clone(e.Details)
	return c.WithDetail("job_id", id)
}

// JobFailedWarning is the envelope warning of a failed job: it names the
// error code and points at data.result.error.
func JobFailedWarning(id string, e *contract.Error) string {
	code, msg := contract.CodeInternalError, "no error recorded"
	if e != nil {
		code, msg = e.Code, e.Message
	}
	return "job " + id + " failed: " + string(code) + ": " + msg + " (outcome under data.result.error; this envelope's status describes the retrieval, not the job)"
}

type readCursor struct {
	View string `json:"c"`
}

// readCapture pages a frozen capture. An unmodified read slices the
// capture itself (its cursor ignores limit, so the page size may change);
// a changed query reads a derived capture built once from the frozen rows.
// Access by capture_id to an expired capture is REFERENCE_INVALID, by
// cursor CURSOR_INVALID.
func (h *Host) readCapture(ctx context.Context, js *jobs.Session, a readArgs) (*contract.Result, error) {
	raw := rawArgs(ctx)
	q := jobs.Query{Path: a.Path, PathBytes: a.PathBytes, OwnerName: a.OwnerName, Extension: a.Extension, DistinctPaths: a.DistinctPaths, Projection: a.Projection}
	if a.Cursor != "" {
		// A malformed or forged cursor says so before any capture lookup.
		if _, err := h.cursors.Decode(a.Cursor); err != nil {
			e := contract.AsError(err)
			e.Field = "/cursor"
			return nil, e
		}
	}
	src, err := js.Capture(a.CaptureID)
	if a.Cursor != "" && err != nil {
		e := contract.Errorf(contract.CodeCursorInvalid, "the capture behind this cursor expired, was released or belongs to another connection")
		e.Field = "/cursor"
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	if len(q.Projection) > 0 {
		allowed := CaptureFields[src.Kind]
		for i, f := range q.Projection {
			if !containsStr(allowed, f) {
				e := contract.Errorf(contract.CodeInvalidArgument, "a projection field does not exist in %s rows; details.fields lists those that do", src.Kind).WithDetail("fields", allowed)
				e.Field = "/projection/" + strconv.Itoa(i)
				return nil, e
			}
		}
	}
	exclude := []string{"cursor"}
	if q.IsZero() {
		exclude = append(exclude, "limit")
	}
	qh := contract.HashQuery(raw, exclude...)
	scope := "read_capture/" + src.ID
	off := 0
	var view *jobs.Capture
	if a.Cursor != "" {
		cur, err := h.cursors.Resume(a.Cursor, scope, qh)
		if err != nil {
			return nil, err
		}
		if src.Kind != CaptureKindLogs && !src.Created.After(h.liveCursorsBefore()) {
			return nil, liveCursorErr()
		}
		var x readCursor
		if json.Unmarshal(cur.Extra, &x) != nil {
			return nil, contract.Errorf(contract.CodeCursorInvalid, "the cursor is not a read_capture cursor")
		}
		if view, err = js.Capture(x.View); err != nil {
			return nil, contract.Errorf(contract.CodeCursorInvalid, "the capture behind this cursor expired or was released")
		}
		off = int(cur.Offset)
	} else if view, err = js.View(src.ID, q); err != nil {
		return nil, err
	}
	limit := a.Limit
	if limit <= 0 {
		limit = MaxPageRows
	}
	rows, pg, next, byBytes, err := pageRows(ctx, view.Enc, off, limit)
	if err != nil {
		if contract.CodeOf(err) == contract.CodeCursorInvalid {
			err = contract.Errorf(contract.CodeCursorInvalid, "the cursor points outside the capture")
		}
		return nil, err
	}
	cov := map[string]any{}
	for k, v := range view.Coverage {
		cov[k] = v
	}
	cov["listed"] = len(view.Enc)
	cov["offset"] = off
	cov["returned"] = len(rows)
	data := map[string]any{
		"capture_id": view.ID, "source_capture_id": src.ID, "kind": src.Kind, "rows": rows, "page": pg,
		"next_cursor": nil, "expires_at": contract.TS(view.Expires),
	}
	if acts := pageActions(src.Kind, view, q.Projection); acts != nil {
		data["actions"] = acts
	}
	res := contract.NewResult("live", time.Time{}, data)
	res.CaptureStartedAt = contract.TS(view.Started)
	res.CaptureFinishedAt = contract.TS(view.Finished)
	res.Coverage = cov
	for _, w := range view.Warnings {
		res.Warn(w)
	}
	if view.Partial {
		res.Status = contract.StatusPartial
	}
	pageEnvelope(res, byBytes)
	if next >= 0 {
		x, _ := json.Marshal(readCursor{View: view.ID})
		tok := h.cursors.Encode(contract.Cursor{Scope: scope, Query: qh, Offset: int64(next), Extra: x})
		data["next_cursor"] = tok
		res.NextAction = tool.CursorPaging.NextCall("read_capture", raw, tok)
	}
	return res, nil
}

func containsStr(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// addParentRef labels the parent of a process_info row as list_processes
// does: verified (with its process_ref) when the latest snapshot has the
// parent PID with a start strictly before the child's, else unknown.
func (h *Host) addParentRef(c *capture.Capture, child sample.Identity) {
	for i := range c.Rows {
		for fi := range c.Rows[i].Fields {
			f := &c.Rows[i].Fields[fi]
			obj, ok := f.Value.(map[string]any)
			if f.Key != "parent" || !ok {
				continue
			}
			v, ok := obj["value"].(map[string]any)
			if !ok {
				continue
			}
			ppid, _ := v["pid"].(int32)
			v["relationship"] = "unknown"
			if par := h.sampler.Latest().Find(ppid); par != nil && par.StartTicks < child.StartTicks {
				v["relationship"] = "verified"
				v["process_ref"] = h.Ref(par.ID())
			}
		}
	}
}
