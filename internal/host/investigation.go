package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/ledger"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/pelletier/go-toml/v2"
)

// investigation is the host's current investigation: the
// retained history, the working Tracking List and profile binding (both
// persisted in inquest.toml), the shared revision and the operations
// ledger. One per host.
type investigation struct {
	h      *Host
	store  *history.Store
	ledger *ledger.Ledger

	// mu serializes shared-state changes (tracking, profiles,
	// recording, the revision) and guards the fields below.
	mu       sync.Mutex
	rev      uint64
	tracking []string // normalized, sorted
	active   string   // active profile id, "" for none
	loadErr  string
	// fileState is the fingerprint (configState) of inquest.toml's
	// investigation state as this host last read or wrote it; a write
	// first checks the file still holds it.
	fileState string
	// writer says this host holds the config writer claim
	// (ipc.ClaimConfigWriter): only then may it write the file.
	writer bool

	// submitters maps operation id -> submitting session id (a session
	// cannot confirm its own request).
	submitters sync.Map

	// noLocalDecision is set by DisableLocalDecisions: no local user can
	// reach this host, so actions needing a confirmation fail at once.
	noLocalDecision atomic.Bool
}

// DisableLocalDecisions marks h as a host that no local decision can
// reach: an in-process host (`inquest mcp --in-process`,
// INQUEST_IN_PROCESS=1) serves only the process it lives in, so neither
// `inquest confirm` nor the TUI can ever decide its pending operations.
// Every later action that needs a local confirmation (removing a tracked
// name with history, deleting or loading a profile) then fails at once
// with UNSUPPORTED naming the shared host as the way out, instead of a
// pending_confirmation that could only end in TIMEOUT. Actions without a
// confirmation are unaffected.
func DisableLocalDecisions(h *Host) {
	if inv := investigationOf(h); inv != nil {
		inv.noLocalDecision.Store(true)
	}
}

// errNoLocalDecision is the outcome of a confirmation-needing action on a
// host marked with DisableLocalDecisions.
func errNoLocalDecision() error {
	return contract.Errorf(contract.CodeUnsupported, "this action needs a local confirmation, which an in-process host cannot receive (no `inquest confirm` or TUI can reach it); nothing changed. Use the shared host (drop --in-process / INQUEST_IN_PROCESS=1) and confirm with `inquest confirm`")
}

var investigations sync.Map // *Host -> *investigation

func investigationOf(h *Host) *investigation {
	if v, ok := investigations.Load(h); ok {
		return v.(*investigation)
	}
	return nil
}

// installInvestigation creates the host's investigation state (tracking,
// profiles, retained history, operations ledger) and its get_status section.
func installInvestigation(h *Host) {
	{
		inv := &investigation{h: h, store: history.NewStore(), ledger: ledger.New(), rev: 1}
		// Claimed before reading, so no other host can write the state
		// between this read and this host's first write.
		inv.writer = claimConfigWriter() == nil
		if f, err := config.Load(); err != nil {
			inv.loadErr = "inquest.toml could not be read; the tracking list starts empty and changes will fail until the file is fixed"
		} else {
			inv.tracking = normalizeNames(f.Tracking)
			inv.active = f.ActiveProfile
			inv.fileState = configState(&f)
		}
		inv.store.SetTracking(inv.tracking)
		investigations.Store(h, inv)
		inv.installHistory(h)
		h.AddStatus(func(m map[string]any) {
			m["history"] = map[string]any{
				"untracked_capacity_samples": history.UntrackedCapacity,
				"tracked_capacity_samples":   history.TrackedCapacity,
				"retained_lifetimes":         inv.store.RetainedLifetimes(),
				"encoded_bytes":              inv.store.MemoryBytes(),
			}
		})
	}
}

func normalizeNames(in []string) []string {
	out := make([]string, 0, len(in))
	for _, n := range in {
		if n = history.NormalizeName(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// revision renders the shared revision: an opaque counter prefixed by the
// host instance, so a revision from a restarted
// host never matches.
func (inv *investigation) revisionLocked() string {
	return inv.h.InstanceID[:8] + "-" + strconv.FormatUint(inv.rev, 10)
}

// Revision returns the current shared investigation revision.
func (inv *investigation) Revision() string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.revisionLocked()
}

func (inv *investigation) checkRevisionLocked(expected string) error {
	if cur := inv.revisionLocked(); expected != cur {
		e := contract.Errorf(contract.CodeStateConflict, "expected_revision is stale: the investigation changed (another client, the TUI or a restart); read the current state and decide again").WithDetail("current_revision", cur)
		e.Field = "/expected_revision"
		e.NextAction = &contract.Action{Tool: "get_tracking", Arguments: map[string]any{}}
		return e
	}
	return nil
}

// operationArgs are the fields every mutation carries.
type operationArgs struct {
	OperationID      string `json:"operation_id"`
	ExpectedRevision string `json:"expected_revision"`
}

// revisionChanging names the mutations that change the shared revision
// when they commit (persistLocked): the tracking list and profiles, and
// runtime collection authorization (runtime.go), which shares the revision.
var revisionChanging = map[string]bool{"update_tracking": true, "update_profile": true, "set_runtime_collection": true}

// MaxBusyWait bounds how long a mutation that carries expected_revision
// waits for another pending or running mutation to finish before it is
// BUSY.
const MaxBusyWait = 5 * time.Second

// begin registers a mutation in the ledger. When the id was seen with the
// same arguments it returns the retained outcome as the reply (done true).
//
// Another mutation in flight that changes the shared revision when it
// commits (revisionChanging) makes a call that carries expected_revision
// wait for it (up to MaxBusyWait, while it is pending or running) and
// then go on: if that mutation changed the revision, this call is
// STATE_CONFLICT (its revision was consumed), never BUSY with a retry
// that could only fail. A mutation awaiting a local confirmation (or
// still running after MaxBusyWait) leaves it BUSY with retryable false:
// once the other commits, the unchanged call is STATE_CONFLICT, so the
// caller follows get_operation, reads get_tracking and decides again. An
// expected_revision that is already stale is STATE_CONFLICT at once.
// Calls without expected_revision (stop_recording), and calls behind a
// mutation that leaves the revision alone (recording, graph actions),
// stay BUSY, retryable: nothing of theirs is consumed by the other one.
func (inv *investigation) begin(ctx context.Context, s *Session, tool, id string, raw json.RawMessage) (*ledger.Op, *contract.Result, error, bool) {
	var rev struct {
		ExpectedRevision string `json:"expected_revision"`
	}
	json.Unmarshal(raw, &rev)
	deadline := time.NewTimer(MaxBusyWait)
	defer deadline.Stop()
	op, dup, err := inv.ledger.Begin(id, tool, contract.HashQuery(raw))
	for contract.CodeOf(err) == contract.CodeBusy && rev.ExpectedRevision != "" {
		inv.mu.Lock()
		stale := inv.checkRevisionLocked(rev.ExpectedRevision)
		inv.mu.Unlock()
		if stale != nil {
			return nil, nil, stale, true
		}
		st, done, ok := inv.ledger.InFlight()
		if ok && !revisionChanging[st.Tool] {
			// It cannot consume this call's revision: BUSY, retryable.
			break
		}
		if ok && st.State != ledger.PendingConfirmation {
			select {
			case <-done:
				op, dup, err = inv.ledger.Begin(id, tool, contract.HashQuery(raw))
				continue
			case <-ctx.Done():
				return nil, nil, contract.AsError(ctx.Err()), true
			case <-deadline.C:
			}
		} else if !ok {
			op, dup, err = inv.ledger.Begin(id, tool, contract.HashQuery(raw))
			continue
		}
		e := contract.AsError(err)
		e.Retryable = false
		e.Message = "another state-changing operation is in progress (" + string(st.State) + ") against the same revision; once it commits, this expected_revision is stale and the unchanged call is STATE_CONFLICT: follow get_operation until it finishes, then read get_tracking and decide again"
		break
	}
	if err != nil {
		return nil, nil, err, true
	}
	if dup {
		res, err := inv.operationReply(op.Status())
		return nil, res, err, true
	}
	inv.submitters.Store(id, s.ID)
	return op, nil, nil, false
}

// operationReply renders an operation status as a mutation's reply: a
// succeeded operation returns its outcome, a failed one its error (the
// code tells conflict, cancellation, timeout and execution failure
// apart), a non-terminal one its state with a get_operation continuation.
func (inv *investigation) operationReply(st ledger.Status) (*contract.Result, error) {
	if st.State == ledger.Failed {
		e := *st.Err
		e.Details = map[string]any{"operation_id": st.ID, "state": string(st.State)}
		for k, v := range st.Err.Details {
			e.Details[k] = v
		}
		return nil, &e
	}
	res := contract.NewResult("live", time.Time{}, operationJSON(st))
	res.NextAction = operationContinuation(st)
	return res, nil
}

// operationContinuation is get_operation while the operation is pending or
// running; nil when terminal and for pending_confirmation (pending local
// confirmation is never polled automatically).
func operationContinuation(st ledger.Status) *contract.Action {
	if st.State == ledger.Pending || st.State == ledger.Running {
		return &contract.Action{Tool: "get_operation", Arguments: map[string]any{"operation_id": st.ID}}
	}
	return nil
}

func operationJSON(st ledger.Status) map[string]any {
	out := map[string]any{"operation_id": st.ID, "tool": st.Tool, "state": string(st.State), "submitted_at": contract.TS(st.SubmittedAt), "finished_at": nil, "outcome": nil, "error": nil}
	if !st.FinishedAt.IsZero() {
		out["finished_at"] = contract.TS(st.FinishedAt)
	}
	if st.Action != nil {
		out["confirmation"] = map[string]any{"required": true, "action": st.Action, "expires_at": contract.TS(st.SubmittedAt.Add(ledger.ConfirmTimeout)),
			"how": "a local user confirms in the inquest TUI or with `inquest confirm OPERATION_ID` on this machine; clients cannot confirm"}
	}
	if st.Result != nil {
		out["outcome"] = st.Result
	}
	if st.Err != nil {
		out["error"] = st.Err
	}
	return out
}

// operationIDArgs name one operation.
type operationIDArgs struct {
	OperationID string `json:"operation_id"`
}

var getOperationTool = define(tool.Tool{
	Name:        "get_operation",
	Title:       "Operation status",
	Description: "State of an action by operation_id (required): pending, running, pending_confirmation, succeeded (outcome) or failed (error). Kept 24 h.",
	Input:       schema(`{"type":"object","additionalProperties":false,"required":["operation_id"],"properties":{"operation_id":{"type":"string","minLength":1,"maxLength":128}}}`),
	Annotations: readOnly,
}, func(ctx context.Context, h *Host, s *Session, a operationIDArgs) (*contract.Result, error) {
	return investigationOf(h).getOperation(a)
})

func (inv *investigation) getOperation(a operationIDArgs) (*contract.Result, error) {
	st, err := inv.ledger.Get(a.OperationID)
	if err != nil {
		return nil, err
	}
	// A graph action's envelope keeps the displayed source its workspace
	// snapshot was taken from.
	res := contract.NewResult(inv.h.operationSource(st), time.Time{}, operationJSON(st))
	res.NextAction = operationContinuation(st)
	return res, nil
}

// Methods for the local human's decision. They are host methods, never
// MCP tools: no bridge definition reaches them, so an MCP client cannot
// call them, and no mutation accepts a "confirmed" argument (the strict
// schemas reject unknown fields). As defence in depth the host refuses a
// decision from a session marked with MarkMCPBridge, and from the session
// that submitted the operation.
const (
	// ConfirmMethod takes {operation_id, decision: "confirm"|"deny"}.
	ConfirmMethod = "confirm_operation"
	// PendingConfirmationsMethod lists operations awaiting a decision.
	PendingConfirmationsMethod = "list_pending_confirmations"
)

type mcpBridgeKey struct{}

// MarkMCPBridge marks s as the session of an MCP bridge connection; such a
// session can never decide a pending confirmation. The IPC host endpoint
// marks connections that identify as MCP bridges; the TUI and `inquest
// confirm` sessions stay unmarked.
func MarkMCPBridge(s *Session) { s.Value(mcpBridgeKey{}, func() any { return true }) }

func isMCPBridge(s *Session) bool { return s.Value(mcpBridgeKey{}, nil) != nil }

type localFaceKey struct{}

// MarkLocalFace marks s as the session of a TUI (the in-process session of
// a TUI host, or a view's connection): the person at it may decide the
// actions it requested itself in its confirmation overlay. Other sessions
// still cannot confirm their own requests.
func MarkLocalFace(s *Session) { s.Value(localFaceKey{}, func() any { return true }) }

func isLocalFace(s *Session) bool { return s.Value(localFaceKey{}, nil) != nil }

func notLocal(why string) error {
	return contract.Errorf(contract.CodePermissionDenied, "a pending confirmation is decided by a local user in the TUI or with `inquest confirm`; %s", why)
}

// decisionArgs are confirm_operation's arguments.
type decisionArgs struct {
	OperationID string `json:"operation_id"`
	Decision    string `json:"decision"`
}

func (inv *investigation) confirmOperation(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
	if isMCPBridge(s) {
		return nil, notLocal("MCP bridge connections cannot decide")
	}
	a, err := tool.Decode[decisionArgs](raw)
	if err != nil || a.OperationID == "" || (a.Decision != "confirm" && a.Decision != "deny") {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "confirm_operation takes operation_id and decision confirm|deny")
	}
	if sub, ok := inv.submitters.Load(a.OperationID); ok && sub == s.ID && !isLocalFace(s) {
		return nil, notLocal("the connection that requested an action cannot confirm it")
	}
	st, err := inv.ledger.Decide(a.OperationID, a.Decision == "confirm")
	if err != nil {
		return nil, err
	}
	return contract.NewResult("live", time.Time{}, operationJSON(st)), nil
}

func (inv *investigation) pendingConfirmations(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
	if isMCPBridge(s) {
		return nil, notLocal("MCP bridge connections cannot list them")
	}
	rows := []any{}
	for _, st := range inv.ledger.PendingConfirmations() {
		rows = append(rows, operationJSON(st))
	}
	return contract.NewResult("live", time.Time{}, map[string]any{"operations": rows}), nil
}

// settle ends a mutation whose preconditions hold; inv.mu is held on
// entry and released here. Without confirm it applies at once. With a
// confirmation action it parks the operation in pending_confirmation; a
// local decision later re-takes the lock, rechecks the revision and
// recheck (the target state), then applies. The requesting connection
// closing before the decision cancels it.
func (inv *investigation) settle(s *Session, op *ledger.Op, expected string, confirm map[string]any, recheck func() error, apply func() (map[string]any, error)) (*contract.Result, error) {
	if confirm == nil {
		res, err := apply()
		inv.mu.Unlock()
		op.Finish(res, err)
		return inv.operationReply(op.Status())
	}
	inv.mu.Unlock()
	if inv.noLocalDecision.Load() {
		op.Finish(nil, errNoLocalDecision())
		return inv.operationReply(op.Status())
	}
	op.AwaitConfirmation(confirm, func() (map[string]any, error) {
		inv.mu.Lock()
		defer inv.mu.Unlock()
		if err := inv.checkRevisionLocked(expected); err != nil {
			return nil, err
		}
		if recheck != nil {
			if err := recheck(); err != nil {
				return nil, err
			}
		}
		return apply()
	})
	s.OnClose(func() { op.Cancel("the requesting connection closed before a local decision") })
	return inv.operationReply(op.Status())
}

// claimConfigWriter claims inquest.toml's writer lock for this process
// (ipc.ClaimConfigWriter).
func claimConfigWriter() error {
	p, err := config.Path()
	if err != nil {
		return err
	}
	return ipc.ClaimConfigWriter(p)
}

// configState fingerprints the investigation state of f that hosts write
// (tracking list, active profile, saved profiles), as this host compares
// it before writing: their TOML encoding, as the file stores them, so an
// empty list and a missing one (omitted from the file) are the same.
func configState(f *config.File) string {
	b, _ := toml.Marshal(config.File{Tracking: normalizeNames(f.Tracking), ActiveProfile: f.ActiveProfile, Profiles: f.Profiles})
	return string(b)
}

// errConfigWriter is the STATE_CONFLICT of a change on a host that does
// not write inquest.toml: another inquest host (the shared one, or another
// process's in-process host) holds the writer claim, and keeps its own
// copy of the state, so this host's write would be lost (that host does
// not see it and overwrites it) or would change state behind its back.
func errConfigWriter(err error) error {
	var we *ipc.ConfigWriterError
	if !errors.As(err, &we) {
		return contract.Errorf(contract.CodeExecutionFailed, "inquest.toml's writer lock could not be taken (%v); nothing changed", err)
	}
	return contract.Errorf(contract.CodeStateConflict, "%s while this host runs: tracking and profile changes go through that host (drop --in-process / INQUEST_IN_PROCESS=1), or stop it first; nothing changed", we.Error()).
		WithDetail("writer_pid", we.PID).WithDetail("config_path", we.Path)
}

// persistLocked writes the working list and binding, then applies them to
// the history store; nothing changes when the write fails. Only the host
// holding the config writer claim writes (claimed at start, else now: a
// host that ran while another wrote takes the claim once that one ends);
// the file must still hold the state this host last read or wrote, else
// the change is STATE_CONFLICT and nothing is written.
func (inv *investigation) persistLocked(tracking []string, active string, edit func(f *config.File) error) (map[string]any, error) {
	if !inv.writer {
		if err := claimConfigWriter(); err != nil {
			return nil, errConfigWriter(err)
		}
		inv.writer = true
	}
	written, err := config.Update(func(f *config.File) error {
		if cur := configState(f); cur != inv.fileState {
			return contract.Errorf(contract.CodeStateConflict, "inquest.toml's tracking list or profiles were changed by another inquest process after this host read them; nothing changed. Restart this host to load the file (its changes were made without this host's history-loss confirmations)")
		}
		if edit != nil {
			if err := edit(f); err != nil {
				return err
			}
		}
		f.Tracking = tracking
		f.ActiveProfile = active
		return nil
	})
	if err != nil {
		if ce := contract.CodeOf(err); ce != "" {
			return nil, err
		}
		return nil, contract.Errorf(contract.CodeExecutionFailed, "inquest.toml could not be written; nothing changed")
	}
	inv.fileState = configState(&written)
	inv.tracking, inv.active = tracking, active
	inv.store.SetTracking(tracking)
	inv.rev++
	return nil, nil
}

func lossJSON(h *Host, loss []history.Loss) []any {
	out := make([]any, 0, len(loss))
	for _, l := range loss {
		out = append(out, map[string]any{"process_ref": h.Ref(l.ID), "pid": l.ID.PID, "name": l.Name, "samples_discarded": l.Discard})
	}
	return out
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "prof_" + hex.EncodeToString(b)
}

func sameNames(a, b []string) bool { return slices.Equal(normalizeNames(a), normalizeNames(b)) }

func lowerEq(a, b string) bool { return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b)) }
