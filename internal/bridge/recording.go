package bridge

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Recording and saved-log tools (seed 000 sections 7 and 10): the
// host-owned recording session, the log directory listing, and loading a
// saved log for source "log" queries.
func init() { AddDefinitions(recordingDefinitions) }

// logRefSchema is the log_ref property of the source-selecting queries.
const logRefSchema = `"log_ref":{"type":"string","minLength":1,"maxLength":128,"description":"a loaded log from open_log; with it (and source log or no source) the query reads the recording, never live data"}`

// sourceSchema is the source property of the source-selecting queries.
const sourceSchema = `"source":{"type":"string","enum":["live","log"],"description":"live (default) or log (requires log_ref)"}`

func recordingDefinitions(mode Mode, call CallFunc) []tool.Tool {
	waitDefault := 5000
	limitDefault := "5000"
	if mode.Raw {
		waitDefault, limitDefault = 0, "100"
	}
	wd := strconv.Itoa(waitDefault)
	d := &delivery{mode: mode, call: call, managed: &managed{caps: map[string]time.Time{}}, retained: &managed{caps: map[string]time.Time{}}}
	mutation := tool.Annotations{ReadOnly: false, Destructive: false, Idempotent: true}
	return []tool.Tool{
		{
			Name:  "get_recording",
			Title: "Recording state",
			Description: "Whether a recording is active: recording_session_id, fixed tracked names, interval_seconds, output log_id and name, and whether an output directory is configured (not a filesystem probe); a write failure shows under write_error. " +
				"Frame counts and the stop outcome come from get_operation. No required arguments.",
			Input:       schema(`{"type":"object","additionalProperties":false,"properties":{}}`),
			Annotations: readOnly,
		},
		{
			Name:  "start_recording",
			Title: "Start recording",
			Description: "Starts one host-owned recording of the current non-empty Tracking List (names and descendants, zero matching processes allowed) and the system to a new .log file in the recording directory. " +
				"Required: operation_id, expected_revision (from get_tracking), interval_seconds (1, 2, 5 or 10). Returns recording_session_id, fixed names, interval and log_id. " +
				"The recording survives disconnects and stops at 24 h; while it runs, tracking changes and profile load/save are ACTIVITY_CONFLICT. A second start is ACTIVITY_CONFLICT.",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["operation_id","expected_revision","interval_seconds"],"properties":{` + operationFields + `,
"interval_seconds":{"type":"integer","enum":[1,2,5,10],"description":"seconds between recorded frames"},
` + waitField(wd) + `}}`),
			Annotations: mutation,
			Handler:     mutationHandler(call, "start_recording", waitDefault),
		},
		{
			Name:  "stop_recording",
			Title: "Stop recording",
			Description: "Stops the recording session named by recording_session_id (required, exact; a stale id is STATE_CONFLICT and leaves any other session running) and operation_id (required). No local confirmation. " +
				"Succeeds only after the last partial window is written, the end record written, the file synced and closed; the outcome names log_id, frames and bytes.",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["operation_id","recording_session_id"],"properties":{
"operation_id":{"type":"string","minLength":1,"maxLength":128,"pattern":"^[A-Za-z0-9._:-]+$","description":"client-chosen unique id of this action; repeating it returns the retained outcome"},
"recording_session_id":{"type":"string","minLength":1,"maxLength":64,"description":"from start_recording or get_recording"},
` + waitField(wd) + `}}`),
			Annotations: mutation,
			Handler:     mutationHandler(call, "stop_recording", waitDefault),
		},
		{
			Name:  "list_logs",
			Title: "List saved recordings",
			Description: "Lists the recording directory as a job: regular files with a .log extension, optionally whose name contains filter.name (case-insensitive). Rows are {log_id, name}; formats are checked only by open_log. No required arguments. " +
				"Returns completion and the first page under data.result_page (wait_ms default " + wd + "); more pages with read_capture. At most 5,000 rows per listing.",
			Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"filter":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string","minLength":1,"maxLength":256,"description":"case-insensitive substring of the file name"}}},
"wait_ms":{"type":"integer","minimum":0,"maximum":` + strconv.Itoa(MaxWaitMS) + `,"description":"how long to wait for completion, default ` + wd + `"},
"read":{"type":"object","additionalProperties":false,"properties":{"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"rows in the first page, default ` + limitDefault + `"}},"description":"first page size"},
"retain_capture":{"type":"boolean","description":"keep the listing for repeated reads (release_capture); default false"}}}`),
			Annotations: readOnly,
			Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
				return d.start(ctx, "list_logs", args)
			},
		},
		{
			Name:  "open_log",
			Title: "Load a saved recording",
			Description: "Starts a bounded load job of log_id (from list_logs or start_recording) and returns log_ref when it succeeds, for list_processes, get_metrics and get_history with source log. " +
				"An interrupted or damaged file loads as partial (every complete frame kept; torn and damaged byte ranges named); an unreadable one is DECODE_FAILED with the byte offset; a load over the memory budget is LIMIT_EXCEEDED, never a shortened history. " +
				"Logs are connection-owned, at most 8, and expire 5 minutes after loading. Waits up to wait_ms (default " + wd + "); to continue, call with only job_id.",
			Input: schema(`{"type":"object","additionalProperties":false,"properties":{
"log_id":{"type":"string","minLength":1,"maxLength":64,"description":"a log id issued by this host"},
"job_id":{"type":"string","minLength":1,"maxLength":64,"description":"continue an earlier load of this connection"},
` + waitField(wd) + `}}`),
			Annotations: readOnly,
			Handler:     openLogHandler(call, waitDefault),
		},
		{
			Name:        "close_log",
			Title:       "Release a loaded log",
			Description: "Releases log_ref (required) and every listing and reference that depends on it; idempotent (released false when nothing was loaded under it).",
			Input:       schema(`{"type":"object","additionalProperties":false,"required":["log_ref"],"properties":{"log_ref":{"type":"string","minLength":1,"maxLength":128}}}`),
			Annotations: tool.Annotations{ReadOnly: false, Destructive: false, Idempotent: true},
		},
	}
}

// openLogHandler starts or continues a load and keeps it company up to
// wait_ms in slices the host bounds (4 s each).
func openLogHandler(call CallFunc, def int) tool.Handler {
	return func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, contract.Errorf(contract.CodeInvalidArgument, "arguments could not be decoded")
		}
		_, ids := m["log_id"]
		_, jobs := m["job_id"]
		if ids == jobs {
			e := contract.Errorf(contract.CodeInvalidArgument, "give exactly one of log_id (start a load) and job_id (continue one)")
			e.Field = "/log_id"
			return nil, e
		}
		_, budget := splitWait(args, def)
		deadline := time.Now().Add(budget)
		slice := func() json.RawMessage {
			left := max(min(time.Until(deadline), waitSlice), 0)
			m["wait_ms"], _ = json.Marshal(left.Milliseconds())
			b, _ := json.Marshal(m)
			return b
		}
		res, err := call(ctx, "open_log", slice())
		for err == nil && res != nil && res.NextAction != nil && res.NextAction.Tool == "open_log" && time.Now().Before(deadline) && ctx.Err() == nil {
			id, _ := res.NextAction.Arguments["job_id"].(string)
			m = map[string]json.RawMessage{}
			m["job_id"], _ = json.Marshal(id)
			res, err = call(ctx, "open_log", slice())
		}
		return res, err
	}
}
