package perf

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/tool"
)

// CaptureTools returns the capture_and_<operation> tools (Linux only; none
// elsewhere): each runs a target under a provider and feeds the named
// analysis operation with what it captured.
func CaptureTools(rt *Runtime) []tool.Tool { return rt.captureTools() }

// CaptureProviderKinds lists the provider kinds the capture tools of this
// build accept.
func CaptureProviderKinds() []string { return captureProviderKinds() }

// ReleaseCaptures removes the scratch directories of this Runtime's
// captures (their live next_page handoffs then fail with INPUT_CHANGED;
// preserved evidence is unaffected).
func (rt *Runtime) ReleaseCaptures() { rt.releaseCaptures() }

// KeepCapture takes the scratch directory holding path (a capture's
// data.sources path) out of this Runtime's scratch list, so neither
// ReleaseCaptures nor later captures remove it, and returns it; "" when
// path is in no scratch directory of this Runtime. The CLI keeps the files
// of a capture whose preservation failed.
func (rt *Runtime) KeepCapture(path string) string { return rt.keepCapture(path) }

// ProcessNamer names a running capture workload for the proc tools: given
// the pid the capture started and its start time (clock ticks since boot,
// /proc/PID/stat field 22), it returns the process_ref the proc host
// issues for exactly that lifetime, once the host has sampled it (so
// get_process_info, get_history and wait_condition accept the ref at
// once). An error says why it cannot (no proc host, the lifetime ended
// first); a retryable COLLECTION_FAILED means "not sampled yet" and the
// capture asks again while the workload runs. ctx is never cancelled
// mid-call by the capture (a proc call cancelled after dispatch would drop
// the bridge's connection): the call must end on its own once the
// lifetime has ended.
type ProcessNamer func(ctx context.Context, pid int, startTicks uint64) (processRef string, err error)

// SetProcessNamer sets how captures name their workloads' lifetimes
// (data.capture.executions[].process_ref and the execution progress
// reports). Without one (fn nil) every process_ref is null with reason
// unavailable, e.g. "this server does not serve the proc toolset". Call it
// before the first capture.
func (rt *Runtime) SetProcessNamer(fn ProcessNamer, unavailable string) {
	rt.sessMu.Lock()
	defer rt.sessMu.Unlock()
	rt.namer, rt.noNamer = fn, unavailable
}

// processNamer returns the namer and, when there is none, why.
func (rt *Runtime) processNamer() (ProcessNamer, string) {
	rt.sessMu.Lock()
	defer rt.sessMu.Unlock()
	if rt.namer == nil && rt.noNamer == "" {
		return nil, "no proc host is connected to this runtime, so no process_ref names the workload (its pid does while it runs)"
	}
	return rt.namer, rt.noNamer
}

// Execution events of ExecutionEvent.Event.
const (
	// ExecutionStarted: the workload runs (sent once it is named, or once
	// naming failed).
	ExecutionStarted = "started"
	// ExecutionEnded: the workload's process was reaped.
	ExecutionEnded = "ended"
)

// ExecutionEventMetaKey is the _meta key of a capture's progress
// notification that carries its ExecutionEvent as a JSON object.
const ExecutionEventMetaKey = "inquest/execution"

// ExecutionEvent reports one workload execution of a capture starting or
// ending. MCP sends it as a progress notification (the message says it in
// words; _meta[ExecutionEventMetaKey] holds these fields); the CLI prints
// it on stderr.
type ExecutionEvent struct {
	// Event is ExecutionStarted or ExecutionEnded.
	Event string `json:"event"`
	// Execution is the 1-based ordinal of this execution within the call;
	// Executions is how many the call runs.
	Execution  int `json:"execution"`
	Executions int `json:"executions"`
	// Case is the experiment case ("target" without an experiment); Block
	// is the 0-based block, as in the executions rows.
	Case  string `json:"case"`
	Block int    `json:"block"`
	// PID is the process the capture started (the workload, or the
	// collector that runs it: go test, perf record, py-spy).
	PID int `json:"pid"`
	// ProcessRef is the proc toolset's reference to that lifetime, null
	// when it has none; ProcessRefReason then says why.
	ProcessRef       *string `json:"process_ref"`
	ProcessRefReason string  `json:"process_ref_reason,omitempty"`
	// Termination, ExitCode, Signal and WallTimeNS describe how an ended
	// execution ended (as in the executions rows); absent on started.
	Termination string `json:"termination,omitempty"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	Signal      string `json:"signal,omitempty"`
	WallTimeNS  int64  `json:"wall_time_ns,omitempty"`
}

type eventsKey struct{}

// WithExecutionEvents returns ctx carrying fn, called by the capture tools
// as each workload execution starts and ends (in that order, from one
// goroutine at a time); the CLI prints them.
func WithExecutionEvents(ctx context.Context, fn func(ExecutionEvent)) context.Context {
	return context.WithValue(ctx, eventsKey{}, fn)
}

// Message says e in one line: "execution 2/6 started (case a, block 0):
// pid 4242, process_ref pr_…" or "... ended (...): pid 4242 exited 0
// after 1.204 s".
func (e ExecutionEvent) Message() string {
	head := fmt.Sprintf("execution %d/%d %s (case %s, block %d): pid %d", e.Execution, e.Executions, e.Event, e.Case, e.Block, e.PID)
	if e.Event == ExecutionEnded {
		how := e.Termination
		switch {
		case e.Termination == "exited" && e.ExitCode != nil:
			how = "exited " + strconv.Itoa(*e.ExitCode)
		case e.Signal != "":
			how = e.Termination + " (" + e.Signal + ")"
		}
		return fmt.Sprintf("%s %s after %s", head, how, time.Duration(e.WallTimeNS).Round(time.Millisecond))
	}
	if e.ProcessRef != nil {
		return head + ", process_ref " + *e.ProcessRef
	}
	return head + ", process_ref unknown: " + e.ProcessRefReason
}

// CaptureOperationProviders maps each capture operation (the
// capture_and_<operation> suffix, e.g. "summarize_executions") to the
// provider kinds it accepts that this build offers, in ProviderKinds
// order. It is empty where captures are not offered (non-Linux).
func CaptureOperationProviders() map[string][]string { return captureOperationProviders() }
