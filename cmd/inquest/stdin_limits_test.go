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

// TestMCPStdinLimits (issue case 1) drives the real `inquest mcp` over raw
// stdin: tools/call lines nested 997, 9,999 and 10,001 levels deep, a
// 6 MiB line and raw invalid UTF-8 inside a proc argument are each
// answered with their own id (INVALID_ARGUMENT, isError), the process
// keeps running, and a proc call after them succeeds without any
// connection-reset warning.
func TestMCPStdinLimits(t *testing.T) {
	cmd := exec.Command(binary, "mcp", "--in-process")
	cmd.Env = isolatedEnv(t)
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
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				responses <- m
			}
		}
		close(responses)
	}()
	send := func(line string) {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	await := func(id float64) map[string]any {
		t.Helper()
		deadline := time.After(3 * time.Minute)
		for {
			select {
			case m, ok := <-responses:
				if !ok {
					t.Fatalf("inquest mcp ended before answering id %v (exit: %v)", id, <-exited)
				}
				if m["id"] == id {
					return m
				}
			case <-deadline:
				t.Fatalf("no answer with id %v", id)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	await(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	nest := func(n int) string {
		return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
	}
	call := func(id int, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_processes","arguments":%s}}`, id, args)
	}
	lines := map[float64]string{
		10: call(10, nest(997)),
		11: call(11, nest(9999)),
		12: call(12, nest(10001)),
		13: call(13, `{"filter":{"name":"`+strings.Repeat("x", 6<<20)+`"}}`),
		14: call(14, "{\"filter\":{\"name\":\"ss\xff\xfeh\"}}"),
	}
	for id := 10.0; id <= 14; id++ {
		send(lines[id])
		m := await(id)
		res, _ := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		e, _ := sc["error"].(map[string]any)
		if res["isError"] != true || e["code"] != "INVALID_ARGUMENT" {
			t.Fatalf("id %v: want isError INVALID_ARGUMENT, got %v", id, m)
		}
	}
	send(call(20, `{"limit":1}`))
	m := await(20)
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if res["isError"] == true || sc["status"] == nil {
		t.Fatalf("a valid call after the bad lines failed: %v", m)
	}
	if ws, _ := sc["warnings"].([]any); len(ws) > 0 {
		for _, w := range ws {
			if strings.Contains(fmt.Sprint(w), "reset") {
				t.Fatalf("the session was reset: %v", w)
			}
		}
	}
}
