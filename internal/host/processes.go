package host

import (
	"context"
	"encoding/json"
	"errors"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// ProcessFields are the projectable list_processes row fields. command_line
// and user appear only when projected explicitly (docs/agents.md, "Row fields").
//
// name follows the one name rule (sample.FullName) and comm is the kernel's
// command name; name, comm and path carry name_bytes, comm_bytes and
// path_bytes (base64 of the exact bytes) beside them when their JSON
// string is lossy; path_deleted says the executable was unlinked after
// the process started it (null when path is).
//
// lifecycle keeps its meaning (live, zombie, or unknown for a lifetime
// known only from history); exited_at states what the host itself saw:
// the time of the first snapshot without the lifetime (its PID with its
// start time), so it ended after last_seen_at and by exited_at, and
// exit_basis says how that was established ("absent_from_snapshot").
// Both are null for a lifetime in the latest snapshot and for one whose
// end the host did not see. An exit is never inferred from a failed
// read.
var ProcessFields = []string{"process_ref", "pid", "name", "comm", "path", "path_deleted", "parent", "start_time", "state", "uid", "lifecycle", "exited_at", "exit_basis", "last_seen_at", "history", "namespaces", "ns_pid", "container", "user", "command_line"}

// ProjectionAll is the projection value that stands for every row field
// but the opt-in user and command_line (which may be listed beside it:
// ["all","command_line"]).
const ProjectionAll = "all"

// allProcessFields is what ProjectionAll expands to.
var allProcessFields = ProcessFields[:len(ProcessFields)-2]

// CompactProcessFields is the default projection of a scope live listing:
// what an agent needs to pick a process and follow it (its process_ref,
// pid, name, scheduler state, lifecycle and parent). A live row's
// last_seen_at is the listing's captured_at and its history bounds the
// sampler's retention, so they are left to projection there.
var CompactProcessFields = []string{"process_ref", "pid", "name", "parent", "state", "lifecycle"}

// CompactRetainedProcessFields is the default projection of scope
// retained and all: CompactProcessFields plus exited_at (when the host
// saw the lifetime end) and history (the retained bounds), which tell
// ended lifetimes of one name or PID apart. A
// history-only row's last_seen_at is its history.retained_to and a live
// row's the listing's captured_at, so it is left to projection.
var CompactRetainedProcessFields = []string{"process_ref", "pid", "name", "parent", "state", "lifecycle", "exited_at", "history"}

// processFields is the row fields of a listing: projection with "all"
// expanded (duplicates dropped, order kept), or the compact default of
// scope (live, retained or all; "" is live) when projection is empty.
func processFields(projection []string, scope string) []string {
	if len(projection) == 0 {
		if scope == "retained" || scope == "all" {
			return CompactRetainedProcessFields
		}
		return CompactProcessFields
	}
	out := make([]string, 0, len(projection)+len(allProcessFields))
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, f := range projection {
		if f == ProjectionAll {
			for _, g := range allProcessFields {
				add(g)
			}
			continue
		}
		add(f)
	}
	return out
}

func listProcessesTool(d Delivery) Decl {
	limitDefault := d.limitDefault()
	t := define(tool.Tool{
		Name:        "list_processes",
		Title:       "List processes",
		Description: "Lists processes (scope live, retained or all) with the process_ref that targeted calls take; filter by name, path, pid or user, sort by pid, name or a process metric, add metric values with metric_ids. No required arguments; source log with log_ref lists a recording, and next_action names the next page.",
		Input: schema(`{"type":"object","additionalProperties":false,"properties":{
` + sourceSchema + `,
` + logRefSchema + `,
"scope":{"type":"string","enum":["live","retained","all"],"description":"live (default): latest snapshot; retained: lifetimes with history, ended too; all: both"},
"filter":{"type":"object","additionalProperties":false,"properties":{
  "name":{"type":"string","minLength":1,"maxLength":256,"description":"substring of the name, comm or an earlier name (case-insensitive)"},
  "name_bytes":{"type":"string","minLength":4,"maxLength":344,"pattern":"^[A-Za-z0-9+/]*={0,2}$","description":"name as base64 bytes (not UTF-8)"},
  "path":{"type":"string","minLength":1,"maxLength":4096,"description":"substring of the executable path (case-insensitive)"},
  "path_bytes":{"type":"string","minLength":4,"maxLength":5464,"pattern":"^[A-Za-z0-9+/]*={0,2}$","description":"path as base64 bytes (not UTF-8)"},
  "pid":{"type":"integer","minimum":1,"maximum":4194304},
  "user":{"type":"string","minLength":1,"maxLength":256,"description":"owner: user name or uid; unknown owners are excluded and counted"},
  "container":{"type":"string"},
  "pid_ns":{"type":"integer"}}},
"projection":{"type":"array","minItems":1,"uniqueItems":true,"items":{"type":"string","enum":$PROC_FIELDS},"description":"row fields; default process_ref, pid, name, parent, state, lifecycle (scope retained/all adds history); \"all\": every field but user and command_line"},
"sort":{"type":"string","enum":$PROCESS_SORT_KEYS,"description":"pid (default), name or a process metric (latest value; rows without one last)"},
"order":{"type":"string","enum":["asc","desc"],"description":"default asc, desc for a metric"},
"metric_ids":{"type":"array","minItems":1,"maxItems":16,"uniqueItems":true,"items":{"type":"string","enum":$PROCESS_METRIC_IDS},"description":"process metrics each row carries under values (unmeasured under unavailable)"},
"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"rows per page, default ` + limitDefault + `"},
"cursor":{"type":"string","minLength":1,"maxLength":4096}}}`),
		Annotations: readOnly,
		Paging:      tool.CursorPaging,
	}, func(ctx context.Context, h *Host, s *Session, a listProcessesArgs) (*contract.Result, error) {
		// source log (or log_ref alone) reads a loaded recording.
		if useLog, err := logQuery(a.Source, a.LogRef); err != nil {
			return nil, err
		} else if useLog {
			return recorderOf(h).logs.listProcesses(ctx, s, a)
		}
		return h.listProcesses(ctx, s, a)
	})
	return t
}

// listProcessesArgs are list_processes' arguments.
type listProcessesArgs struct {
	Source     string   `json:"source"`
	LogRef     string   `json:"log_ref"`
	Scope      string   `json:"scope"`
	Filter     *filter  `json:"filter"`
	Projection []string `json:"projection"`
	Sort       string   `json:"sort"`
	Order      string   `json:"order"`
	Limit      int      `json:"limit"`
	Cursor     string   `json:"cursor"`
	MetricIDs  []string `json:"metric_ids"`
}

// filter is list_processes' filter. Name matches a lifetime's name, its
// comm, or any name it had earlier in its lifetime (before an exec); the
// *_bytes forms carry base64 of a query that is not valid UTF-8. Every
// match compares exact bytes (sample.ContainsFold).
type filter struct {
	Name      string `json:"name"`
	NameBytes string `json:"name_bytes"`
	Path      string `json:"path"`
	PathBytes string `json:"path_bytes"`
	PID       *int32 `json:"pid"`
	// User is the owner: a user name or a numeric uid, exact (the real
	// uid of /proc/PID/status, named through the user database).
	User string `json:"user"`
	// Container selects by container: "runtime", "runtime:id", an id
	// alone, or "any" (parseContainerFilter).
	Container string `json:"container"`
	// PidNS is a PID namespace inode: the processes whose own PID
	// namespace it is; PID is then the PID inside it (the last NSpid
	// entry), not the host PID.
	PidNS *uint64 `json:"pid_ns"`
}

// matchUser reports whether r's owner is user (a name or a numeric uid);
// known is false when r's uid is unknown (never a match).
func (r *procRow) matchUser(user string) (match, known bool) {
	if !r.uidKnown {
		return false, false
	}
	return user == strconv.FormatUint(uint64(r.uid), 10) || user == sample.UserName(r.uid), true
}

// checkUserFilter refuses a filter.user that is neither a numeric uid nor
// a name in the user database (os/user.Lookup, the database UserName
// names owners from), as `ps -u NAME` does ("user name does not exist"):
// INVALID_ARGUMENT at /filter/user, never an empty listing that reads as
// "no processes of that user". A numeric uid without an entry is valid
// (ps -u 12345 lists its processes, if any). A lookup that fails for
// another reason (the database unreadable) does not refuse the filter.
func checkUserFilter(name string) error {
	if name == "" {
		return nil
	}
	if _, err := strconv.ParseUint(name, 10, 32); err == nil {
		return nil
	}
	var unknown user.UnknownUserError
	if _, err := user.Lookup(name); errors.As(err, &unknown) {
		e := contract.Errorf(contract.CodeInvalidArgument, "filter.user names no user: the user name does not exist in the user database (give an existing user name or a numeric uid)")
		e.Field = "/filter/user"
		return e
	}
	return nil
}

// Retained is one lifetime known to retained history: what list_processes
// needs for scope retained/all.
type Retained struct {
	ID   sample.Identity
	Name string
	// Comm is the latest kernel command name; Names every name and comm
	// the lifetime had (exec changes them), oldest first.
	Comm      string
	Names     []string
	PPID      int32
	StartTime time.Time
	UID       uint32
	UIDKnown  bool
	// From and To bound the retained samples.
	From, To time.Time
	// Ended says the lifetime is absent from the latest snapshot the
	// history applied; EndedAt is the first snapshot it was absent from
	// (history.Lifetime.EndedAt).
	Ended   bool
	EndedAt time.Time
}

// RetainedFunc lists retained lifetimes; the history feature installs it
// with SetRetained. Without it, scope retained/all is UNSUPPORTED. The
// slice returned (and each Names) may be shared between calls: callers
// read it and never change it.
type RetainedFunc func() []Retained

// SetRetained installs the retained-lifetime source used by list_processes.
func (h *Host) SetRetained(fn RetainedFunc) {
	h.mu.Lock()
	h.retained = fn
	h.mu.Unlock()
}

// procRow is one list_processes row before projection.
type procRow struct {
	id        sample.Identity
	name      string
	comm      string
	names     []string // earlier names of the lifetime (history)
	path      string
	pathDel   bool
	ppid      int32
	parentRef string
	verified  bool
	start     time.Time
	state     string
	uid       uint32
	uidKnown  bool
	live      bool
	lastSeen  time.Time
	// exitedAt is the first snapshot without this lifetime, zero when
	// the host did not see it end (see ProcessFields, exited_at).
	exitedAt time.Time
	from, to time.Time
	hasHist  bool
	// p is the row's process in the latest snapshot (nil for a
	// history-only lifetime): the source of a metric sort's value.
	p *sample.Process
}

func (h *Host) listProcesses(ctx context.Context, s *Session, a listProcessesArgs) (*contract.Result, error) {
	raw := rawArgs(ctx)
	if a.Cursor != "" {
		l, off, err := h.resumeList(s, "list_processes", raw, a.Cursor)
		if err != nil {
			return nil, err
		}
		return h.listResult(ctx, l, raw, off, a.Limit)
	}
	if a.Filter != nil {
		if err := checkUserFilter(a.Filter.User); err != nil {
			return nil, err
		}
	}
	var cf *containerFilter
	if a.Filter != nil && a.Filter.Container != "" {
		var err error
		if cf, err = parseContainerFilter(a.Filter.Container); err != nil {
			return nil, err
		}
	}
	snap := h.sampler.Latest()
	scope := a.Scope
	if scope == "" {
		scope = "live"
	}
	h.mu.Lock()
	retainedFn := h.retained
	h.mu.Unlock()
	fields := processFields(a.Projection, scope)
	nameFilter := a.Filter != nil && (a.Filter.Name != "" || a.Filter.NameBytes != "")
	rows, err := h.scopeRows(snap, scope, retainedFn, nameFilter || slices.Contains(fields, "history"))
	if err != nil {
		return nil, err
	}
	var nameQ, pathQ []string
	if f := a.Filter; f != nil {
		var err error
		if nameQ, err = queries(f.Name, f.NameBytes, "/filter/name_bytes"); err != nil {
			return nil, err
		}
		if pathQ, err = queries(f.Path, f.PathBytes, "/filter/path_bytes"); err != nil {
			return nil, err
		}
	}
	list := make([]*procRow, 0, len(rows))
	userUnknown := 0
	for _, r := range rows {
		if a.Filter != nil {
			if a.Filter.PID != nil && a.Filter.PidNS == nil && r.id.PID != *a.Filter.PID {
				continue
			}
			if a.Filter.User != "" {
				if ok, known := r.matchUser(a.Filter.User); !ok {
					if !known {
						userUnknown++
					}
					continue
				}
			}
			if !r.matchName(nameQ) {
				continue
			}
			if len(pathQ) > 0 && (r.path == "" || !allContain(r.path, pathQ)) {
				continue
			}
			if !r.matchNS(a.Filter, cf) {
				continue
			}
		}
		list = append(list, r)
	}
	sortMetric, byMetric, err := sortProcessRows(list, a.Sort, a.Order)
	if err != nil {
		return nil, err
	}
	// The row values: the sort metric (when sorting by one) and metric_ids.
	var rowMetrics []sample.Metric
	if byMetric {
		rowMetrics = append(rowMetrics, sortMetric)
	}
	for i, id := range a.MetricIDs {
		m, ok := sample.LookupMetric(id)
		if !ok || m.Target != sample.TargetProcess {
			return nil, invalidAt("/metric_ids/"+strconv.Itoa(i), "metric_ids must be process metric ids (list_metrics)")
		}
		if !byMetric || m.ID != sortMetric.ID {
			rowMetrics = append(rowMetrics, m)
		}
	}
	// Rows are encoded once, without reflection, into one buffer (each
	// row a slice of it).
	re := newRowEncoder(h, fields, rowMetrics)
	enc := make([]json.RawMessage, 0, len(list))
	buf := make([]byte, 0, 192*len(list))
	cmdFailed := 0
	for _, r := range list {
		start := len(buf)
		var failed bool
		if buf, failed = re.append(buf, r); failed {
			cmdFailed++
		}
		enc = append(enc, buf[start:len(buf):len(buf)])
	}
	cov := map[string]any{"scope": scope, "snapshot_seq": snap.Seq, "processes_in_snapshot": len(snap.Procs), "processes_denied": snap.Denied, "matched": len(list)}
	if cmdFailed > 0 {
		cov["command_line_unavailable"] = cmdFailed
	}
	if re.cmdTruncated > 0 {
		cov["command_line_truncated"] = re.cmdTruncated
	}
	if a.Filter != nil && a.Filter.User != "" {
		// Rows whose owner is unknown are never matched silently.
		cov["user_unknown_excluded"] = userUnknown
	}
	var viewWarn string
	if scope != "retained" {
		cov["proc_view"], _, viewWarn = viewCoverage(snap)
	}
	if byMetric {
		sortCoverage(cov, sortMetric, a.Order, list)
	}
	meta := map[string]any{"snapshot_at": contract.TS(snap.Time)}
	if store := h.HistoryStore(); store != nil && scope != "live" {
		// Lifetimes identity pruning removed are not retained: say how
		// many the listing cannot show.
		if p := store.PrunedLifetimes(); p.Count > 0 {
			cov["lifetimes_pruned"] = map[string]any{"tracked": p.Tracked, "untracked": p.Untracked}
			meta["pruned_warning"] = prunedWarning(p)
		}
	}
	l := frozenOf(s).put("plist", enc, cov, meta)
	res, err := h.listResult(ctx, l, raw, 0, a.Limit)
	if err == nil && viewWarn != "" {
		res.Warn(viewWarn)
		res.Status = contract.StatusPartial
	}
	if err == nil && cmdFailed > 0 {
		res.Warn("command_line could not be read for some processes (they exited or access was denied); those rows report it unavailable")
	}
	if err == nil && re.cmdTruncated > 0 {
		res.Warn(itoa(re.cmdTruncated) + " rows carry only the first " + itoa(sample.RowCommandLineBytes) + " bytes of their command line (command_line_truncated, with its full length and sha256); get_process_info {fields:[\"command_line\"], command_line_offset: command_line_next_offset} reads the rest")
	}
	return res, err
}

// scopeRows are the rows of a listing of scope (live, retained or all)
// before filtering, keyed by identity: the latest snapshot's processes
// (live, all) and the retained lifetimes (retained, all; UNSUPPORTED
// without retainedFn). liveHistory makes a scope live listing read the
// retained history bounds and earlier names of its rows too.
func (h *Host) scopeRows(snap *sample.Snapshot, scope string, retainedFn RetainedFunc, liveHistory bool) (map[sample.Identity]*procRow, error) {
	rows := make(map[sample.Identity]*procRow, len(snap.Procs))
	if scope == "live" || scope == "all" {
		live := make([]procRow, len(snap.Procs)) // one allocation for the live rows
		for i := range snap.Procs {
			p := &snap.Procs[i]
			r := &live[i]
			*r = procRow{id: p.ID(), name: p.Name, comm: p.Comm, path: p.Exe, pathDel: p.ExeDeleted, ppid: p.PPID, start: p.StartTime, state: p.StateName(),
				uid: p.UID, uidKnown: p.UIDKnown, live: true, lastSeen: snap.Time, p: p}
			if par := snap.Find(p.PPID); par != nil && par.StartTicks < p.StartTicks {
				r.verified, r.parentRef = true, h.Ref(par.ID())
			}
			rows[r.id] = r
		}
	}
	if scope == "live" && retainedFn != nil && liveHistory {
		// Live rows still report their retained history bounds, and a
		// name filter matches the names a lifetime had before an exec;
		// a listing that needs neither skips retained history.
		for _, rt := range retainedFn() {
			if r, ok := rows[rt.ID]; ok {
				r.from, r.to, r.hasHist, r.names = rt.From, rt.To, true, rt.Names
			}
		}
	}
	if scope == "retained" || scope == "all" {
		if retainedFn == nil {
			return nil, contract.Errorf(contract.CodeUnsupported, "retained history is not enabled in this host")
		}
		for _, rt := range retainedFn() {
			if r, ok := rows[rt.ID]; ok {
				r.from, r.to, r.hasHist, r.names = rt.From, rt.To, true, rt.Names
				continue
			}
			if scope == "retained" {
				if p := snap.Lookup(rt.ID); p != nil {
					r := &procRow{id: rt.ID, name: p.Name, comm: p.Comm, names: rt.Names, path: p.Exe, pathDel: p.ExeDeleted, ppid: p.PPID, start: p.StartTime, state: p.StateName(),
						uid: p.UID, uidKnown: p.UIDKnown, live: true, lastSeen: snap.Time, from: rt.From, to: rt.To, hasHist: true, p: p}
					if par := snap.Find(p.PPID); par != nil && par.StartTicks < p.StartTicks {
						r.verified, r.parentRef = true, h.Ref(par.ID())
					}
					rows[rt.ID] = r
					continue
				}
			}
			rows[rt.ID] = &procRow{id: rt.ID, name: rt.Name, comm: rt.Comm, names: rt.Names, ppid: rt.PPID, start: rt.StartTime, uid: rt.UID, uidKnown: rt.UIDKnown,
				state: "unknown", lastSeen: rt.To, from: rt.From, to: rt.To, hasHist: true}
			if rt.Ended && !rt.EndedAt.IsZero() {
				rows[rt.ID].exitedAt = rt.EndedAt
			}
		}
	}
	return rows, nil
}

func (h *Host) listResult(ctx context.Context, l *frozenList, raw json.RawMessage, off, limit int) (*contract.Result, error) {
	if limit <= 0 {
		limit = MaxPageRows
	}
	data, action, byBytes, err := h.listPage(ctx, "list_processes", l, raw, off, limit)
	if err != nil {
		return nil, err
	}
	ts, _ := l.meta["snapshot_at"].(*contract.Timestamp)
	delete(data, "pruned_warning")
	res := contract.NewResult("live", time.Time{}, data)
	res.CapturedAt = ts
	res.Coverage = liftCoverage(data)
	res.NextAction = action
	if w, _ := l.meta["pruned_warning"].(string); w != "" {
		res.Warn(w)
		res.Status = contract.StatusPartial
	}
	pageEnvelope(res, byBytes)
	return res, nil
}

// prunedWarning says how many ended lifetimes identity pruning removed
// (history.Store.PrunedLifetimes), by the rule that removed them: at most
// history.MaxEndedTracked ended tracked and history.MaxEndedUntracked
// ended untracked lifetimes are kept, the earliest-ended dropped first,
// and ended untracked ones for history.EndedUntrackedAge.
func prunedWarning(p history.Pruned) string {
	return itoa(p.Count) + " ended lifetimes were pruned from retained history and are not listed (" +
		itoa(p.Tracked) + " tracked: at most " + itoa(history.MaxEndedTracked) + " ended tracked lifetimes are kept; " +
		itoa(p.Untracked) + " untracked: at most " + itoa(history.MaxEndedUntracked) + ", each for " + history.EndedUntrackedAge.String() + " after it ended; the earliest-ended go first)"
}

// prunedTrackedWarning is prunedWarning for the tracked lifetimes alone
// (get_tracking lists only tracked ones).
func prunedTrackedWarning(p history.Pruned) string {
	return itoa(p.Tracked) + " ended tracked lifetimes were pruned from retained history and are not listed (at most " +
		itoa(history.MaxEndedTracked) + " ended tracked lifetimes are kept; the earliest-ended go first)"
}

// lifecycle is a row's lifecycle: "zombie" for a process that has ended
// but not been reaped (state Z: every targeted call returns
// PROCESS_EXITED for it), "live" for one in the latest snapshot, else
// "unknown" (history only; an exit is not inferred).
func (r *procRow) lifecycle() string {
	switch {
	case r.live && r.state == "zombie":
		return "zombie"
	case r.live:
		return "live"
	}
	return "unknown"
}

// matchName reports whether every query of qs occurs (sample.ContainsFold)
// in one of the row's names: its name, its comm, or a name it had earlier
// in its lifetime. No query matches.
func (r *procRow) matchName(qs []string) bool {
	for _, q := range qs {
		ok := sample.ContainsFold(r.name, q) || (r.comm != "" && sample.ContainsFold(r.comm, q))
		for _, n := range r.names {
			ok = ok || sample.ContainsFold(n, q)
		}
		if !ok {
			return false
		}
	}
	return true
}

// allContain reports whether every query occurs in s (sample.ContainsFold).
func allContain(s string, qs []string) bool {
	for _, q := range qs {
		if !sample.ContainsFold(s, q) {
			return false
		}
	}
	return true
}

// queries returns the set substring queries of a text selector and its
// base64 *_bytes form (INVALID_ARGUMENT at field when that is not
// base64).
func queries(text, b64, field string) ([]string, error) {
	var out []string
	if text != "" {
		out = append(out, text)
	}
	if b64 != "" {
		q, err := sample.DecodeBytes(b64)
		if err != nil || q == "" {
			e := contract.Errorf(contract.CodeInvalidArgument, "%s must be standard padded base64 of a non-empty query", field[len("/filter/"):])
			e.Field = field
			return nil, e
		}
		out = append(out, q)
	}
	return out, nil
}
