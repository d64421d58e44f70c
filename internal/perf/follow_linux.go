//go:build linux

package perf

import (
	"context"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/perf/capture"
	"github.com/inquest-dev/inquest/internal/tool"
)

// A capture names each workload execution while it runs: when the process
// starts, the capture asks the proc host for the process_ref of exactly
// that lifetime (pid and start time; ProcessNamer) and reports
// ExecutionStarted with pid and process_ref (an MCP progress notification
// when the caller sent a progress token; a CLI line), so the caller can
// point get_process_info, get_history, open_files or wait_condition at
// the workload while the capture call is still running. ExecutionEnded
// follows when the process is reaped. The executions rows carry the same
// pid and process_ref.

// followKey carries a capture call's follower in its context.
type followKey struct{}

// follower announces and names the workload executions of one capture
// call; the provider runners label each execution (case, block) before
// running it through run.
type follower struct {
	namer   ProcessNamer
	noNamer string
	// total is how many executions the call runs; n how many started.
	total, n int
	// caseName and block label the next execution.
	caseName string
	block    int
	events   func(ExecutionEvent)
	// unreachable is the namer's BACKEND_UNAVAILABLE of an earlier
	// execution of this call: later ones are not named (reaching a host
	// may take its whole startup deadline each time).
	unreachable error
}

// withFollower returns ctx carrying a follower of one capture call that
// runs total executions.
func (rt *Runtime) withFollower(ctx context.Context, total int) context.Context {
	namer, why := rt.processNamer()
	events, _ := ctx.Value(eventsKey{}).(func(ExecutionEvent))
	return context.WithValue(ctx, followKey{}, &follower{namer: namer, noNamer: why, total: total, caseName: "target", events: events})
}

// followerOf returns ctx's follower, or one that names nothing (a runner
// called outside a capture call, as in tests).
func followerOf(ctx context.Context) *follower {
	if f, ok := ctx.Value(followKey{}).(*follower); ok {
		return f
	}
	return &follower{total: 1, caseName: "target", noNamer: "no capture call follows this execution"}
}

// label names the next execution's case and block.
func (f *follower) label(caseName string, block int) { f.caseName, f.block = caseName, block }

// lifetime is how an execution's process is named: pid, and its
// process_ref or why there is none.
type lifetime struct {
	pid    int
	ref    string
	reason string
}

// fields are an executions row's pid, process_ref and, when the ref is
// null, process_ref_reason.
func (l lifetime) fields(m map[string]any) {
	m["pid"] = l.pid
	if l.ref != "" {
		m["process_ref"] = l.ref
		return
	}
	m["process_ref"] = nil
	m["process_ref_reason"] = l.reason
}

// endedFirst is the reason of a lifetime that ended before the proc host
// sampled it (resolve_pid: PROCESS_EXITED).
const endedFirst = "the execution ended before the proc host sampled it (the host names a process once it has sampled it; it samples every second)"

// run runs spec as the next execution (capture.Run): it reports
// ExecutionStarted once the process is named (or naming failed) and
// ExecutionEnded once it was reaped and naming has finished (a host asked
// about a lifetime that ended answers at once), and returns how the
// lifetime was named. A workload that could not start reports nothing and
// returns Run's error.
func (f *follower) run(ctx context.Context, spec capture.Spec) (*capture.Execution, lifetime, error) {
	f.n++
	ev := ExecutionEvent{Execution: f.n, Executions: max(f.total, f.n), Case: f.caseName, Block: f.block}
	var lt lifetime
	var named chan struct{} // closed once ExecutionStarted was reported
	ended := make(chan struct{})
	spec.Started = func(pid int, startTicks uint64) {
		lt.pid = pid
		named = make(chan struct{})
		// Off the measured path: naming waits for a proc sample.
		go func() {
			defer close(named)
			ref, err := f.name(ctx, pid, startTicks, ended)
			switch {
			case err == nil:
				lt.ref = ref
			case contract.CodeOf(err) == contract.CodeProcessExited:
				lt.reason = endedFirst
			default:
				lt.reason = contract.AsError(err).Message
			}
			e := ev
			e.Event, e.PID = ExecutionStarted, pid
			lt.event(&e)
			f.report(ctx, e)
		}()
	}
	ex, err := capture.Run(ctx, spec)
	close(ended)
	if named != nil {
		<-named
	}
	if err != nil {
		return nil, lifetime{}, err
	}
	e := ev
	e.Event, e.PID, e.Termination, e.ExitCode, e.Signal, e.WallTimeNS = ExecutionEnded, lt.pid, ex.Termination, ex.ExitCode, ex.Signal, ex.WallTimeNS
	lt.event(&e)
	f.report(ctx, e)
	return ex, lt, nil
}

// event sets e's process_ref or process_ref_reason from l.
func (l lifetime) event(e *ExecutionEvent) {
	if l.ref != "" {
		ref := l.ref
		e.ProcessRef = &ref
		return
	}
	e.ProcessRefReason = l.reason
}

// name asks the namer for the process_ref of (pid, startTicks), again
// while the host has not sampled it yet (COLLECTION_FAILED) and the
// execution has not ended. The namer's context is not cancelled with the
// call (see ProcessNamer).
func (f *follower) name(ctx context.Context, pid int, startTicks uint64, ended <-chan struct{}) (string, error) {
	if f.namer == nil {
		return "", contract.Errorf(contract.CodeUnsupported, "%s", f.noNamer)
	}
	if f.unreachable != nil {
		return "", f.unreachable
	}
	if startTicks == 0 {
		return "", contract.Errorf(contract.CodeIdentityUnverifiable, "the start time of pid %d could not be read, so no process_ref can name its lifetime", pid)
	}
	nctx := context.WithoutCancel(ctx)
	for {
		ref, err := f.namer(nctx, pid, startTicks)
		if err == nil {
			return ref, nil
		}
		if contract.CodeOf(err) == contract.CodeBackendUnavailable {
			f.unreachable = err
		}
		if contract.CodeOf(err) != contract.CodeCollectionFailed {
			return "", err
		}
		select {
		case <-ended:
			return "", err
		case <-ctx.Done():
			return "", err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// report sends e as a progress notification (progress counts executions:
// a started one is half done) and to the CLI's receiver.
func (f *follower) report(ctx context.Context, e ExecutionEvent) {
	done := float64(e.Execution) - 0.5
	if e.Event == ExecutionEnded {
		done = float64(e.Execution)
	}
	meta := map[string]any{ExecutionEventMetaKey: e}
	tool.ReportProgressMeta(ctx, done, float64(e.Executions), e.Message(), meta)
	if f.events != nil {
		f.events(e)
	}
}
