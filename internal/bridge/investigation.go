package bridge

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Investigation tools (seed 000 sections 6, 7 and 10): history, tracking,
// profiles, operations and condition waits.
func init() {
	AddDefinitions(investigationDefinitions, "get_history")
}

// Delivery of the investigation tools (seed 000 section 4): wait_ms is a
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

const operationFields = `"operation_id":{"type":"string","minLength":1,"maxLength":128,"pattern":"^[A-Za-z0-9._:-]+$","description":"client-chosen unique id of this action; repeating it with identical arguments returns the retained outcome without repeating the effect"},
"expected_revision":{"type":"string","minLength":1,"maxLength":64,"description":"the revision from get_tracking or list_profiles; a stale one is STATE_CONFLICT"}`

func waitField(def string) string {
	return `"wait_ms":{"type":"integer","minimum":0,"maximum":10000,"description":"bridge completion budget in ms, default ` + def + `; 0 returns the pending handle at once"}`
}

func investigationDefinitions(mode Mode, call CallFunc) []tool.Tool {
	limitDefault, waitDefault := "5000", 5000
	if mode.Raw {
		limitDefault, waitDefault = "100", 0
	}
	wd := itoaBridge(waitDefault)
	mutation := tool.Annotations{ReadOnly: false, Destructive: false, Idempotent: true}
	return []tool.Tool{
		{
			Name:  "get_history",
			Title: "Retained metric history",
			Description: "Retained live history of one target (a process_ref, including ended lifetimes, or the system) for metric_ids (required) over an inclusive [from, to] interval (RFC 3339; open when omitted) or the last_seconds up to now, from one frozen view. " +
				"mode summary (default): per metric sample_count, available_value_count, missing_value_count, min, max, mean (integer metrics: exact rational {numerator, denominator} of decimal strings), first/last with timestamps and first_to_last_change (last - first of the available values found, with first_to_last_ms), delta only at exact available endpoints; temporal coverage under data.coverage. " +
				"mode raw: paged rows {at, values, unavailable} with every stored timestamp; temporal coverage under data.temporal_coverage; follow next_action (limit default " + limitDefault + ", max 5000). " +
				"Retention: about 120 samples per untracked lifetime, 7,200 per tracked lifetime and for the system; a pruned lifetime is REFERENCE_INVALID, never resolved by PID. " +
				"With source log and log_ref: the recorded frames of a log process_ref or the system; counts are per stored frame and data.recording gives the interval.",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["metric_ids"],"properties":{
` + sourceSchema + `,
` + logRefSchema + `,
"target":{"oneOf":[
  {"type":"object","additionalProperties":false,"required":["process_ref"],"properties":{"process_ref":{"type":"string","minLength":1,"maxLength":128}}},
  ` + pidTargetBranch + `,
  {"type":"object","additionalProperties":false,"required":["system"],"properties":{"system":{"const":true}}}],"description":"default: the system; {pid} is a live PID resolved to its current lifetime"},
"metric_ids":{"type":"array","minItems":1,"maxItems":32,"uniqueItems":true,"items":{"type":"string","enum":$METRIC_IDS},"description":"metrics of the target's kind"},
"from":{"type":"string","minLength":20,"maxLength":40,"description":"inclusive start, RFC 3339 with offset"},
"to":{"type":"string","minLength":20,"maxLength":40,"description":"inclusive end, RFC 3339 with offset"},
"last_seconds":{"type":"integer","minimum":1,"maximum":86400,"description":"relative window: the last N seconds up to the latest sample; instead of from/to, never with them"},
"mode":{"type":"string","enum":["summary","raw"],"description":"default summary"},
"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"raw rows per page, default ` + limitDefault + `"},
"cursor":{"type":"string","minLength":1,"maxLength":4096,"description":"next_cursor of the previous raw page; other arguments unchanged"}}}`),
			Annotations: readOnly,
		},
		{
			Name:        "get_tracking",
			Title:       "Tracking list",
			Description: "The working Tracking List (case-insensitive process names), the investigation revision, the descendant-inclusive scope and the matching retained identities with their history bounds and capacity, paged (data.matching, data.coverage total/offset/returned; follow next_action, limit default 100, max 5000). No required arguments.",
			Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"matching identities per page, default 100"},
"cursor":{"type":"string","minLength":1,"maxLength":4096,"description":"next_cursor of the previous page; other arguments unchanged"}}}`),
			Annotations: readOnly,
		},
		{
			Name:  "update_tracking",
			Title: "Change the tracking list",
			Description: "Adds or removes one name in the working Tracking List. Required: operation_id, expected_revision, action (add/remove) and exactly one of process_name, process_ref or pid (its captured name). " +
				"Tracked lifetimes and their observed descendants keep 7,200 samples instead of 120; nothing discarded is restored. Adding an existing name or removing an absent one succeeds without change. " +
				"A removal that would discard retained history returns state pending_confirmation until a local user decides (60 s, then TIMEOUT). No profile is saved implicitly.",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["operation_id","expected_revision","action"],"properties":{` + operationFields + `,
"action":{"type":"string","enum":["add","remove"]},
"process_name":{"type":"string","minLength":1,"maxLength":256,"description":"process name (case-insensitive)"},
"process_ref":{"type":"string","minLength":1,"maxLength":128,"description":"a live or retained process_ref; its captured name is used"},
` + pidField + `,
` + waitField(wd) + `}}`),
			Annotations: mutation,
			Handler:     mutationHandler(call, "update_tracking", waitDefault),
		},
		{
			Name:        "list_profiles",
			Title:       "Investigation profiles",
			Description: "Saved Investigation Profiles (profile_id, name, revision, tracked names), the active profile binding, unsaved working changes and the investigation revision. Inspecting never loads a profile. No required arguments.",
			Input:       schema(`{"type":"object","additionalProperties":false,"properties":{}}`),
			Annotations: readOnly,
		},
		{
			Name:  "update_profile",
			Title: "Change investigation profiles",
			Description: "One explicit profile operation. Required: operation_id, expected_revision, action (load/save/save_as/rename/delete); load/save/rename/delete also need profile_id and profile_revision from list_profiles; save_as and rename need name. " +
				"A duplicate name is STATE_CONFLICT, never an overwrite; save applies only to the active profile. Delete always, and load over unsaved changes or with history loss, return pending_confirmation until a local user decides.",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["operation_id","expected_revision","action"],"properties":{` + operationFields + `,
"action":{"type":"string","enum":["load","save","save_as","rename","delete"]},
"profile_id":{"type":"string","minLength":1,"maxLength":128},
"profile_revision":{"type":"string","minLength":1,"maxLength":32},
"name":{"type":"string","minLength":1,"maxLength":128,"description":"new profile name (save_as, rename)"},
` + waitField(wd) + `}}`),
			Annotations: tool.Annotations{Destructive: true, Idempotent: true},
			Handler:     mutationHandler(call, "update_profile", waitDefault),
		},
		{
			Name:        "get_operation",
			Title:       "Operation status",
			Description: "State of an application-owned action by operation_id (required): pending, running, pending_confirmation (with the immutable action description), succeeded (outcome) or failed (error code: STATE_CONFLICT, CANCELLED, TIMEOUT, ...). Retained 24 h; unknown or expired ids are OPERATION_UNKNOWN.",
			Input:       schema(`{"type":"object","additionalProperties":false,"required":["operation_id"],"properties":{"operation_id":{"type":"string","minLength":1,"maxLength":128}}}`),
			Annotations: readOnly,
		},
		{
			Name:  "wait_condition",
			Title: "Wait for a condition",
			Description: "Starts a bounded, connection-owned wait (timeout_ms required, 1..60000) for condition process_present (process_name in a sample newer than the request's first snapshot), process_exit (process_ref or pid of a verified live lifetime; a held pidfd, access failure is not exit) " +
				"or metric_threshold (metric_id, comparison >,>=,<,<=, threshold as number or decimal string; process_ref or system; fresh samples only). Returns the observation and its timestamp; TIMEOUT carries the last observation. " +
				"Waits up to wait_ms (default " + wd + ", max 10000) and otherwise returns state running with next_action; to continue, call again with only job_id. When wait_ms >= timeout_ms the one call returns the outcome (TIMEOUT included), never running.",
			Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"condition":{"type":"string","enum":["process_present","process_exit","metric_threshold"]},
"process_name":{"type":"string","minLength":1,"maxLength":256},
"process_ref":{"type":"string","minLength":1,"maxLength":128},
` + pidField + `,
"system":{"const":true},
"metric_id":{"type":"string","enum":$METRIC_IDS},
"comparison":{"type":"string","enum":[">",">=","<","<="]},
"threshold":{"type":["number","string"],"pattern":"^-?[0-9]+(\\.[0-9]+)?$","maxLength":64},
"timeout_ms":{"type":"integer","minimum":1,"maximum":60000},
"job_id":{"type":"string","minLength":1,"maxLength":64,"description":"continue an earlier wait of this connection"},
` + waitField(wd) + `}}`),
			Annotations: tool.Annotations{ReadOnly: true},
			Handler:     waitHandler(call, waitDefault),
		},
	}
}

func itoaBridge(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

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

// mutationHandler dispatches a mutation once and then polls only its
// operation id while it is pending or running, up to wait_ms. A pending
// local confirmation returns at once and is never polled or approved.
func mutationHandler(call CallFunc, method string, def int) tool.Handler {
	return func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		args, budget := splitWait(args, def)
		res, err := call(ctx, method, args)
		if err != nil {
			return nil, err
		}
		deadline := time.Now().Add(budget)
		for res.NextAction != nil && res.NextAction.Tool == "get_operation" && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return res, nil
			case <-time.After(opPoll):
			}
			b, _ := json.Marshal(res.NextAction.Arguments)
			next, err := call(ctx, "get_operation", b)
			if err != nil {
				return nil, err
			}
			res = next
		}
		return res, nil
	}
}

// waitHandler starts (or continues) a wait and keeps it company up to
// wait_ms in slices, so no single backend call nears its deadline.
// waitArgsFor lists the arguments each condition uses besides condition,
// timeout_ms and wait_ms (seed 000 section 10 "Bounded condition waiting").
var waitArgsFor = map[string][]string{
	"process_present":  {"process_name"},
	"process_exit":     {"process_ref"},
	"metric_threshold": {"metric_id", "comparison", "threshold", "process_ref", "system"},
}

// checkWaitArgs rejects arguments the call does not use, before anything
// is dispatched: a continuation takes job_id and wait_ms only, and a new
// wait only its condition's arguments (process_ref with process_present,
// process_name with process_exit, ...). INVALID_ARGUMENT names the
// argument in field.
func checkWaitArgs(m map[string]json.RawMessage) error {
	allowed := map[string]bool{"wait_ms": true}
	var what string
	if _, ok := m["job_id"]; ok {
		allowed["job_id"] = true
		what = "a continuation (job_id) takes only job_id and wait_ms"
	} else {
		var cond string
		json.Unmarshal(m["condition"], &cond)
		for _, k := range append([]string{"condition", "timeout_ms"}, waitArgsFor[cond]...) {
			allowed[k] = true
		}
		what = "condition " + cond + " takes " + strings.Join(waitArgsFor[cond], ", ") + " besides condition, timeout_ms and wait_ms"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !allowed[k] {
			e := contract.Errorf(contract.CodeInvalidArgument, "%s does not apply here: %s; remove it", k, what)
			e.Field = "/" + k
			return e
		}
	}
	return nil
}

func waitHandler(call CallFunc, def int) tool.Handler {
	return func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, contract.Errorf(contract.CodeInvalidArgument, "arguments could not be decoded")
		}
		_, budget := splitWait(args, def)
		if err := checkWaitArgs(m); err != nil {
			return nil, err
		}
		if _, ok := m["job_id"]; !ok {
			if _, ok := m["timeout_ms"]; !ok {
				e := contract.Errorf(contract.CodeInvalidArgument, "timeout_ms is required to start a wait")
				e.Field = "/timeout_ms"
				return nil, e
			}
			if _, ok := m["condition"]; !ok {
				e := contract.Errorf(contract.CodeInvalidArgument, "condition is required to start a wait")
				e.Field = "/condition"
				return nil, e
			}
		}
		// A budget that covers the whole timeout_ms of a new wait means
		// the caller wants the outcome: the host ends the wait by
		// timeout_ms at the latest (TIMEOUT), so keep company until the
		// terminal state instead of racing the host's deadline and
		// returning "running" by a few milliseconds. grace only bounds a
		// host that never ends the wait.
		var timeoutMS int
		json.Unmarshal(m["timeout_ms"], &timeoutMS)
		toTerminal := timeoutMS > 0 && time.Duration(timeoutMS)*time.Millisecond <= budget
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
		res, err := call(ctx, "wait_condition", slice())
		for err == nil && res != nil && res.NextAction != nil && res.NextAction.Tool == "wait_condition" && time.Now().Before(deadline) && ctx.Err() == nil {
			id, _ := res.NextAction.Arguments["job_id"].(string)
			m = map[string]json.RawMessage{}
			m["job_id"], _ = json.Marshal(id)
			res, err = call(ctx, "wait_condition", slice())
		}
		return res, err
	}
}
