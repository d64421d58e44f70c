package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/inquest-dev/inquest/internal/mcpserver"
)

// FuzzMCPStdin drives the stdin of the real bridge (`inquest mcp
// --in-process`: the full catalog over an in-process host) with one
// arbitrary line between the handshake and a final ping: the session
// never ends with an error, the ping is answered (the bridge went on),
// and a request whose id is readable is answered with that id.
func FuzzMCPStdin(f *testing.F) {
	base := f.TempDir()
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		f.Setenv(k, filepath.Join(base, k))
	}
	f.Setenv("INQUEST_CONFIG", filepath.Join(base, "inquest.toml"))
	f.Setenv("INQUEST_DATA_DIR", "")
	rt, err := newRuntime(context.Background(), runtimeOptions{MCP: true, InProcess: true, Stderr: io.Discard})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(rt.Close)
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_processes","arguments":{"limit":1}}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"list_processes\",\"arguments\":{\"filter\":{\"name\":\"\xff\"}}}}",
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_metrics","arguments":` + string(bytes.Repeat([]byte(`[`), 2000)) + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"summarize_profile","arguments":{"sources":[{"kind":"path","path":"/proc/self/status"}]}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"inspect_binary","arguments":{"path":"/nonexistent"}}}`,
		`{"jsonrpc":"2.0","id":7,"error":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.ReplaceAll(bytes.ReplaceAll(line, []byte("\n"), []byte(" ")), []byte("\r"), []byte(" "))
		var in bytes.Buffer
		in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
		in.Write(line)
		in.WriteString("\n" + `{"jsonrpc":"2.0","id":"tail","method":"ping"}` + "\n")
		var out bytes.Buffer
		srv := mcpserver.New(rt.Registry, mcpserver.Options{Version: "fuzz"})
		if err := mcpserver.ServeIO(context.Background(), srv, &in, &out); err != nil {
			t.Fatalf("the session ended with an error: %v", err)
		}
		answered := map[string]bool{}
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("stdout line is not JSON: %.200q", sc.Text())
			}
			id, _ := json.Marshal(m["id"])
			answered[string(id)] = true
		}
		if !answered[`"tail"`] {
			t.Fatal("the ping after the line was not answered: the session did not go on")
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil || m.Method == "" || len(m.ID) == 0 {
			return
		}
		var idv any
		if json.Unmarshal(m.ID, &idv) != nil {
			return
		}
		switch idv.(type) {
		case string, float64:
		default:
			return // not an id a client could have sent (answered with null)
		}
		key, _ := json.Marshal(idv)
		if s := string(key); s != "1" && s != `"tail"` && s != "null" && !answered[s] {
			t.Fatalf("request id %s (%s) was not answered", m.ID, m.Method)
		}
	})
}
