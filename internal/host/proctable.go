package host

import (
	"context"
	"encoding/json"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// ProcessTableQuery selects the optional columns of ProcessTable.
type ProcessTableQuery struct {
	// CommandLines reads each live row's command line (the first
	// sample.RowCommandLineBytes bytes, as list_processes' command_line).
	CommandLines bool
	// Containers reads each live row's container facts.
	Containers bool
}

// ProcessTableRow is one row of ProcessTable: the values list_processes
// gives for the same row with scope all, projection process_ref, pid,
// name, state, lifecycle, start_time, parent, user (plus command_line and
// container when asked) and metric_ids cpu_percent, rss_bytes, threads,
// read_bytes, write_bytes and cpu_time_ns, as a client decoding its JSON
// reads them: text is sample.Display (invalid UTF-8 bytes are U+FFFD).
// A value whose OK flag is false is unknown (list_processes puts it in
// unavailable), never 0.
type ProcessTableRow struct {
	Ref string
	PID int
	// PPID is the parent's pid; ParentVerified says the parent is the
	// lifetime of that pid in the same snapshot that started before it
	// (parent.relationship verified).
	PPID           int
	ParentVerified bool
	Name, State    string
	// Lifecycle is live, zombie or unknown (history only).
	Lifecycle string
	// StartTime is the process's start (zero when unknown).
	StartTime time.Time
	// User is the owner's user name or uid; UserKnown false: the owner is
	// not known.
	User      string
	UserKnown bool
	// Args is the command line page; ArgsOK false when it was not asked
	// for, the lifetime is not live, or it could not be read. A kernel
	// thread has ArgsOK with no Args.
	Args   []string
	ArgsOK bool
	// ContainerRuntime and ContainerID are the container's runtime (none,
	// unknown, docker, ...) and id, read only when asked for; a row that
	// is not live has runtime "" (process_not_live).
	ContainerRuntime, ContainerID string
	// CPU is cpu_percent (one core = 100).
	CPU   float64
	CPUOK bool
	// RSS is rss_bytes, Threads threads, ReadBytes and WriteBytes the
	// cumulative read_bytes and write_bytes, CPUTime cpu_time_ns.
	RSS, Threads, ReadBytes, WriteBytes, CPUTime uint64
	RSSOK, ThreadsOK, ReadOK, WriteOK, CPUTimeOK bool
}

// ProcessTable is the whole process table of the latest snapshot (the
// TUI's in-process read): every live process and every retained ended
// lifetime, in pid order (then start), one call, no pages.
type ProcessTable struct {
	// CapturedAt is the snapshot's time (list_processes captured_at).
	CapturedAt time.Time
	// SnapshotSeq is the snapshot's sequence number (coverage
	// snapshot_seq).
	SnapshotSeq uint64
	Rows        []ProcessTableRow
}

// tableProcessMetrics are ProcessTableRow's metric ids.
var tableProcessMetrics = []string{"cpu_percent", "rss_bytes", "threads", "read_bytes", "write_bytes", "cpu_time_ns"}

// ProcessTable returns the rows list_processes {scope: all} would return
// for the latest snapshot, as Go values built for this call (the caller
// owns them; the sampler's later snapshots do not change them), without
// encoding JSON. It fails as list_processes does: BACKEND_UNAVAILABLE
// before the first sample, ACTIVITY_CONFLICT in Log view, UNSUPPORTED
// without retained history. It waits for the second sample (the first
// with cpu_percent), as a list_processes call asking for cpu_percent does.
func (h *Host) ProcessTable(ctx context.Context, q ProcessTableQuery) (*ProcessTable, error) {
	if h.sampler.Latest() == nil {
		return nil, contract.Errorf(contract.CodeBackendUnavailable, "the host has not taken its first sample yet; retry")
	}
	h.awaitRates(ctx)
	if err := h.activityGate("list_processes", json.RawMessage(`{"scope":"all"}`)); err != nil {
		return nil, err
	}
	snap := h.sampler.Latest()
	h.mu.Lock()
	retainedFn := h.retained
	h.mu.Unlock()
	rows, err := h.scopeRows(snap, "all", retainedFn, false)
	if err != nil {
		return nil, err
	}
	list := make([]*procRow, 0, len(rows))
	for _, r := range rows {
		list = append(list, r)
	}
	if _, _, err := sortProcessRows(list, "", ""); err != nil {
		return nil, err
	}
	var ms [6]sample.Metric
	for i, id := range tableProcessMetrics {
		m, ok := sample.LookupMetric(id)
		if !ok {
			return nil, contract.Errorf(contract.CodeInternalError, "process metric %s is not in the catalog", id)
		}
		ms[i] = m
	}
	t := &ProcessTable{CapturedAt: snap.Time, SnapshotSeq: snap.Seq, Rows: make([]ProcessTableRow, len(list))}
	for i, r := range list {
		o := &t.Rows[i]
		o.Ref, o.PID, o.PPID, o.ParentVerified = h.Ref(r.id), int(r.id.PID), int(r.ppid), r.verified
		o.Name, o.State, o.Lifecycle, o.StartTime = sample.Display(r.name), r.state, r.lifecycle(), r.start
		if r.uidKnown {
			o.User, o.UserKnown = sample.Display(sample.UserName(r.uid)), true
		}
		if v, ok := sortValue(ms[0], r); ok { // finite only
			o.CPU, o.CPUOK = sample.AsFloat(v), true
		}
		o.RSS, o.RSSOK = sortValue(ms[1], r)
		o.Threads, o.ThreadsOK = sortValue(ms[2], r)
		o.ReadBytes, o.ReadOK = sortValue(ms[3], r)
		o.WriteBytes, o.WriteOK = sortValue(ms[4], r)
		o.CPUTime, o.CPUTimeOK = sortValue(ms[5], r)
		if q.Containers && r.p != nil {
			if f := r.p.Facts; f == nil {
				o.ContainerRuntime = "unknown"
			} else {
				o.ContainerRuntime, o.ContainerID = sample.Display(f.Container.Runtime), sample.Display(f.Container.ID)
			}
		}
		if q.CommandLines && r.live {
			if raw, complete, err := sample.ReadCommandLine(r.id); err == nil {
				pg := sample.PageArgv(raw, 0, sample.RowCommandLineBytes, complete)
				o.Args, o.ArgsOK = make([]string, len(pg.Args)), true
				for j, a := range pg.Args {
					o.Args[j] = sample.Display(a)
				}
			}
		}
	}
	return t, nil
}

// WaitSample returns once the sampler has published a snapshot whose
// sequence number (ProcessTable.SnapshotSeq) is greater than seq, at once
// when the latest already is; ctx's error when ctx ends first.
func (h *Host) WaitSample(ctx context.Context, seq uint64) error {
	_, err := h.sampler.WaitNewer(ctx, seq)
	return err
}
