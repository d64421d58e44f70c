package host

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// waitJobPrefix marks condition-wait job ids ("wait-N").
const waitJobPrefix = "wait-"

// installWaitJobs lets get_job and cancel_job (seed 000 section 7: job
// status carries condition evidence; cancellation is a failed CANCELLED
// outcome) serve condition waits. Ids with the wait- prefix are answered
// here; every other id goes to the job methods installed before this
// feature (the capture jobs), unchanged.
func (inv *investigation) installWaitJobs(h *Host) {
	h.mu.Lock()
	prevGet, prevCancel := h.methods["get_job"], h.methods["cancel_job"]
	h.mu.Unlock()
	h.Handle("get_job", func(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
		id := jobIDOf(raw)
		if !strings.HasPrefix(id, waitJobPrefix) && prevGet != nil {
			return prevGet(ctx, s, raw)
		}
		j, err := findWait(s, id)
		if err != nil {
			return nil, err
		}
		return j.jobView(), nil
	})
	h.Handle("cancel_job", func(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
		id := jobIDOf(raw)
		if !strings.HasPrefix(id, waitJobPrefix) && prevCancel != nil {
			return prevCancel(ctx, s, raw)
		}
		j, err := findWait(s, id)
		if err != nil {
			return nil, err
		}
		select {
		case <-j.done:
		default:
			j.cancelRequested.Store(true)
			j.cancel()
			<-j.done // a wait ends promptly on cancellation
		}
		return j.jobView(), nil
	})
}

func jobIDOf(raw json.RawMessage) string {
	var a struct {
		JobID string `json:"job_id"`
	}
	json.Unmarshal(raw, &a)
	return a.JobID
}

func findWait(s *Session, id string) (*waitJob, error) {
	ws := waitsOf(s)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.expireLocked()
	if j := ws.jobs[id]; j != nil {
		return j, nil
	}
	e := contract.Errorf(contract.CodeReferenceInvalid, "no job with this job_id on this connection (it expired or belongs to another connection)")
	e.Field = "/job_id"
	return nil, e
}

// jobView renders a wait in the get_job shape: state running, succeeded
// (result holds the evidence) or failed (result.error: TIMEOUT with the
// last observation, CANCELLED, PROCESS_EXITED). cancellation_requested
// (the capture jobs' field name) is true from the moment cancel_job asked
// a running wait to stop, in cancel_job's reply and every later get_job.
func (j *waitJob) jobView() *contract.Result {
	d := map[string]any{"job_id": j.id, "kind": "wait_condition", "state": "running", "condition": j.cond, "started_at": contract.TS(j.started),
		"finished_at": nil, "cancellation_requested": false, "native_work_running": false, "result_consumed": false, "capture_id": nil, "result": nil}
	select {
	case <-j.done:
		d["finished_at"] = contract.TS(j.finished)
		if j.err != nil {
			d["state"], d["result"] = "failed", map[string]any{"error": contract.AsError(j.err)}
		} else {
			d["state"], d["result"] = "succeeded", j.res.Data
		}
	default:
	}
	// Recorded when cancel_job (or disconnect) asked a running wait to
	// stop, so it stays true in every later get_job, whatever the outcome
	// (a wait that met its condition at that moment keeps its success).
	d["cancellation_requested"] = j.cancelRequested.Load()
	return contract.NewResult("live", time.Time{}, d)
}
