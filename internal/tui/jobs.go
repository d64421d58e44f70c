package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// capturePage is the first page of a finished capture job.
type capturePage struct {
	Rows  []map[string]json.RawMessage `json:"rows"`
	Next  *string                      `json:"next_cursor"`
	Total int
}

type jobData struct {
	JobID     string  `json:"job_id"`
	State     string  `json:"state"`
	CaptureID *string `json:"capture_id"`
	Result    *struct {
		CaptureID string `json:"capture_id"`
	} `json:"result"`
}

// runCaptureJob starts a capture job with method (start_capture,
// list_logs), follows it with get_job until it ends (ctx bounds the wait)
// and reads its first page of at most limit rows with read_capture.
func runCaptureJob(ctx context.Context, b Backend, method string, args map[string]any, limit int) (*capturePage, error) {
	res, err := call(ctx, b, method, args)
	if err != nil {
		return nil, err
	}
	var j jobData
	if err := decode(res, &j); err != nil {
		return nil, err
	}
	for j.State == "running" || j.State == "pending" || j.State == "queued" {
		select {
		case <-ctx.Done():
			call(context.Background(), b, "cancel_job", map[string]any{"job_id": j.JobID})
			return nil, contract.Errorf(contract.CodeTimeout, "the capture did not finish in time")
		case <-time.After(50 * time.Millisecond):
		}
		res, err := call(ctx, b, "get_job", map[string]any{"job_id": j.JobID, "wait_ms": 1000})
		if err != nil {
			return nil, err
		}
		if err := decode(res, &j); err != nil {
			return nil, err
		}
	}
	id := ""
	if j.CaptureID != nil {
		id = *j.CaptureID
	} else if j.Result != nil {
		id = j.Result.CaptureID
	}
	if j.State != "succeeded" || id == "" {
		return nil, fmt.Errorf("capture job ended %s", j.State)
	}
	res, err = call(ctx, b, "read_capture", map[string]any{"capture_id": id, "limit": limit})
	if err != nil {
		return nil, err
	}
	var p capturePage
	if err := decode(res, &p); err != nil {
		return nil, err
	}
	p.Total = len(p.Rows)
	// The page's coverage is the envelope's; listed counts the rows.
	var cov map[string]any
	if b, err := json.Marshal(res.Coverage); err == nil {
		json.Unmarshal(b, &cov)
	}
	if t, ok := number(cov["listed"]); ok {
		p.Total = int(t)
	}
	return &p, nil
}
