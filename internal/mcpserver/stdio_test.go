package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// TestServeIOSurvivesGarbage: a line that is not JSON gets a -32700
// response and the session goes on; calls in flight when stdin ends are
// still answered; a schema failure is an isError result, an unknown tool a
// JSON-RPC error.
func TestServeIOSurvivesGarbage(t *testing.T) {
	reg := tool.NewRegistry()
	reg.MustAdd(tool.Tool{Name: "slow", Toolset: tool.Bin, Description: "sleeps ms (required)",
		Input: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["ms"],"properties":{"ms":{"type":"integer","minimum":0,"maximum":2000}}}`),
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			var a struct{ MS int }
			json.Unmarshal(args, &a)
			time.Sleep(time.Duration(a.MS) * time.Millisecond)
			return contract.NewResult("test", time.Time{}, map[string]any{"slept_ms": a.MS}), nil
		}})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage {`,
		``,
		`42`,
		`"str"`,
		`null`,
		`{}`,
		`[]`,
		`{"jsonrpc":"1.0","id":9,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"ms":300}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow","arguments":{"ms":"x"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	s := New(reg, Options{Version: "t"})
	if err := ServeIO(context.Background(), s, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	var nullIDCodes []float64
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		id, _ := json.Marshal(m["id"])
		got[string(id)] = m
		if string(id) == "null" {
			nullIDCodes = append(nullIDCodes, m["error"].(map[string]any)["code"].(float64))
		}
	}
	// garbage → -32700; 42, "str", null, {}, [] and an object id → -32600.
	if fmt.Sprint(nullIDCodes) != "[-32700 -32600 -32600 -32600 -32600 -32600 -32600]" {
		t.Fatalf("error responses with a null id: %v", nullIDCodes)
	}
	if e, _ := got["9"]["error"].(map[string]any); e == nil || e["code"] != float64(-32600) {
		t.Fatalf("jsonrpc 1.0 message: %v", got["9"])
	}
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		if got[id] == nil {
			t.Fatalf("request %s not answered (stdin ended while it was in flight)", id)
		}
	}
	if r := got["3"]["result"].(map[string]any); r["isError"] == true {
		t.Fatalf("slow call failed: %v", r)
	}
	if r := got["4"]["result"].(map[string]any); r["isError"] != true {
		t.Fatalf("schema failure not isError: %v", r)
	}
	if got["5"]["error"] == nil {
		t.Fatalf("unknown tool not a JSON-RPC error: %v", got["5"])
	}
}

// TestCancelledRequestGetsNoResponse: a response to a request the client
// cancelled (notifications/cancelled) is not written; others are, and a
// cancel of an id not in flight changes nothing.
func TestCancelledRequestGetsNoResponse(t *testing.T) {
	for _, tc := range []struct {
		name, req, cancel, resp string
		written                 bool
	}{
		{"cancelled number id", `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`, `{"jsonrpc":"2.0","id":7,"result":{}}`, false},
		{"cancelled string id", `{"jsonrpc":"2.0","id":"a","method":"tools/call"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`, `{"jsonrpc":"2.0","id":"a","result":{}}`, false},
		// The response spells the id as encoding/json writes it (UTF-8,
		// \" and \\ escaped); the client may have escaped it otherwise.
		{"cancelled escaped string id", `{"jsonrpc":"2.0","id":"\u00ff\"\\ id 2","method":"tools/call"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\u00ff\"\\ id 2"}}`, "{\"jsonrpc\":\"2.0\",\"id\":\"\u00ff\\\"\\\\ id 2\",\"result\":{}}", false},
		{"cancelled id with an escaped slash", `{"jsonrpc":"2.0","id":"a\/b","method":"tools/call"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a/b"}}`, `{"jsonrpc":"2.0","id":"a/b","result":{}}`, false},
		{"other id cancelled", `{"jsonrpc":"2.0","id":8,"method":"tools/call"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, `{"jsonrpc":"2.0","id":8,"result":{}}`, true},
		{"string vs number id", `{"jsonrpc":"2.0","id":8,"method":"tools/call"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"8"}}`, `{"jsonrpc":"2.0","id":8,"result":{}}`, true},
		{"not cancelled", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, ``, `{"jsonrpc":"2.0","id":1,"result":{}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := newLockedWriter(&out)
			// What filterLines does with each inbound line.
			id, ok := requestID([]byte(tc.req))
			if !ok {
				t.Fatalf("not a request: %s", tc.req)
			}
			w.request(id)
			if tc.cancel != "" {
				cid, ok := cancelledID([]byte(tc.cancel))
				if !ok {
					t.Fatalf("not a cancellation: %s", tc.cancel)
				}
				w.cancel(cid)
			}
			w.Write([]byte(tc.resp + "\n"))
			if got := out.Len() > 0; got != tc.written {
				t.Fatalf("written %v, want %v: %q", got, tc.written, out.String())
			}
			if w.pending != 0 || len(w.inflight) != 0 || len(w.cancelled) != 0 {
				t.Fatalf("bookkeeping left: pending %d inflight %v cancelled %v", w.pending, w.inflight, w.cancelled)
			}
		})
	}
}
