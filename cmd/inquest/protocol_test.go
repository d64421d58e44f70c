package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rawMCP starts `inquest mcp args...` with env and returns a function that
// writes one line to its stdin and one that waits (at most a minute) for
// the response with the given id (compact JSON text, "null" included).
// The process ends when the test does.
func rawMCP(t *testing.T, env []string, args ...string) (send func(string), await func(id string) map[string]any) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Env = env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(3 * time.Minute):
			cmd.Process.Kill()
			<-exited
		}
	})
	responses := make(chan map[string]any, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				responses <- m
			}
		}
		close(responses)
	}()
	send = func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	await = func(id string) map[string]any {
		t.Helper()
		deadline := time.After(3 * time.Minute)
		for {
			select {
			case m, ok := <-responses:
				if !ok {
					t.Fatalf("inquest mcp ended before answering id %s", id)
				}
				if got, _ := json.Marshal(m["id"]); string(got) == id {
					return m
				}
			case <-deadline:
				t.Fatalf("no answer with id %s", id)
			}
		}
	}
	return send, await
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestMCPProtocolErrors drives the real `inquest mcp` over raw stdin with
// requests JSON-RPC 2.0 and the MCP lifecycle refuse: each is answered
// with a JSON-RPC error whose code is the protocol's (never 0, never
// silence), and the session goes on.
func TestMCPProtocolErrors(t *testing.T) {
	send, await := rawMCP(t, isolatedEnv(t), "--in-process")
	code := func(m map[string]any) float64 {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		if e == nil {
			t.Fatalf("want a JSON-RPC error, got %v", m)
		}
		if msg, _ := e["message"].(string); msg == "" {
			t.Fatalf("error without a message: %v", m)
		}
		return e["code"].(float64)
	}
	// Before initialize: only ping is answered normally.
	send(`{"jsonrpc":"2.0","id":"early","method":"tools/call","params":{"name":"list_processes","arguments":{}}}`)
	if c := code(await(`"early"`)); c != -32600 {
		t.Fatalf("tools/call before initialize: code %v, want -32600", c)
	}
	send(`{"jsonrpc":"2.0","id":"early-list","method":"tools/list"}`)
	if c := code(await(`"early-list"`)); c != -32600 {
		t.Fatalf("tools/list before initialize: code %v, want -32600", c)
	}
	send(initializeLine)
	if m := await("1"); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tc := range []struct {
		name, line, id string
		code           float64
	}{
		{"second initialize", strings.Replace(initializeLine, `"id":1`, `"id":2`, 1), "2", -32600},
		{"null id tools/call", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"list_processes","arguments":{}}}`, "null", -32600},
		{"null id ping", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null", -32600},
		// JSON-RPC 2.0 section 4.2: params, when present, is a structured
		// value; null breaks the Request object.
		{"null params", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":null}`, "3", -32600},
		{"no name", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}`, "4", -32602},
		{"arguments not an object", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_processes","arguments":[1]}}`, "5", -32602},
		{"resources/list", `{"jsonrpc":"2.0","id":6,"method":"resources/list"}`, "6", -32601},
		{"resources/templates/list", `{"jsonrpc":"2.0","id":7,"method":"resources/templates/list"}`, "7", -32601},
		{"prompts/list", `{"jsonrpc":"2.0","id":8,"method":"prompts/list"}`, "8", -32601},
		{"completion/complete", `{"jsonrpc":"2.0","id":9,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}}`, "9", -32601},
		{"logging/setLevel", `{"jsonrpc":"2.0","id":10,"method":"logging/setLevel","params":{"level":"info"}}`, "10", -32601},
	} {
		send(tc.line)
		if c := code(await(tc.id)); c != tc.code {
			t.Errorf("%s: code %v, want %v", tc.name, c, tc.code)
		}
	}
	send(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"list_processes","arguments":{"limit":1}}}`)
	if m := await("20"); m["result"] == nil {
		t.Fatalf("a valid call after the refused ones: %v", m)
	}
}

// TestMCPArgumentsOverLimit: a tools/call line under the 5 MiB line limit
// whose arguments exceed 4 MiB is a typed INVALID_ARGUMENT result naming
// the bound (details.limit_bytes), and the session goes on.
func TestMCPArgumentsOverLimit(t *testing.T) {
	send, await := rawMCP(t, isolatedEnv(t), "--in-process")
	send(initializeLine)
	await("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// 20 strings of 240 KiB: more than 4 MiB of arguments, no string over
	// the 256 KiB string limit.
	var big strings.Builder
	for i := range 20 {
		fmt.Fprintf(&big, `,"a%d":"%s"`, i, strings.Repeat("x", 240<<10))
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inspect_binary","arguments":{"path":"/bin/true"` + big.String() + `}}}`)
	m := await("2")
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	e, _ := sc["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	if res["isError"] != true || e["code"] != "INVALID_ARGUMENT" || e["retryable"] != false || d["limit"] != "max_argument_bytes" || d["limit_bytes"] != float64(4<<20) {
		t.Fatalf("arguments over 4 MiB: %v", m)
	}
	if strings.Contains(e["message"].(string), "xxxx") {
		t.Fatalf("the message echoes the input")
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if m := await("3"); m["result"] == nil {
		t.Fatalf("ping after the refused call: %v", m)
	}
}
