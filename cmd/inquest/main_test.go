package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/ipc"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite golden files")

// binary is the inquest binary built once for the package's tests.
var binary string

// testscriptCommands are the commands testscript runs in-process.
var testscriptCommands = map[string]func() int{}

func TestMain(m *testing.M) {
	// Invoked by testscript as the inquest command: run it and exit.
	if f := testscriptCommands[filepath.Base(os.Args[0])]; f != nil {
		os.Exit(f())
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "inquest-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "inquest")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.Exit(1)
	}
	logDir := resultLog(dir)
	code := testscript.RunMain(m, testscriptCommands)
	if code == 0 {
		code = checkResults(logDir)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// resultLog makes every inquest this package starts log its results
// (tool.ResultLogEnv) under dir, unless the caller already set the log
// directory (then that one is used, and kept).
func resultLog(dir string) string {
	if d := os.Getenv(tool.ResultLogEnv); d != "" {
		return d
	}
	logDir := filepath.Join(dir, "results")
	os.MkdirAll(logDir, 0o755)
	os.Setenv(tool.ResultLogEnv, logDir)
	return logDir
}

// checkResults validates every result the tests made the built binary
// return against the output schema its tools/list publishes (read with
// `inquest mcp inspect --full`, the definitions as tools/list has them),
// so no output schema drifts from what its tool returns. It returns the
// exit code: 1 when a result does not validate.
func checkResults(logDir string) int {
	out, err := exec.Command(binary, "mcp", "inspect", "--full").Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "result check: mcp inspect --full: %v\n", err)
		return 1
	}
	schemas := map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var def struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if err := dec.Decode(&def); err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "result check: mcp inspect --full: %v\n", err)
			return 1
		}
		schemas[def.Name] = def.OutputSchema
	}
	counts, problems := tool.CheckResultLog(logDir, func(n string) json.RawMessage { return schemas[n] })
	n := 0
	for _, c := range counts {
		n += c
	}
	fmt.Fprintf(os.Stderr, "result check: %d results of %d tools validated against their published output schemas\n", n, len(counts))
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "result check:", p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

// stopHost ends the host whose lock is in the runtime directory dir, if
// one runs, and waits (bounded, to catch a hang) until it has exited.
func stopHost(t *testing.T, dir string) {
	running, pid, _ := ipc.HostRunning(dir)
	if !running || pid <= 0 {
		return
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	p.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(time.Minute)
	for p.Signal(syscall.Signal(0)) == nil {
		if time.Now().After(deadline) {
			p.Kill()
			t.Errorf("the host %d of %s did not stop within a minute of SIGTERM", pid, dir)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// isolatedEnv points every per-user location at a temp dir so tests never
// reach the developer's host, configuration or evidence.
func isolatedEnv(t *testing.T) []string {
	t.Helper()
	base := t.TempDir()
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "TMPDIR", "INQUEST_DATA_DIR", "INQUEST_CONFIG":
			continue
		}
		env = append(env, kv)
	}
	for _, d := range []string{"run", "config", "state", "data", "tmp"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A bridge started by the test may have started a host in this
	// runtime directory: stop it before the directory goes (cleanups run
	// last registered first), so no test leaves a host running.
	t.Cleanup(func() { stopHost(t, filepath.Join(base, "run", "inquest")) })
	return append(env,
		"XDG_RUNTIME_DIR="+filepath.Join(base, "run"),
		"XDG_CONFIG_HOME="+filepath.Join(base, "config"),
		"XDG_STATE_HOME="+filepath.Join(base, "state"),
		"XDG_DATA_HOME="+filepath.Join(base, "data"),
		"TMPDIR="+filepath.Join(base, "tmp"),
	)
}

// connect starts `inquest mcp` with env and returns an initialized session
// that asked for protocol revision version.
func connect(t *testing.T, env []string, version string, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "inquest-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call invokes a tool and decodes the envelope; it checks that
// structuredContent and the single text block are the same JSON.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var fromText, fromStruct any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatalf("%s: text block is not JSON: %v", name, err)
	}
	sb, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(sb, &fromStruct)
	a, _ := json.Marshal(fromText)
	b, _ := json.Marshal(fromStruct)
	if string(a) != string(b) {
		t.Fatalf("%s: structuredContent and text differ", name)
	}
	return fromText.(map[string]any), res.IsError
}

func TestMCPFirstInvestigation(t *testing.T) {
	env := isolatedEnv(t)
	cs := connect(t, env, "2025-11-25")
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("negotiated %q, want 2025-11-25", got)
	}
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
		in, _ := json.Marshal(tl.InputSchema)
		var m map[string]any
		json.Unmarshal(in, &m)
		// tools/list publishes the lean schema (no additionalProperties:
		// the server refuses unknown arguments from the full schema).
		if m["type"] != "object" || m["properties"] == nil && m["anyOf"] == nil {
			t.Errorf("%s: input schema is not an object schema: %s", tl.Name, in)
		}
		if tl.OutputSchema == nil {
			t.Errorf("%s: no output schema", tl.Name)
		}
	}
	for _, n := range []string{"get_status", "get_system_info", "list_metrics", "list_processes", "get_metrics"} {
		if !names[n] {
			t.Errorf("tool %s missing", n)
		}
	}

	// A child with a distinctive name: a copy of sleep.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	childPath := filepath.Join(dir, "inqchild42")
	b, _ := os.ReadFile(sleep)
	if err := os.WriteFile(childPath, b, 0o755); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(childPath, "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	pid := child.Process.Pid

	// The host samples every second: wait until the child is listed (the
	// 2-minute bound only ends a hang; a loaded machine can miss 10 s).
	var ref string
	deadline := time.Now().Add(2 * time.Minute)
	for ref == "" && time.Now().Before(deadline) {
		env, isErr := call(t, cs, "list_processes", map[string]any{"filter": map[string]any{"pid": pid}})
		if isErr {
			t.Fatalf("list_processes: %v", env)
		}
		rows := env["data"].(map[string]any)["rows"].([]any)
		// A sample taken between fork and exec lists the child under this
		// test binary's name: wait for one past its exec.
		if len(rows) == 1 && rows[0].(map[string]any)["name"] != filepath.Base(os.Args[0]) {
			row := rows[0].(map[string]any)
			if row["name"] != "inqchild42" || int(row["pid"].(float64)) != pid {
				t.Fatalf("row %v", row)
			}
			ref = row["process_ref"].(string)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ref == "" {
		t.Fatal("child never listed by pid")
	}
	byName, _ := call(t, cs, "list_processes", map[string]any{"filter": map[string]any{"name": "INQCHILD4"}})
	rows := byName["data"].(map[string]any)["rows"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["process_ref"] != ref {
		t.Fatalf("by name: %v", rows)
	}

	m, isErr := call(t, cs, "get_metrics", map[string]any{"metric_ids": []string{"rss_bytes", "threads"}, "targets": []any{map[string]any{"process_ref": ref}}})
	if isErr {
		t.Fatalf("get_metrics: %v", m)
	}
	vals := m["data"].(map[string]any)["samples"].([]any)[0].(map[string]any)["values"].(map[string]any)
	rss, ok := vals["rss_bytes"].(string)
	if !ok {
		t.Fatalf("rss_bytes is not a decimal string: %#v", vals["rss_bytes"])
	}
	if n, err := strconv.ParseUint(rss, 10, 64); err != nil || n == 0 {
		t.Fatalf("rss %q", rss)
	}

	child.Process.Kill()
	child.Wait()
	m, isErr = call(t, cs, "get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
	if !isErr || m["error"].(map[string]any)["code"] != "PROCESS_EXITED" {
		t.Fatalf("after exit: %v", m)
	}
	if na, _ := m["error"].(map[string]any)["next_action"].(map[string]any); na == nil || na["tool"] != "get_history" {
		t.Fatalf("PROCESS_EXITED without a get_history next_action: %v", m)
	}
	// With another target that succeeds, the exited one is reported in its
	// sample and the result is partial, never another process's values.
	m, isErr = call(t, cs, "get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}, map[string]any{"process_ref": selfRef(t, cs)}}})
	if isErr || m["status"] != "partial" {
		t.Fatalf("mixed targets: %v", m)
	}
	samples := m["data"].(map[string]any)["samples"].([]any)
	if e, _ := samples[0].(map[string]any)["error"].(map[string]any); e == nil || e["code"] != "PROCESS_EXITED" || samples[0].(map[string]any)["values"] != nil {
		t.Fatalf("exited target sample: %v", samples[0])
	}
	if samples[1].(map[string]any)["values"] == nil {
		t.Fatalf("live target sample: %v", samples[1])
	}
}

// selfRef returns the process_ref of this test process.
func selfRef(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	env, isErr := call(t, cs, "list_processes", map[string]any{"filter": map[string]any{"pid": os.Getpid()}})
	rows := env["data"].(map[string]any)["rows"].([]any)
	if isErr || len(rows) != 1 {
		t.Fatalf("self: %v", env)
	}
	return rows[0].(map[string]any)["process_ref"].(string)
}

// TestMCPBadInput pins the error projection of schema failures with golden
// files, and checks that an unknown tool is a JSON-RPC error.
func TestMCPBadInput(t *testing.T) {
	cs := connect(t, isolatedEnv(t), "2025-11-25")
	// A HAR file cut short inside its first entry.
	cut := filepath.Join(t.TempDir(), "cut.har")
	if err := os.WriteFile(cut, []byte(`{"log":{"version":"1.2","creator":{"name":"x","version":"1"},"entries":[{"startedDateTime":"2024-01-01T00:00:00Z","requ`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, tool string
		args       map[string]any
	}{
		// a file argument naming the wrong kind of file is that argument's error
		{"not_a_binary", "inspect_binary", map[string]any{"path": "/etc/passwd"}},
		{"truncated_har", "inspect_http_capture", map[string]any{"path": cut}},
		// an id that names nothing is its argument's error; the id is not repeated
		{"evidence_not_found", "inspect_evidence", map[string]any{"evidence_id": "ev-" + strings.Repeat("a", 26)}},
		{"missing_required", "get_metrics", map[string]any{}},
		{"unknown_field", "list_processes", map[string]any{"colour": "blue"}},
		{"wrong_enum", "list_processes", map[string]any{"scope": "everything"}},
		{"limit_5001", "list_processes", map[string]any{"limit": 5001}},
		{"nested_unknown_field", "list_processes", map[string]any{"filter": map[string]any{"nmae": "x"}}},
		{"malformed_cursor", "list_processes", map[string]any{"cursor": "not-a-cursor"}},
		{"forged_process_ref", "get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": "pr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, isErr := call(t, cs, tc.tool, tc.args)
			if !isErr {
				t.Fatalf("accepted: %v", env)
			}
			b, _ := json.MarshalIndent(env, "", "  ")
			for _, v := range tc.args {
				if s, ok := v.(string); ok && strings.Contains(string(b), s) && s != "" {
					t.Errorf("error echoes the rejected value %q", s)
				}
			}
			golden(t, filepath.Join("testdata", "errors", tc.name+".json"), append(b, '\n'))
		})
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	if err == nil {
		t.Fatal("unknown tool was not a protocol error")
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden file %s (run with -update): %v", path, err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs:\n got: %s\nwant: %s", path, got, want)
	}
}

// TestPagingStableWhileProcessesChange pages one frozen listing with limit 3
// while processes start and exit between pages: the pages neither repeat nor
// skip rows, and a changed argument is CURSOR_INVALID.
func TestPagingStableWhileProcessesChange(t *testing.T) {
	cs := connect(t, isolatedEnv(t), "2025-11-25")
	args := map[string]any{"limit": 3, "projection": []string{"process_ref", "pid"}}
	first, isErr := call(t, cs, "list_processes", args)
	if isErr {
		t.Fatal(first)
	}
	total := int(first["coverage"].(map[string]any)["total"].(float64))
	seen := map[string]bool{}
	page := first
	var kids []*exec.Cmd
	defer func() {
		for _, k := range kids {
			k.Process.Kill()
			k.Wait()
		}
	}()
	for i := 0; ; i++ {
		data := page["data"].(map[string]any)
		for _, r := range data["rows"].([]any) {
			ref := r.(map[string]any)["process_ref"].(string)
			if seen[ref] {
				t.Fatalf("row repeated on page %d", i)
			}
			seen[ref] = true
		}
		if data["next_cursor"] == nil {
			if page["next_action"] != nil {
				t.Fatal("next_action without next_cursor")
			}
			break
		}
		// Churn: start a process and kill an earlier one.
		k := exec.Command("sleep", "30")
		if err := k.Start(); err != nil {
			t.Fatal(err)
		}
		kids = append(kids, k)
		if len(kids) > 1 {
			kids[0].Process.Kill()
		}
		if i == 0 {
			bad := map[string]any{"limit": 4, "projection": []string{"process_ref", "pid"}, "cursor": data["next_cursor"]}
			e, isErr := call(t, cs, "list_processes", bad)
			if !isErr || e["error"].(map[string]any)["code"] != "CURSOR_INVALID" {
				t.Fatalf("changed limit: %v", e)
			}
		}
		action := page["next_action"].(map[string]any)
		if action["tool"] != "list_processes" {
			t.Fatalf("next_action %v", action)
		}
		var isErr bool
		page, isErr = call(t, cs, "list_processes", action["arguments"])
		if isErr {
			t.Fatalf("page %d: %v", i+1, page)
		}
		if i > 1000 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != total {
		t.Fatalf("paged %d rows, listing has %d", len(seen), total)
	}
}

// TestMCPNewerRevision: a client asking for the SDK's newest revision keeps
// it; 2025-11-25 is not forced on everyone.
func TestMCPNewerRevision(t *testing.T) {
	cs := connect(t, isolatedEnv(t), "2026-07-28")
	if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", got)
	}
	env, isErr := call(t, cs, "list_metrics", map[string]any{"target_kind": "system"})
	if isErr || len(env["data"].(map[string]any)["metrics"].([]any)) == 0 {
		t.Fatalf("list_metrics: %v", env)
	}
}
