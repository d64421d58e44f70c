package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// capturePage is one page of a finished capture (read_capture): its
// rows, next_cursor (nil on the last page), ID, the capture_id it was
// read with (the one further pages are read with), and Total, the row count of the whole capture (data.page.total, or
// coverage.listed; -1 when the host did not say).
type capturePage struct {
	Rows []map[string]json.RawMessage `json:"rows"`
	Next *string                      `json:"next_cursor"`
	ID   string                       `json:"-"`
	Page struct {
		Total *int `json:"total"`
	} `json:"page"`
	Total int `json:"-"`
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
	return readCapturePage(ctx, b, id, "", limit)
}

// readCapturePage reads one page of at most limit rows of capture id with
// read_capture: the first page when cursor is "", else the page that
// cursor (the previous page's next_cursor) names. Failures are the host's
// (CURSOR_INVALID or REFERENCE_INVALID once the capture expired).
func readCapturePage(ctx context.Context, b Backend, id, cursor string, limit int) (*capturePage, error) {
	args := map[string]any{"capture_id": id, "limit": limit}
	if cursor != "" {
		args["cursor"] = cursor
	}
	res, err := call(ctx, b, "read_capture", args)
	if err != nil {
		return nil, err
	}
	var p capturePage
	if err := decode(res, &p); err != nil {
		return nil, err
	}
	p.ID = id
	p.Total = -1
	if p.Page.Total != nil {
		p.Total = *p.Page.Total
	} else {
		// The envelope's coverage: listed counts the capture's rows.
		var cov map[string]any
		if b, err := json.Marshal(res.Coverage); err == nil {
			json.Unmarshal(b, &cov)
		}
		if t, ok := number(cov["listed"]); ok {
			p.Total = int(t)
		}
	}
	return &p, nil
}
