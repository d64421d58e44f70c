package bridge

import (
	"encoding/json"
	"strings"

	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

func enumJSON(vals []string) string {
	b, _ := json.Marshal(vals)
	return string(b)
}

func schema(s string) json.RawMessage {
	r := strings.NewReplacer(
		"$PROC_FIELDS", enumJSON(host.ProcessFields),
		"$METRIC_IDS", enumJSON(sample.MetricIDs("")),
		"$PROCESS_SORT_KEYS", enumJSON(append([]string{"pid", "name"}, sample.MetricIDs(sample.TargetProcess)...)),
		"$PROCESS_METRIC_IDS", enumJSON(sample.MetricIDs(sample.TargetProcess)),
	)
	return json.RawMessage(r.Replace(s))
}

var readOnly = tool.Annotations{ReadOnly: true, Idempotent: true}

func definitions(mode Mode) []tool.Tool {
	limitDefault := "5000"
	if mode.Raw {
		limitDefault = "100"
	}
	return []tool.Tool{
		{
			Name:        "get_status",
			Title:       "Backend status",
			Description: "Backend connectivity, version, activity, sample age and staleness (3 s), permissions, platform coverage, enabled methods and limits. No process data. No required arguments.",
			Input:       schema(`{"type":"object","additionalProperties":false,"properties":{}}`),
			Annotations: readOnly,
		},
		{
			Name:        "get_system_info",
			Title:       "System information",
			Description: "OS, kernel, architecture, hostname, CPU model/topology/cache and total memory from cached host facts and the published snapshot; no fresh collection. No required arguments.",
			Input:       schema(`{"type":"object","additionalProperties":false,"properties":{}}`),
			Annotations: readOnly,
		},
		{
			Name:        "list_metrics",
			Title:       "Metric catalog",
			Description: "The metric catalog: canonical ids, target kind (process/system), unit, representation (integer_string or number), cumulative flag, source file. No required arguments; optional target_kind.",
			Input:       schema(`{"type":"object","additionalProperties":false,"properties":{"target_kind":{"type":"string","enum":["process","system"],"description":"only metrics of this target kind"}}}`),
			Annotations: readOnly,
		},
		{
			Name:  "list_processes",
			Title: "List processes",
			Description: "Immutable, paged listing of processes from the latest snapshot (scope live), retained history (retained) or both (all), with opaque process_ref, lifecycle, parent (verified/unknown), start time, last-seen and history bounds. " +
				"Filter by name/path substring (case-insensitive) or exact pid; sort by pid, name or any process metric (order asc/desc; a metric sort puts the metric's latest-snapshot value on each row under values, and so does each of metric_ids); command_line and user only through projection. With source log and log_ref: the recorded identities (scope live: in the final frame; retained/all: every identity), lifecycle unknown, log process_refs. No required arguments. Follow next_action for the next page (limit default " + limitDefault + ", max 5000).",
			Input: schema(`{"type":"object","additionalProperties":false,"properties":{
` + sourceSchema + `,
` + logRefSchema + `,
"scope":{"type":"string","enum":["live","retained","all"],"description":"live: latest snapshot; retained: lifetimes with retained history (ended ones too); all: union by identity. Default live."},
"filter":{"type":"object","additionalProperties":false,"properties":{
  "name":{"type":"string","minLength":1,"maxLength":256,"description":"case-insensitive substring of the process name, its comm, or a name it had before an exec"},
  "name_bytes":{"type":"string","minLength":4,"maxLength":344,"pattern":"^[A-Za-z0-9+/]*={0,2}$","description":"name query that is not valid UTF-8: standard base64 of its bytes (as a row's name_bytes)"},
  "path":{"type":"string","minLength":1,"maxLength":4096,"description":"case-insensitive substring of the executable path"},
  "path_bytes":{"type":"string","minLength":4,"maxLength":5464,"pattern":"^[A-Za-z0-9+/]*={0,2}$","description":"path query that is not valid UTF-8: standard base64 of its bytes (as a row's path_bytes)"},
  "pid":{"type":"integer","minimum":1,"maximum":4194304,"description":"exact PID (discovery only; targeted calls need process_ref)"}}},
"projection":{"type":"array","minItems":1,"uniqueItems":true,"items":{"type":"string","enum":$PROC_FIELDS},"description":"row fields; default all but user and command_line"},
"sort":{"type":"string","enum":$PROCESS_SORT_KEYS,"description":"pid (default), name, or a process metric id: its value in the latest applied snapshot, rows without one last; ties broken by identity"},
"order":{"type":"string","enum":["asc","desc"],"description":"default asc for pid and name, desc for a metric"},
"metric_ids":{"type":"array","minItems":1,"maxItems":16,"uniqueItems":true,"items":{"type":"string","enum":$PROCESS_METRIC_IDS},"description":"process metrics whose values from the same snapshot each row carries under values (unmeasured ones under unavailable), as get_metrics would give them: a table in one call"},
"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"rows per page, default ` + limitDefault + `"},
"cursor":{"type":"string","minLength":1,"maxLength":4096,"description":"next_cursor of the previous page; other arguments must be unchanged"}}}`),
			Annotations: readOnly,
		},
		{
			Name:  "get_metrics",
			Title: "Current metric values",
			Description: "Values of metric_ids (required) for up to 50 targets from one latest applied snapshot; no forced sampling. Targets default to the system; a process target is {process_ref} or {pid} (a live PID, resolved at call time), the system is {system:true}. " +
				"Integer quantities are decimal strings; unavailable values are listed under unavailable, never zero. An exited process gives PROCESS_EXITED. With source log and log_ref: the final recorded frame.",
			Input: schema(`{"type":"object","additionalProperties":false,"required":["metric_ids"],"properties":{
` + sourceSchema + `,
` + logRefSchema + `,
"metric_ids":{"type":"array","minItems":1,"maxItems":64,"uniqueItems":true,"items":{"type":"string","enum":$METRIC_IDS}},
"targets":{"type":"array","minItems":1,"maxItems":50,"items":{"oneOf":[
  {"type":"object","additionalProperties":false,"required":["process_ref"],"properties":{"process_ref":{"type":"string","minLength":1,"maxLength":128}}},
  ` + pidTargetBranch + `,
  {"type":"object","additionalProperties":false,"required":["system"],"properties":{"system":{"const":true}}}]}}}}`),
			Annotations: readOnly,
		},
	}
}
