package host

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/ledger"
	"github.com/inquest-dev/inquest/internal/recording"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// The graph workspace is host-owned state: the graphs the TUI draws and
// MCP clients discover, add and export (get_graphs, add_graphs,
// export_graphs), plus the display state they share (pause, A/B markers,
// visible range). It works whether or not a TUI is attached.
const (
	// GraphCapacity is how many graphs the workspace holds.
	GraphCapacity = 32
	// graphSourcesMax is the most sources one add_graphs/export_graphs adds.
	graphSourcesMax = 16
	// DefaultVisibleSeconds is the visible range until the TUI changes it.
	DefaultVisibleSeconds = 120
	// targetLimitDefault and targetLimitMax bound get_graphs' process list.
	targetLimitDefault = 500
	targetLimitMax     = 5000
	// GraphWorkspaceMethod edits the TUI-owned display state (pause,
	// markers, visible range, removal); a host method, never an MCP tool,
	// refused for MCP bridge sessions.
	GraphWorkspaceMethod = "update_graph_workspace"
	// GraphSeriesMethod returns the drawn points of every graph (the TUI's
	// charts); a host method, never an MCP tool.
	GraphSeriesMethod = "read_graph_series"
)

// Graph is one registered graph: a metric of the system or of one process
// lifetime (identity: PID and start time). ID is stable for the host run.
type Graph struct {
	ID     string
	Metric sample.Metric
	System bool
	Proc   sample.Identity
	Name   string // process name when the graph was added
	// Logged is a graph of a recorded identity of the recording the TUI
	// shows in Log view; LogIndex is its file index (recording.Identity).
	Logged   bool
	LogIndex uint32
}

// label is the graph's CSV column and chart title.
func (g *Graph) label() string {
	if g.System {
		return "system:" + g.Metric.ID
	}
	return fmt.Sprintf("%s[%d]:%s", g.Name, g.Proc.PID, g.Metric.ID)
}

// workspace is the graph workspace of one host.
type workspace struct {
	mu       sync.Mutex
	rev      uint64
	graphs   []*Graph
	nextID   int
	paused   bool
	pausedAt time.Time
	markA    *time.Time
	markB    *time.Time
	visible  int // seconds
	opSeq    int // generated operation ids
	// opSources maps an accepted export's operation_id to the displayed
	// source of its snapshot, for its envelope while it still runs.
	opSources map[string]string

	// display is the saved recording the TUI shows in Log view (nil:
	// Live). While it is shown the workspace draws and exports that
	// recording's series; the Live graphs and display state wait in
	// liveSaved and come back when the TUI returns to Live.
	display   *displayLog
	liveSaved *displayState
}

// displayLog is the recording shown in Log view: the loaded log of the
// session (a TUI) that entered Log view with it.
type displayLog struct {
	lh    *logHost
	l     *loadedLog
	owner *Session
}

// displayState is the part of the workspace that belongs to one displayed
// source: its graphs, pause, markers and visible range.
type displayState struct {
	graphs       []*Graph
	paused       bool
	pausedAt     time.Time
	markA, markB *time.Time
	visible      int
}

// log is the displayed recording, nil in Live.
func (w *workspace) log() *recording.Log {
	if w.display == nil {
		return nil
	}
	return w.display.l.log
}

// showLogLocked makes the workspace show l (entered by owner). A load of
// the same recording again (the TUI renews a loaded log before it
// expires) keeps the log graphs and display state; another recording
// starts with none. Either way the revision changes, so process references
// of the previous load are refused.
func (w *workspace) showLogLocked(lh *logHost, l *loadedLog, owner *Session) {
	prev := w.display
	w.display = &displayLog{lh: lh, l: l, owner: owner}
	w.rev++
	if prev != nil && prev.l.logID == l.logID {
		return
	}
	if prev == nil {
		w.liveSaved = &displayState{w.graphs, w.paused, w.pausedAt, w.markA, w.markB, w.visible}
	}
	w.graphs, w.paused, w.pausedAt, w.markA, w.markB = nil, false, time.Time{}, nil, nil
	w.visible = recordedSpan(l.log)
}

// recordedSpan is the visible range a recording opens with: its whole
// span in seconds (first to final frame), at least 10 s and at most 24 h
// (the range update_graph_workspace accepts).
func recordedSpan(lg *recording.Log) int {
	first := int64(-1)
	lg.System.View().Each(func(ms int64, _ uint32, _ []uint64) bool {
		if first < 0 || ms < first {
			first = ms
		}
		return true
	})
	span := 0
	if first >= 0 && lg.FinalAt > first {
		span = int((lg.FinalAt - first + 999) / 1000)
	}
	return min(max(span, 10), 86400)
}

// showLiveLocked returns the workspace to Live (its graphs and display
// state as they were when Log view began) when owner (nil: whoever) shows
// the recording.
func (w *workspace) showLiveLocked(owner *Session) {
	if w.display == nil || (owner != nil && w.display.owner != owner) {
		return
	}
	w.display = nil
	if st := w.liveSaved; st != nil {
		w.graphs, w.paused, w.pausedAt, w.markA, w.markB, w.visible = st.graphs, st.paused, st.pausedAt, st.markA, st.markB, st.visible
	}
	w.liveSaved = nil
	w.rev++
}

var workspaces sync.Map // *Host -> *workspace

func (h *Host) workspace() *workspace {
	v, _ := workspaces.LoadOrStore(h, &workspace{visible: DefaultVisibleSeconds})
	return v.(*workspace)
}

// revision is the workspace revision: instance-prefixed, opaque.
func (w *workspace) revision(h *Host) string {
	return h.InstanceID[:8] + "-g" + strconv.FormatUint(w.rev, 10)
}

// end is the displayed time: the pause time, else the latest sample's
// (in Log view the recording's final frame).
func (w *workspace) end(h *Host) time.Time {
	if w.paused {
		return w.pausedAt
	}
	if lg := w.log(); lg != nil {
		if t, ok := lg.FinalTime(); ok {
			return t
		}
		return w.display.l.started
	}
	if s := h.sampler.Latest(); s != nil {
		return s.Time
	}
	return time.Now()
}

// metricByID finds a catalog metric of either kind.
func metricByID(id string) (sample.Metric, bool) {
	for i, m := range sample.ProcessMetrics {
		if m.ID == id {
			m.Index, m.Target = i, sample.TargetProcess
			return m, true
		}
	}
	for i, m := range sample.SystemMetrics {
		if m.ID == id {
			m.Index, m.Target = i, sample.TargetSystem
			return m, true
		}
	}
	return sample.Metric{}, false
}

func allMetricIDs() []string {
	var out []string
	for _, m := range sample.SystemMetrics {
		out = append(out, m.ID)
	}
	for _, m := range sample.ProcessMetrics {
		out = append(out, m.ID)
	}
	return out
}

// GraphSource is one {metric_id, process_ref?, pid?} of add_graphs/export_graphs
// (pid and process_ref are alternatives; neither names a system metric).
type GraphSource struct {
	MetricID   string `json:"metric_id"`
	ProcessRef string `json:"process_ref,omitempty"`
	// PID is the caller's live PID instead of ProcessRef; the bridge
	// resolves it to ProcessRef before the host sees the call.
	PID *int64 `json:"pid,omitempty"`
}

type getGraphsArgs struct {
	ProcessName      string `json:"process_name"`
	IncludeProcesses bool   `json:"include_processes"`
	TargetLimit      int    `json:"target_limit"`
}

type addGraphsArgs struct {
	Metrics          []GraphSource `json:"metrics"`
	OperationID      string        `json:"operation_id"`
	ExpectedRevision string        `json:"expected_revision"`
	WaitMS           *int          `json:"wait_ms"`
}

type exportGraphsArgs struct {
	OutputDirectory  string        `json:"output_directory"`
	Metrics          []GraphSource `json:"metrics"`
	Filename         string        `json:"filename"`
	Range            string        `json:"range"`
	OperationID      string        `json:"operation_id"`
	ExpectedRevision string        `json:"expected_revision"`
	WaitMS           *int          `json:"wait_ms"`
}

const graphSourceSchema = `{"type":"object","additionalProperties":false,"required":["metric_id"],"properties":{
  "metric_id":{"type":"string","minLength":1,"maxLength":64,"description":"from list_metrics: a process metric with process_ref or pid, else a system metric"},
  "process_ref":{"type":"string","minLength":1,"maxLength":128,"description":"from list_processes or get_graphs include_processes"},
  ` + pidField + `}}`

const opSchema = `"operation_id":{"type":"string","minLength":1,"maxLength":128,"description":"a repeat with the same arguments returns the kept outcome, with others STATE_CONFLICT"},
"expected_revision":{"type":"string","minLength":1,"maxLength":64,"description":"revision from get_graphs; stale: STATE_CONFLICT"}`

// getGraphsTool declares get_graphs, the graph workspace's reader.
func getGraphsTool(d Delivery) Decl {
	return define[getGraphsArgs](tool.Tool{
		Name:        "get_graphs",
		Title:       "Get the graph workspace",
		Description: "Reads the host's graph workspace, the metric series chosen for charts and CSV export: revision, graphs in order, display range, A/B markers, capacity, metrics, export ranges. include_processes or process_name also lists targets for add_graphs. No required arguments.",
		Details:     "The workspace gives the display source (live, or log with the recording's log_id and name while the TUI shows it in Log view) and timestamp, display_paused, the visible range, the A/B markers, each graph (graph_id, metric_id, unit, target system or process with process_ref, pid, name), the capacity, the supported metrics and the export ranges available now.\n\ninclude_processes: true, or a case-insensitive process_name substring, adds the displayed and retained process targets (process_ref, pid, name, lifecycle) for add_graphs: at most target_limit (default 500, max 5000) and what fits the result byte budget, with processes_total and processes_truncated.",
		Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"process_name":{"type":"string","minLength":1,"maxLength":256,"description":"case-insensitive substring of process names to list as targets (implies include_processes)"},
"include_processes":{"type":"boolean","description":"list displayed/retained process targets"},
"target_limit":{"type":"integer","minimum":1,"maximum":5000,"description":"most process targets returned, default 500"}}}`),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
	}, func(ctx context.Context, h *Host, s *Session, a getGraphsArgs) (*contract.Result, error) {
		return h.getGraphs(ctx, a)
	})
}

// addGraphsTool declares add_graphs. A live pid may replace each
// source's process_ref (the bridge resolves it at call time and names the
// process_ref it resolved).
func addGraphsTool(d Delivery) Decl {
	return graphOperation(define[addGraphsArgs](tool.Tool{
		Name:        "add_graphs",
		Title:       "Add graphs to the workspace",
		Description: "Atomically appends up to 16 metric series (metrics, required: {metric_id, process_ref or pid?}; neither: a system metric) to the host's graph workspace (get_graphs reads it, export_graphs writes CSV), keeping existing graphs.",
		Details:     "All sources and the capacity (32 graphs) are validated before anything is added; a source already graphed is not added twice and takes no slot. Existing graphs and the display state are kept.\n\noperation_id (generated when omitted; repeat it to retry a lost reply) and expected_revision (from get_graphs) are optional. Returns the operation: operation_id, state and outcome {added, already_present (graph_ids), workspace}.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["metrics"],"properties":{
"metrics":{"type":"array","minItems":1,"maxItems":16,"items":` + graphSourceSchema + `},
` + opSchema + `,
` + waitField(d.waitDefault()) + `}}`),
		Annotations: tool.Annotations{Idempotent: true},
	}, func(ctx context.Context, h *Host, s *Session, a addGraphsArgs) (*contract.Result, error) {
		return h.addGraphsOp(ctx, s, a)
	}))
}

// exportGraphsTool declares export_graphs; its sources take a pid as
// add_graphs' do.
func exportGraphsTool(d Delivery) Decl {
	return graphOperation(define[exportGraphsArgs](tool.Tool{
		Name:        "export_graphs",
		Title:       "Export the graphs as CSV",
		Description: "Writes every registered graph, in order, to one new CSV file in output_directory (required, an absolute path), after optionally adding metrics as add_graphs. Waits up to wait_ms and returns the operation (outcome output_path, range, rows) or a get_operation next_action while it runs.",
		Details:     "Checks run before acceptance (arguments, sources, revision, range, capacity, an existing filename); a failure there adds no graph and writes nothing. Accepted, the requested graphs are added and the rows up to the displayed time are snapshotted; a background writer creates missing parents and the file and writes it, unaffected by later graph or display edits, a disconnect or disabling MCP. Until it finishes other state-changing calls are BUSY; reads continue. A write failure is EXPORT_FAILED with output_path and the accepted workspace in the error details; the additions and the partial file are kept.\n\nfilename: an optional single *.csv name, else a unique generated name; an existing file is never overwritten (EXPORT_FAILED).\n\nrange: all (default, all retained history up to the displayed time), visible (the displayed range) or ab (between the A/B markers, inclusive; fails when they are not set).\n\nColumns: timestamp (RFC 3339, UTC) then one per graph; cells are the raw stored values (integers exact, numbers as stored), empty where a value is missing. Returns the operation: operation_id (generated when omitted), state and outcome {output_path, range, rows, added, workspace}. The TUI's export writes the same bytes.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["output_directory"],"properties":{
"output_directory":{"type":"string","minLength":1,"maxLength":4096,"pattern":"^/","description":"absolute path of the directory for the new CSV file"},
"metrics":{"type":"array","minItems":1,"maxItems":16,"items":` + graphSourceSchema + `,"description":"sources to add before exporting"},
"filename":{"type":"string","minLength":5,"maxLength":255,"pattern":"^[^/\\\\]+\\.csv$","description":"a single file name ending in .csv"},
"range":{"type":"string","enum":["all","visible","ab"],"description":"all (default), visible or ab"},
` + opSchema + `,
` + waitField(d.waitDefault()) + `}}`),
		Annotations: tool.Annotations{},
	}, func(ctx context.Context, h *Host, s *Session, a exportGraphsArgs) (*contract.Result, error) {
		return h.exportGraphsOp(ctx, s, a)
	}))
}

// graphOperation marks a graph mutation: a pid may stand for a source's
// process_ref, kept in the operation's signature (the caller's arguments),
// and the bridge completes the call as an operation.
func graphOperation(t Decl) Decl {
	t.PIDAt = PIDMetrics
	t.PIDKept = true
	t.Delivery = DeliverOperation
	return t
}

func (w *workspace) graphJSON(h *Host, g *Graph) map[string]any {
	m := map[string]any{"graph_id": g.ID, "metric_id": g.Metric.ID, "unit": g.Metric.Unit, "label": g.label()}
	if g.System {
		m["target"] = map[string]any{"system": true}
	} else if g.Logged && w.display != nil {
		m["target"] = map[string]any{"process_ref": w.display.lh.procRef(w.display.l.serial, g.LogIndex), "pid": g.Proc.PID, "name": g.Name, "lifecycle": "unknown"}
	} else {
		m["target"] = map[string]any{"process_ref": h.Ref(g.Proc), "pid": g.Proc.PID, "name": g.Name}
	}
	return m
}

// stateLocked is the workspace object of every graph tool result.
func (w *workspace) stateLocked(h *Host) map[string]any {
	end := w.end(h)
	graphs := []any{}
	for _, g := range w.graphs {
		graphs = append(graphs, w.graphJSON(h, g))
	}
	var markers any
	if w.markA != nil || w.markB != nil {
		mk := map[string]any{"a": nil, "b": nil}
		if w.markA != nil {
			mk["a"] = contract.Timestamp(*w.markA)
		}
		if w.markB != nil {
			mk["b"] = contract.Timestamp(*w.markB)
		}
		markers = mk
	}
	ranges := []string{"all", "visible"}
	if w.markA != nil && w.markB != nil {
		ranges = append(ranges, "ab")
	}
	data := map[string]any{
		"revision":       w.revision(h),
		"source":         w.source(),
		"timestamp":      contract.Timestamp(end),
		"display_paused": w.paused,
		"visible_range":  map[string]any{"from": contract.Timestamp(end.Add(-time.Duration(w.visible) * time.Second)), "to": contract.Timestamp(end), "seconds": w.visible},
		"markers":        markers,
		"graphs":         graphs,
		"capacity":       GraphCapacity,
		"export_ranges":  ranges,
	}
	if w.display != nil {
		data["log"] = map[string]any{"log_id": w.display.l.logID, "name": w.display.l.name}
	}
	return data
}

// source is the displayed source: "log" in Log view, else "live".
func (w *workspace) source() string {
	if w.display != nil {
		return "log"
	}
	return "live"
}

// getGraphs answers get_graphs. Process targets are bounded by
// target_limit and then, as the graph tools' contract allows, by the call's
// result byte budget (tool.RowBudget, less the rest of the result): the
// list is then truncated with processes_truncated and a warning naming the
// budget.
func (h *Host) getGraphs(ctx context.Context, a getGraphsArgs) (*contract.Result, error) {
	w := h.workspace()
	w.mu.Lock()
	data := w.stateLocked(h)
	disp := w.display
	w.mu.Unlock()
	var supported []any
	for _, id := range allMetricIDs() {
		m, _ := metricByID(id)
		supported = append(supported, map[string]any{"metric_id": m.ID, "target_kind": m.Target, "unit": m.Unit})
	}
	data["supported_metrics"] = supported
	byBudget := false
	if a.IncludeProcesses || a.ProcessName != "" {
		limit := a.TargetLimit
		if limit == 0 {
			limit = targetLimitDefault
		}
		limit = min(limit, targetLimitMax)
		rows := h.graphTargets(disp, a.ProcessName)
		data["processes_total"] = len(rows)
		data["processes_truncated"] = len(rows) > limit
		if len(rows) > limit {
			rows = rows[:limit]
		}
		// The rest of the result (workspace, supported metrics) shares the
		// budget with the targets.
		rest, _ := json.Marshal(data)
		budget := tool.RowBudget(ctx) - (tool.DeliveredBytes(rest)+1)/2
		enc := make([]json.RawMessage, len(rows))
		for i, r := range rows {
			enc[i], _ = json.Marshal(r)
		}
		if n, byBytes := tool.FitRows(enc, len(enc), budget); byBytes {
			rows = rows[:n]
			data["processes_truncated"] = true
			byBudget = true
		}
		data["processes"] = rows
	}
	res := contract.NewResult(data["source"].(string), time.Time(data["timestamp"].(contract.Timestamp)), data)
	if byBudget {
		res.Warn("process targets truncated at the result byte budget (before target_limit); narrow process_name or raise the budget")
	} else if data["processes_truncated"] == true {
		res.Warn("process targets truncated at target_limit; narrow process_name")
	}
	return res, nil
}

// graphTargets lists retained lifetimes (live ones first by PID) whose
// name contains sub (case-insensitive), as process targets; in Log view
// (disp) the recorded identities of the displayed recording, by PID, with
// log process references and lifecycle unknown.
func (h *Host) graphTargets(disp *displayLog, sub string) []any {
	if disp != nil {
		out := []any{}
		for _, p := range disp.l.log.Procs {
			if sub != "" && !sample.ContainsFold(p.Name, sub) {
				continue
			}
			out = append(out, map[string]any{"process_ref": disp.lh.procRef(disp.l.serial, p.Index), "pid": p.PID, "name": sample.Display(p.Name), "lifecycle": "unknown"})
		}
		return out
	}
	store := h.HistoryStore()
	if store == nil {
		return []any{}
	}
	live := map[sample.Identity]bool{}
	if s := h.sampler.Latest(); s != nil {
		for i := range s.Procs {
			live[s.Procs[i].ID()] = true
		}
	}
	ls := store.Lifetimes()
	sort.Slice(ls, func(i, j int) bool {
		if live[ls[i].ID] != live[ls[j].ID] {
			return live[ls[i].ID]
		}
		if ls[i].ID.PID != ls[j].ID.PID {
			return ls[i].ID.PID < ls[j].ID.PID
		}
		return ls[i].ID.StartTicks < ls[j].ID.StartTicks
	})
	out := []any{}
	for _, l := range ls {
		if sub != "" && !sample.ContainsFold(l.Name, sub) && !sample.ContainsFold(l.Comm, sub) {
			continue
		}
		lc := "ended"
		if live[l.ID] {
			lc = "live"
		}
		out = append(out, map[string]any{"process_ref": h.Ref(l.ID), "pid": l.ID.PID, "name": sample.Display(l.Name), "lifecycle": lc})
	}
	return out
}

// resolveSources validates sources into graphs (not yet registered) for
// the displayed source disp (nil: Live). In Log view a process_ref must
// be a log process reference of the displayed recording (get_graphs
// include_processes lists them).
func (h *Host) resolveSources(ctx context.Context, disp *displayLog, srcs []GraphSource) ([]*Graph, error) {
	var out []*Graph
	for i, src := range srcs {
		field := fmt.Sprintf("metrics/%d", i)
		m, ok := metricByID(src.MetricID)
		if !ok {
			return nil, argErr(field+"/metric_id", "unknown metric_id; see get_graphs supported_metrics")
		}
		g := &Graph{Metric: m}
		if src.PID != nil && src.ProcessRef == "" {
			// The bridge resolves a pid and passes it with the process_ref
			// it found; a pid alone (a host-side caller, or the bridge's
			// repeat of an operation whose process exited) is resolved
			// here, to the lifetime running under it now.
			res, err := h.resolvePID(ctx, nil, json.RawMessage(`{"pid":`+strconv.FormatInt(*src.PID, 10)+`}`))
			if err != nil {
				if e := contract.AsError(err); e != nil {
					e.Field = "/" + field + "/pid"
				}
				return nil, err
			}
			src.ProcessRef, _ = res.Data.(map[string]any)["process_ref"].(string)
		}
		if src.ProcessRef == "" {
			if m.Target != sample.TargetSystem {
				return nil, argErr(field+"/process_ref", src.MetricID+" is a process metric: give process_ref")
			}
			g.System = true
		} else {
			if m.Target != sample.TargetProcess {
				return nil, argErr(field+"/process_ref", src.MetricID+" is a system metric: omit process_ref")
			}
			if disp != nil {
				p, err := disp.lh.parseProcRef(disp.l, src.ProcessRef, "/"+field+"/process_ref")
				if err != nil {
					if ce, ok := err.(*contract.Error); ok {
						ce.Message = "the TUI is in Log view: " + ce.Message + "; get_graphs with include_processes lists the displayed recording's references"
						ce.NextAction = &contract.Action{Tool: "get_graphs", Arguments: map[string]any{"include_processes": true}}
					}
					return nil, err
				}
				g.Proc, g.Name, g.Logged, g.LogIndex = sample.Identity{PID: p.PID, StartTicks: p.StartTicks}, sample.Display(p.Name), true, p.Index
				out = append(out, g)
				continue
			}
			if strings.HasPrefix(src.ProcessRef, "lp_") {
				e := contract.Errorf(contract.CodeReferenceInvalid, "a log process reference graphs a recording only while the TUI shows it in Log view; the workspace shows Live: use list_processes or get_graphs references")
				e.Field = "/" + field + "/process_ref"
				return nil, e
			}
			refErr := func(err error) error {
				if e, ok := err.(*contract.Error); ok {
					e.Field = "/" + field + "/process_ref"
				}
				return err
			}
			id, err := h.ParseRef(src.ProcessRef)
			if err != nil {
				return nil, refErr(err)
			}
			store := h.HistoryStore()
			if store == nil {
				return nil, refErr(contract.Errorf(contract.CodeReferenceInvalid, "no retained history"))
			}
			_, l, ok := store.Process(id)
			if !ok {
				return nil, refErr(contract.Errorf(contract.CodeReferenceInvalid, "the process has no retained history (pruned or never sampled); call get_graphs with include_processes for current references"))
			}
			g.Proc, g.Name = id, sample.Display(l.Name)
		}
		out = append(out, g)
	}
	return out, nil
}

func sameSource(a, b *Graph) bool {
	return a.Metric.ID == b.Metric.ID && a.System == b.System && a.Proc == b.Proc && a.Logged == b.Logged
}

// checkDisplayLocked refuses graphs resolved for another displayed source
// than the workspace's now (the TUI entered or left Log view, or loaded
// another recording, between resolving and adding).
func (w *workspace) checkDisplayLocked(h *Host, disp *displayLog) error {
	if w.display == disp || (w.display != nil && disp != nil && w.display.l.logID == disp.l.logID && w.display.l.serial == disp.l.serial) {
		return nil
	}
	return contract.Errorf(contract.CodeStateConflict, "the TUI switched between Live and Log view while the graphs were resolved; call get_graphs for current references").
		WithDetail("current_revision", w.revision(h))
}

// displayNow is the displayed source now (nil: Live).
func (w *workspace) displayNow() *displayLog {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.display
}

// planLocked returns the graphs of gs not already registered (each source
// once), or RESOURCE_LIMIT when they do not all fit; it changes nothing.
func (w *workspace) planLocked(gs []*Graph) ([]*Graph, error) {
	var fresh []*Graph
	for _, g := range gs {
		dup := false
		for _, o := range w.graphs {
			dup = dup || sameSource(o, g)
		}
		for _, o := range fresh {
			dup = dup || sameSource(o, g)
		}
		if !dup {
			fresh = append(fresh, g)
		}
	}
	if len(w.graphs)+len(fresh) > GraphCapacity {
		return nil, contract.Errorf(contract.CodeResourceLimit, "the workspace holds %d graphs; %d more do not fit", GraphCapacity, len(fresh)).
			WithDetail("graphs", len(w.graphs)).WithDetail("capacity", GraphCapacity)
	}
	return fresh, nil
}

// addLocked registers graphs not already present; it checks capacity
// first so nothing is added when they do not all fit. existing lists the
// graph_ids of sources already registered.
func (w *workspace) addLocked(gs []*Graph) (added, existing []string, err error) {
	for _, g := range gs {
		for _, o := range w.graphs {
			if sameSource(o, g) {
				existing = append(existing, o.ID)
				break
			}
		}
	}
	fresh, err := w.planLocked(gs)
	if err != nil {
		return nil, nil, err
	}
	for _, g := range fresh {
		w.nextID++
		g.ID = "g" + strconv.Itoa(w.nextID)
		w.graphs = append(w.graphs, g)
		added = append(added, g.ID)
	}
	if len(fresh) > 0 {
		w.rev++
	}
	return added, existing, nil
}

// opSource is the displayed source of a graph operation's workspace
// snapshot ("log" when it was accepted in Log view), kept with its outcome.
func opSource(out map[string]any) string {
	if ws, ok := out["workspace"].(map[string]any); ok {
		if src, ok := ws["source"].(string); ok {
			return src
		}
	}
	return "live"
}

func (w *workspace) checkRevLocked(h *Host, expected string) error {
	if expected != "" && expected != w.revision(h) {
		e := contract.Errorf(contract.CodeStateConflict, "the graph workspace changed (revision %s); call get_graphs", w.revision(h)).
			WithDetail("current_revision", w.revision(h))
		e.Field = "/expected_revision"
		return e
	}
	return nil
}

// graphOpHash is the idempotency signature of a graph action: every
// argument except operation_id and the delivery option wait_ms.
// A source given by pid counts as the caller sent it: the process_ref
// the bridge resolved it to is left out, so a repeat matches the retained
// operation even after that process exited.
func graphOpHash(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && m != nil {
		var srcs []map[string]json.RawMessage
		if json.Unmarshal(m["metrics"], &srcs) == nil && srcs != nil {
			for _, src := range srcs {
				if _, ok := src["pid"]; ok && src != nil {
					delete(src, "process_ref")
				}
			}
			m["metrics"], _ = json.Marshal(srcs)
			raw, _ = json.Marshal(m)
		}
	}
	return contract.HashQuery(raw, "operation_id", "wait_ms")
}

// beginGraphOp registers a graph action in the host's operations ledger
// (the one every mutation shares: a second mutation while this one is
// pending or running is BUSY). An omitted operation_id is generated here.
// A repeat of a known id with identical arguments returns the retained
// operation (waiting up to wait_ms while it still runs); other arguments
// are STATE_CONFLICT.
func (h *Host) beginGraphOp(ctx context.Context, s *Session, toolName, id string, waitMS *int) (*ledger.Op, *contract.Result, error, bool) {
	inv := investigationOf(h)
	w := h.workspace()
	if id == "" {
		w.mu.Lock()
		w.opSeq++
		id = fmt.Sprintf("graph-%s-%d", h.InstanceID[:8], w.opSeq)
		w.mu.Unlock()
	}
	op, dup, err := inv.ledger.Begin(id, toolName, graphOpHash(rawArgs(ctx)))
	if err != nil {
		if e := contract.AsError(err); e != nil && e.Code == contract.CodeStateConflict {
			e.Field = "/operation_id"
		}
		return nil, nil, err, true
	}
	if dup {
		res, err := h.graphOpReply(ctx, op, waitMS)
		return nil, res, err, true
	}
	inv.submitters.Store(id, s.ID)
	return op, nil, nil, false
}

// graphOpReply waits up to wait_ms (host-side callers such as the TUI set
// it; the MCP bridge removes it and polls get_operation itself) for op to
// end, then renders its status: the operation with its outcome, its error
// (a failure keeps operation_id, state and the error's details), or the
// running state with an exact get_operation continuation. The envelope's
// source is the displayed source the workspace snapshot was taken from.
func (h *Host) graphOpReply(ctx context.Context, op *ledger.Op, waitMS *int) (*contract.Result, error) {
	if waitMS != nil && *waitMS > 0 {
		t := time.NewTimer(min(time.Duration(*waitMS)*time.Millisecond, MaxWaitMS*time.Millisecond))
		select {
		case <-op.Done():
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	st := op.Status()
	res, err := investigationOf(h).operationReply(st)
	if res != nil {
		res.Source = h.operationSource(st)
	}
	return res, err
}

// operationSource is the source an operation's envelope names: the
// displayed source ("live" or "log") of a graph action's workspace
// snapshot, kept after later activity changes; "live" for other actions.
func (h *Host) operationSource(st ledger.Status) string {
	if st.Result != nil {
		return opSource(st.Result)
	}
	w := h.workspace()
	w.mu.Lock()
	defer w.mu.Unlock()
	if src, ok := w.opSources[st.ID]; ok {
		return src
	}
	return "live"
}

func (h *Host) addGraphsOp(ctx context.Context, s *Session, a addGraphsArgs) (*contract.Result, error) {
	op, reply, err, done := h.beginGraphOp(ctx, s, "add_graphs", a.OperationID, a.WaitMS)
	if done {
		return reply, err
	}
	op.SetRunning()
	w := h.workspace()
	out, err := func() (map[string]any, error) {
		disp := w.displayNow()
		gs, err := h.resolveSources(ctx, disp, a.Metrics)
		if err != nil {
			return nil, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if err := w.checkRevLocked(h, a.ExpectedRevision); err != nil {
			return nil, err
		}
		if err := w.checkDisplayLocked(h, disp); err != nil {
			return nil, err
		}
		added, existing, err := w.addLocked(gs)
		if err != nil {
			return nil, err
		}
		return map[string]any{"added": nonNil(added), "already_present": nonNil(existing), "workspace": w.stateLocked(h)}, nil
	}()
	op.Finish(out, err)
	return h.graphOpReply(ctx, op, nil)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// exportGraphsOp is export_graphs as an operation. Before acceptance
// every check runs (arguments, sources, revision, displayed source, range,
// capacity, an existing filename); a failure there, or the requesting
// connection closing, ends the operation with nothing added and no file.
// Acceptance commits the requested additions and snapshots the CSV of all
// graphs (the rows up to the displayed time, rendered in memory), then a
// background writer creates the file and writes it: the operation stays
// running, holding the ledger's mutation slot, until the file is closed.
// Later graph/display edits, a disconnect or disabling MCP do not touch
// the snapshot or stop the writer. A write failure is EXPORT_FAILED with
// output_path and the accepted workspace in its details; the additions and
// any partial file are kept.
func (h *Host) exportGraphsOp(ctx context.Context, s *Session, a exportGraphsArgs) (*contract.Result, error) {
	op, reply, err, done := h.beginGraphOp(ctx, s, "export_graphs", a.OperationID, a.WaitMS)
	if done {
		return reply, err
	}
	fail := func(err error) (*contract.Result, error) {
		op.Finish(nil, err)
		return h.graphOpReply(ctx, op, nil)
	}
	w := h.workspace()
	if a.Filename != "" && (strings.ContainsAny(a.Filename, `/\`) || !strings.HasSuffix(a.Filename, ".csv") || a.Filename == ".csv" || strings.HasPrefix(a.Filename, ".")) {
		return fail(argErr("filename", "filename is a single normal name ending in .csv"))
	}
	if !filepath.IsAbs(a.OutputDirectory) {
		return fail(argErr("output_directory", "output_directory must be an absolute path: the host's working directory is not the caller's, so resolve a relative directory on the calling side"))
	}
	dir := filepath.Clean(a.OutputDirectory)
	if a.Filename != "" {
		// Checked before acceptance so the usual mistake adds nothing;
		// the writer's create-new open still decides.
		if p := filepath.Join(dir, a.Filename); fileExists(p) {
			return fail(contract.Errorf(contract.CodeExportFailed, "%s exists; exports never overwrite", p).WithDetail("output_path", p))
		}
	}
	rng := a.Range
	if rng == "" {
		rng = "all"
	}
	var gs []*Graph
	disp := w.displayNow()
	if len(a.Metrics) > 0 {
		var err error
		if gs, err = h.resolveSources(ctx, disp, a.Metrics); err != nil {
			return fail(err)
		}
	}
	w.mu.Lock()
	iv, fresh, err := func() (history.Interval, []*Graph, error) {
		if err := w.checkRevLocked(h, a.ExpectedRevision); err != nil {
			return history.Interval{}, nil, err
		}
		if err := w.checkDisplayLocked(h, disp); err != nil {
			return history.Interval{}, nil, err
		}
		iv, err := w.rangeLocked(h, rng)
		if err != nil {
			return iv, nil, err
		}
		fresh, err := w.planLocked(gs)
		if err != nil {
			return iv, nil, err
		}
		if len(w.graphs)+len(fresh) == 0 {
			return iv, nil, contract.Errorf(contract.CodeInvalidArgument, "the workspace has no graphs; give metrics or call add_graphs first")
		}
		if ctx.Err() != nil || s.Closed() {
			return iv, nil, contract.Errorf(contract.CodeCancelled, "the requesting connection closed before the export was accepted; nothing was added or written")
		}
		return iv, fresh, nil
	}()
	if err != nil {
		w.mu.Unlock()
		return fail(err)
	}
	// Accepted: the additions are committed and the data snapshotted.
	added, _, _ := w.addLocked(fresh) // planLocked checked capacity under this lock
	body, rows := h.graphCSV(w.log(), w.graphs, iv)
	outcome := map[string]any{"range": rangeJSON(rng, iv), "rows": rows, "added": nonNil(added), "workspace": w.stateLocked(h)}
	if w.opSources == nil || len(w.opSources) >= 4*ledger.MaxOutcomes {
		w.opSources = map[string]string{} // bounded: only running exports need it
	}
	w.opSources[op.Status().ID] = w.source()
	w.mu.Unlock()
	op.SetRunning()
	go func() {
		path, err := writeNewCSV(dir, a.Filename, body)
		if err != nil {
			e := contract.Errorf(contract.CodeExportFailed, "%v", err).WithDetail("workspace", outcome["workspace"]).WithDetail("rows", rows)
			if path != "" {
				e = e.WithDetail("output_path", path)
			}
			op.Finish(nil, e)
			return
		}
		outcome["output_path"] = path
		op.Finish(outcome, nil)
	}()
	return h.graphOpReply(ctx, op, a.WaitMS)
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func rangeJSON(kind string, iv history.Interval) map[string]any {
	m := map[string]any{"kind": kind, "from": nil, "to": nil}
	if iv.HasFrom {
		m["from"] = contract.Timestamp(history.MsTime(iv.From))
	}
	if iv.HasTo {
		m["to"] = contract.Timestamp(history.MsTime(iv.To))
	}
	return m
}

// rangeLocked turns an export range into an inclusive interval ending at
// the displayed time (pause included).
func (w *workspace) rangeLocked(h *Host, kind string) (history.Interval, error) {
	end := w.end(h).UnixMilli()
	switch kind {
	case "all":
		return history.Interval{To: end, HasTo: true}, nil
	case "visible":
		return history.Interval{From: end - int64(w.visible)*1000, To: end, HasFrom: true, HasTo: true}, nil
	case "ab":
		if w.markA == nil || w.markB == nil {
			e := contract.Errorf(contract.CodeStateConflict, "range ab needs both A and B markers set in the TUI").WithDetail("field", "/range")
			e.Field = "/range"
			return history.Interval{}, e
		}
		a, b := w.markA.UnixMilli(), w.markB.UnixMilli()
		if a > b {
			a, b = b, a
		}
		return history.Interval{From: a, To: b, HasFrom: true, HasTo: true}, nil
	}
	return history.Interval{}, argErr("range", "range is all, visible or ab")
}

// graphPoints returns a graph's stored samples inside iv: time (ms) and
// raw value, ok false where the metric was not measured. lg is the
// displayed recording (nil: Live history).
func (h *Host) graphPoints(lg *recording.Log, g *Graph, iv history.Interval) []history.Sample {
	if lg != nil {
		switch {
		case g.System:
			return lg.System.View().Raw(iv, []int{g.Metric.Index})
		case g.Logged:
			if p := lg.ProcByIndex(g.LogIndex); p != nil {
				return p.Series.View().Raw(iv, []int{g.Metric.Index})
			}
		}
		return nil
	}
	if g.Logged {
		return nil
	}
	store := h.HistoryStore()
	if store == nil {
		return nil
	}
	var v *history.View
	if g.System {
		v = store.System()
	} else {
		var ok bool
		if v, _, ok = store.Process(g.Proc); !ok {
			return nil
		}
	}
	return v.Raw(iv, []int{g.Metric.Index})
}

// cellText is one CSV cell: the stored value exactly (integers in
// decimal, numbers in the shortest form that round-trips).
func cellText(m sample.Metric, v uint64) string {
	if m.Repr == sample.ReprNumber {
		return strconv.FormatFloat(sample.AsFloat(v), 'g', -1, 64)
	}
	return strconv.FormatUint(v, 10)
}

// graphCSV renders graphs over iv: header "timestamp" plus one column per
// graph label, then one row per distinct stored timestamp (ascending),
// empty cells where a graph has no available value at that time.
func (h *Host) graphCSV(lg *recording.Log, graphs []*Graph, iv history.Interval) ([]byte, int) {
	cols := make([]map[int64]string, len(graphs))
	times := map[int64]bool{}
	for i, g := range graphs {
		cols[i] = map[int64]string{}
		for _, s := range h.graphPoints(lg, g, iv) {
			times[s.At] = true
			if s.Avail[0] {
				cols[i][s.At] = cellText(g.Metric, s.Vals[0])
			}
		}
	}
	ts := make([]int64, 0, len(times))
	for t := range times {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	head := []string{"timestamp"}
	for _, g := range graphs {
		head = append(head, g.label())
	}
	cw.Write(head)
	for _, t := range ts {
		row := []string{history.MsTime(t).Format("2006-01-02T15:04:05.000Z07:00")}
		for i := range graphs {
			row = append(row, cols[i][t])
		}
		cw.Write(row)
	}
	cw.Flush()
	return buf.Bytes(), len(ts)
}

// exportWriteHook, when set (tests), runs after the writer created the
// export file and before it writes, with the file's path.
var exportWriteHook func(path string)

// exportChunk is how much of the CSV one write call hands the file.
const exportChunk = 64 << 10

// writeNewCSV creates dir (absolute; and its parents) and writes body to
// a new file: name, or a generated unique name. It never overwrites. On
// failure it returns the path it was writing (empty when no file could be
// named) and keeps whatever was written: the partial file stays for the
// user to inspect.
func writeNewCSV(dir, name string, body []byte) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", errors.New("the output directory is not an absolute path")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	open := func(p string) (*os.File, error) { return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644) }
	var f *os.File
	var path string
	var err error
	if name != "" {
		path = filepath.Join(dir, name)
		if f, err = open(path); err != nil {
			if errors.Is(err, os.ErrExist) {
				return path, fmt.Errorf("%s exists; exports never overwrite", path)
			}
			return path, err
		}
	} else {
		base := "inquest-graphs-" + time.Now().UTC().Format("20060102T150405Z")
		for i := 0; ; i++ {
			path = filepath.Join(dir, base+".csv")
			if i > 0 {
				path = filepath.Join(dir, fmt.Sprintf("%s-%d.csv", base, i))
			}
			if f, err = open(path); err == nil {
				break
			}
			if !errors.Is(err, os.ErrExist) || i > 1000 {
				return path, err
			}
		}
	}
	if exportWriteHook != nil {
		exportWriteHook(path)
	}
	for len(body) > 0 && err == nil {
		n := min(len(body), exportChunk)
		_, err = f.Write(body[:n])
		body = body[n:]
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return path, fmt.Errorf("writing %s: %w (the partial file is kept)", path, err)
	}
	return path, nil
}

// updateGraphWorkspace is GraphWorkspaceMethod: {action: pause | resume |
// marker_a | marker_b | clear_markers | remove | visible, at (RFC 3339,
// markers), graph_id (remove), seconds (visible, 10..86400)}.
func (h *Host) updateGraphWorkspace(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
	if isMCPBridge(s) {
		return nil, contract.Errorf(contract.CodePermissionDenied, "the graph display state is changed in the TUI")
	}
	var a struct {
		Action  string `json:"action"`
		At      string `json:"at"`
		GraphID string `json:"graph_id"`
		Seconds int    `json:"seconds"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "bad arguments: %v", err)
	}
	w := h.workspace()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch a.Action {
	case "pause":
		if !w.paused {
			w.pausedAt = w.end(h)
			w.paused = true
		}
	case "resume":
		w.paused = false
	case "marker_a", "marker_b":
		t, err := time.Parse(time.RFC3339Nano, a.At)
		if err != nil {
			return nil, argErr("at", "at is an RFC 3339 time")
		}
		if a.Action == "marker_a" {
			w.markA = &t
		} else {
			w.markB = &t
		}
	case "clear_markers":
		w.markA, w.markB = nil, nil
	case "remove":
		i := -1
		for k, g := range w.graphs {
			if g.ID == a.GraphID {
				i = k
			}
		}
		if i < 0 {
			return nil, argErr("graph_id", "no graph with that graph_id; get_graphs lists them")
		}
		w.graphs = append(w.graphs[:i:i], w.graphs[i+1:]...)
	case "visible":
		if a.Seconds < 10 || a.Seconds > 86400 {
			return nil, argErr("seconds", "visible range is 10..86400 seconds")
		}
		w.visible = a.Seconds
	default:
		return nil, argErr("action", "unknown action")
	}
	w.rev++
	return contract.NewResult(w.source(), time.Time{}, w.stateLocked(h)), nil
}

// readGraphSeries is GraphSeriesMethod: every graph's points in the
// visible range, {workspace, series: [{graph_id, at: [ms...], values:
// [number|null...]}]} (values as float64 for drawing; the CSV keeps the
// raw stored values).
func (h *Host) readGraphSeries(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
	w := h.workspace()
	w.mu.Lock()
	state := w.stateLocked(h)
	iv, _ := w.rangeLocked(h, "visible")
	graphs := append([]*Graph(nil), w.graphs...)
	lg := w.log()
	w.mu.Unlock()
	series := []any{}
	for _, g := range graphs {
		pts := h.graphPoints(lg, g, iv)
		at := make([]int64, len(pts))
		vals := make([]any, len(pts))
		for i, p := range pts {
			at[i] = p.At
			if p.Avail[0] {
				if g.Metric.Repr == sample.ReprNumber {
					vals[i] = sample.AsFloat(p.Vals[0])
				} else {
					vals[i] = float64(p.Vals[0])
				}
			}
		}
		series = append(series, map[string]any{"graph_id": g.ID, "at": at, "values": vals})
	}
	return contract.NewResult(state["source"].(string), time.Time{}, map[string]any{"workspace": state, "series": series}), nil
}
