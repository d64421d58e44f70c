package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/managed"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Runtime collection states (get_runtime_collection data.state).
const (
	RuntimeDisabled    = "disabled"
	RuntimeWaiting     = "waiting"
	RuntimeCollecting  = "collecting"
	RuntimeStopping    = "stopping"
	RuntimeUnavailable = "unavailable"
)

// runtimeAuth is the authorization of one verified lifetime (pid + start
// time) to have its managed runtime's metrics read. It lives only in this
// host's memory: never written to inquest.toml, never restored, and a
// restarted process (another start time) has none.
type runtimeAuth struct {
	id      sample.Identity
	enabled bool
	// reading is true while the sampler reads this lifetime's runtime;
	// idle is closed when that read ends.
	reading bool
	idle    chan struct{}
	since   time.Time

	// Written by the sampler goroutine under runtimeCollector.mu.
	state, reason, detail string
	path                  string
	last                  *managed.JVM
	lastAt                time.Time
}

// runtimeCollector wraps the platform collector: after each snapshot is
// collected, and before it is published, it reads the managed runtime of
// every authorized lifetime and fills the JVM metric slots
// (sample.PJVMHeapUsed...) of that process, so they enter history,
// get_metrics, rank_processes, graphs and recordings like every other
// process metric.
type runtimeCollector struct {
	inner sample.Collector
	// paused says live runtime reads are off (Log view).
	paused func() bool
	// read serializes augment (Step may run from a test and the loop).
	read sync.Mutex
	mu   sync.Mutex
	auth map[sample.Identity]*runtimeAuth
	// procRoot is "/proc".
	procRoot string
}

func newRuntimeCollector(inner sample.Collector) *runtimeCollector {
	return &runtimeCollector{inner: inner, auth: map[sample.Identity]*runtimeAuth{}, procRoot: "/proc"}
}

// Platform is the inner collector's.
func (rc *runtimeCollector) Platform() sample.Platform { return rc.inner.Platform() }

// Collect collects a snapshot with the inner collector and adds the
// runtime metrics of authorized lifetimes.
func (rc *runtimeCollector) Collect(prev *sample.Snapshot) (*sample.Snapshot, error) {
	snap, err := rc.inner.Collect(prev)
	if err != nil || snap == nil {
		return snap, err
	}
	rc.augment(snap)
	return snap, nil
}

func (rc *runtimeCollector) augment(snap *sample.Snapshot) {
	rc.read.Lock()
	defer rc.read.Unlock()
	paused := rc.paused != nil && rc.paused()
	rc.mu.Lock()
	var work []*runtimeAuth
	for id, a := range rc.auth {
		if snap.Lookup(id) == nil {
			// The lifetime ended: its authorization ends with it.
			delete(rc.auth, id)
			continue
		}
		if !a.enabled || paused {
			continue
		}
		a.reading, a.idle = true, make(chan struct{})
		work = append(work, a)
	}
	rc.mu.Unlock()
	for _, a := range work {
		p := snap.Lookup(a.id)
		st, reason, detail, path, j := rc.readOne(a, p)
		rc.mu.Lock()
		if a.enabled {
			a.state, a.reason, a.detail, a.path = st, reason, detail, path
			a.last, a.lastAt = j, snap.Time
			if j != nil {
				setJVMSlots(p, j)
			}
		} else {
			// Revoked while reading: the read's values are dropped.
			delete(rc.auth, a.id)
		}
		a.reading = false
		close(a.idle)
		rc.mu.Unlock()
	}
}

// readOne reads the runtime of one authorized lifetime; it touches only
// a's path (the sampler goroutine's).
func (rc *runtimeCollector) readOne(a *runtimeAuth, p *sample.Process) (state, reason, detail, path string, j *managed.JVM) {
	rc.mu.Lock()
	path = a.path
	rc.mu.Unlock()
	proc := managed.Proc{Root: rc.procRoot, PID: p.PID}
	if path == "" {
		det := managed.Detect(proc, p.Exe)
		if det.PerfPath == "" {
			if det.Reason == managed.ReasonNotReady {
				return RuntimeWaiting, det.Reason, det.Detail, "", nil
			}
			return RuntimeUnavailable, det.Reason, det.Detail, "", nil
		}
		path = det.PerfPath
	}
	_, j, err := managed.ReadPerf(path, p.StartTime.UnixMilli())
	if err != nil {
		r := managed.ReasonOf(err)
		switch r {
		case managed.ReasonNotReady:
			return RuntimeWaiting, r, "the JVM is still creating its performance-data file", path, nil
		case managed.ReasonPerfDataDisabled:
			// The file went away (the JVM is exiting, or it was removed):
			// look for it again next time.
			return RuntimeWaiting, managed.ReasonNotReady, "the performance-data file is gone; looking for it again", "", nil
		}
		return RuntimeUnavailable, r, reasonDetail(r), path, nil
	}
	return RuntimeCollecting, "", "", path, j
}

func reasonDetail(r string) string {
	switch r {
	case managed.ReasonPermission:
		return "the JVM's performance-data file belongs to another user"
	case managed.ReasonTruncated:
		return "the performance-data file is shorter than the structures it declares"
	case managed.ReasonCorrupt:
		return "the performance-data file holds values no HotSpot JVM writes"
	case managed.ReasonOversized:
		return "the performance-data file is larger than any HotSpot writes"
	case managed.ReasonStale:
		return "the performance-data file belongs to an earlier JVM with the same pid"
	}
	return "the performance-data file could not be read"
}

// setJVMSlots fills p's JVM metric slots from j (only the values read).
func setJVMSlots(p *sample.Process, j *managed.JVM) {
	set := func(bit uint32, slot int, v int64) {
		if j.Has&bit != 0 && v >= 0 {
			p.Set(slot, uint64(v))
		}
	}
	set(managed.HasHeap, sample.PJVMHeapUsed, j.HeapUsed)
	set(managed.HasHeap, sample.PJVMHeapCommitted, j.HeapCommitted)
	set(managed.HasHeapMax, sample.PJVMHeapMax, j.HeapMax)
	set(managed.HasEden, sample.PJVMEdenUsed, j.Eden.Used)
	set(managed.HasSurvivor, sample.PJVMSurvivorUsed, j.Survivor.Used)
	set(managed.HasOld, sample.PJVMOldUsed, j.Old.Used)
	set(managed.HasOld, sample.PJVMOldCommitted, j.Old.Committed)
	set(managed.HasMetaspace, sample.PJVMMetaspaceUsed, j.Metaspace.Used)
	set(managed.HasMetaspace, sample.PJVMMetaspaceCommitted, j.Metaspace.Committed)
	if len(j.Collectors) > 0 {
		set(managed.HasYoungGC, sample.PJVMYoungGCCount, j.Collectors[0].Invocations)
		set(managed.HasYoungGC, sample.PJVMYoungGCTime, j.Collectors[0].TimeNS)
	}
	if len(j.Collectors) > 1 {
		set(managed.HasOldGC, sample.PJVMOldGCCount, j.Collectors[1].Invocations)
		set(managed.HasOldGC, sample.PJVMOldGCTime, j.Collectors[1].TimeNS)
	}
	set(managed.HasThreads, sample.PJVMThreadsLive, j.ThreadsLive)
	set(managed.HasClassesLoaded, sample.PJVMClassesLoaded, j.ClassesLoaded)
	set(managed.HasClassesUnloaded, sample.PJVMClassesUnloaded, j.ClassesUnloaded)
	set(managed.HasSafepoints, sample.PJVMSafepoints, j.Safepoints)
	set(managed.HasSafepointTime, sample.PJVMSafepointTime, j.SafepointTimeNS)
	set(managed.HasJIT, sample.PJVMJITTime, j.JITTimeNS)
}

// jvmMetricIDs are the catalog ids of the JVM family, in slot order.
func jvmMetricIDs() []string {
	var ids []string
	for i := sample.PJVMHeapUsed; i <= sample.PJVMJITTime; i++ {
		ids = append(ids, sample.ProcessMetrics[i].ID)
	}
	return ids
}

var runtimeCollectors sync.Map // *Host -> *runtimeCollector

func runtimeOf(h *Host) *runtimeCollector {
	if v, ok := runtimeCollectors.Load(h); ok {
		return v.(*runtimeCollector)
	}
	return nil
}

// installRuntime registers rc as h's runtime collector (its sampler's
// collector) and its get_status section.
func installRuntime(h *Host, rc *runtimeCollector) {
	rc.paused = h.InLogView
	runtimeCollectors.Store(h, rc)
	h.AddStatus(func(m map[string]any) {
		rc.mu.Lock()
		n := len(rc.auth)
		rc.mu.Unlock()
		m["runtime_collection"] = map[string]any{"authorized_lifetimes": n}
	})
}

// runtimeTargetArgs name one live process.
type runtimeTargetArgs struct {
	ProcessRef string `json:"process_ref"`
	PID        *int64 `json:"pid"`
}

const runtimeTargetSchema = `"process_ref":{"type":"string","minLength":1,"maxLength":128,"description":"target process (or pid)"},
` + pidField

// runtimeTarget resolves the tool's target to a verified live process.
func (h *Host) runtimeTarget(a runtimeTargetArgs) (*sample.Process, string, error) {
	ref := a.ProcessRef
	if ref == "" && a.PID != nil {
		snap := h.sampler.Latest()
		if p := snap.Find(int32(*a.PID)); p != nil {
			ref = h.Ref(p.ID())
		} else {
			e := contract.Errorf(contract.CodeProcessExited, "no live process has pid %d in the latest sample", *a.PID)
			e.Field = "/pid"
			return nil, "", e
		}
	}
	if ref == "" {
		e := contract.Errorf(contract.CodeInvalidArgument, "give process_ref or pid")
		e.Field = "/process_ref"
		return nil, "", e
	}
	p, _, err := h.ResolveLive(ref)
	if err != nil {
		if e := contract.AsError(err); e != nil && e.Field == "" {
			e.Field = "/process_ref"
		}
		return nil, "", err
	}
	return p, ref, nil
}

var getRuntimeCollectionTool = func() Decl {
	t := define(tool.Tool{
		Name:        "get_runtime_collection",
		Title:       "Managed-runtime collection state",
		Description: "The managed runtime (jvm, dotnet, none or unknown) of one live process (process_ref or pid required): version, whether its metrics can be collected, authorization (enabled), revision, state (disabled, waiting, collecting, stopping, or unavailable with reason), and the JVM values while collecting.",
		Details: "The Linux form of get_dotnet_collection. A HotSpot JVM is read passively from its performance-data file (/tmp/hsperfdata_USER/PID, also inside a container's mount namespace), as jstat reads it; nothing attaches to the JVM. " +
			"Collection needs set_runtime_collection {enabled: true}, confirmed by a local user, for this lifetime only; the jvm_* metrics then enter history, get_metrics and rank_processes every second. .NET processes are detected by their diagnostic socket and reported supported: false.",
		Input:       schema(`{"type":"object","additionalProperties":false,"properties":{` + runtimeTargetSchema + `}}`),
		Annotations: readOnly,
	}, func(ctx context.Context, h *Host, s *Session, a runtimeTargetArgs) (*contract.Result, error) {
		return h.getRuntimeCollection(a)
	})
	t.PIDAt = PIDTop
	return t
}()

// runtimeView is what get_runtime_collection reports of one lifetime.
func (h *Host) runtimeView(p *sample.Process, ref string) (map[string]any, *managed.JVM, string) {
	rc := runtimeOf(h)
	det := managed.Detect(managed.Proc{Root: rc.procRoot, PID: p.PID}, p.Exe)
	version, vmVersion := "", ""
	reason, detail := det.Reason, det.Detail
	supported := det.Runtime == managed.RuntimeJVM && (reason == "" || reason == managed.ReasonNotReady)
	if det.PerfPath != "" {
		// A one-off look at the file's header and version strings says
		// whether it is readable; no metric is reported unless authorized.
		if _, j, err := managed.ReadPerf(det.PerfPath, p.StartTime.UnixMilli()); err != nil {
			reason = managed.ReasonOf(err)
			detail = reasonDetail(reason)
			supported = reason == managed.ReasonNotReady
		} else {
			version, vmVersion = j.Version, j.VMVersion
		}
	}
	rc.mu.Lock()
	a := rc.auth[p.ID()]
	var cp runtimeAuth
	if a != nil {
		cp = *a
	}
	rc.mu.Unlock()
	state := RuntimeDisabled
	enabled := false
	var last *managed.JVM
	switch {
	case a != nil && !cp.enabled:
		state = RuntimeStopping
	case a != nil:
		enabled = true
		state = cp.state
		if state == "" {
			state = RuntimeWaiting
		}
		if state != RuntimeCollecting && cp.reason != "" {
			reason, detail = cp.reason, cp.detail
		}
		if state == RuntimeCollecting {
			reason, detail = "", ""
			last = cp.last
			if version == "" && last != nil {
				version, vmVersion = last.Version, last.VMVersion
			}
		}
	case !supported && det.Runtime != managed.RuntimeNone:
		state = RuntimeUnavailable
	}
	if det.Runtime == managed.RuntimeNone {
		reason, detail = "", "no managed runtime (JVM or .NET) was found in this process"
	}
	out := map[string]any{
		"process_ref": ref, "pid": p.PID, "name": sample.Display(p.Name),
		"runtime": det.Runtime, "version": nilIfEmpty(version), "vm_version": nilIfEmpty(vmVersion),
		"supported": supported, "enabled": enabled, "state": state,
		"reason": nilIfEmpty(reason), "detail": nilIfEmpty(detail),
		"revision":      investigationOf(h).Revision(),
		"authorized_at": nil, "last_read_at": nil,
	}
	if a != nil {
		out["authorized_at"] = contract.TS(cp.since)
		if !cp.lastAt.IsZero() && last != nil {
			out["last_read_at"] = contract.TS(cp.lastAt)
		}
	}
	if det.Runtime == managed.RuntimeJVM {
		out["source"] = "HotSpot performance data (hsperfdata), read passively"
	}
	if det.Runtime == managed.RuntimeDotnet {
		out["source"] = ".NET diagnostic IPC socket (detected only)"
	}
	return out, last, state
}

func (h *Host) getRuntimeCollection(a runtimeTargetArgs) (*contract.Result, error) {
	p, ref, err := h.runtimeTarget(a)
	if err != nil {
		return nil, err
	}
	data, last, state := h.runtimeView(p, ref)
	if last != nil {
		data["values"] = jvmValuesJSON(last)
	}
	res := contract.NewResult("live", time.Time{}, data)
	switch {
	case state == RuntimeCollecting:
		res.NextAction = &contract.Action{Tool: "get_history", Arguments: map[string]any{
			"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"jvm_heap_used_bytes", "jvm_young_gc_count", "jvm_young_gc_time_ns"}, "mode": "summary"}}
	case state == RuntimeDisabled && data["supported"] == true:
		res.NextAction = &contract.Action{Tool: "set_runtime_collection", Arguments: map[string]any{
			"process_ref": ref, "enabled": true, "expected_revision": data["revision"], "operation_id": "runtime-" + randHex()}}
	}
	return res, nil
}

func randHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// jvmValuesJSON renders one read: the catalog metrics (decimal strings,
// as get_metrics), every space with used/committed/max and every
// collector, each naming its counters.
func jvmValuesJSON(j *managed.JVM) map[string]any {
	var p sample.Process
	setJVMSlots(&p, j)
	metrics := map[string]any{}
	for i := sample.PJVMHeapUsed; i <= sample.PJVMJITTime; i++ {
		if p.Has(i) {
			m := sample.ProcessMetrics[i]
			if v, ok := EncodeValue(m, p.Vals[i]); ok {
				metrics[m.ID] = v
			}
		}
	}
	spaces := []any{}
	for _, s := range j.Spaces {
		spaces = append(spaces, map[string]any{"name": s.Name, "used_bytes": contract.Int(s.Used), "committed_bytes": contract.Int(s.Committed), "max_bytes": contract.Int(s.Max), "counters": s.Counter + ".{used,capacity,maxCapacity}"})
	}
	cols := []any{}
	for _, c := range j.Collectors {
		cols = append(cols, map[string]any{"name": c.Name, "invocations": contract.Int(c.Invocations), "time_ns": contract.Int(c.TimeNS), "counters": c.Counter + ".{invocations,time}"})
	}
	return map[string]any{"metrics": metrics, "spaces": spaces, "collectors": cols, "gc_policy": nilIfEmpty(j.Policy), "hrt_frequency_hz": j.HRTFrequency}
}

// setRuntimeArgs are set_runtime_collection's arguments.
type setRuntimeArgs struct {
	operationArgs
	runtimeTargetArgs
	Enabled bool `json:"enabled"`
	WaitMS  *int `json:"wait_ms"`
}

func setRuntimeCollectionTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "set_runtime_collection",
		Title:       "Authorize managed-runtime collection",
		Description: "Starts or stops reading one live process's managed-runtime metrics (JVM heap, GC, threads, classes). Required: process_ref or pid, enabled, operation_id, expected_revision; enabling waits for a local user's confirmation (pending_confirmation).",
		Details: "The Linux form of set_dotnet_collection. The authorization belongs to this one lifetime (pid and start time): a restarted process is a new lifetime and starts disabled; it is never saved to or restored from configuration, and tracking does not grant it. " +
			"Disabling stops new reads at once (state stopping while a read finishes); enabling again waits until that read has stopped. Refused in Log view. A local user confirms with `inquest confirm OPERATION_ID` or in the TUI.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["operation_id","expected_revision","enabled"],"properties":{` + operationFields + `,
` + runtimeTargetSchema + `,
"enabled":{"type":"boolean","description":"true to authorize collection for this lifetime, false to revoke it"},
` + waitField(d.waitDefault()) + `}}`),
		Annotations: mutation,
	}, func(ctx context.Context, h *Host, s *Session, a setRuntimeArgs) (*contract.Result, error) {
		return h.setRuntimeCollection(ctx, s, a)
	})
	t.Delivery = DeliverOperation
	t.PIDAt = PIDTop
	return t
}

func (h *Host) setRuntimeCollection(ctx context.Context, s *Session, a setRuntimeArgs) (*contract.Result, error) {
	inv := investigationOf(h)
	rc := runtimeOf(h)
	raw := rawArgs(ctx)
	op, reply, err, done := inv.begin(ctx, s, "set_runtime_collection", a.OperationID, raw)
	if done {
		return reply, err
	}
	op.SetRunning()
	finish := func(err error) (*contract.Result, error) {
		op.Finish(nil, err)
		return inv.operationReply(op.Status())
	}
	p, ref, err := h.runtimeTarget(a.runtimeTargetArgs)
	if err != nil {
		return finish(err)
	}
	id := p.ID()
	var view map[string]any
	if a.Enabled {
		// Detection reads /proc and the file: done before taking the lock.
		view, _, _ = h.runtimeView(p, ref)
	}
	inv.mu.Lock()
	if err := inv.checkRevisionLocked(a.ExpectedRevision); err != nil {
		inv.mu.Unlock()
		return finish(err)
	}
	outcome := func(changed bool, state string) map[string]any {
		return map[string]any{"process_ref": ref, "pid": p.PID, "enabled": a.Enabled, "changed": changed, "state": state, "revision": inv.revisionLocked()}
	}
	rc.mu.Lock()
	cur := rc.auth[id]
	enabled := cur != nil && cur.enabled
	rc.mu.Unlock()
	if !a.Enabled {
		if !enabled {
			res := outcome(false, RuntimeDisabled)
			inv.mu.Unlock()
			op.Finish(res, nil)
			return inv.operationReply(op.Status())
		}
		// Revocation needs no confirmation and takes effect at once: no
		// new read starts; a read in progress finishes and is dropped.
		rc.mu.Lock()
		state := RuntimeDisabled
		if cur.reading {
			cur.enabled = false
			state = RuntimeStopping
		} else {
			delete(rc.auth, id)
		}
		rc.mu.Unlock()
		inv.rev++
		res := outcome(true, state)
		inv.mu.Unlock()
		op.Finish(res, nil)
		return inv.operationReply(op.Status())
	}
	if enabled {
		res := outcome(false, RuntimeCollecting)
		inv.mu.Unlock()
		op.Finish(res, nil)
		return inv.operationReply(op.Status())
	}
	if view["supported"] != true {
		inv.mu.Unlock()
		e := contract.Errorf(contract.CodeUnsupported, "runtime collection cannot be enabled for this process: %v", firstNonNil(view["detail"], "no supported managed runtime")).
			WithDetail("runtime", view["runtime"]).WithDetail("reason", view["reason"])
		e.Field = "/enabled"
		return finish(e)
	}
	confirm := map[string]any{"tool": "set_runtime_collection", "action": "enable runtime collection",
		"process_ref": ref, "pid": p.PID, "name": sample.Display(p.Name), "runtime": view["runtime"], "version": view["version"],
		"started_at": contract.TS(p.StartTime),
		"effect":     "inquest reads this process's runtime performance data (heap, GC, threads, classes) every second into its history, for this lifetime only; the process is not attached to or changed"}
	recheck := func() error {
		if _, _, err := h.ResolveLive(ref); err != nil {
			return err
		}
		return nil
	}
	apply := func() (map[string]any, error) {
		// Re-enabling waits until the previous reader has stopped.
		for {
			rc.mu.Lock()
			prev := rc.auth[id]
			if prev == nil || !prev.reading {
				rc.auth[id] = &runtimeAuth{id: id, enabled: true, since: time.Now(), state: RuntimeWaiting}
				rc.mu.Unlock()
				break
			}
			idle := prev.idle
			rc.mu.Unlock()
			<-idle
		}
		inv.rev++
		return outcome(true, RuntimeWaiting), nil
	}
	return inv.settle(s, op, a.ExpectedRevision, confirm, recheck, apply)
}

func firstNonNil(v, def any) any {
	if v == nil {
		return def
	}
	return v
}

// RuntimeAuthorized lists the lifetimes whose runtime collection is
// authorized now, by pid (for tests and the TUI).
func (h *Host) RuntimeAuthorized() []sample.Identity {
	rc := runtimeOf(h)
	if rc == nil {
		return nil
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]sample.Identity, 0, len(rc.auth))
	for id, a := range rc.auth {
		if a.enabled {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
