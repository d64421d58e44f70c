//go:build linux

package cli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/testbuild"
	"github.com/inquest-dev/inquest/internal/tool"
)

// These tests turn the reported name and path defects into real cases:
// real processes, real files (names with bytes that are not UTF-8, names
// ending in " (deleted)"), a real dlopen of a library built here, a long
// executable name, an exec, a zombie. Each runs over MCP (`inquest mcp`
// with the Go SDK client) and through the CLI against the same host.

// TestMain removes the native fixtures built by testbuild, and checks
// every result the tests got from a tool (in this process or in a host
// or bridge it started: tool.ResultLogEnv) against that tool's published
// output schema, so no output schema drifts from what its tool returns.
func TestMain(m *testing.M) {
	logDir, cleanup := cliResultLog()
	code := m.Run()
	if code == 0 {
		code = checkCLIResults(logDir)
	}
	cleanup()
	testbuild.Cleanup()
	os.Exit(code)
}

// cliResultLog sets tool.ResultLogEnv to a new directory unless the caller
// set it (that directory is then used and kept).
func cliResultLog() (string, func()) {
	if d := os.Getenv(tool.ResultLogEnv); d != "" {
		return d, func() {}
	}
	d, err := os.MkdirTemp("", "inquest-results")
	if err != nil {
		panic(err)
	}
	os.Setenv(tool.ResultLogEnv, d)
	return d, func() { os.RemoveAll(d) }
}

// checkCLIResults validates the logged results against the registry's
// output schemas and returns the exit code (1 on a mismatch).
func checkCLIResults(logDir string) int {
	rt, err := newRuntime(context.Background(), runtimeOptions{NoHost: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "result check:", err)
		return 1
	}
	defer rt.Close()
	counts, problems := tool.CheckResultLog(logDir, rt.Registry.OutputSchemaOf)
	n := 0
	for _, c := range counts {
		n += c
	}
	fmt.Fprintf(os.Stderr, "result check: %d results of %d tools validated against their output schemas\n", n, len(counts))
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "result check:", p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

// seen waits until list_processes lists pid (a child this test started)
// past its exec and returns its row.
func (b *heBridge) seen(t *testing.T, pid int) map[string]any {
	t.Helper()
	var row map[string]any
	waitUntil(t, "pid "+strconv.Itoa(pid)+" sampled", func() bool {
		m := b.mustCall("list_processes", map[string]any{"filter": map[string]any{"pid": pid}, "projection": []string{"all"}})
		rows, _ := dig(m, "data", "rows").([]any)
		// A sample between fork and exec lists a child this test started
		// under the test binary's name: wait for one past that exec.
		if len(rows) == 1 && rows[0].(map[string]any)["name"] != filepath.Base(os.Args[0]) {
			row = rows[0].(map[string]any)
		}
		return row != nil
	})
	return row
}

// capture runs start_capture (following next_action while the job runs)
// and returns the first page's rows.
func (b *heBridge) capture(t *testing.T, args map[string]any) []map[string]any {
	t.Helper()
	m := b.mustCall("start_capture", args)
	for i := 0; dig(m, "data", "rows") == nil; i++ {
		next, _ := dig(m, "next_action").(map[string]any)
		if next == nil || i > 50 {
			t.Fatalf("no result page: %v", m)
		}
		m = b.mustCall(next["tool"].(string), next["arguments"])
	}
	rows := dig(m, "data", "rows")
	if rows == nil {
		t.Fatalf("no rows: %v", m)
	}
	return rowsOf(rows)
}

func rowsOf(v any) []map[string]any {
	var out []map[string]any
	for _, r := range v.([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// exact is a row field's exact bytes (exactText) or fails.
func exact(t *testing.T, r map[string]any, key string) string {
	t.Helper()
	v, ok := exactText(r, key)
	if !ok {
		t.Fatalf("row has no %s: %v", key, r)
	}
	if _, lossy := r[key+"_bytes"]; lossy != sample.Lossy(v) {
		t.Fatalf("%s_bytes present %v for %q", key, lossy, v)
	}
	return v
}

// holder runs sh opening each path on fds 3.. and then exec'ing sleep
// (which inherits them); it returns once the exec happened.
func holder(t *testing.T, paths ...string) int {
	t.Helper()
	script := ""
	for i := range paths {
		script += " " + strconv.Itoa(i+3) + `<"$` + strconv.Itoa(i+1) + `"`
	}
	c := exec.Command("sh", append([]string{"-c", "exec" + script + "; exec sleep 300", "sh"}, paths...)...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	pid := c.Process.Pid
	waitUntil(t, "holder exec'd sleep", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return string(b) == "sleep\n"
	})
	return pid
}

// TestNamesDeletedIsAFact (case 1): an unlinked held.txt and a live file
// literally named "real (deleted)" are told apart by deleted, over MCP
// (open_files, file_users) and in `inquest lsof PID --json` and its table.
func TestNamesDeletedIsAFact(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	b := e.bridge()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	held, real := filepath.Join(dir, "held.txt"), filepath.Join(dir, "real (deleted)")
	for _, p := range []string{held, real} {
		os.WriteFile(p, []byte("x"), 0o600)
	}
	pid := holder(t, held, real)
	os.Remove(held)
	ref := b.seen(t, pid)["process_ref"].(string)
	want := map[string]bool{held: true, real: false}
	check := func(where string, rows []map[string]any) {
		t.Helper()
		got := map[string]bool{}
		for _, r := range rows {
			p := exact(t, r, "path")
			if strings.HasPrefix(p, dir+"/") {
				d, ok := r["deleted"].(bool)
				if !ok {
					t.Fatalf("%s: deleted %v", where, r["deleted"])
				}
				got[p] = d
			}
		}
		if len(got) != 2 || got[held] != true || got[real] != false {
			t.Fatalf("%s: %v, want %v", where, got, want)
		}
	}
	check("open_files", b.capture(t, map[string]any{"kind": "open_files", "process_ref": ref}))
	check("file_users", b.capture(t, map[string]any{"kind": "file_users", "filter": map[string]any{"path": dir}}))
	out, code := e.run("lsof", strconv.Itoa(pid), "--json")
	var env map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil {
		t.Fatalf("lsof --json (%d): %s", code, out)
	}
	check("lsof --json", rowsOf(dig(env, "data", "rows")))
	// As lsof -p: a deleted file's NAME ends in " (deleted)"; a file
	// whose own name ends so is escaped (it is not deleted).
	out, code = e.run("lsof", strconv.Itoa(pid))
	if code != 0 || !strings.Contains(out, " "+held+" (deleted)\n") || !strings.Contains(out, " "+strings.TrimSuffix(real, " (deleted)")+`\x20(deleted)`+"\n") {
		t.Fatalf("lsof (%d):\n%s", code, out)
	}
}

// hasRow reports whether a line of out starts with the cell first and
// contains sub.
func hasRow(out, first, sub string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, first+" ") && strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// TestNamesNonUTF8Paths (case 2, and the path encoding round trip through
// capture, filter and CLI): files whose names hold bytes that are not
// UTF-8, control characters and backslashes. Over MCP each row's
// path_bytes is the exact name and path_bytes filters select exactly it;
// the CLI prints each exact name escaped (textCell) and fuser with the
// real path finds its holder.
func TestNamesNonUTF8Paths(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	b := e.bridge()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	names := []string{"bad\xffbyte.txt", "latin1-caf\xe9", "nl\nline", `back\xffslash`, "real-\uFFFD-rune", "esc\x1b[31m"}
	var paths []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	pid := holder(t, paths...)
	ref := b.seen(t, pid)["process_ref"].(string)
	rows := b.capture(t, map[string]any{"kind": "open_files", "process_ref": ref, "retain_capture": true})
	got := map[string]map[string]any{}
	for _, r := range rows {
		got[exact(t, r, "path")] = r
	}
	for _, p := range paths {
		r := got[p]
		if r == nil {
			t.Fatalf("no row for %q", p)
		}
		if r["path"] != sample.Display(p) {
			t.Fatalf("path %q, want display %q", r["path"], sample.Display(p))
		}
		// the exact bytes as a collection filter select exactly this row
		sel := b.capture(t, map[string]any{"kind": "open_files", "process_ref": ref, "filter": map[string]any{"path_bytes": base64.StdEncoding.EncodeToString([]byte(p))}})
		if len(sel) != 1 || exact(t, sel[0], "path") != p {
			t.Fatalf("filter path_bytes %q: %v", p, sel)
		}
	}
	// the lossy display string never matches the byte it replaced
	sel := b.capture(t, map[string]any{"kind": "open_files", "process_ref": ref, "filter": map[string]any{"path": "bad\uFFFDbyte"}})
	if len(sel) != 0 {
		t.Fatalf("U+FFFD matched a 0xff byte: %v", sel)
	}
	// CLI: the table shows every exact name escaped
	out, code := e.run("lsof", strconv.Itoa(pid))
	if code != 0 {
		t.Fatalf("lsof (%d): %s", code, out)
	}
	for _, p := range paths {
		if !strings.Contains(out, " "+textCell(p)+"\n") {
			t.Fatalf("lsof table lacks %q:\n%s", textCell(p), out)
		}
		if back, ok := unescapeCell(textCell(p)); !ok || back != p {
			t.Fatalf("unescapeCell(%q) = %q", textCell(p), back)
		}
	}
	out, code = e.run("lsof", strconv.Itoa(pid), "--path", "\xffbyte")
	if code != 0 || !strings.Contains(out, textCell(paths[0])) || strings.Count(out, "\n") != 2 {
		t.Fatalf("lsof --path $'\\xffbyte' (%d):\n%s", code, out)
	}
	out, code = e.run("fuser", paths[0])
	if code != 0 || !hasRow(out, strconv.Itoa(pid), `/bad\xffbyte.txt  `) {
		t.Fatalf("fuser (%d):\n%s", code, out)
	}
}

// TestNamesReplacedLibrary (case 3): the loader dlopens libtarget.so
// (build A, gcc), the file is removed and build B copied to its path.
// Over MCP and `inquest call`, the modules row is A's: build id, size,
// deleted and replaced.
func TestNamesReplacedLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fx := testbuild.BuildDLOpen(t)
	e := newHeEnv(t)
	b := e.bridge()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	lib := filepath.Join(dir, "libtarget.so")
	cp := func(from string) {
		data, _ := os.ReadFile(from)
		if err := os.WriteFile(lib, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cp(fx.LibA)
	stA, _ := os.Stat(lib)
	cmd := exec.Command(fx.Loader, lib)
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	if l, _ := bufio.NewReader(stdout).ReadString('\n'); l != "ready 1\n" {
		t.Fatalf("loader: %q", l)
	}
	os.Remove(lib)
	cp(fx.LibB)
	ref := b.seen(t, cmd.Process.Pid)["process_ref"].(string)
	check := func(where string, rows []map[string]any) {
		t.Helper()
		var mine []map[string]any
		for _, r := range rows {
			if p, _ := exactText(r, "path"); p == lib {
				mine = append(mine, r)
			}
		}
		if len(mine) != 1 {
			t.Fatalf("%s: %d rows for the library", where, len(mine))
		}
		r := mine[0]
		if r["deleted"] != true || r["replaced"] != true || r["build_id"] != testbuild.BuildIDA ||
			r["size_bytes"] != strconv.FormatInt(stA.Size(), 10) || r["metadata_unavailable"] != nil {
			t.Fatalf("%s: %v", where, r)
		}
	}
	check("modules", b.capture(t, map[string]any{"kind": "modules", "process_ref": ref}))
	// the CLI's connection resolves its own process_ref
	out, code := e.run("call", "list_processes", `{"filter":{"pid":`+strconv.Itoa(cmd.Process.Pid)+`}}`)
	var env map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil {
		t.Fatalf("call list_processes (%d): %s", code, out)
	}
	cliRef := rowsOf(dig(env, "data", "rows"))[0]["process_ref"].(string)
	out, code = e.run("call", "start_capture", `{"kind":"modules","process_ref":"`+cliRef+`"}`)
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil {
		t.Fatalf("call start_capture (%d): %s", code, out)
	}
	check("inquest call start_capture", rowsOf(dig(env, "data", "rows")))
}

// TestNamesLongExecutableName (case 4): a copy of sleep named beyond the
// kernel's 15-byte comm. list_processes, `inquest ps --name`, tracking and
// wait_condition all match the full name; comm is its own field.
func TestNamesLongExecutableName(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	b := e.bridge()
	const long = "averyveryverylongprocessname-worker"
	exe := filepath.Join(t.TempDir(), long)
	data, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(exe, data, 0o755)
	c := exec.Command(exe, "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	row := b.seen(t, c.Process.Pid)
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(c.Process.Pid) + "/comm") // the kernel's own view
	if row["name"] != long || row["comm"] != strings.TrimSuffix(string(comm), "\n") || len(row["comm"].(string)) != 15 {
		t.Fatalf("row: %v", row)
	}
	m := b.mustCall("list_processes", map[string]any{"filter": map[string]any{"name": long}})
	if rows, _ := dig(m, "data", "rows").([]any); len(rows) != 1 {
		t.Fatalf("filter by full name: %v", m)
	}
	out, code := e.run("ps", "--name", long)
	if code != 0 || !strings.Contains(out, " "+long) || !strings.Contains(out, strconv.Itoa(c.Process.Pid)) {
		t.Fatalf("ps --name (%d):\n%s", code, out)
	}
	// ps shows its columns from the compact default rows plus values:
	// PID CPU% RSS THR FDS STATE NAME (sleep: one thread, sleeping).
	shown := false
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 7 && f[6] == long {
			shown = true
			if f[0] != strconv.Itoa(c.Process.Pid) || f[3] != "1" || f[5] != "sleeping" || f[2] == "?" || f[4] == "?" {
				t.Fatalf("ps row %q", line)
			}
		}
	}
	if !shown {
		t.Fatalf("ps shows no 7-column row for %s:\n%s", long, out)
	}
	rev := dig(b.mustCall("get_tracking", nil), "data", "revision").(string)
	m = b.mustCall("update_tracking", map[string]any{"operation_id": "long-add", "expected_revision": rev, "action": "add", "process_name": long})
	if dig(m, "data", "state") != "succeeded" {
		t.Fatalf("update_tracking: %v", m)
	}
	matched := false
	for _, r := range dig(b.mustCall("get_tracking", nil), "data", "matching").([]any) {
		r := r.(map[string]any)
		if r["pid"] == float64(c.Process.Pid) && r["name"] == long && r["tracked_by"] == "name" {
			matched = true
		}
	}
	if !matched {
		t.Fatal("get_tracking does not list the long-named process by name")
	}
	m = b.mustCall("wait_condition", map[string]any{"condition": "process_present", "process_name": long, "timeout_ms": 60000, "wait_ms": 10000})
	if s, _ := json.Marshal(m); !strings.Contains(string(s), `"pid":`+strconv.Itoa(c.Process.Pid)) || !strings.Contains(string(s), `"name":"`+long+`"`) {
		t.Fatalf("wait_condition: %s", s)
	}
}

// TestNamesExec (case 5): bash waits on a FIFO, then execs python3 (or,
// without it, a copy of sleep named python3). list_processes, get_metrics
// and get_history's target agree on the new name; history keeps both
// names with times; after the exit, scope retained finds the lifetime by
// either name.
func TestNamesExec(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	b := e.bridge()
	dir := t.TempDir()
	target := "/usr/bin/python3"
	targetArgs := `-c "import time; time.sleep(300)"`
	if _, err := os.Stat(target); err != nil {
		data, err := os.ReadFile("/bin/sleep")
		if err != nil {
			t.Fatal(err)
		}
		target = filepath.Join(dir, "python3")
		os.WriteFile(target, data, 0o755)
		targetArgs = "300"
	}
	fifo := filepath.Join(dir, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("bash", "-c", `read x < "$1"; exec "$2" `+targetArgs, "bash", fifo, target)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	pid := c.Process.Pid
	row := b.seen(t, pid)
	ref := row["process_ref"].(string)
	if row["name"] != "bash" {
		t.Fatalf("before exec: %v", row)
	}
	os.WriteFile(fifo, []byte("go\n"), 0o600)
	// the kernel's view after the exec is the reference
	var wantName, wantComm string
	waitUntil(t, "exec", func() bool {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		wantName, wantComm = filepath.Base(exe), strings.TrimSuffix(string(comm), "\n")
		return wantName != "bash" && wantName != "."
	})
	if !strings.HasPrefix(wantName, "python3") {
		t.Fatalf("exec'd %q", wantName)
	}
	waitUntil(t, "list_processes shows the new name", func() bool {
		r := b.seen(t, pid)
		return r["name"] == wantName && r["comm"] == wantComm && r["process_ref"] == ref
	})
	m := b.mustCall("get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
	if dig(m["data"].(map[string]any)["samples"].([]any)[0].(map[string]any), "target", "name") != wantName {
		t.Fatalf("get_metrics target: %v", m)
	}
	hist := func() map[string]any {
		m := b.mustCall("get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "mode": "summary"})
		return dig(m, "data", "target").(map[string]any)
	}
	tg := hist()
	names, _ := tg["names"].([]any)
	if tg["name"] != wantName || len(names) != 2 || dig(names[0].(map[string]any), "name") != "bash" || dig(names[1].(map[string]any), "name") != wantName ||
		dig(names[1].(map[string]any), "since") == nil {
		t.Fatalf("history target: %v", tg)
	}
	c.Process.Kill()
	c.Wait()
	waitUntil(t, "ended lifetime", func() bool {
		m := b.mustCall("list_processes", map[string]any{"scope": "retained", "filter": map[string]any{"pid": pid}})
		rows, _ := dig(m, "data", "rows").([]any)
		return len(rows) == 1 && rows[0].(map[string]any)["lifecycle"] == "unknown"
	})
	for _, q := range []string{"python3", "bash", wantName} {
		m := b.mustCall("list_processes", map[string]any{"scope": "retained", "filter": map[string]any{"name": q, "pid": pid}})
		rows, _ := dig(m, "data", "rows").([]any)
		if len(rows) != 1 || rows[0].(map[string]any)["name"] != wantName || rows[0].(map[string]any)["process_ref"] != ref {
			t.Fatalf("retained filter %q: %v", q, m)
		}
	}
	if tg := hist(); tg["name"] != wantName || len(tg["names"].([]any)) != 2 {
		t.Fatalf("history target after exit: %v", tg)
	}
}

// TestNamesZombie (case 6): a child that exited but is never reaped is
// lifecycle zombie in list_processes (MCP and `inquest ps`), and every
// targeted call returns PROCESS_EXITED for it.
func TestNamesZombie(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e := newHeEnv(t)
	b := e.bridge()
	// sh starts /bin/true in the background and execs sleep, which never
	// reaps it.
	c := exec.Command("sh", "-c", "/bin/true & exec sleep 300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	var zpid int
	waitUntil(t, "zombie child", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(c.Process.Pid) + "/task/" + strconv.Itoa(c.Process.Pid) + "/children")
		f := strings.Fields(string(b))
		if len(f) != 1 {
			return false
		}
		zpid, _ = strconv.Atoi(f[0])
		st, _ := os.ReadFile("/proc/" + f[0] + "/stat")
		i := strings.LastIndexByte(string(st), ')')
		return i > 0 && len(st) > i+2 && st[i+2] == 'Z'
	})
	var row map[string]any
	waitUntil(t, "zombie listed", func() bool {
		row = b.seen(t, zpid)
		return row["state"] == "zombie"
	})
	if row["lifecycle"] != "zombie" {
		t.Fatalf("zombie row: %v", row)
	}
	ref := row["process_ref"].(string)
	m, isErr := b.call("get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
	if s, _ := json.Marshal(m); !strings.Contains(string(s), "PROCESS_EXITED") {
		t.Fatalf("get_metrics (isError %v): %s", isErr, s)
	}
	for _, kind := range []string{"open_files", "modules", "threads"} {
		m, isErr := b.call("start_capture", map[string]any{"kind": kind, "process_ref": ref})
		if !isErr || errCode(m) != "PROCESS_EXITED" {
			t.Fatalf("start_capture %s: %v", kind, m)
		}
	}
	m, isErr = b.call("get_process_info", map[string]any{"process_ref": ref})
	if !isErr || errCode(m) != "PROCESS_EXITED" {
		t.Fatalf("get_process_info: %v", m)
	}
	out, code := e.run("call", "list_processes", `{"filter":{"pid":`+strconv.Itoa(zpid)+`}}`)
	if code != 0 || !strings.Contains(out, `"lifecycle": "zombie"`) && !strings.Contains(out, `"lifecycle":"zombie"`) {
		t.Fatalf("call list_processes (%d): %s", code, out)
	}
}

// TestNamesFuserMissingPath (case 7): fuser on a path that does not exist
// fails with a clear message and exit 1 (a file_users filter over MCP is a
// substring selector, where no match is a complete empty result).
func TestNamesFuserMissingPath(t *testing.T) {
	t.Setenv("INQUEST_IN_PROCESS", "1")
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	missing := filepath.Join(t.TempDir(), "no\xffsuch", "file")
	out, errOut, code := runCaptureCLI("fuser", missing)
	if code != 1 || out != "" || !strings.Contains(errOut, textCell(missing)+": no such file or directory") {
		t.Fatalf("fuser missing (%d): %q %q", code, out, errOut)
	}
}
