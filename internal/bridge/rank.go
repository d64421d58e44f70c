package bridge

import (
	"context"
	"encoding/json"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/tool"
)

// rank_processes: "what used the most CPU in the last minute?" in one call
// (a ranking of every retained lifetime by one metric over a window).
func init() {
	AddDefinitions(rankDefinitions)
}

func rankDefinitions(mode Mode, call CallFunc) []tool.Tool {
	return []tool.Tool{{
		Name:  "rank_processes",
		Title: "Rank processes over a window",
		Description: "Ranks processes by one process metric over a window of retained history in one call, from one frozen view: every lifetime in scope (default all: live and ended, so processes that exited inside the window count) with stored samples inside the window. Required: metric_id. " +
			"aggregate: for cumulative counters (cpu_time_ns, read_bytes, write_bytes, faults, context switches) increase (default: last minus first of the lifetime's own samples inside the window) or last; for gauges (cpu_percent, rss_bytes, threads, fd_count, ...) mean (default), max or last. " +
			"Window: last_seconds (default 60, ending at the latest snapshot) or from/to (RFC 3339; to defaults to the latest snapshot), not both. " +
			"Rows (limit default 10, max 1000), highest first: rank, process_ref, pid, name, lifecycle, value (integers as decimal strings, integer means as exact {numerator, denominator}), sample_count and available_value_count it rests on, first/last_value_at, and the lifetime's coverage of the window (fraction, started_in_window, ended_in_window, truncated_by_retention). " +
			"Lifetimes without a value there are counted, not ranked (status partial). Most CPU used in the last minute: metric_id cpu_time_ns.",
		Input: schema(`{"type":"object","additionalProperties":false,"required":["metric_id"],"properties":{
"source":{"type":"string","enum":["live"],"description":"only live retained history is served"},
"metric_id":{"type":"string","enum":$PROCESS_METRIC_IDS,"description":"the process metric to rank by"},
"aggregate":{"type":"string","enum":["increase","mean","max","last"],"description":"increase or last for cumulative counters (default increase); mean, max or last for gauges (default mean)"},
"last_seconds":{"type":"integer","minimum":1,"maximum":86400,"description":"window ending at the latest snapshot; default 60 when neither this nor from is given"},
"from":{"type":"string","minLength":20,"maxLength":40,"description":"inclusive window start, RFC 3339 with offset"},
"to":{"type":"string","minLength":20,"maxLength":40,"description":"inclusive window end, RFC 3339 with offset; needs from; default the latest snapshot"},
"scope":{"type":"string","enum":["live","retained","all"],"description":"live: lifetimes in the latest snapshot; retained and all: every retained lifetime, ended ones too. Default all."},
"filter":{"type":"object","additionalProperties":false,"properties":{
  "name":{"type":"string","minLength":1,"maxLength":256,"description":"case-insensitive substring of the process name"}}},
"limit":{"type":"integer","minimum":1,"maximum":1000,"description":"rows returned, default 10"}}}`),
		Annotations: readOnly,
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			// Checks the schema cannot express (last_seconds excludes
			// from/to, to needs from, from <= to, aggregate suits the
			// metric) fail here, before anything is dispatched.
			if err := host.CheckRankArgs(args); err != nil {
				return nil, err
			}
			return call(ctx, "rank_processes", args)
		},
	}}
}
