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
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEncodeCallResultIsTheSDKs: the response line a stdio session writes
// for a result it encoded itself is byte for byte the line the SDK writes
// for project(body, isErr): HTML characters, U+2028/U+2029, non-ASCII
// text, control characters, backslashes and invalid UTF-8 in the envelope, isError set or
// not, number and string ids.
func TestEncodeCallResultIsTheSDKs(t *testing.T) {
	bodies := []any{
		map[string]any{"status": "complete", "data": map[string]any{"rows": []string{"mov %rax,(%rbx)", "cmp $0x0,-0x8(%rbp)"}}},
		map[string]any{"text": "a<b>&c \u2028 \u2029 é 日本 \"q\" \\ \t\n\r\b\f \x01 \x7f"},
		map[string]any{"error": map[string]any{"code": "INVALID_ARGUMENT", "message": "x"}},
		[]any{},
	}
	// raws are bodies encoding/json would not write (invalid UTF-8 in a
	// string): the text block still escapes them as the SDK does.
	raws := [][]byte{[]byte("{\"s\":\"a\xffb\xe2\x80 \xf0\x9f\x98\x80\"}")}
	ids := []any{float64(0), float64(7), "page-3", float64(1 << 40)}
	for bi := range len(bodies) + len(raws) {
		var body []byte
		if bi < len(bodies) {
			body, _ = json.Marshal(bodies[bi])
		} else {
			body = raws[bi-len(bodies)]
		}
		for _, isErr := range []bool{false, true} {
			for _, v := range ids {
				t.Run(fmt.Sprintf("%d/%v/%v", bi, isErr, v), func(t *testing.T) {
					id, err := jsonrpc.MakeID(v)
					if err != nil {
						t.Fatal(err)
					}
					// The SDK's own members around content, as a session
					// of the newest protocol writes them (_meta before,
					// resultType after), and none.
					for _, meta := range []mcp.Meta{nil, {"io.modelcontextprotocol/serverInfo": map[string]any{"name": "inquest", "version": "0.1.0-dev"}}} {
						r := newRawResults()
						real := project(body, isErr)
						real.Meta = meta
						res, err := json.Marshal(real)
						if err != nil {
							t.Fatal(err)
						}
						want, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: res})
						if err != nil {
							t.Fatal(err)
						}
						enc, delivered := encodeCallResult(body)
						if delivered != DeliveredBytes(body) {
							t.Errorf("encodeCallResult measured %d delivered bytes, DeliveredBytes says %d", delivered, DeliveredBytes(body))
						}
						p := r.put(enc, isErr)
						p.Meta = meta
						pres, err := json.Marshal(p)
						if err != nil {
							t.Fatal(err)
						}
						content, head, tail, placeholder, found := r.take(pres)
						if !placeholder || !found {
							t.Fatalf("take(%s): placeholder %v found %v", pres, placeholder, found)
						}
						got, err := encodeResponse(id, head, content, tail)
						if err != nil {
							t.Fatal(err)
						}
						if string(got) != string(want)+"\n" {
							t.Errorf("ours\n%s\nthe SDK's\n%s", got, want)
						}
					}
				})
			}
		}
	}
}

// TestServeIOLargeResult: a result above rawMinBytes goes out over stdio
// whole (its text block is its structuredContent), beside small results
// and errors in the same session, and no placeholder reaches the client.
func TestServeIOLargeResult(t *testing.T) {
	reg := tool.NewRegistry()
	reg.MustAdd(tool.Tool{Name: "big", Toolset: tool.Bin, Description: "n rows (required)",
		Input: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["n"],"properties":{"n":{"type":"integer","minimum":0,"maximum":100000}}}`),
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			var a struct{ N int }
			json.Unmarshal(args, &a)
			rows := make([]string, a.N)
			for i := range rows {
				rows[i] = fmt.Sprintf("%#x: <insn %d> & \u2028", i, i)
			}
			return contract.NewResult("test", time.Time{}, map[string]any{"rows": rows}), nil
		}})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"n":20000}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"big","arguments":{"n":2}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"big","arguments":{"n":50000}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"big","arguments":{"n":"x"}}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := ServeIO(context.Background(), New(reg, Options{Version: "t", MaxResultBytes: tool.HardResultBytes}), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte("inquest.raw.")) {
		t.Fatal("a placeholder result reached the client")
	}
	rows := map[string]int{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Content []struct {
					Type, Text string
				} `json:"content"`
				StructuredContent json.RawMessage `json:"structuredContent"`
				IsError           bool            `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %.200q", sc.Text())
		}
		if len(m.Result.Content) != 1 || m.Result.Content[0].Type != "text" || m.Result.Content[0].Text != string(m.Result.StructuredContent) {
			if string(m.ID) != "1" {
				t.Errorf("id %s: the text block is not the structuredContent", m.ID)
			}
			continue
		}
		var env struct {
			Data struct{ Rows []string } `json:"data"`
		}
		json.Unmarshal(m.Result.StructuredContent, &env)
		rows[string(m.ID)] = len(env.Data.Rows)
		if m.Result.IsError != (string(m.ID) == "5") {
			t.Errorf("id %s: isError %v", m.ID, m.Result.IsError)
		}
	}
	want := map[string]int{"2": 20000, `"three"`: 2, "4": 50000, "5": 0}
	for id, n := range want {
		if got, ok := rows[id]; !ok || got != n {
			t.Errorf("id %s: %d rows (answered %v), want %d", id, got, ok, n)
		}
	}
}

// TestRawResultsFullFallsBack: while maxRawPending results wait to be
// written, put keeps nothing more and returns nil (the caller hands the
// SDK the result itself), and every held result can still be taken: none
// is dropped to make room.
func TestRawResultsFullFallsBack(t *testing.T) {
	r := newRawResults()
	var held [][]byte
	for i := range maxRawPending {
		p := r.put([]byte(fmt.Sprintf("result %d", i)), false)
		if p == nil {
			t.Fatalf("put %d of %d: refused below the bound", i+1, maxRawPending)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	if p := r.put([]byte("one more"), false); p != nil {
		t.Fatalf("put beyond %d held results kept it: %s", maxRawPending, p.StructuredContent)
	}
	for i, b := range held {
		full, _, _, placeholder, found := r.take(b)
		if !placeholder || !found || string(full) != fmt.Sprintf("result %d", i) {
			t.Fatalf("take %d: placeholder %v found %v full %q", i, placeholder, found, full)
		}
	}
	if p := r.put([]byte("after"), false); p == nil {
		t.Fatal("put after every held result was taken: refused")
	}
}

// TestServeIOLargeResultBudget: over stdio, a result the session encodes
// itself is the envelope ProjectWithin makes for the session's budget,
// under it (unchanged) or over it (with the over-budget warning naming the
// delivered size), byte for byte.
func TestServeIOLargeResultBudget(t *testing.T) {
	const budget = 64 << 10
	result := func(n int) *contract.Result {
		rows := make([]string, n)
		for i := range rows {
			rows[i] = fmt.Sprintf("%#x: <insn %d> & \u2028 \"q\"", i, i)
		}
		return contract.NewResult("test", time.Time{}, map[string]any{"rows": rows})
	}
	reg := tool.NewRegistry()
	reg.MustAdd(tool.Tool{Name: "big", Toolset: tool.Bin, Description: "n rows (required)",
		Input: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["n"],"properties":{"n":{"type":"integer","minimum":0,"maximum":100000}}}`),
		Handler: func(ctx context.Context, args json.RawMessage) (*contract.Result, error) {
			var a struct{ N int }
			json.Unmarshal(args, &a)
			return result(a.N), nil
		}})
	for _, n := range []int{10, 600, 1000, 20000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
				`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
				fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"n":%d}}}`, n) + "\n"
			var out bytes.Buffer
			if err := ServeIO(context.Background(), New(reg, Options{Version: "t", MaxResultBytes: budget}), strings.NewReader(in), &out); err != nil {
				t.Fatal(err)
			}
			want, _ := projectWithin(result(n), nil, budget)
			sc := bufio.NewScanner(&out)
			sc.Buffer(nil, 64<<20)
			found := false
			for sc.Scan() {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Result struct {
						StructuredContent json.RawMessage `json:"structuredContent"`
					} `json:"result"`
				}
				if json.Unmarshal(sc.Bytes(), &m) != nil || string(m.ID) != "2" {
					continue
				}
				found = true
				if !bytes.Equal(m.Result.StructuredContent, want) {
					t.Errorf("structuredContent\n%.400s\nProjectWithin's\n%.400s", m.Result.StructuredContent, want)
				}
			}
			if !found {
				t.Fatal("no answer to the call")
			}
			if over := bytes.Contains(want, []byte(`"warnings":["`)); over != (DeliveredBytes(want) > budget) {
				t.Errorf("over-budget warning %v, delivered %d bytes against %d", over, DeliveredBytes(want), budget)
			}
		})
	}
}
