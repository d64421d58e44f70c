// Package ledger is the operations ledger (docs/investigation.md, "Tracking,
// profiles and the operations ledger"): every state-changing proc action carries a
// client-chosen operation_id; the ledger deduplicates it (identical
// arguments return the retained outcome, different arguments are
// rejected), keeps at most one MCP mutation in flight application-wide
// (BUSY), holds actions that need a local human decision in
// pending_confirmation until confirmed, denied or timed out (TIMEOUT 60 s
// after submission), and retains outcomes for 24 hours, at most 1,024.
// Outcomes live in memory: after a restart every id is OPERATION_UNKNOWN.
package ledger

import (
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// State is an operation's state (as get_operation reports it).
type State string

// Operation states.
const (
	Pending             State = "pending"
	Running             State = "running"
	PendingConfirmation State = "pending_confirmation"
	Succeeded           State = "succeeded"
	Failed              State = "failed"
)

// Ledger limits.
const (
	// Retention is how long a finished outcome stays readable.
	Retention = 24 * time.Hour
	// MaxOutcomes bounds the retained operations.
	MaxOutcomes = 1024
	// ConfirmTimeout is measured from submission, not from display.
	ConfirmTimeout = 60 * time.Second
)

// Status is an immutable copy of an operation's state for callers.
type Status struct {
	ID          string
	Tool        string
	State       State
	SubmittedAt time.Time
	FinishedAt  time.Time
	// Action describes what a pending_confirmation operation will do
	// (names, discard scope); immutable once set.
	Action map[string]any
	// Result is the outcome data of a succeeded operation.
	Result map[string]any
	// Err is the failure of a failed operation (code distinguishes
	// STATE_CONFLICT, CANCELLED, TIMEOUT, EXECUTION_FAILED...).
	Err *contract.Error
}

// Terminal reports whether the state is final.
func (s State) Terminal() bool { return s == Succeeded || s == Failed }

// Op is one operation. Its methods move it through its states; callers
// obtain Status copies.
type Op struct {
	l        *Ledger
	argsHash string
	st       Status
	confirm  func() (map[string]any, error)
	decided  chan bool
	done     chan struct{}
}

// Ledger holds the operations of one application (host) run.
type Ledger struct {
	mu    sync.Mutex
	ops   map[string]*Op
	order []string
	busy  *Op
	now   func() time.Time
	// ConfirmTimeout is ConfirmTimeout unless a test shortens it.
	ConfirmTimeout time.Duration
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{ops: map[string]*Op{}, now: time.Now, ConfirmTimeout: ConfirmTimeout}
}

// Begin registers operation id of tool with the hash of its arguments
// (contract.HashQuery over every argument). It returns:
//   - the existing operation and dup=true when id was seen with the same
//     tool and arguments (the caller returns its status, repeating nothing);
//   - STATE_CONFLICT when id was used with other arguments;
//   - BUSY when another mutation is still pending, running or awaiting
//     confirmation;
//   - otherwise a new Pending operation that holds the mutation slot until
//     it reaches a terminal state.
func (l *Ledger) Begin(id, tool, argsHash string) (op *Op, dup bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	if op := l.ops[id]; op != nil {
		if op.argsHash != argsHash || op.st.Tool != tool {
			return nil, false, contract.Errorf(contract.CodeStateConflict, "operation_id was already used with different arguments; choose a new operation_id").WithDetail("operation_id", id)
		}
		return op, true, nil
	}
	if l.busy != nil && !l.busy.st.State.Terminal() {
		e := contract.Errorf(contract.CodeBusy, "another state-changing operation is in progress; retry after it finishes").WithDetail("operation_id", l.busy.st.ID)
		e.NextAction = &contract.Action{Tool: "get_operation", Arguments: map[string]any{"operation_id": l.busy.st.ID}}
		return nil, false, e
	}
	op = &Op{l: l, argsHash: argsHash, done: make(chan struct{}), st: Status{ID: id, Tool: tool, State: Pending, SubmittedAt: l.now()}}
	l.ops[id] = op
	l.order = append(l.order, id)
	l.busy = op
	return op, false, nil
}

// InFlight returns the status of the mutation that holds the slot (the
// one a Begin now would be BUSY behind) and a channel closed when it
// reaches a terminal state; ok is false when no mutation is in flight.
func (l *Ledger) InFlight() (st Status, done <-chan struct{}, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy == nil || l.busy.st.State.Terminal() {
		return Status{}, nil, false
	}
	return l.busy.copyLocked(), l.busy.done, true
}

// Lookup finds a retained operation id of tool without registering
// anything: the operation when it was submitted with the same arguments
// (argsHash), STATE_CONFLICT when with other ones, nil and no error when
// the id is unknown (never seen, expired, or the host restarted).
func (l *Ledger) Lookup(id, tool, argsHash string) (*Op, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	op := l.ops[id]
	if op == nil {
		return nil, nil
	}
	if op.argsHash != argsHash || op.st.Tool != tool {
		return nil, contract.Errorf(contract.CodeStateConflict, "operation_id was already used with different arguments; choose a new operation_id").WithDetail("operation_id", id)
	}
	return op, nil
}

// Get returns the status of id, or OPERATION_UNKNOWN after expiry, a
// restart or for an id never seen.
func (l *Ledger) Get(id string) (Status, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	op := l.ops[id]
	if op == nil {
		return Status{}, contract.Errorf(contract.CodeOperationUnknown, "no operation with this operation_id is retained (never submitted here, expired after 24 h, or the host restarted); inspect the current state before submitting a new operation")
	}
	return op.copyLocked(), nil
}

// PendingConfirmations lists operations awaiting a local decision, oldest
// first.
func (l *Ledger) PendingConfirmations() []Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Status
	for _, id := range l.order {
		if op := l.ops[id]; op != nil && op.st.State == PendingConfirmation {
			out = append(out, op.copyLocked())
		}
	}
	return out
}

// Decide records the local human's decision on a pending_confirmation
// operation: confirm runs the action (which rechecks its preconditions),
// deny fails it with CANCELLED. Deciding an operation in another state is
// STATE_CONFLICT; an unknown id is OPERATION_UNKNOWN. It returns once the
// decision is applied.
func (l *Ledger) Decide(id string, confirm bool) (Status, error) {
	l.mu.Lock()
	op := l.ops[id]
	if op == nil {
		l.mu.Unlock()
		return Status{}, contract.Errorf(contract.CodeOperationUnknown, "no operation with this operation_id is retained")
	}
	if op.st.State != PendingConfirmation {
		st := op.copyLocked()
		l.mu.Unlock()
		return st, contract.Errorf(contract.CodeStateConflict, "the operation is %s, not awaiting confirmation", st.State)
	}
	ch := op.decided
	l.mu.Unlock()
	select {
	case ch <- confirm:
	case <-op.done:
	}
	<-op.done
	return l.Get(id)
}

// Status returns a copy of the operation's status.
func (op *Op) Status() Status {
	op.l.mu.Lock()
	defer op.l.mu.Unlock()
	return op.copyLocked()
}

// Done is closed when the operation reaches a terminal state.
func (op *Op) Done() <-chan struct{} { return op.done }

func (op *Op) copyLocked() Status {
	s := op.st
	return s
}

// Finish ends the operation with result (err nil) or err, releasing the
// mutation slot. Finishing twice keeps the first outcome.
func (op *Op) Finish(result map[string]any, err error) {
	op.l.mu.Lock()
	defer op.l.mu.Unlock()
	op.finishLocked(result, err)
}

func (op *Op) finishLocked(result map[string]any, err error) {
	if op.st.State.Terminal() {
		return
	}
	op.st.FinishedAt = op.l.now()
	if err != nil {
		op.st.State, op.st.Err = Failed, contract.AsError(err)
	} else {
		op.st.State, op.st.Result = Succeeded, result
	}
	if op.l.busy == op {
		op.l.busy = nil
	}
	close(op.done)
}

// AwaitConfirmation moves the operation to pending_confirmation with the
// immutable action description. A local confirm runs apply (which must
// recheck revisions and identities); deny or Cancel fail it with CANCELLED;
// no decision within ConfirmTimeout of submission fails it with TIMEOUT.
func (op *Op) AwaitConfirmation(action map[string]any, apply func() (map[string]any, error)) {
	op.l.mu.Lock()
	if op.st.State.Terminal() {
		op.l.mu.Unlock()
		return
	}
	op.st.State, op.st.Action, op.confirm = PendingConfirmation, action, apply
	op.decided = make(chan bool)
	deadline := op.st.SubmittedAt.Add(op.l.ConfirmTimeout)
	wait := deadline.Sub(op.l.now())
	op.l.mu.Unlock()
	go func() {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case ok := <-op.decided:
			if !ok {
				op.Finish(nil, contract.Errorf(contract.CodeCancelled, "the local user denied the operation"))
				return
			}
			op.l.mu.Lock()
			op.st.State = Running
			op.l.mu.Unlock()
			res, err := apply()
			op.Finish(res, err)
		case <-t.C:
			op.Finish(nil, contract.Errorf(contract.CodeTimeout, "no local confirmation within %d s of submission", int(op.l.ConfirmTimeout/time.Second)))
		case <-op.done:
		}
	}()
}

// Cancel fails a non-terminal operation with CANCELLED (the requesting
// connection went away before a decision); accepted outcomes are kept.
func (op *Op) Cancel(reason string) {
	op.l.mu.Lock()
	defer op.l.mu.Unlock()
	if op.st.State == PendingConfirmation || op.st.State == Pending {
		op.finishLocked(nil, contract.Errorf(contract.CodeCancelled, "%s", reason))
	}
}

// SetRunning marks the operation as applying.
func (op *Op) SetRunning() {
	op.l.mu.Lock()
	defer op.l.mu.Unlock()
	if !op.st.State.Terminal() {
		op.st.State = Running
	}
}

// expire drops finished operations older than Retention and the oldest
// finished ones beyond MaxOutcomes; unfinished ones are never dropped.
func (l *Ledger) expire() {
	now := l.now()
	keep := l.order[:0]
	extra := len(l.order) - MaxOutcomes
	for _, id := range l.order {
		op := l.ops[id]
		if op.st.State.Terminal() && (now.Sub(op.st.FinishedAt) > Retention || extra > 0) {
			delete(l.ops, id)
			extra--
			continue
		}
		keep = append(keep, id)
	}
	l.order = keep
}
