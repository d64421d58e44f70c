package host

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/tool"
)

// trackingScope is the scope statement every tracking reply carries
// (docs/investigation.md, "Tracking, profiles and the operations ledger").
const trackingScope = "every live and future process whose name matches a tracked name (case-insensitive; the name is the executable's base name, else argv[0], else the command name, and the command name also matches; any name a lifetime had before an exec counts), and their observed descendants"

// TrackingPageRows is get_tracking's default page of matching identities
// (about 350 bytes each, so a default page stays far inside an agent's
// context); limit may ask for up to MaxPageRows.
const TrackingPageRows = 100

var getTrackingTool = define(tool.Tool{
	Name:        "get_tracking",
	Title:       "Tracking list",
	Description: "The Tracking List (process names whose lifetimes and descendants keep long history), the investigation revision and the matching identities, paged. No required arguments.",
	Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"matching identities per page, default 100"},
"cursor":{"type":"string","minLength":1,"maxLength":4096}}}`),
	Annotations: readOnly,
	Paging:      tool.CursorPaging,
}, func(ctx context.Context, h *Host, s *Session, a pagedArgs) (*contract.Result, error) {
	return investigationOf(h).getTracking(ctx, s, a)
})

// getTracking answers get_tracking: the list, revision, scope and active
// profile on every page, and the matching retained identities paged
// (limit, cursor) from one frozen listing: data.matching is the page,
// the envelope's coverage {total, offset, returned}, data.next_cursor and
// next_action the call for the next page.
func (inv *investigation) getTracking(ctx context.Context, s *Session, pa pagedArgs) (*contract.Result, error) {
	raw := rawArgs(ctx)
	if pa.Limit <= 0 {
		pa.Limit = TrackingPageRows
	}
	if pa.Cursor != "" {
		l, off, err := inv.h.resumeList(s, "get_tracking", raw, pa.Cursor)
		if err != nil {
			return nil, err
		}
		return inv.trackingPage(ctx, l, raw, off, pa.Limit)
	}
	inv.mu.Lock()
	names := slices.Clone(inv.tracking)
	rev := inv.revisionLocked()
	active := inv.active
	loadErr := inv.loadErr
	inv.mu.Unlock()
	matching := []json.RawMessage{}
	for _, l := range inv.store.Tracked() {
		lifecycle, by := "live", "descendant"
		if l.Ended {
			lifecycle = "unknown"
		}
		for _, n := range names {
			if l.MatchesAny(n) {
				by = "name"
			}
		}
		b, err := json.Marshal(map[string]any{"process_ref": inv.h.Ref(l.ID), "pid": l.ID.PID, "name": l.Name, "lifecycle": lifecycle, "tracked_by": by,
			"history": map[string]any{"retained_from": contract.TS(l.From), "retained_to": contract.TS(l.To), "samples": l.Samples, "capacity_samples": l.Capacity}})
		if err != nil {
			return nil, contract.Errorf(contract.CodeInternalError, "a row could not be encoded").Permanent()
		}
		matching = append(matching, b)
	}
	snap := inv.h.sampler.Latest()
	meta := map[string]any{"revision": rev, "names": names, "scope": trackingScope, "active_profile_id": nilIfEmpty(active),
		"snapshot_at": contract.TS(snap.Time), "load_warning": loadErr}
	cov := map[string]any{}
	if p := inv.store.PrunedLifetimes(); p.Tracked > 0 {
		cov["tracked_lifetimes_pruned"] = p.Tracked
		meta["pruned_warning"] = prunedTrackedWarning(p)
	}
	l := &frozenList{rows: matching, coverage: cov, meta: meta}
	size := 0
	for _, b := range matching {
		size += tool.RowCost(b)
	}
	if len(matching) > pa.Limit || size > tool.RowBudget(ctx) {
		// Only a listing of several pages is kept for its cursors.
		l = frozenOf(s).put("track", matching, cov, meta)
	}
	return inv.trackingPage(ctx, l, raw, 0, pa.Limit)
}

// trackingPage renders one page of a frozen tracking listing.
func (inv *investigation) trackingPage(ctx context.Context, l *frozenList, raw json.RawMessage, off, limit int) (*contract.Result, error) {
	data, action, byBytes, err := inv.h.listPage(ctx, "get_tracking", l, raw, off, limit)
	if err != nil {
		return nil, err
	}
	data["matching"] = data["rows"]
	delete(data, "rows")
	delete(data, "capture_id")
	delete(data, "snapshot_at")
	delete(data, "load_warning")
	delete(data, "pruned_warning")
	ts, _ := l.meta["snapshot_at"].(*contract.Timestamp)
	res := contract.NewResult("live", time.Time{}, data)
	res.CapturedAt = ts
	if w, _ := l.meta["load_warning"].(string); w != "" {
		res.Warn(w)
	}
	if w, _ := l.meta["pruned_warning"].(string); w != "" {
		res.Warn(w)
		res.Status = contract.StatusPartial
	}
	res.Coverage = liftCoverage(data)
	res.NextAction = action
	pageEnvelope(res, byBytes)
	return res, nil
}

// updateTrackingArgs are update_tracking's arguments (a pid is resolved
// to process_ref by the bridge).
type updateTrackingArgs struct {
	operationArgs
	Action      string `json:"action"`
	ProcessName string `json:"process_name"`
	ProcessRef  string `json:"process_ref"`
	PID         *int64 `json:"pid"`
	WaitMS      *int   `json:"wait_ms"`
}

func updateTrackingTool(d Delivery) Decl {
	t := define(tool.Tool{
		Name:        "update_tracking",
		Title:       "Change the tracking list",
		Description: "Adds or removes one tracked name. Required: operation_id, expected_revision, action, and one of process_name, process_ref or pid; a removal that discards history waits for a local user (pending_confirmation).",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["operation_id","expected_revision","action"],"properties":{` + operationFields + `,
"action":{"type":"string","enum":["add","remove"]},
"process_name":{"type":"string","minLength":1,"maxLength":256,"description":"process name (case-insensitive)"},
"process_ref":{"type":"string","minLength":1,"maxLength":128,"description":"its process name is used"},
` + pidField + `,
` + waitField(d.waitDefault()) + `}}`),
		Annotations: mutation,
	}, func(ctx context.Context, h *Host, s *Session, a updateTrackingArgs) (*contract.Result, error) {
		return investigationOf(h).updateTracking(ctx, s, a)
	})
	t.Delivery = DeliverOperation
	t.PIDAt = PIDTop
	t.PIDKept = true
	return t
}

// withoutKey is raw (a JSON object) without its top-level key.
func withoutKey(raw json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return raw
	}
	delete(m, key)
	b, _ := json.Marshal(m)
	return b
}

func (inv *investigation) updateTracking(ctx context.Context, s *Session, a updateTrackingArgs) (*contract.Result, error) {
	raw := rawArgs(ctx)
	if (a.ProcessName == "") == (a.ProcessRef == "" && a.PID == nil) {
		e := contract.Errorf(contract.CodeInvalidArgument, "give exactly one of process_name and process_ref (a pid counts as a process_ref)")
		e.Field = "/process_name"
		return nil, e
	}
	// The idempotency signature is the caller's arguments: with a pid,
	// the process_ref the bridge resolved it to is left out, so a repeat
	// matches the retained operation even after the process exited.
	sig := raw
	if a.PID != nil {
		sig = withoutKey(raw, "process_ref")
		if a.ProcessRef == "" {
			// The bridge could not resolve the pid (the process exited) or
			// a host-side caller sent a pid: a known operation_id answers
			// with its retained outcome, else the pid is resolved here.
			known, err := inv.ledger.Lookup(a.OperationID, "update_tracking", contract.HashQuery(sig))
			if err != nil {
				return nil, err
			}
			if known != nil {
				return inv.operationReply(known.Status())
			}
			res, err := inv.h.resolvePID(ctx, s, json.RawMessage(`{"pid":`+strconv.FormatInt(*a.PID, 10)+`}`))
			if err != nil {
				return nil, err
			}
			a.ProcessRef, _ = res.Data.(map[string]any)["process_ref"].(string)
		}
	}
	op, reply, err, done := inv.begin(ctx, s, "update_tracking", a.OperationID, sig)
	if done {
		return reply, err
	}
	op.SetRunning()
	// Resolve the name: a process_ref gives its captured name; it must be
	// a lifetime this host knows (live or retained), never a PID lookup.
	name := history.NormalizeName(a.ProcessName)
	via := "process_name"
	if a.ProcessRef != "" {
		via = "process_ref"
		if a.PID != nil {
			via = "pid" // the bridge resolved the caller's pid to ProcessRef
		}
		id, err := inv.h.ParseRef(a.ProcessRef)
		if err == nil {
			if _, lt, ok := inv.store.Process(id); ok {
				name = history.NormalizeName(lt.Name)
			} else if p := inv.h.sampler.Latest().Lookup(id); p != nil {
				name = history.NormalizeName(p.Name)
			} else {
				err = contract.Errorf(contract.CodeReferenceInvalid, "this process_ref names no live or retained lifetime; list processes again")
			}
		}
		if err != nil {
			contract.AsError(err).Field = "/process_ref"
			op.Finish(nil, err)
			return inv.operationReply(op.Status())
		}
	}
	if name == "" {
		err := contract.Errorf(contract.CodeInvalidArgument, "the process name is empty after normalization")
		err.Field = "/process_name"
		op.Finish(nil, err)
		return inv.operationReply(op.Status())
	}
	inv.mu.Lock()
	if err := inv.checkRevisionLocked(a.ExpectedRevision); err != nil {
		inv.mu.Unlock()
		op.Finish(nil, err)
		return inv.operationReply(op.Status())
	}
	if err := recordingConflict(inv.h); err != nil {
		inv.mu.Unlock()
		op.Finish(nil, err)
		return inv.operationReply(op.Status())
	}
	outcome := func(changed bool) map[string]any {
		return map[string]any{"action": a.Action, "root_name": name, "resolved_from": via, "changed": changed,
			"scope": trackingScope, "names": slices.Clone(inv.tracking), "revision": inv.revisionLocked()}
	}
	present := slices.Contains(inv.tracking, name)
	if (a.Action == "add" && present) || (a.Action == "remove" && !present) {
		// Adding an existing name or removing an absent one is a
		// successful no-op (the revision does not change).
		res := outcome(false)
		inv.mu.Unlock()
		op.Finish(res, nil)
		return inv.operationReply(op.Status())
	}
	var next []string
	if a.Action == "add" {
		next = normalizeNames(append(slices.Clone(inv.tracking), name))
	} else {
		next = slices.DeleteFunc(slices.Clone(inv.tracking), func(n string) bool { return n == name })
	}
	apply := func() (map[string]any, error) {
		// A recording may have started while a confirmation was pending.
		if err := recordingConflict(inv.h); err != nil {
			return nil, err
		}
		if _, err := inv.persistLocked(next, inv.active, nil); err != nil {
			return nil, err
		}
		return outcome(true), nil
	}
	var confirm map[string]any
	if a.Action == "remove" {
		if loss := inv.store.PreviewTracking(next); len(loss) > 0 {
			confirm = map[string]any{"tool": "update_tracking", "action": "remove", "name": name,
				"discard": lossJSON(inv.h, loss), "effect": "these lifetimes fall back to 120 retained samples; older samples are discarded and cannot be restored"}
		}
	}
	return inv.settle(s, op, a.ExpectedRevision, confirm, nil, apply)
}
