package contract

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// APIVersion is the envelope version, "1.0" (api_version of every result).
const APIVersion = "1.0"

// Status is the completeness of a successful result.
type Status string

// Result statuses: partial always comes with warnings and coverage.
const (
	StatusComplete Status = "complete"
	StatusPartial  Status = "partial"
)

// Action is a bounded continuation descriptor: the exact next tool call.
type Action struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// Result is the success envelope of every tool (docs/agents.md,
// "Answers that fit a context window"). Data is tool-specific and must marshal to a JSON object.
// Timestamps are RFC 3339 with offset; integer metric quantities inside
// Data are decimal strings.
type Result struct {
	APIVersion        string     `json:"api_version"`
	BackendInstanceID string     `json:"backend_instance_id,omitempty"`
	Source            string     `json:"source,omitempty"`
	CapturedAt        *Timestamp `json:"captured_at,omitempty"`
	CaptureStartedAt  *Timestamp `json:"capture_started_at,omitempty"`
	CaptureFinishedAt *Timestamp `json:"capture_finished_at,omitempty"`
	Status            Status     `json:"status"`
	Warnings          []string   `json:"warnings"`
	Coverage          any        `json:"coverage"`
	Data              any        `json:"data"`
	NextAction        *Action    `json:"next_action"`
}

// NewResult returns a complete result for source with data, captured at t
// (zero t leaves captured_at out).
func NewResult(source string, t time.Time, data any) *Result {
	r := &Result{APIVersion: APIVersion, Source: source, Status: StatusComplete, Warnings: []string{}, Coverage: map[string]any{}, Data: data}
	if !t.IsZero() {
		ts := Timestamp(t)
		r.CapturedAt = &ts
	}
	return r
}

// Warn marks r partial and appends a warning. Callers also set Coverage.
func (r *Result) Warn(format string) *Result {
	r.Status = StatusPartial
	r.Warnings = append(r.Warnings, format)
	return r
}

// Failure is the envelope of a failed tool result: {"error": {...}}.
type Failure struct {
	Error *Error `json:"error"`
}

// Marshal encodes a handler outcome as the single JSON object the tool
// returns both as structuredContent and as its text block. It reports
// whether the object is an error envelope.
func Marshal(res *Result, err error) (body []byte, isError bool) {
	if err != nil || res == nil {
		e := AsError(err)
		if e == nil {
			e = Errorf(CodeInternalError, "handler returned no result").Permanent()
		}
		b, _ := json.Marshal(Failure{Error: e})
		return b, true
	}
	if res.APIVersion == "" {
		res.APIVersion = APIVersion
	}
	if res.Warnings == nil {
		res.Warnings = []string{}
	}
	if res.Coverage == nil {
		res.Coverage = map[string]any{}
	}
	if res.Status == "" {
		res.Status = StatusComplete
	}
	b, mErr := marshalResult(res)
	if mErr != nil {
		b, _ = json.Marshal(Failure{Error: Errorf(CodeInternalError, "result could not be encoded").Permanent()})
		return b, true
	}
	return b, false
}

// DataAppender is result data that appends its own JSON encoding to b:
// the bytes encoding/json writes for it (compact, HTML-safe escaping), so
// Marshal's output is the same either way. A paged listing implements it
// to copy its rows, which it encoded itself, without encoding/json
// validating and compacting each of them again.
type DataAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// dataTail is how json.Marshal ends a Result with neither data nor
// next_action: the last two members.
const dataTail = `,"data":null,"next_action":null}`

// marshalResult is json.Marshal(res), with res.Data appended by its own
// AppendJSON when it is a DataAppender.
func marshalResult(res *Result) ([]byte, error) {
	d, ok := res.Data.(DataAppender)
	if !ok {
		return json.Marshal(res)
	}
	r := *res
	r.Data, r.NextAction = nil, nil
	b, err := json.Marshal(&r)
	if err != nil || !bytes.HasSuffix(b, []byte(dataTail)) {
		return json.Marshal(res)
	}
	b = append(b[:len(b)-len(dataTail)], `,"data":`...)
	if b, err = d.AppendJSON(b); err != nil {
		return nil, err
	}
	next, err := json.Marshal(res.NextAction)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"next_action":`...)
	b = append(b, next...)
	return append(b, '}'), nil
}

// Timestamp is a time encoded as RFC 3339 with nanoseconds and offset.
type Timestamp time.Time

// MarshalJSON encodes t as RFC 3339 (UTC, nanosecond precision).
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(time.RFC3339Nano) + `"`), nil
}

// UnmarshalJSON decodes an RFC 3339 string.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = Timestamp(v)
	return nil
}

// TS returns a *Timestamp for t, or nil for the zero time.
func TS(t time.Time) *Timestamp {
	if t.IsZero() {
		return nil
	}
	ts := Timestamp(t)
	return &ts
}

// Uint encodes an integer metric quantity as a decimal string (exact in
// JavaScript clients, whose numbers are float64).
func Uint(v uint64) string { return strconv.FormatUint(v, 10) }

// Int encodes a signed integer quantity as a decimal string.
func Int(v int64) string { return strconv.FormatInt(v, 10) }
