package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

const (
	initLine        = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	tailID          = `"tail"`
	tailLine        = `{"jsonrpc":"2.0","id":"tail","method":"ping"}`
)

func echoRegistry() *tool.Registry {
	reg := tool.NewRegistry()
	reg.MustAdd(tool.Tool{Name: "echo", Toolset: tool.Bin, Description: "echoes its arguments",
		Input: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"v":{}}}`),
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			return contract.NewResult("test", time.Time{}, map[string]any{"bytes": len(args)}), nil
		}})
	return reg
}

// session runs one ServeIO session over lines (initialize first, a ping
// with id "tail" last) and returns every response keyed by its id's JSON
// text. It fails the test when ServeIO ends with an error or a stdout line
// is not JSON.
func session(t testing.TB, lines ...[]byte) map[string]map[string]any {
	t.Helper()
	var in bytes.Buffer
	in.WriteString(initLine + "\n" + initializedLine + "\n")
	for _, l := range lines {
		in.Write(l)
		in.WriteByte('\n')
	}
	in.WriteString(tailLine + "\n")
	var out bytes.Buffer
	if err := ServeIO(context.Background(), New(echoRegistry(), Options{Version: "t"}), &in, &out); err != nil {
		t.Fatalf("the session ended with an error: %v", err)
	}
	got := map[string]map[string]any{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %.200q", sc.Text())
		}
		if e, ok := m["error"].(map[string]any); ok && (e["code"] == nil || e["code"] == float64(0)) {
			t.Fatalf("an error response without a JSON-RPC code: %.300q", sc.Text())
		}
		id, _ := json.Marshal(m["id"])
		if string(id) != "null" {
			got[string(id)] = m
		}
	}
	if got[tailID] == nil {
		t.Fatalf("the ping after the input was not answered: the session did not go on")
	}
	return got
}

func nested(depth int, inner string) string {
	return strings.Repeat(`{"v":`, depth) + inner + strings.Repeat(`}`, depth)
}

func toolCall(id int, args string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"echo","arguments":` + args + `}}`)
}

// zeros is a JSON array of n zeros.
func zeros(n int) string {
	if n == 0 {
		return "[]"
	}
	return "[" + strings.Repeat("0,", n-1) + "0]"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestInputLimits: every line that breaks a limit (nesting of 997, 9,999,
// 10,001 and 100,000 levels, a 6 MiB line, raw invalid UTF-8 in a tool
// argument) is answered with its own id, as a tools/call isError result
// with INVALID_ARGUMENT and details.limit, and the session goes on. A
// message at exactly MaxNestingDepth reaches the tool.
func TestInputLimits(t *testing.T) {
	big := `"` + strings.Repeat("x", MaxLineBytes+1<<20) + `"`
	cases := []struct {
		name  string
		line  []byte
		limit string // "" = passes to the tool
	}{
		{"depth997", toolCall(10, nested(997, "1")), "max_nesting_depth"},
		{"depth9999", toolCall(11, nested(9999, "1")), "max_nesting_depth"},
		{"depth10001", toolCall(12, nested(10001, "1")), "max_nesting_depth"},
		{"depth100000 unclosed", toolCall(13, strings.Repeat("[", 100000)), "max_nesting_depth"},
		{"6MiB", toolCall(14, `{"v":`+big+`}`), "max_line_bytes"},
		{"bad utf8", toolCall(15, "{\"v\":\"a\xff\xfeb\"}"), "utf8"},
		{"depth at limit", toolCall(16, nested(MaxNestingDepth-2, "1")), ""},
		{"depth one over", toolCall(17, nested(MaxNestingDepth-1, "1")), "max_nesting_depth"},
		{"array at limit", toolCall(18, `{"v":`+zeros(MaxArrayItems)+`}`), ""},
		{"array one over", toolCall(19, `{"v":`+zeros(MaxArrayItems+1)+`}`), "max_array_items"},
		{"5MB array of zeros", toolCall(20, `{"v":`+zeros(2_600_000)+`}`), "max_array_items"},
		{"nested arrays each at limit", toolCall(21, `{"v":[`+zeros(MaxArrayItems)+`,`+zeros(MaxArrayItems)+`]}`), ""},
		{"string at limit", toolCall(22, `{"v":"`+strings.Repeat("x", MaxStringBytes)+`"}`), ""},
		{"string one over", toolCall(23, `{"v":"`+strings.Repeat("x", MaxStringBytes+1)+`"}`), "max_string_bytes"},
		{"escapes in a string", toolCall(24, `{"v":"`+strings.Repeat(`\"`, MaxStringBytes/2)+`"}`), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := session(t, c.line)
			id, _ := recoverID(c.line)
			resp := got[string(id)]
			if resp == nil {
				t.Fatalf("no response with id %s", id)
			}
			res, _ := resp["result"].(map[string]any)
			if res == nil {
				t.Fatalf("not a tool result: %v", resp)
			}
			sc, _ := res["structuredContent"].(map[string]any)
			if c.limit == "" {
				if res["isError"] == true {
					t.Fatalf("a message within the limits failed: %v", sc)
				}
				return
			}
			e, _ := sc["error"].(map[string]any)
			if res["isError"] != true || e["code"] != "INVALID_ARGUMENT" || e["retryable"] != false {
				t.Fatalf("want isError INVALID_ARGUMENT, got %v", res)
			}
			if d, _ := e["details"].(map[string]any); d["limit"] != c.limit {
				t.Fatalf("details.limit = %v, want %s", d["limit"], c.limit)
			}
		})
	}
}

// TestInputLimitsNonToolRequests: a request other than tools/call that
// breaks a limit gets a JSON-RPC error with its id; a line that is not JSON
// gets -32700, with its id when the id precedes the damage.
func TestInputLimitsNonToolRequests(t *testing.T) {
	got := session(t,
		[]byte(`{"jsonrpc":"2.0","id":"p1","method":"ping","params":`+nested(200, "1")+`}`),
		[]byte("{\"jsonrpc\":\"2.0\",\"id\":\"p2\",\"method\":\"ping\",\"params\":{\"x\":\"\xc0\"}}"),
		[]byte(`{"jsonrpc":"2.0","id":"p3","method":"ping","params":{"x":`),
		[]byte(`{"jsonrpc":"2.0","id":[1],"method":"ping"}`),
	)
	for id, code := range map[string]float64{`"p1"`: -32600, `"p2"`: -32600, `"p3"`: -32700} {
		e, _ := got[id]["error"].(map[string]any)
		if e == nil || e["code"] != code {
			t.Errorf("response %s = %v, want error %v", id, got[id], code)
		}
	}
}

func TestRecoverID(t *testing.T) {
	for _, c := range []struct{ in, id, method string }{
		{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, `7`, "ping"},
		{`{"method":"tools/call","params":{"a":[{"id":1}]},"id":"x\"y"}`, `"x\"y"`, "tools/call"},
		{`{"id":-1.5e3,"method":"a"`, `-1.5e3`, "a"},
		{`{"id":null,"method":"a"}`, ``, "a"},
		{`{"id":{"a":1}}`, ``, ""},
		{`{"id":12`, ``, ""},
		{`[{"id":1}]`, ``, ""},
		{"{\"id\":\"\xff\"}", ``, ""},
		{`{"method":"m","params":` + strings.Repeat("[", 50000), ``, "m"},
	} {
		id, m := recoverID([]byte(c.in))
		if string(id) != c.id || m != c.method {
			t.Errorf("recoverID(%.60q) = %s %q, want %s %q", c.in, id, m, c.id, c.method)
		}
	}
}

// FuzzServeLine drives a session's stdin with one arbitrary line between a
// handshake and a final ping: the session must never end with an error,
// the ping must be answered (the session went on), and a request whose id
// is readable must be answered with that id.
func FuzzServeLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		string(toolCall(3, `{"v":1}`)),
		string(toolCall(4, nested(80, "1"))),
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"v\":\"\xff\"}}}",
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":null}`,
		`{"jsonrpc":"2.0","id":6,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[]}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`,
		`garbage`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"name":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.ReplaceAll(bytes.ReplaceAll(line, []byte("\n"), []byte(" ")), []byte("\r"), []byte(" "))
		got := session(t, line)
		id, method := recoverID(line)
		if id == nil || method == "" || !json.Valid(line) {
			return
		}
		var idv any
		if json.Unmarshal(id, &idv) != nil {
			return
		}
		key, _ := json.Marshal(idv)
		if string(key) == "1" || string(key) == tailID {
			return
		}
		if got[string(key)] == nil {
			t.Fatalf("request id %s (method %q) was not answered", id, method)
		}
	})
}
