package host

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// ResolvePIDMethod is the host method behind the bridge's `pid` argument:
// {"pid": N} returns data {pid, process_ref, name, start_time} of the
// lifetime that runs under N now (the latest snapshot's process with that
// PID, verified against /proc/N/stat start time at call time). A PID with
// no process, or whose process is a zombie, is PROCESS_EXITED; a process
// started after the latest snapshot is waited for up to two sampling
// intervals and otherwise COLLECTION_FAILED (retryable: the next sample
// will hold it); an unreadable /proc entry is IDENTITY_UNVERIFIABLE. With
// "start_ticks" (the lifetime's start time, clock ticks since boot,
// /proc/PID/stat field 22) only that lifetime answers: a PID now held by
// another lifetime is PROCESS_EXITED, so a caller that read the start time
// of its own child gets the ref of that child or none (perf captures name
// their workloads so). With "pid_ns" (a PID namespace inode) pid is the
// PID inside that namespace and resolves to the host PID of the one
// process that has it there (PROCESS_EXITED at /pid_ns when none,
// INVALID_ARGUMENT naming the host PIDs when several); the data then
// also carries ns_pid and pid_ns. It is not a tool: tools take pid as an alternative
// to process_ref.
const ResolvePIDMethod = "resolve_pid"

// resolvePIDArgs are resolve_pid's arguments.
type resolvePIDArgs struct {
	PID        int64   `json:"pid"`
	StartTicks *uint64 `json:"start_ticks,omitempty"`
	// PidNS, when set, is a PID namespace inode and PID is the PID inside
	// it (the last NSpid entry of the process whose own namespace it
	// is): it resolves to that process's host PID first (resolveNSPid).
	PidNS *uint64 `json:"pid_ns,omitempty"`
}

func (h *Host) resolvePID(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
	a, err := tool.Decode[resolvePIDArgs](raw)
	if err != nil || a.PID < 1 || a.PID > 1<<31-1 {
		e := contract.Errorf(contract.CodeInvalidArgument, "pid must be a positive process id")
		e.Field = "/pid"
		return nil, e
	}
	pid := int32(a.PID)
	var nsData map[string]any
	if a.PidNS != nil {
		p, err := resolveNSPid(h.sampler.Latest(), pid, *a.PidNS)
		if err != nil {
			return nil, err
		}
		nsData = map[string]any{"ns_pid": a.PID, "pid_ns": *a.PidNS}
		pid = p.PID
		a.PID = int64(p.PID)
	}
	exited := contract.Errorf(contract.CodeProcessExited, "no live process has pid %d now (it exited, is a zombie, or never existed); list_processes gives the live ones", a.PID)
	if a.StartTicks != nil {
		exited = contract.Errorf(contract.CodeProcessExited, "the lifetime of pid %d that started at clock tick %d since boot is not running now (it exited or is a zombie; the pid may belong to another process)", a.PID, *a.StartTicks)
	}
	exited.Field = "/pid"
	exited.NextAction = &contract.Action{Tool: "list_processes", Arguments: map[string]any{}}
	deadline := time.Now().Add(2*h.sampler.Interval() + time.Second)
	for {
		snap := h.sampler.Latest()
		if p := snap.Find(pid); p != nil && (a.StartTicks == nil || p.StartTicks == *a.StartTicks) {
			switch sample.Verify(p.ID()) {
			case sample.Alive:
				data := map[string]any{"pid": p.PID, "process_ref": h.Ref(p.ID()), "name": p.Name, "start_time": contract.TS(p.StartTime)}
				for k, v := range nsData {
					data[k] = v
				}
				return contract.NewResult("live", snap.Time, data), nil
			case sample.Unverifiable:
				e := contract.Errorf(contract.CodeIdentityUnverifiable, "the start time of pid %d cannot be read now, so its lifetime cannot be verified", a.PID)
				e.Field = "/pid"
				return nil, e
			}
			// Exited or reused: a newer lifetime may be in a later sample.
		}
		if a.StartTicks != nil {
			if sample.Verify(sample.Identity{PID: pid, StartTicks: *a.StartTicks}) == sample.Exited {
				return nil, exited
			}
		} else if !pidRunning(pid) {
			return nil, exited
		}
		if time.Now().After(deadline) {
			e := contract.Errorf(contract.CodeCollectionFailed, "pid %d exists but is not in a sample yet; retry after the next sample", a.PID)
			e.Field = "/pid"
			return nil, e
		}
		select {
		case <-ctx.Done():
			return nil, contract.AsError(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pidRunning reports whether /proc/PID/stat exists now with a state other
// than zombie (Z) or dead (X), a zombie leader whose other threads run
// counting as running (sample.IdentityOf).
func pidRunning(pid int32) bool {
	_, running, err := sample.IdentityOf(pid)
	return err == nil && running
}

// resolvePIDRef is resolve_pid for a caller inside the host: the
// process_ref of the live lifetime under pid, or resolve_pid's error
// (field /pid).
func (h *Host) resolvePIDRef(ctx context.Context, s *Session, pid int64) (string, error) {
	res, err := h.resolvePID(ctx, s, json.RawMessage(`{"pid":`+strconv.FormatInt(pid, 10)+`}`))
	if err != nil {
		return "", err
	}
	ref, _ := res.Data.(map[string]any)["process_ref"].(string)
	return ref, nil
}
