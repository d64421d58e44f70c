package bridge

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tool"
)

// A live PID is enough: the tools below take `pid` wherever they take a
// process_ref (exactly one of the two). The bridge resolves each pid to
// the lifetime running under it at call time (host method resolve_pid),
// runs the tool with that process_ref, and names every resolution in
// data.resolved_pids [{pid, process_ref, name, start_time, field}] so
// follow-up calls are exact. A PID with no live process is PROCESS_EXITED
// with field naming the pid; among live get_metrics targets it fails that
// target only (the host reports it in the target's sample).

// withPID wraps a tool's handler with pid resolution where its
// declaration takes a pid (decl.PIDAt); this is the one place a pid
// becomes a process_ref.
func withPID(t tool.Tool, decl host.Decl, call CallFunc) tool.Tool {
	place := decl.PIDAt
	if place == host.PIDNone {
		return t
	}
	inner := t.Handler
	t.Handler = func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		var m map[string]json.RawMessage
		if json.Unmarshal(args, &m) != nil || m == nil {
			return inner(ctx, args)
		}
		// A mutation that keeps the caller's pid (update_tracking,
		// add_graphs, export_graphs) may repeat a known operation_id after
		// the process exited: the host answers a retained operation from
		// the caller's own arguments, and otherwise fails the pid itself
		// the same way.
		repeatable := func(m map[string]json.RawMessage, err error) bool {
			_, hasID := m["operation_id"]
			return hasID && decl.PIDKept && contract.CodeOf(err) == contract.CodeProcessExited
		}
		var resolved []map[string]any
		// A pid names a live process; a recording's processes are named
		// by their log process_ref, which list_processes on the log
		// gives for that pid (filter.pid).
		var source, logRef string
		json.Unmarshal(m["source"], &source)
		json.Unmarshal(m["log_ref"], &logRef)
		fromLog := source == "log" || logRef != ""
		resolve := func(obj map[string]json.RawMessage, ptr string) error {
			raw, has := obj["pid"]
			if !has {
				return nil
			}
			if _, both := obj["process_ref"]; both {
				e := contract.Errorf(contract.CodeInvalidArgument, "send either pid or process_ref, not both")
				e.Field = ptr + "/pid"
				return e
			}
			if fromLog && place != host.PIDTop {
				e := contract.Errorf(contract.CodeReferenceInvalid, "a pid names a live process and cannot target a log: name the recorded process by its log process_ref (lp_...), which list_processes on this log gives for pid %s (next_action)", string(raw))
				e.Field = ptr + "/pid"
				args := map[string]any{"source": "log", "scope": "all", "filter": map[string]any{"pid": json.RawMessage(raw)}}
				if logRef != "" {
					args["log_ref"] = logRef
				}
				e.NextAction = &contract.Action{Tool: "list_processes", Arguments: args}
				return e
			}
			// resolve_pid is a prompt read: a cancel keeps the connection.
			req := `{"pid":` + string(raw)
			if ns, has := obj["pid_ns"]; has {
				// pid is the PID inside PID namespace pid_ns
				req += `,"pid_ns":` + string(ns)
				delete(obj, "pid_ns")
			}
			res, err := call(ipc.WithReplyOnCancel(ctx), host.ResolvePIDMethod, json.RawMessage(req+`}`))
			if ctx.Err() != nil {
				return contract.AsError(ctx.Err())
			}
			if err != nil {
				e := contract.AsError(err)
				if e.Field == "/pid_ns" {
					e.Field = ptr + "/pid_ns"
				} else if strings.HasPrefix(e.Field, "/pid") {
					e.Field = ptr + "/pid"
				}
				if e.Code == contract.CodeActivityConflict && place == host.PIDMetrics {
					// A pid is resolved by live inspection, which Log view
					// has not; a recording's process is named by reference.
					e.Field = ptr + "/pid"
					e.Message = "the TUI is in Log view, where a pid cannot be resolved (that is live inspection): name a recording's process by its process_ref from get_graphs with include_processes (next_action), or retry once the TUI is back in Live view"
					e.NextAction = &contract.Action{Tool: "get_graphs", Arguments: map[string]any{"include_processes": true}}
				}
				return e
			}
			d := jobData(res)
			d["field"] = ptr + "/pid"
			resolved = append(resolved, d)
			if !decl.PIDKept {
				delete(obj, "pid")
			}
			obj["process_ref"], _ = json.Marshal(d["process_ref"])
			return nil
		}
		switch place {
		case host.PIDTop:
			if decl.PIDLeave != nil && decl.PIDLeave(m) {
				return inner(ctx, args)
			}
			if err := resolve(m, ""); err != nil {
				if repeatable(m, err) {
					return inner(ctx, args)
				}
				return nil, err
			}
		case host.PIDTarget:
			var obj map[string]json.RawMessage
			if json.Unmarshal(m["target"], &obj) == nil && obj != nil {
				if err := resolve(obj, "/target"); err != nil {
					return nil, err
				}
				m["target"], _ = json.Marshal(obj)
			}
		case host.PIDTargets, host.PIDMetrics:
			key := "targets"
			if place == host.PIDMetrics {
				key = "metrics"
			}
			// One exited pid among live get_metrics targets fails that
			// target only: its pid goes to the host unresolved, which
			// resolves it the same way and reports it in its sample, as
			// it does an exited process_ref.
			perTarget := place == host.PIDTargets && !fromLog
			var objs []map[string]json.RawMessage
			if json.Unmarshal(m[key], &objs) == nil {
				for i, obj := range objs {
					if obj == nil {
						continue
					}
					if err := resolve(obj, "/"+key+"/"+strconv.Itoa(i)); err != nil {
						if repeatable(m, err) {
							return inner(ctx, args)
						}
						if perTarget && contract.CodeOf(err) == contract.CodeProcessExited {
							continue
						}
						return nil, err
					}
				}
				m[key], _ = json.Marshal(objs)
			}
		}
		if len(resolved) == 0 {
			return inner(ctx, args)
		}
		b, _ := json.Marshal(m)
		res, err := inner(ctx, b)
		if err != nil {
			// The tool checked the process_ref it was given; the caller
			// sent a pid there.
			if e := contract.AsError(err); e != nil {
				for _, r := range resolved {
					f, _ := r["field"].(string)
					if e.Field == strings.TrimSuffix(f, "/pid")+"/process_ref" {
						// Name what was sent: the pid, not the reference
						// the bridge put in its place.
						e.Field = f
						e.Message = strings.ReplaceAll(e.Message, "omit process_ref", "omit pid")
					}
				}
				return nil, e
			}
			return nil, err
		}
		if res == nil {
			return res, nil
		}
		data := jobData(res)
		data["resolved_pids"] = resolved
		res.Data = data
		return res, nil
	}
	return t
}
