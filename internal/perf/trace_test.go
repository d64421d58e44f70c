package perf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

func TestTraceWindowGolden(t *testing.T) {
	e := newEnv(t)
	src := []any{pathSrc(abs2(t, "trace/small.json"))}
	tests := []struct {
		name       string
		start, end any
		view       string
	}{
		{"events_0_20us", 0, "20000", "events"},
		{"threads_0_50us", 0, 50000, "threads"},
		{"categories_0_50us", "0", "50000", "categories"},
		{"events_epoch", "9223372036854775000", "9223372036854775807", "events"},
		{"events_half_open", 10000, 10500, "events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"sources": src, "start_ns": tt.start, "end_ns": tt.end, "view": tt.view, "page_size": 2}
			res := e.mustCall("inspect_trace_window", args)
			rows, _ := e.follow(res)
			golden(t, "trace/"+tt.name+".golden.json", map[string]any{"summary": data(res)["summary"], "coverage": res["coverage"], "rows": rows})
			if na, ok := res["next_action"].(map[string]any); ok {
				a := na["arguments"].(map[string]any)
				if _, ok := a["start_ns"].(string); !ok {
					t.Error("replay bounds are not exact decimal strings")
				}
			}
		})
	}
	bad := []struct {
		name       string
		start, end any
		field      string
	}{
		{"end before start", 10, 5, "/end_ns"},
		{"empty window", 5, 5, "/end_ns"},
		{"end zero", 0, 0, "/end_ns"},
		{"beyond int64", "0", "9223372036854775808", "/end_ns"},
		{"below int64", "-9223372036854775809", 5, "/start_ns"},
		{"negative zero string", "-0", 5, "/start_ns"},
		{"non-canonical string", "007", 5, "/start_ns"},
		{"boolean", true, 5, "/start_ns"},
		{"fraction", 1.5, 5, "/start_ns"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			m, code := e.call("inspect_trace_window", map[string]any{"sources": src, "start_ns": tt.start, "end_ns": tt.end})
			if code != contract.CodeInvalidArgument {
				t.Fatalf("got %s", code)
			}
			if f := m["error"].(map[string]any)["field"]; f != tt.field {
				t.Fatalf("field %v, want %s", f, tt.field)
			}
		})
	}
	// The largest bound passes as a JSON integer too.
	e.mustCall("inspect_trace_window", map[string]any{"sources": src, "start_ns": 0, "end_ns": uint64(9223372036854775807)})
	for _, doc := range []string{`{"traceEvents": 3}`, `[{"ph":"X","ts":"x"}]`, `[{"ph":"X","ts":1,"dur":-1}]`, `{"a":1}`, `[1,`} {
		p := e.write("bad.json", doc)
		if _, code := e.call("inspect_trace_window", map[string]any{"sources": []any{pathSrc(p)}, "start_ns": 0, "end_ns": 10}); code != contract.CodeDecodeFailed {
			t.Errorf("%s: got %s", doc, code)
		}
	}
}

// TestTraceLenientEnds: the array form may end without "]", with a
// trailing comma or whitespace (the Trace Event Format allows it and the
// catapult importer and speedscope read such files); the object form and
// events cut in half are DECODE_FAILED naming the form and byte offset.
func TestTraceLenientEnds(t *testing.T) {
	e := newEnv(t)
	events := `{"ph":"X","name":"a","ts":1,"dur":2,"pid":1,"tid":1},{"ph":"i","name":"b","ts":3,"pid":1,"tid":1}`
	tests := []struct {
		name, doc    string
		unterminated bool
		want         contract.Code
	}{
		{"closed", "[" + events + "]", false, ""},
		{"closed trailing whitespace", "[" + events + "]\n\n  \t", false, ""},
		{"unterminated", "[" + events, true, ""},
		{"unterminated newline", "[" + events + "\n", true, ""},
		{"trailing comma", "[" + events + ",", true, ""},
		{"trailing comma newline", "[" + events + ",\n", true, ""},
		{"trailing comma spaces", "[" + events + " , \r\n", true, ""},
		{"trailing comma closed", "[" + events + ",]", false, contract.CodeDecodeFailed},
		{"empty unterminated", "[", true, ""},
		{"cut in an event", "[" + events + `,{"ph":"X","ts":`, false, contract.CodeDecodeFailed},
		{"two commas", "[" + events + ",,", false, contract.CodeDecodeFailed},
		{"object unterminated", `{"traceEvents":[` + events, false, contract.CodeDecodeFailed},
		{"object closed", `{"traceEvents":[` + events + "]}\n", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := e.write("t.json", tt.doc)
			m, code := e.call("inspect_trace_window", map[string]any{"sources": []any{pathSrc(p, "chrome-trace")}, "start_ns": 0, "end_ns": 10000})
			if code != tt.want {
				t.Fatalf("got %s %v, want %q", code, m["error"], tt.want)
			}
			if code != "" {
				msg := m["error"].(map[string]any)["message"].(string)
				if !strings.Contains(msg, "form") || !strings.Contains(msg, "byte") {
					t.Errorf("error does not name the form and offset: %s", msg)
				}
				return
			}
			cov := m["coverage"].(map[string]any)
			want := "2"
			if tt.doc == "[" {
				want = "0"
			}
			if got := data(m)["summary"].(map[string]any)["events_in_window"]; got != want {
				t.Errorf("events in window %v, want %s", got, want)
			}
			if (cov["array_unterminated"] == true) != tt.unterminated {
				t.Errorf("array_unterminated %v, want %v", cov["array_unterminated"], tt.unterminated)
			}
		})
	}
}

// TestTraceCompleteWithoutDur: an X event without dur did not finish;
// like the catapult importer it ends at the trace's last timestamp, is
// marked did_not_finish, counted, and makes the result partial.
func TestTraceCompleteWithoutDur(t *testing.T) {
	e := newEnv(t)
	p := e.write("nodur.json", `[{"ph":"X","name":"open","ts":2,"pid":1,"tid":1},{"ph":"X","name":"done","ts":1,"dur":3,"pid":1,"tid":1},{"ph":"i","name":"last","ts":9,"pid":1,"tid":2}]`)
	m := e.mustCall("inspect_trace_window", map[string]any{"sources": []any{pathSrc(p)}, "start_ns": 0, "end_ns": 100000})
	var open map[string]any
	for _, r := range data(m)["rows"].([]any) {
		if r := r.(map[string]any); r["name"] == "open" {
			open = r
		}
	}
	if open == nil || open["did_not_finish"] != true || open["ts_ns"] != "2000" || open["end_ns"] != "9000" {
		t.Fatalf("open row %v", open)
	}
	cov := m["coverage"].(map[string]any)
	if cov["complete_events_without_dur"] != "1" || cov["complete"] != false || m["status"] == "complete" {
		t.Fatalf("coverage %v status %v", cov, m["status"])
	}
}

// TestTraceEndBeforeBegin: an E earlier than the B it would close is
// unpaired (speedscope ignores it too, coverage.unmatched_begin_end) and
// the B stays open: it did not finish and ends at the trace's last
// timestamp (coverage.unclosed_begin_events); no negative span is a row.
func TestTraceEndBeforeBegin(t *testing.T) {
	e := newEnv(t)
	p := e.write("endfirst.json", `[{"ph":"B","name":"a","pid":1,"tid":2,"ts":10},{"ph":"E","pid":1,"tid":2,"ts":0},{"ph":"X","name":"x","pid":1,"tid":2,"ts":1,"dur":1}]`)
	m := e.mustCall("inspect_trace_window", map[string]any{"sources": []any{pathSrc(p)}, "start_ns": 0, "end_ns": 100000})
	rows := data(m)["rows"].([]any)
	if len(rows) != 2 || rows[0].(map[string]any)["name"] != "x" {
		t.Fatalf("rows %v, want x and the open a", rows)
	}
	if a := rows[1].(map[string]any); a["name"] != "a" || a["did_not_finish"] != true || a["ts_ns"] != "10000" || a["dur_ns"] != "0" {
		t.Fatalf("open row %v, want a at 10000 ns, did not finish", a)
	}
	cov := m["coverage"].(map[string]any)
	if cov["unmatched_begin_end"] != "1" || cov["unclosed_begin_events"] != "1" {
		t.Fatalf("coverage %v, want 1 unmatched E and 1 unclosed B", cov)
	}
}

// TestTraceQuotedNumbers: ts and dur may be JSON strings holding a JSON
// number (as encoding/json reads a json.Number); any other string is
// DECODE_FAILED naming the field.
func TestTraceQuotedNumbers(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		doc  string
		want contract.Code
	}{
		{`[{"ph":"X","name":"a","ts":"1.5","dur":"2","pid":1,"tid":1}]`, ""},
		{`[{"ph":"X","name":"a","ts":"1e3","dur":2,"pid":1,"tid":1}]`, ""},
		{`[{"ph":"X","name":"a","ts":" 1","dur":2,"pid":1,"tid":1}]`, contract.CodeDecodeFailed},
		{`[{"ph":"X","name":"a","ts":"0x10","dur":2,"pid":1,"tid":1}]`, contract.CodeDecodeFailed},
		{`[{"ph":"X","name":"a","ts":1,"dur":true,"pid":1,"tid":1}]`, contract.CodeDecodeFailed},
		{`[{"ph":"X","name":5,"ts":1,"dur":2,"pid":1,"tid":1}]`, contract.CodeDecodeFailed},
	} {
		p := e.write("q.json", tt.doc)
		m, code := e.call("inspect_trace_window", map[string]any{"sources": []any{pathSrc(p)}, "start_ns": 0, "end_ns": "9223372036854775807"})
		if code != tt.want {
			t.Errorf("%s: got %q %v, want %q", tt.doc, code, m["error"], tt.want)
		}
	}
}

// TestTraceHeldEventsBounded: events held until their end is known (open
// B events, X events without dur) count against limits.max_memory_bytes;
// a trace holding more is LIMIT_EXCEEDED, not an unbounded read.
func TestTraceHeldEventsBounded(t *testing.T) {
	e := newEnv(t)
	for _, ph := range []string{`"B"`, `"X"`} {
		var sb strings.Builder
		sb.WriteString("[")
		for i := 0; i < 5000; i++ {
			fmt.Fprintf(&sb, `{"ph":%s,"name":"n","ts":%d,"pid":1,"tid":1},`, ph, i)
		}
		p := e.write("held.json", sb.String())
		args := map[string]any{"sources": []any{pathSrc(p)}, "start_ns": 0, "end_ns": "9223372036854775807", "limits": map[string]any{"max_memory_bytes": 1 << 20}}
		if m, code := e.call("inspect_trace_window", args); code != contract.CodeLimitExceeded {
			t.Errorf("%s: got %q %v, want LIMIT_EXCEEDED", ph, code, m["error"])
		}
		delete(args, "limits")
		if m, code := e.call("inspect_trace_window", args); code != "" {
			t.Errorf("%s without the low limit: %s %v", ph, code, m["error"])
		}
	}
}
