package host

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Decl is one proc tool declared once: Tool is its public definition
// (name, description, strict input schema, annotations, paging, job flag,
// arguments type; Handler nil) and Run is its host handler. The host
// registers Run under Tool.Name; the bridge publishes Tool and forwards
// schema-valid calls to the host, completing them as Delivery says and
// resolving pid arguments where PIDAt says. A proc tool's schema,
// arguments struct and handler live in one file.
type Decl struct {
	tool.Tool
	// Delivery is how the bridge completes a call (DeliverOnce when zero).
	Delivery DeliveryKind
	// PIDAt is where the tool takes a process_ref that a live pid may
	// replace (PIDNone when zero).
	PIDAt PIDPlace
	// PIDLeave, when set, says a top-level pid of these arguments is left
	// for Run to reject (the tool does not take one for this call), so the
	// error names pid rather than a resolved process_ref.
	PIDLeave func(args map[string]json.RawMessage) bool
	// PIDKept, when true, has the bridge pass the caller's pid beside the
	// process_ref it resolved, so Run can say the caller sent a pid.
	PIDKept bool
	// Run answers the tool on the host for session s with schema-valid
	// arguments. Failures are *contract.Error.
	Run func(ctx context.Context, h *Host, s *Session, args json.RawMessage) (*contract.Result, error)
}

// DeliveryKind says how the bridge completes a proc tool call.
type DeliveryKind int

const (
	// DeliverOnce forwards the call once and returns the host's answer.
	DeliverOnce DeliveryKind = iota
	// DeliverJob starts a capture job, waits up to wait_ms for its
	// terminal state and delivers the outcome with the first page of its
	// capture (the bridge options wait_ms, read and retain_capture never
	// reach the host); a job that failed within the wait is the call's
	// error.
	DeliverJob
	// DeliverJobStatus is DeliverJob for the job getter (get_job): a
	// failed job is the outcome under data.result.error, not an error.
	DeliverJobStatus
	// DeliverPages forwards a read of a capture and releases a one-pass
	// capture the bridge manages once its final page was read.
	DeliverPages
	// DeliverOperation forwards a mutation once and polls its operation
	// up to wait_ms while it is pending or running.
	DeliverOperation
	// DeliverSlices forwards a host-side wait (wait_condition, open_log)
	// in slices of at most 4 s up to wait_ms, continuing by job_id.
	DeliverSlices
)

// PIDPlace says where a tool takes a process_ref that a pid may replace.
type PIDPlace int

const (
	// PIDNone: the tool takes no pid.
	PIDNone PIDPlace = iota
	// PIDTop: pid beside process_ref at the top level.
	PIDTop
	// PIDTarget: pid inside the target object.
	PIDTarget
	// PIDTargets: pid inside each element of targets.
	PIDTargets
	// PIDMetrics: pid inside each element of metrics (graph sources).
	PIDMetrics
)

type rawArgsKey struct{}

// rawArgs is the schema-valid arguments of the call in ctx as the caller
// sent them (paging compares them with the first call's and names them in
// next_action); Decl.Run sets them.
func rawArgs(ctx context.Context) json.RawMessage {
	if b, ok := ctx.Value(rawArgsKey{}).(json.RawMessage); ok {
		return b
	}
	return json.RawMessage("{}")
}

// define declares a proc tool whose host handler takes its arguments
// decoded once into A (see tool.Define for the shape of A).
func define[A any](t tool.Tool, run func(ctx context.Context, h *Host, s *Session, args A) (*contract.Result, error)) Decl {
	t.Toolset = tool.Proc
	t.Args = reflect.TypeFor[A]()
	t.Handler = nil
	return Decl{Tool: t, Run: func(ctx context.Context, h *Host, s *Session, raw json.RawMessage) (*contract.Result, error) {
		a, err := tool.Decode[A](raw)
		if err != nil {
			return nil, err
		}
		res, err := run(context.WithValue(ctx, rawArgsKey{}, raw), h, s, a)
		return res, nameReference(err, raw)
	}}
}

// referenceArgs are the top-level arguments that name a host object; an
// unknown one is REFERENCE_INVALID.
var referenceArgs = []string{"capture_id", "job_id", "log_ref", "log_id", "profile_id", "process_ref"}

// nameReference points a REFERENCE_INVALID that names no argument at the
// one reference argument the caller sent (field /capture_id for an
// unknown capture_id), and an OPERATION_UNKNOWN at /operation_id, so every
// error names what the caller sent. Other
// errors, and calls with several or no reference arguments, are returned
// unchanged.
func nameReference(err error, raw json.RawMessage) error {
	e, ok := err.(*contract.Error)
	if !ok || e.Field != "" {
		return err
	}
	if e.Code == contract.CodeOperationUnknown {
		e.Field = "/operation_id"
		return err
	}
	if e.Code != contract.CodeReferenceInvalid {
		return err
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return err
	}
	found := ""
	for _, k := range referenceArgs {
		if _, has := m[k]; has {
			if found != "" {
				return err
			}
			found = k
		}
	}
	if found != "" {
		e.Field = "/" + found
	}
	return err
}
