// Package agents_test runs the representative agent tasks of docs/agents.md
// through the official TypeScript MCP SDK client (tasks.mjs, installed
// with `npm ci` from package-lock.json) against the real inquest binary,
// and checks the answers against the processes it starts and /proc.
package agents_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// listenerEnv makes the test binary a TCP listener helper: it listens on
// 127.0.0.1 (an ephemeral port), prints the port, and exits when its stdin
// closes.
const listenerEnv = "INQUEST_AGENTS_LISTENER"

func TestMain(m *testing.M) {
	if os.Getenv(listenerEnv) == "1" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// result is what tasks.mjs prints.
type result struct {
	SDK   string `json:"sdk"`
	Tools int    `json:"tools"`
	Tasks struct {
		WhoHoldsFile struct {
			Calls   int             `json:"calls"`
			Error   json.RawMessage `json:"error"`
			Holders []struct {
				PID        int    `json:"pid"`
				Name       string `json:"name"`
				ProcessRef string `json:"process_ref"`
			} `json:"holders"`
			Bytes int `json:"bytes"`
		} `json:"who_holds_file"`
		RSSChange struct {
			Calls       int             `json:"calls"`
			Error       json.RawMessage `json:"error"`
			ProcessRef  string          `json:"process_ref"`
			ResolvedPID int             `json:"resolved_pid"`
			Summary     struct {
				SampleCount int `json:"sample_count"`
				First       struct {
					At    string `json:"at"`
					Value string `json:"value"`
				} `json:"first"`
				Last struct {
					At    string `json:"at"`
					Value string `json:"value"`
				} `json:"last"`
				Change string `json:"first_to_last_change"`
			} `json:"summary"`
			Bytes int `json:"bytes"`
		} `json:"rss_change"`
		Libraries struct {
			Calls        int             `json:"calls"`
			Error        json.RawMessage `json:"error"`
			Modules      []string        `json:"modules"`
			Library      string          `json:"library"`
			Skip         string          `json:"skip"`
			InspectError json.RawMessage `json:"inspect_error"`
			Imports      []string        `json:"imports"`
			ImportRows   int             `json:"import_rows"`
			InspectBytes int             `json:"inspect_bytes"`
		} `json:"libraries_and_imports"`
		WaitExit struct {
			Calls      int             `json:"calls"`
			FirstState string          `json:"first_state"`
			FirstError json.RawMessage `json:"first_error"`
			Error      json.RawMessage `json:"error"`
			State      string          `json:"state"`
			Satisfied  bool            `json:"satisfied"`
			Exited     bool            `json:"exited"`
		} `json:"wait_exit"`
		TCPListeners struct {
			Calls int             `json:"calls"`
			Skip  string          `json:"skip"`
			Error json.RawMessage `json:"error"`
			Rows  []struct {
				PID      *int   `json:"pid"`
				Protocol string `json:"protocol"`
				State    string `json:"state"`
				Port     int    `json:"local_port"`
			} `json:"rows"`
			Bytes int `json:"bytes"`
		} `json:"tcp_listeners"`
	} `json:"tasks"`
	Schema struct {
		Calls     int      `json:"calls"`
		Failures  []string `json:"failures"`
		Successes []string `json:"successes"`
	} `json:"schema"`
}

// TestAgentTasks: the five representative tasks (who holds file F; how
// did P's RSS change over the last 60 s; which libraries does P map and
// what does one of them import; wait until P exits; which processes listen
// on TCP), each in at most two calls of the official TypeScript SDK
// client, each answer checked against the processes this test started;
// and every tool's results and errors accepted by the SDK's output-schema
// validation. It needs node and npm (skipped without them).
func TestAgentTasks(t *testing.T) {
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		t.Skip("node and npm are not installed: the TypeScript SDK client needs them (Debian: nodejs npm)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	here, _ := os.Getwd()
	// npm ci when the installed SDK is not the version package.json pins.
	if sdkVersion(t, filepath.Join(here, "node_modules", "@modelcontextprotocol", "sdk", "package.json")) != pinnedSDK(t, filepath.Join(here, "package.json")) {
		inst := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		inst.Dir = here
		if out, err := inst.CombinedOutput(); err != nil {
			t.Skipf("npm ci failed (registry unreachable?): %v\n%s", err, out)
		}
	}

	base := t.TempDir()
	bin := filepath.Join(base, "inquest")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/inquest-dev/inquest/cmd/inquest").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	file := filepath.Join(base, "held file.txt")
	csv := filepath.Join(base, "data.csv")
	bench := filepath.Join(base, "bench.txt")
	writeFile(t, file, "held open by a sleeping process\n")
	writeFile(t, csv, "name,rss_bytes\nsleep,1048576\nsshd,7340032\n")
	writeFile(t, bench, "goos: linux\ngoarch: amd64\npkg: example.com/x\nBenchmarkParse-2 \t 1000\t 1234 ns/op\nBenchmarkParse-2 \t 1000\t 1250 ns/op\nBenchmarkParse-2 \t 1000\t 1241 ns/op\nPASS\n")

	// P: a sleeping process that holds F open as its stdin (fuser's
	// answer for F) and maps the C library.
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	holder := start(t, exec.Command("sleep", "600"), f)
	f.Close()
	// W: the process whose exit is waited for; tasks.mjs ends it with
	// SIGTERM once the wait is registered.
	waiter := start(t, exec.Command("sleep", "600"), nil)
	waited := make(chan error, 1)
	go func() { waited <- waiter.Wait() }()
	// L: a TCP listener on 127.0.0.1.
	lc := exec.Command(os.Args[0])
	lc.Env = append(os.Environ(), listenerEnv+"=1")
	lin, _ := lc.StdinPipe()
	lout, _ := lc.StdoutPipe()
	if err := lc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lin.Close(); lc.Wait() })
	portLine, err := bufio.NewReader(lout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(strings.TrimSpace(portLine))

	cfg, _ := json.Marshal(map[string]any{
		"bin": bin, "file": file, "csv": csv, "bench": bench,
		"holder_pid": holder.Process.Pid, "waiter_pid": waiter.Process.Pid,
		"listener_pid": lc.Process.Pid, "listener_port": port,
	})
	cmd := exec.CommandContext(ctx, node, "tasks.mjs", string(cfg))
	cmd.Dir = here
	cmd.Env = isolatedEnv(t, base)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tasks.mjs: %v\n%s", err, out)
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("tasks.mjs printed %s: %v", out, err)
	}
	t.Logf("@modelcontextprotocol/sdk %s, %d tools", r.SDK, r.Tools)
	if r.Tools < 40 {
		t.Errorf("tools/list gave %d tools", r.Tools)
	}
	tk := r.Tasks

	t.Run("who_holds_file", func(t *testing.T) {
		w := tk.WhoHoldsFile
		checkCalls(t, w.Calls, w.Error)
		if len(w.Holders) != 1 || w.Holders[0].PID != holder.Process.Pid || w.Holders[0].Name != "sleep" || w.Holders[0].ProcessRef == "" {
			t.Errorf("holders of F: %+v, want the one sleep process %d with its process_ref", w.Holders, holder.Process.Pid)
		}
		checkBudget(t, w.Bytes)
	})
	t.Run("rss_change", func(t *testing.T) {
		w := tk.RSSChange
		checkCalls(t, w.Calls, w.Error)
		s := w.Summary
		if w.ResolvedPID != holder.Process.Pid || w.ProcessRef == "" {
			t.Errorf("pid %d resolved to %d (%q)", holder.Process.Pid, w.ResolvedPID, w.ProcessRef)
		}
		first, e1 := strconv.ParseInt(s.First.Value, 10, 64)
		last, e2 := strconv.ParseInt(s.Last.Value, 10, 64)
		change, e3 := strconv.ParseInt(s.Change, 10, 64)
		if s.SampleCount < 1 || e1 != nil || e2 != nil || e3 != nil || s.First.At == "" || s.Last.At == "" {
			t.Fatalf("summary %+v: want sample_count, first and last with timestamps, first_to_last_change", s)
		}
		if change != last-first || first <= 0 {
			t.Errorf("first %d, last %d, first_to_last_change %d", first, last, change)
		}
		checkBudget(t, w.Bytes)
	})
	t.Run("libraries_and_imports", func(t *testing.T) {
		w := tk.Libraries
		checkCalls(t, w.Calls, w.Error)
		// The reference: the file-backed mappings in /proc/P/maps.
		want := mappedFiles(t, holder.Process.Pid)
		got := append([]string(nil), w.Modules...)
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("modules of P:\n%s\n/proc/%d/maps maps:\n%s", strings.Join(got, "\n"), holder.Process.Pid, strings.Join(want, "\n"))
		}
		if w.Library == "" {
			t.Fatal("no library among the modules")
		}
		if w.Skip != "" {
			t.Fatalf("the task could not run: %s", w.Skip)
		}
		if len(w.InspectError) > 0 {
			t.Fatalf("inspect_binary %s: %s", w.Library, w.InspectError)
		}
		und := undefinedDynamicSymbols(t, w.Library)
		if len(w.Imports) == 0 || len(w.Imports) != w.ImportRows {
			t.Fatalf("%d import rows of %s among %d rows (only imports were asked for)", len(w.Imports), w.Library, w.ImportRows)
		}
		for _, s := range w.Imports {
			if und != nil && !und[s] {
				t.Errorf("import %q of %s is not an undefined dynamic symbol in readelf --dyn-syms", s, w.Library)
			}
		}
		checkBudget(t, w.InspectBytes)
	})
	t.Run("wait_exit", func(t *testing.T) {
		w := tk.WaitExit
		checkCalls(t, w.Calls, w.Error)
		if len(w.FirstError) > 0 || w.FirstState != "running" {
			t.Errorf("the first call (wait_ms 0) gave state %q, error %s", w.FirstState, w.FirstError)
		}
		if w.State != "succeeded" || !w.Satisfied || !w.Exited {
			t.Errorf("outcome: state %q satisfied %v exited %v", w.State, w.Satisfied, w.Exited)
		}
		select {
		case <-waited:
		case <-time.After(time.Minute):
			t.Error("the waited process did not exit")
		}
	})
	t.Run("tcp_listeners", func(t *testing.T) {
		w := tk.TCPListeners
		if w.Skip != "" {
			t.Fatalf("the task could not run: %s", w.Skip)
		}
		checkCalls(t, w.Calls, w.Error)
		found := false
		for _, row := range w.Rows {
			if row.State != "LISTEN" || !strings.HasPrefix(row.Protocol, "tcp") {
				t.Errorf("row %+v is not a TCP listener", row)
			}
			if row.PID != nil && *row.PID == lc.Process.Pid && row.Port == port {
				found = true
			}
		}
		if !found {
			t.Errorf("the listener %d on port %d is not among %+v", lc.Process.Pid, port, w.Rows)
		}
		checkBudget(t, w.Bytes)
	})
	t.Run("output_schemas", func(t *testing.T) {
		for _, f := range r.Schema.Failures {
			t.Error(f)
		}
		t.Logf("%d calls validated by the SDK; successes: %s", r.Schema.Calls, strings.Join(r.Schema.Successes, ", "))
		for _, name := range []string{"get_status", "list_processes", "preview_artifact", "summarize_benchmarks", "inspect_binary", "list_symbols", "search_strings", "compare_binaries"} {
			if !contains(r.Schema.Successes, name) {
				t.Errorf("%s never succeeded, so its success result was not validated", name)
			}
		}
	})
}

// sdkVersion is the version of an installed package ("" when absent).
func sdkVersion(t *testing.T, pkgJSON string) string {
	t.Helper()
	var p struct{ Version string }
	b, err := os.ReadFile(pkgJSON)
	if err != nil {
		return ""
	}
	json.Unmarshal(b, &p)
	return p.Version
}

// pinnedSDK is the @modelcontextprotocol/sdk version package.json pins.
func pinnedSDK(t *testing.T, pkgJSON string) string {
	t.Helper()
	var p struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(pkgJSON)
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &p)
	v := p.Dependencies["@modelcontextprotocol/sdk"]
	if v == "" {
		t.Fatal("package.json does not pin @modelcontextprotocol/sdk")
	}
	return v
}

func checkCalls(t *testing.T, calls int, errEnvelope json.RawMessage) {
	t.Helper()
	if len(errEnvelope) > 0 && string(errEnvelope) != "null" {
		t.Fatalf("error result: %s", errEnvelope)
	}
	if calls < 1 || calls > 2 {
		t.Errorf("done in %d calls, want at most 2", calls)
	}
}

// checkBudget: a default answer fits the default 64 KiB result budget
// (text block and structuredContent).
func checkBudget(t *testing.T, delivered int) {
	t.Helper()
	if delivered > 64<<10 {
		t.Errorf("the answer is %d bytes as delivered, over the 64 KiB default budget", delivered)
	}
}

func start(t *testing.T, c *exec.Cmd, stdin *os.File) *exec.Cmd {
	t.Helper()
	if stdin != nil {
		c.Stdin = stdin
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mappedFiles lists the distinct file paths mapped by pid, from
// /proc/PID/maps (the pathname column of mappings with an inode).
func mappedFiles(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[4] != "0" && strings.HasPrefix(f[5], "/") {
			set[strings.Join(f[5:], " ")] = true
		}
	}
	var out []string
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// undefinedDynamicSymbols returns the names readelf lists as undefined
// (UND) in the dynamic symbol table of path, without version suffixes; nil
// when readelf is not installed.
func undefinedDynamicSymbols(t *testing.T, path string) map[string]bool {
	t.Helper()
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		t.Log("readelf not installed: imports are not checked against it")
		return nil
	}
	out, err := exec.Command(readelf, "--dyn-syms", "-W", path).Output()
	if err != nil {
		t.Fatalf("readelf: %v", err)
	}
	und := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && f[6] == "UND" {
			name, _, _ := strings.Cut(f[7], "@")
			und[name] = true
		}
	}
	return und
}

// isolatedEnv is the environment for inquest: every per-user location
// under base, so the test never reaches the developer's host,
// configuration or evidence.
func isolatedEnv(t *testing.T, base string) []string {
	t.Helper()
	var env []string
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
	return append(env,
		"XDG_RUNTIME_DIR="+filepath.Join(base, "run"),
		"XDG_CONFIG_HOME="+filepath.Join(base, "config"),
		"XDG_STATE_HOME="+filepath.Join(base, "state"),
		"XDG_DATA_HOME="+filepath.Join(base, "data"),
		"TMPDIR="+filepath.Join(base, "tmp"),
	)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
