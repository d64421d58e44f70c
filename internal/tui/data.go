// Package tui is the terminal face of the inquest host: an htop-class
// process monitor (bubbletea) whose data come only through host methods —
// the same list_processes, get_metrics, get_history, start_capture,
// get_status and local confirmation methods MCP clients and the CLI use.
// It runs either inside the host process (an in-process session) or as a
// view attached to a running host over the local socket; both go through
// Backend, so what the TUI shows is what an agent would read.
package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
)

// Backend runs one host method with JSON arguments: an in-process host
// session or an IPC client. Failures are *contract.Error.
type Backend interface {
	Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error)
}

// Attachment is implemented by a Backend that attaches a view to a host
// running in another process and reconnects when the connection is lost
// (the host died, or its listener was closed). Host reports the host now
// attached: its pid (from the host lock), its backend_instance_id (from
// the handshake; a new value is a new host) and whether the connection is
// up. A view never starts a host itself.
type Attachment interface {
	Host() (pid int, instance string, connected bool)
}

// TableSource is implemented by a Backend whose host runs in this process
// (the TUI host): a refresh reads the process table from it as Go values
// (host.ProcessTable, built for the call), the rows list_processes
// {scope: all} would give, without encoding them to JSON and decoding
// them back. A view of a host in another process has no TableSource and
// reads list_processes pages. A recording (Log view) is always read
// through list_processes.
type TableSource interface {
	ProcessTable(ctx context.Context, q host.ProcessTableQuery) (*host.ProcessTable, error)
}

// SampleWaiter is implemented by a Backend whose host runs in this
// process (the TUI host): WaitSample returns once the host has published
// a snapshot newer than seq (Frame.Seq), or with ctx's error when ctx
// ends first. The TUI refreshes right after each sample instead of on a
// timer of its own, so each refresh shows a new sample and the process
// wakes once a second for both.
type SampleWaiter interface {
	WaitSample(ctx context.Context, seq uint64) error
}

// hostGone reports whether err means the view has no host connection: the
// connection was lost (OUTCOME_UNKNOWN) or no host answers
// (BACKEND_UNAVAILABLE, BUSY).
func hostGone(err error) bool {
	switch contract.CodeOf(err) {
	case contract.CodeOutcomeUnknown, contract.CodeBackendUnavailable, contract.CodeBusy:
		return true
	}
	return false
}

// BackendFunc adapts a function to Backend.
type BackendFunc func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error)

// Call calls f.
func (f BackendFunc) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	return f(ctx, method, args)
}

// Row is one process lifetime of the table, from one list_processes row
// (scope all): live rows and ended lifetimes still retained (ghosts).
// A metric whose OK flag is false was not measured (shown as "-", never 0).
type Row struct {
	Ref            string
	PID, PPID      int
	ParentVerified bool
	Name, State    string
	// Ended is true for a lifecycle other than live (exited lifetimes
	// whose history is retained): drawn as a ghost row.
	Ended     bool
	StartTime string
	CPU       float64 // cpu_percent: all cores = 100
	CPUOK     bool
	// User is the owner's user name (or uid); "" not known.
	User string
	// CPUTime is user+system CPU time in nanoseconds (cpu_time_ns).
	CPUTime   uint64
	CPUTimeOK bool
	// Args is the command line (argv), read only while the table shows
	// command lines; ArgsOK is false when it was not read or could not be
	// (another user's process, an ended one). A kernel thread has none:
	// ArgsOK with empty Args.
	Args      []string
	ArgsOK    bool
	RSS       uint64 // rss_bytes
	RSSOK     bool
	Threads   uint64
	ThreadsOK bool
	// IOBytes is read_bytes+write_bytes (cumulative); IORate is its
	// change per second since the previous frame of the same lifetime.
	IOBytes  uint64
	IOOK     bool
	IORate   float64
	IORateOK bool
	// Container is the CONTAINER cell, read only while the table shows
	// containers: runtime:id for a process in a container, "-" for a
	// host process, "?" when its cgroup path fits no rule; "" not read.
	Container string
}

// System is the system line of a frame (get_metrics on the system).
type System struct {
	CPU                 float64 // system_cpu_percent
	CPUOK               bool
	Cores               []float64 // core_cpu_percent, each core = 100
	MemTotal, MemUsed   uint64
	MemOK               bool
	SwapTotal, SwapUsed uint64
	SwapOK              bool
	Load1               float64
	LoadOK              bool
}

// Call is one agent tool call of the activity panel (list_agent_activity).
type Call struct {
	Tool       string `json:"tool"`
	State      string `json:"state"`
	DurationMS int64  `json:"duration_ms"`
	Code       string `json:"code"`
}

// Pending is one action awaiting a local decision (list_pending_confirmations).
type Pending struct {
	ID      string         `json:"operation_id"`
	Tool    string         `json:"tool"`
	Confirm map[string]any `json:"confirmation"`
}

// Frame is one refresh of everything the TUI shows.
type Frame struct {
	At time.Time
	// Seq is the host's snapshot sequence number the rows come from
	// (host.ProcessTable SnapshotSeq); 0 when the backend does not say
	// (a view of another process's host, Log view).
	Seq      uint64
	Rows     []Row
	Sys      System
	Activity string // get_status activity: live, recording, log
	Listener string // MCP listener state
	Bridges  int    // authenticated MCP bridge connections
	Calls    []Call
	Pending  []Pending
	Warnings []string
	// Workspace is the shared graph workspace with its visible points.
	Workspace *Workspace
	// Recording is the host's recording (get_recording).
	Recording recState
	// Profiles is list_profiles (nil when not read).
	Profiles *Profiles
}

// tableMetrics are the process metrics the table reads per row.
var tableMetrics = []string{"cpu_percent", "rss_bytes", "threads", "read_bytes", "write_bytes", "cpu_time_ns"}

func call(ctx context.Context, b Backend, method string, args any) (*contract.Result, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return b.Call(ctx, method, raw)
}

// decodeRows decodes the rows of a paged result into out and returns its
// next_cursor. An in-process host hands rows over as json.RawMessage: they
// are decoded directly, without re-encoding the whole page.
func decodeRows[T any](res *contract.Result) (rows []T, next string, err error) {
	if m, ok := res.Data.(map[string]any); ok {
		if raws, ok := m["rows"].([]json.RawMessage); ok {
			rows = make([]T, len(raws))
			for i, r := range raws {
				if err := json.Unmarshal(r, &rows[i]); err != nil {
					return nil, "", err
				}
			}
			next, _ = m["next_cursor"].(string)
			return rows, next, nil
		}
	}
	var d struct {
		Rows []T    `json:"rows"`
		Next string `json:"next_cursor"`
	}
	err = decode(res, &d)
	return d.Rows, d.Next, err
}

// decode re-marshals res.Data into v.
func decode(res *contract.Result, v any) error {
	b, err := json.Marshal(res.Data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// intString parses an integer metric (a decimal string).
func intString(v any) (uint64, bool) {
	switch x := v.(type) {
	case string:
		n, err := strconv.ParseUint(x, 10, 64)
		return n, err == nil
	case float64:
		if x >= 0 {
			return uint64(x), true
		}
	}
	return 0, false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

type procRow struct {
	Ref       string `json:"process_ref"`
	PID       int    `json:"pid"`
	Name      string `json:"name"`
	State     string `json:"state"`
	Lifecycle string `json:"lifecycle"`
	StartTime string `json:"start_time"`
	Parent    struct {
		PID          int    `json:"pid"`
		Relationship string `json:"relationship"`
	} `json:"parent"`
	User        *string `json:"user"`
	CommandLine *struct {
		Value       json.RawMessage `json:"value"`
		Unavailable string          `json:"unavailable"`
	} `json:"command_line"`
	Values    procValues `json:"values"`
	Container *struct {
		Runtime string `json:"runtime"`
		ID      string `json:"id"`
	} `json:"container"`
}

// procValues are the table's metric values of one row, decoded without a
// map (integers arrive as decimal strings, cpu_percent as a number).
type procValues struct {
	CPU     json.RawMessage `json:"cpu_percent"`
	RSS     json.RawMessage `json:"rss_bytes"`
	Threads json.RawMessage `json:"threads"`
	Read    json.RawMessage `json:"read_bytes"`
	Write   json.RawMessage `json:"write_bytes"`
	CPUTime json.RawMessage `json:"cpu_time_ns"`
}

// rawFloat and rawUint read a value as JSON number or decimal string;
// absent or null is not measured.
func rawFloat(r json.RawMessage) (float64, bool) {
	s := strings.Trim(string(r), `"`)
	if s == "" || s == "null" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func rawUint(r json.RawMessage) (uint64, bool) {
	s := strings.Trim(string(r), `"`)
	if s == "" || s == "null" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// Fetch reads one frame: every process row (list_processes scope all,
// following next_cursor to the end), the system metrics, the host status,
// agent activity and pending confirmations. prev (may be nil) gives IO
// rates. A failure of an optional part becomes a warning.
func Fetch(ctx context.Context, b Backend, prev *Frame, src *LogSource) (*Frame, error) {
	return FetchParts(ctx, b, prev, src, Parts{Status: true, Graphs: true, Profiles: true})
}

// Parts selects the optional reads of a refresh: Status is get_status
// (activity, listener state), Graphs the graph workspace's points,
// Profiles list_profiles, CommandLines every row's command line,
// Containers every live row's container. The TUI asks for them only
// while a pane shows them.
type Parts struct {
	Status, Graphs, Profiles, CommandLines, Containers bool
}

// FetchParts is Fetch reading only the optional parts asked for.
func FetchParts(ctx context.Context, b Backend, prev *Frame, src *LogSource, parts Parts) (*Frame, error) {
	f := &Frame{At: time.Now()}
	logArgs := func(m map[string]any) map[string]any {
		if src != nil {
			m["source"], m["log_ref"] = "log", src.Ref
		}
		return m
	}
	projection := []string{"process_ref", "pid", "name", "state", "lifecycle", "start_time", "parent", "user"}
	if parts.CommandLines {
		projection = append(projection, "command_line")
	}
	if parts.Containers && src == nil {
		// a recording keeps no container facts
		projection = append(projection, "container")
	}
	if ts, ok := b.(TableSource); ok && src == nil {
		t, err := ts.ProcessTable(ctx, host.ProcessTableQuery{CommandLines: parts.CommandLines, Containers: parts.Containers})
		if err != nil {
			return nil, err
		}
		f.At, f.Seq = t.CapturedAt, t.SnapshotSeq
		f.Rows = make([]Row, len(t.Rows))
		for i := range t.Rows {
			f.Rows[i] = tableRow(&t.Rows[i], parts.Containers)
		}
	} else if err := fetchRows(ctx, b, f, src, projection); err != nil {
		return nil, err
	}
	ioRates(f, prev)
	if res, err := call(ctx, b, "get_metrics", logArgs(map[string]any{"metric_ids": []string{
		"system_cpu_percent", "memory_total_bytes", "memory_used_bytes", "swap_total_bytes", "swap_used_bytes", "load1"}})); err != nil {
		f.Warnings = append(f.Warnings, "system metrics: "+errText(err))
	} else {
		var d struct {
			Samples []struct {
				Cores  []float64      `json:"core_cpu_percent"`
				Values map[string]any `json:"values"`
			} `json:"samples"`
		}
		if decode(res, &d) == nil && len(d.Samples) == 1 {
			s, v := &f.Sys, d.Samples[0].Values
			s.Cores = d.Samples[0].Cores
			s.CPU, s.CPUOK = number(v["system_cpu_percent"])
			var ok1, ok2, ok3, ok4 bool
			s.MemTotal, ok1 = intString(v["memory_total_bytes"])
			s.MemUsed, ok2 = intString(v["memory_used_bytes"])
			s.MemOK = ok1 && ok2
			s.SwapTotal, ok3 = intString(v["swap_total_bytes"])
			s.SwapUsed, ok4 = intString(v["swap_used_bytes"])
			s.SwapOK = ok3 && ok4
			s.Load1, s.LoadOK = number(v["load1"])
		}
	}
	if !parts.Status {
		// skipped: the badge count comes with the agent activity below
	} else if res, err := call(ctx, b, "get_status", map[string]any{}); err == nil {
		var d struct {
			Activity string `json:"activity"`
			MCP      struct {
				Listener string `json:"listener"`
				Bridges  int    `json:"bridge_connections"`
			} `json:"mcp"`
		}
		if decode(res, &d) == nil {
			f.Activity, f.Listener, f.Bridges = d.Activity, d.MCP.Listener, d.MCP.Bridges
		}
	}
	if res, err := call(ctx, b, "list_agent_activity", map[string]any{}); err == nil {
		var d struct {
			Calls   []Call `json:"calls"`
			Bridges int    `json:"bridges"`
		}
		if decode(res, &d) == nil {
			f.Calls = d.Calls
			if d.Bridges > f.Bridges {
				f.Bridges = d.Bridges
			}
		}
	}
	if res, err := call(ctx, b, "list_pending_confirmations", map[string]any{}); err == nil {
		var d struct {
			Ops []Pending `json:"operations"`
		}
		if decode(res, &d) == nil {
			f.Pending = d.Ops
		}
	}
	if res, err := call(ctx, b, "get_recording", map[string]any{}); err == nil {
		decode(res, &f.Recording)
	}
	if parts.Graphs {
		if ws, err := fetchGraphs(ctx, b); err == nil {
			f.Workspace = ws
		}
	}
	if parts.Profiles {
		if res, err := call(ctx, b, "list_profiles", map[string]any{}); err != nil {
			f.Warnings = append(f.Warnings, "profiles: "+errText(err))
		} else {
			var p Profiles
			if err := decode(res, &p); err == nil {
				f.Profiles = &p
			}
		}
	}
	return f, nil
}

// fetchRows reads f's rows from list_processes {scope: all} pages,
// following next_cursor to the end (src: a recording's rows).
func fetchRows(ctx context.Context, b Backend, f *Frame, src *LogSource, projection []string) error {
	logArgs := func(m map[string]any) map[string]any {
		if src != nil {
			m["source"], m["log_ref"] = "log", src.Ref
		}
		return m
	}
	args := logArgs(map[string]any{"scope": "all", "metric_ids": tableMetrics, "projection": projection})
	for pages := 0; ; pages++ {
		res, err := call(ctx, b, "list_processes", args)
		if err != nil {
			return err
		}
		if res.CapturedAt != nil && pages == 0 {
			f.At = time.Time(*res.CapturedAt)
		}
		rows, next, err := decodeRows[procRow](res)
		if err != nil {
			return fmt.Errorf("list_processes: %w", err)
		}
		for _, r := range rows {
			row := toRow(r)
			if src != nil {
				// recorded rows: lifecycle unknown (no OS liveness check)
				row.Ended = false
				row = toRowLog(r)
			}
			f.Rows = append(f.Rows, row)
		}
		if next == "" || pages > 1000 {
			break
		}
		args = logArgs(map[string]any{"cursor": next, "scope": "all", "metric_ids": tableMetrics, "projection": args["projection"]})
	}
	return nil
}

// tableRow is the Row of an in-process host's table row: what toRow
// makes of the same row's list_processes JSON (containers: the
// CONTAINER column was asked for).
func tableRow(t *host.ProcessTableRow, containers bool) Row {
	row := Row{Ref: t.Ref, PID: t.PID, PPID: t.PPID, ParentVerified: t.ParentVerified, Name: t.Name, State: t.State,
		Ended: t.Lifecycle != "" && t.Lifecycle != "live", Args: t.Args, ArgsOK: t.ArgsOK}
	if !t.StartTime.IsZero() {
		row.StartTime = t.StartTime.UTC().Format(time.RFC3339Nano)
	}
	if t.UserKnown {
		row.User = t.User
	}
	if containers {
		row.Container = containerLabel(t.ContainerRuntime, t.ContainerID)
	}
	row.CPU, row.CPUOK = t.CPU, t.CPUOK
	row.CPUTime, row.CPUTimeOK = t.CPUTime, t.CPUTimeOK
	row.RSS, row.RSSOK = t.RSS, t.RSSOK
	row.Threads, row.ThreadsOK = t.Threads, t.ThreadsOK
	row.IOBytes, row.IOOK = t.ReadBytes+t.WriteBytes, t.ReadOK && t.WriteOK
	if row.Ended {
		row.CPUOK, row.RSSOK, row.ThreadsOK, row.IOOK, row.CPUTimeOK = false, false, false, false, false
	}
	return row
}

func toRow(r procRow) Row {
	row := Row{Ref: r.Ref, PID: r.PID, PPID: r.Parent.PID, ParentVerified: r.Parent.Relationship == "verified",
		Name: r.Name, State: r.State, Ended: r.Lifecycle != "" && r.Lifecycle != "live", StartTime: r.StartTime}
	row.CPU, row.CPUOK = rawFloat(r.Values.CPU)
	row.CPUTime, row.CPUTimeOK = rawUint(r.Values.CPUTime)
	if r.User != nil {
		row.User = *r.User
	}
	if c := r.Container; c != nil {
		row.Container = containerLabel(c.Runtime, c.ID)
	}
	if c := r.CommandLine; c != nil && c.Unavailable == "" && len(c.Value) > 0 {
		// null: no command line (a kernel thread)
		row.ArgsOK = json.Unmarshal(c.Value, &row.Args) == nil
	}
	row.RSS, row.RSSOK = rawUint(r.Values.RSS)
	row.Threads, row.ThreadsOK = rawUint(r.Values.Threads)
	rb, ok1 := rawUint(r.Values.Read)
	wb, ok2 := rawUint(r.Values.Write)
	row.IOBytes, row.IOOK = rb+wb, ok1 && ok2
	if row.Ended {
		row.CPUOK, row.RSSOK, row.ThreadsOK, row.IOOK, row.CPUTimeOK = false, false, false, false, false
	}
	return row
}

// toRowLog is toRow for a recorded row: every row of the recording is
// shown as a process (its lifecycle is unknown, not ended).
func toRowLog(r procRow) Row {
	r.Lifecycle = "live"
	return toRow(r)
}

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }

// ioRates sets IORate from the previous frame's cumulative IO of the same
// lifetime (process_ref); unknown when either side is unmeasured.
func ioRates(f, prev *Frame) {
	if prev == nil {
		return
	}
	dt := f.At.Sub(prev.At).Seconds()
	if dt <= 0 {
		return
	}
	old := make(map[string]*Row, len(prev.Rows))
	for i := range prev.Rows {
		old[prev.Rows[i].Ref] = &prev.Rows[i]
	}
	for i := range f.Rows {
		r := &f.Rows[i]
		if p := old[r.Ref]; p != nil && p.IOOK && r.IOOK && r.IOBytes >= p.IOBytes {
			r.IORate, r.IORateOK = float64(r.IOBytes-p.IOBytes)/dt, true
		}
	}
}

func errText(err error) string {
	if ce, ok := err.(*contract.Error); ok {
		return string(ce.Code) + ": " + ce.Message
	}
	return err.Error()
}

// containerLabel is the CONTAINER cell of a row's container: "-" for a
// host process (runtime none), "?" for unknown, else runtime:id with a
// hex id cut to the 12 digits docker ps and podman ps print.
func containerLabel(runtime, id string) string {
	switch runtime {
	case "none":
		return "-"
	case "", "unknown":
		return "?"
	}
	if len(id) == 64 {
		id = id[:12]
	}
	return runtime + ":" + id
}
