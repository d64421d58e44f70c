package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Delivery of the investigation tools: wait_ms is a
// bridge option, removed before dispatch of mutations so it never changes
// an operation's idempotency signature.
const (
	// waitSlice bounds one backend call of a bridge-side wait, well inside
	// the host's 10 s response deadline.
	waitSlice = 4 * time.Second
	// opPoll separates get_operation polls.
	opPoll = 25 * time.Millisecond
	// terminalGrace is how long past its wait budget the bridge keeps
	// polling a wait whose timeout_ms the budget covers; the host ends
	// such a wait at timeout_ms, so this bounds only a broken host.
	terminalGrace = 30 * time.Second
)

// splitWait removes wait_ms from args and returns the wait budget.
func splitWait(args json.RawMessage, def int) (json.RawMessage, time.Duration) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args, time.Duration(def) * time.Millisecond
	}
	w := def
	if raw, ok := m["wait_ms"]; ok {
		json.Unmarshal(raw, &w)
		delete(m, "wait_ms")
	}
	b, _ := json.Marshal(m)
	return b, time.Duration(w) * time.Millisecond
}

// operationHandler dispatches a mutation once and then polls only its
// operation id while it is pending or running, up to wait_ms. A pending
// local confirmation returns at once and is never polled or approved.
func operationHandler(call CallFunc, method string, def int) tool.Handler {
	return func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		args, budget := splitWait(args, def)
		args, opID := withOperationID(args)
		res, err := call(ctx, method, args)
		if err != nil {
			return nil, outcomeUnknown(err, opID)
		}
		deadline := time.Now().Add(budget)
		for res.NextAction != nil && res.NextAction.Tool == "get_operation" && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return res, nil
			case <-time.After(opPoll):
			}
			b, _ := json.Marshal(res.NextAction.Arguments)
			// A read-only poll: a cancel gets the host's prompt answer and
			// the connection (with this client's captures and jobs) is kept.
			next, err := call(ipc.WithReplyOnCancel(ctx), "get_operation", b)
			if ctx.Err() != nil {
				return nil, contract.AsError(ctx.Err())
			}
			if err != nil {
				return nil, outcomeUnknown(err, opID)
			}
			res = next
			if e := failedOperation(res); e != nil {
				return nil, e
			}
		}
		return res, nil
	}
}

// failedOperation is the error of a polled operation that ended failed
// within the call: the host's get_operation reports it as a successful
// read with data.state "failed" and data.error (retrieval succeeded), but
// the mutation the caller asked for failed, so its reply is that error
// (isError) with operation_id and state added to the error's details, as
// the host answers a mutation already known failed. nil for any other
// result.
func failedOperation(res *contract.Result) *contract.Error {
	if res == nil || res.Data == nil {
		return nil
	}
	b, err := json.Marshal(res.Data)
	if err != nil {
		return nil
	}
	var op struct {
		OperationID string          `json:"operation_id"`
		State       string          `json:"state"`
		Error       *contract.Error `json:"error"`
	}
	if json.Unmarshal(b, &op) != nil || op.State != "failed" || op.Error == nil || op.Error.Code == "" {
		return nil
	}
	e := *op.Error
	e.Details = map[string]any{"operation_id": op.OperationID, "state": op.State}
	for k, v := range op.Error.Details {
		e.Details[k] = v
	}
	return &e
}

// withOperationID gives a mutation without an operation_id (only the
// graph actions may omit it) a generated one before dispatch, so the
// caller can ask get_operation about it even when the reply is lost.
func withOperationID(args json.RawMessage) (json.RawMessage, string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args, ""
	}
	var id string
	if raw, ok := m["operation_id"]; ok {
		json.Unmarshal(raw, &id)
		return args, id
	}
	var r [12]byte
	rand.Read(r[:])
	id = "op-" + hex.EncodeToString(r[:])
	m["operation_id"], _ = json.Marshal(id)
	b, _ := json.Marshal(m)
	return b, id
}

// outcomeUnknown names the operation_id in an OUTCOME_UNKNOWN error (the
// host connection was lost after dispatch: the action may have taken
// effect; get_operation with this id tells after reconnecting).
func outcomeUnknown(err error, opID string) error {
	if e := contract.AsError(err); e != nil && e.Code == contract.CodeOutcomeUnknown && opID != "" {
		return e.WithDetail("operation_id", opID)
	}
	return err
}

// slicedHandler starts (or continues) a host-side wait (wait_condition,
// open_log) and keeps it company up to wait_ms in slices of at most
// waitSlice, so no single backend call nears its deadline; the host's
// next_action to the same tool with job_id continues it. When wait_ms
// covers a new wait's whole timeout_ms, the caller wants the outcome: the
// host ends the wait by timeout_ms at the latest (TIMEOUT), so the bridge
// keeps company until the terminal state instead of returning "running"
// by a few milliseconds; terminalGrace only bounds a host that never ends
// the wait. Argument checks are the host's.
func slicedHandler(call CallFunc, method string, def int) tool.Handler {
	return func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, contract.Errorf(contract.CodeInvalidArgument, "arguments could not be decoded")
		}
		_, budget := splitWait(args, def)
		var timeoutMS int
		json.Unmarshal(m["timeout_ms"], &timeoutMS)
		_, continued := m["job_id"]
		toTerminal := !continued && timeoutMS > 0 && time.Duration(timeoutMS)*time.Millisecond <= budget
		deadline := time.Now().Add(budget)
		if toTerminal {
			deadline = deadline.Add(terminalGrace)
		}
		slice := func() json.RawMessage {
			left := min(time.Until(deadline), waitSlice)
			if toTerminal {
				left = waitSlice
			}
			if left < 0 {
				left = 0
			}
			m["wait_ms"], _ = json.Marshal(left.Milliseconds())
			b, _ := json.Marshal(m)
			return b
		}
		// The host ends a wait slice on cancel and answers with the wait's
		// state, so a cancelled call keeps the connection and with it this
		// client's other captures and jobs (ipc.WithReplyOnCancel); the
		// bridge then cancels the wait the call was keeping company
		// (cancelWait), so its job, its wait slot and its worker end now
		// rather than at timeout_ms.
		rctx := ipc.WithReplyOnCancel(ctx)
		var jobID string
		if continued {
			json.Unmarshal(m["job_id"], &jobID)
		}
		res, err := call(rctx, method, slice())
		if id := runningJobOf(res, method); id != "" {
			jobID = id
		}
		for err == nil && res != nil && res.NextAction != nil && res.NextAction.Tool == method && time.Now().Before(deadline) && ctx.Err() == nil {
			id, _ := res.NextAction.Arguments["job_id"].(string)
			m = map[string]json.RawMessage{}
			m["job_id"], _ = json.Marshal(id)
			res, err = call(rctx, method, slice())
			if id := runningJobOf(res, method); id != "" {
				jobID = id
			}
		}
		if ctx.Err() != nil {
			cancelWait(ctx, call, jobID)
			return nil, contract.AsError(ctx.Err())
		}
		return res, err
	}
}

// runningJobOf is the job_id of a host-side wait that res leaves running
// (its next_action continues method with job_id), or "".
func runningJobOf(res *contract.Result, method string) string {
	if res == nil || res.NextAction == nil || res.NextAction.Tool != method {
		return ""
	}
	id, _ := res.NextAction.Arguments["job_id"].(string)
	return id
}

// cancelBound bounds the cancel_job a cancelled call sends for its job.
const cancelBound = 5 * time.Second

// cancelWait asks the host to cancel jobID (cancel_job), the job of a
// call the client cancelled (notifications/cancelled): the call's context
// is already done, so the request runs on a context without its
// cancellation, bounded by cancelBound. The host ends a cancelled wait
// promptly and answers once it has ended, so the connection's wait slot
// is free when the bridge drops the cancelled call. A job the host no
// longer knows (it ended meanwhile) or a failure to reach the host leaves
// nothing to do: the connection then is gone and with it the job.
func cancelWait(ctx context.Context, call CallFunc, jobID string) {
	if jobID == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelBound)
	defer cancel()
	b, _ := json.Marshal(map[string]string{"job_id": jobID})
	call(cctx, "cancel_job", b)
}
