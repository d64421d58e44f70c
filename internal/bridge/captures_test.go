//go:build linux

package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/bridge"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/jobs"
	"github.com/inquest-dev/inquest/internal/tool"
)

func TestMain(m *testing.M) {
	if n, _ := strconv.Atoi(os.Getenv("BRIDGE_HELPER_FDS")); n > 0 {
		// A holder of n extra descriptors (of /dev/null) until stdin closes.
		for i := 0; i < n; i++ {
			if _, err := os.Open(os.DevNull); err != nil {
				os.Exit(2)
			}
		}
		fmt.Println("ready")
		b := make([]byte, 1)
		os.Stdin.Read(b)
		return
	}
	if dir := os.Getenv("BRIDGE_HELPER_DIR"); dir != "" {
		// A holder of every file in dir until stdin closes.
		ents, err := os.ReadDir(dir)
		if err != nil {
			os.Exit(2)
		}
		for _, e := range ents {
			if _, err := os.Open(filepath.Join(dir, e.Name())); err != nil {
				os.Exit(2)
			}
		}
		fmt.Println("ready")
		b := make([]byte, 1)
		os.Stdin.Read(b)
		return
	}
	if p := os.Getenv("BRIDGE_HELPER_FILE"); p != "" {
		f, err := os.Open(p)
		if err != nil {
			os.Exit(2)
		}
		fmt.Println("ready")
		b := make([]byte, 1)
		os.Stdin.Read(b)
		f.Close()
		return
	}
	os.Exit(m.Run())
}

// holder starts the test binary holding path open; it ends at cleanup.
func holder(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	return helper(t, "BRIDGE_HELPER_FILE="+path)
}

// helper starts the test binary as the helper env selects and waits until
// it is ready; it ends at cleanup.
func helper(t *testing.T, env string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
		t.Fatalf("helper: %q", l)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// clock is the manual clock injected into the capture manager.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var configMu sync.Mutex

// registry builds the proc tools over a fresh in-process host whose
// capture manager uses limits l and a manual clock.
func registry(t *testing.T, raw bool, l jobs.Limits) (*tool.Registry, *clock) {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	clk := &clock{t: time.Now()}
	configMu.Lock()
	old := host.CaptureConfig
	host.CaptureConfig = func() (jobs.Limits, func() time.Time) { return l, clk.now }
	h, err := host.New(host.Options{Version: "test", Interval: 200 * time.Millisecond})
	host.CaptureConfig = old
	configMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	b := &bridge.Local{Host: h, Session: h.NewSession()}
	reg := tool.NewRegistry()
	if err := reg.Add(bridge.Tools(func(context.Context) (bridge.Backend, error) { return b, nil }, bridge.Mode{Raw: raw})...); err != nil {
		t.Fatal(err)
	}
	return reg, clk
}

// call runs a tool and returns its data as a generic map (through JSON,
// as a client sees it).
func call(t *testing.T, reg *tool.Registry, name string, args any) (map[string]any, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := reg.Call(context.Background(), name, b)
	if err != nil {
		return nil, err
	}
	body, _ := contract.Marshal(res, nil)
	var env map[string]any
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	// One copy of each fact: data never repeats the envelope's status,
	// warnings, coverage or next_action.
	if dup := tool.DataRepeats(env); len(dup) > 0 {
		t.Errorf("%s: data repeats the envelope's %v", name, dup)
	}
	d, _ := env["data"].(map[string]any)
	if d == nil {
		d = map[string]any{}
	}
	// The envelope without its data: a failure message that prints d must
	// not meet a cycle (d inside its own envelope).
	shell := make(map[string]any, len(env))
	for k, v := range env {
		if k != "data" {
			shell[k] = v
		}
	}
	d["_envelope"] = shell
	if _, err := json.Marshal(d); err != nil {
		// encoding/json refuses a cycle: a value a failure message
		// cannot print (%v of a cycle overflows the stack) never leaves.
		t.Fatalf("%s: the decoded result cannot be printed: %v", name, err)
	}
	return d, nil
}

// settled follows a delivered job's next_action (get_job) while the job
// is still running, so a check of its outcome does not depend on the job
// ending within the call's wait on a loaded machine; the 10-minute bound
// only ends a hang.
func settled(t *testing.T, reg *tool.Registry, d map[string]any) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for d["state"] == "running" && time.Now().Before(deadline) {
		na, _ := nextOf(d).(map[string]any)
		if na == nil || na["tool"] != "get_job" {
			t.Fatalf("running job without a get_job next_action: next_action %v", na)
		}
		args, _ := na["arguments"].(map[string]any)
		d = mustCall(t, reg, "get_job", args)
	}
	return d
}

func mustCall(t *testing.T, reg *tool.Registry, name string, args any) map[string]any {
	t.Helper()
	d, err := call(t, reg, name, args)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func rowsOf(d map[string]any) []map[string]any {
	var out []map[string]any
	rs, _ := d["rows"].([]any)
	for _, r := range rs {
		out = append(out, r.(map[string]any))
	}
	return out
}

// page is the first page a job delivered: flat in its data (rows, page,
// next_cursor), or nil when the call delivered none.
func page(d map[string]any) map[string]any {
	if _, ok := d["rows"]; !ok {
		return nil
	}
	return d
}

// nextOf is the next_action of a call's result: the envelope's, the one
// place a result states it (data never repeats it); nil when null.
func nextOf(d map[string]any) any {
	env, _ := d["_envelope"].(map[string]any)
	return env["next_action"]
}

// coverageOf is the coverage of a call's result: the envelope's, the one
// place a result states it.
func coverageOf(d map[string]any) map[string]any {
	env, _ := d["_envelope"].(map[string]any)
	cov, _ := env["coverage"].(map[string]any)
	return cov
}

// refOf waits until list_processes lists pid (a child started after the
// latest sample is listed from the next one) and returns its process_ref.
// The 2-minute bound only ends a hang: a loaded machine may take seconds
// for a sample.
func refOf(t *testing.T, reg *tool.Registry, pid int) string {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		d := mustCall(t, reg, "list_processes", map[string]any{"filter": map[string]any{"pid": pid}})
		if rs := rowsOf(d); len(rs) == 1 {
			return rs[0]["process_ref"].(string)
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never listed", pid)
		}
	}
}

func tempFile(t *testing.T, name string) string {
	p := filepath.Join(t.TempDir(), name)
	os.WriteFile(p, []byte("x"), 0o600)
	r, _ := filepath.EvalSymlinks(p)
	return r
}

func TestFileUsersInOneCall(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	path := tempFile(t, "inquest-fu-7f3a.dat")
	cmd := holder(t, path)
	ref := refOf(t, reg, cmd.Process.Pid)
	d := mustCall(t, reg, "start_capture", map[string]any{"kind": "file_users", "read": map[string]any{"path": "inquest-fu-7f3a .DAT"}})
	if d["state"] != "succeeded" || d["capture_retained"] != false || nextOf(d) != nil {
		t.Fatalf("job data %v", d)
	}
	rows := rowsOf(page(d))
	if len(rows) != 1 {
		t.Fatalf("want exactly the child, got %v", rows)
	}
	r := rows[0]
	if int(r["pid"].(float64)) != cmd.Process.Pid || r["path"] != path || r["process_ref"] != ref || r["handle_count"].(float64) != 1 {
		t.Fatalf("row %v (want pid %d ref %s)", r, cmd.Process.Pid, ref)
	}
	cov := coverageOf(d)
	if cov["listed"].(float64) != 1 || cov["processes_examined"].(float64) < 2 {
		t.Fatalf("coverage %v", cov)
	}
	// The one-pass result was released: polling reports it consumed, and
	// its capture id is provenance only.
	j := mustCall(t, reg, "get_job", map[string]any{"job_id": d["job_id"]})
	if j["result_consumed"] != true || j["rows"] != nil {
		t.Fatalf("polling a consumed job: %v", j)
	}
	if _, err := call(t, reg, "read_capture", map[string]any{"capture_id": d["capture_id"]}); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("reading a consumed capture: %v", err)
	}
}

func TestTargetedCapturesThroughTools(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	path := tempFile(t, "inquest-of.dat")
	cmd := holder(t, path)
	ref := refOf(t, reg, cmd.Process.Pid)
	d := mustCall(t, reg, "start_capture", map[string]any{"kind": "open_files", "process_ref": ref, "read": map[string]any{"path": "inquest-of.dat"}})
	rows := rowsOf(page(d))
	if len(rows) != 1 || rows[0]["kind"] != "file" {
		t.Fatalf("open_files %v", d)
	}
	fd, ok := rows[0]["fd"].(string)
	if !ok {
		t.Fatalf("fd is not a decimal string: %v", rows[0]["fd"])
	}
	if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", cmd.Process.Pid, fd)); l != path {
		t.Fatalf("fd %s points at %q", fd, l)
	}
	for _, kind := range []string{"modules", "threads", "scheduling", "network"} {
		d := mustCall(t, reg, "start_capture", map[string]any{"kind": kind, "process_ref": ref})
		if d["state"] != "succeeded" {
			t.Fatalf("%s: %v", kind, d)
		}
		if kind != "network" && len(rowsOf(page(d))) == 0 {
			t.Fatalf("%s: no rows", kind)
		}
	}
	info := mustCall(t, reg, "get_process_info", map[string]any{"process_ref": ref, "fields": []string{"exe", "command_line"}})
	ir := rowsOf(page(info))
	if len(ir) != 1 || ir[0]["command_line"] == nil || ir[0]["exe"] == nil || ir[0]["cwd"] != nil {
		t.Fatalf("process info %v", ir)
	}
	def := rowsOf(page(mustCall(t, reg, "get_process_info", map[string]any{"process_ref": ref})))
	par := def[0]["parent"].(map[string]any)["value"].(map[string]any)
	if int(par["pid"].(float64)) != os.Getpid() || par["relationship"] != "verified" || par["process_ref"] != refOf(t, reg, os.Getpid()) {
		t.Fatalf("parent %v", par)
	}
	if _, ok := def[0]["command_line"]; ok {
		t.Fatal("command_line returned by default")
	}
	// the process ends: its ref no longer authorizes live inspection
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := call(t, reg, "start_capture", map[string]any{"kind": "open_files", "process_ref": ref}); contract.CodeOf(err) != contract.CodeProcessExited {
		t.Fatalf("exited target: %v", err)
	}
}

func TestArgumentErrors(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"start_capture", map[string]any{"kind": "bogus"}},
		{"start_capture", map[string]any{"kind": "open_files"}},
		{"start_capture", map[string]any{"kind": "file_users", "process_ref": "pr_x"}},
		{"start_capture", map[string]any{"kind": "file_users", "wait_ms": 60001}},
		{"start_capture", map[string]any{"kind": "file_users", "read": map[string]any{"extension": "log"}}},
		{"read_capture", map[string]any{}},
	} {
		if _, err := call(t, reg, tc.tool, tc.args); contract.CodeOf(err) != contract.CodeInvalidArgument {
			t.Errorf("%s %v: %v", tc.tool, tc.args, err)
		}
	}
	if _, err := call(t, reg, "start_capture", map[string]any{"kind": "threads", "process_ref": "pr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("forged ref: %v", err)
	}
	// A failed first-page selection leaves the source retained for correction.
	d := settled(t, reg, mustCall(t, reg, "start_capture", map[string]any{"kind": "file_users", "read": map[string]any{"distinct_paths": true}}))
	if d["capture_retained"] != true || d["retained_capture_ids"] == nil {
		t.Fatalf("failed selection: %v", d)
	}
	fixed := mustCall(t, reg, "read_capture", map[string]any{"capture_id": d["capture_id"], "distinct_paths": true, "projection": []string{"path"}})
	seen := map[string]bool{}
	for _, r := range rowsOf(fixed) {
		// A path that is not UTF-8 brings its exact bytes (path_bytes) along;
		// distinctness is of the exact path.
		key, _ := r["path"].(string)
		want := 1
		if b, ok := r["path_bytes"].(string); ok {
			key, want = "bytes:"+b, 2
		}
		if len(r) != want || seen[key] {
			t.Fatalf("distinct path rows: %v", r)
		}
		seen[key] = true
	}
	mustCall(t, reg, "release_capture", map[string]any{"capture_id": d["capture_id"]})
}

// TestContinuationAndRetention follows next_action through a one-pass
// result (released after its last page) and a retained capture (derived
// views, cursor binding, explicit release).
func TestContinuationAndRetention(t *testing.T) {
	reg, clk := registry(t, false, jobs.DefaultLimits())
	d := mustCall(t, reg, "start_capture", map[string]any{"kind": "file_users", "read": map[string]any{"limit": 3}})
	pd := page(d)
	total := int(coverageOf(d)["listed"].(float64))
	if total <= 3 || nextOf(d) == nil || d["capture_retained"] != false {
		t.Fatalf("first page: %v", d)
	}
	n := len(rowsOf(pd))
	next := nextOf(d).(map[string]any)
	for next != nil {
		if next["tool"] != "read_capture" {
			t.Fatalf("next_action %v", next)
		}
		p := mustCall(t, reg, "read_capture", next["arguments"])
		n += len(rowsOf(p))
		next, _ = nextOf(p).(map[string]any)
		if next == nil && p["capture_retained"] != false {
			t.Fatalf("last managed page: %v", p)
		}
	}
	if n != total {
		t.Fatalf("paged %d of %d rows", n, total)
	}
	if _, err := call(t, reg, "read_capture", map[string]any{"capture_id": d["capture_id"]}); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("managed capture not released: %v", err)
	}

	r := mustCall(t, reg, "start_capture", map[string]any{"kind": "file_users", "retain_capture": true, "read": map[string]any{"limit": 2}})
	id := r["capture_id"].(string)
	if r["capture_retained"] != true || len(r["retained_capture_ids"].([]any)) != 1 {
		t.Fatalf("retained: %v", r)
	}
	// polling the job later without the flag keeps what the caller retained
	if g := mustCall(t, reg, "get_job", map[string]any{"job_id": r["job_id"]}); g["capture_retained"] != true {
		t.Fatalf("get_job of a retained job: %v", g)
	}
	// unmodified read: same capture, may change the page size with the cursor
	u := mustCall(t, reg, "read_capture", map[string]any{"capture_id": id, "limit": 2})
	if u["capture_id"] != id {
		t.Fatalf("unmodified read allocated %v", u["capture_id"])
	}
	u2 := mustCall(t, reg, "read_capture", map[string]any{"capture_id": id, "limit": 4, "cursor": u["next_cursor"]})
	if len(rowsOf(u2)) != 4 {
		t.Fatalf("unmodified continuation with another limit: %d rows", len(rowsOf(u2)))
	}
	// changed query: derived capture; its cursor binds every argument
	f := mustCall(t, reg, "read_capture", map[string]any{"capture_id": id, "projection": []string{"pid", "path"}, "limit": 1})
	if f["capture_id"] == id || f["source_capture_id"] != id || len(rowsOf(f)[0]) != 2 {
		t.Fatalf("derived read %v", f)
	}
	if _, err := call(t, reg, "read_capture", map[string]any{"capture_id": id, "projection": []string{"pid", "path"}, "limit": 2, "cursor": f["next_cursor"]}); contract.CodeOf(err) != contract.CodeCursorInvalid {
		t.Fatalf("changed limit on a derived cursor: %v", err)
	}
	if _, err := call(t, reg, "read_capture", map[string]any{"capture_id": id, "projection": []string{"handle_count", "tid"}}); contract.CodeOf(err) != contract.CodeInvalidArgument {
		t.Fatalf("field of another kind: %v", err)
	}
	// expiry: 5 minutes after completion, by id and by cursor
	clk.add(5*time.Minute + time.Second)
	if _, err := call(t, reg, "read_capture", map[string]any{"capture_id": id}); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("expired by id: %v", err)
	}
	if _, err := call(t, reg, "read_capture", map[string]any{"capture_id": id, "limit": 2, "cursor": u["next_cursor"]}); contract.CodeOf(err) != contract.CodeCursorInvalid {
		t.Fatalf("expired by cursor: %v", err)
	}
	rel := mustCall(t, reg, "release_capture", map[string]any{"capture_id": id})
	if rel["released"] != false {
		t.Fatalf("release of an expired capture: %v", rel)
	}
}

func TestRawMode(t *testing.T) {
	reg, _ := registry(t, true, jobs.DefaultLimits())
	d := mustCall(t, reg, "start_capture", map[string]any{"kind": "network"})
	if d["rows"] != nil || d["job_id"] == nil {
		t.Fatalf("raw start returned a page: %v", d["rows"])
	}
	// raw mode still names the exact next call (without managed metadata):
	// get_job while running, read_capture for a result
	wantNext := func(d map[string]any, tool string, args map[string]any) {
		t.Helper()
		na, _ := nextOf(d).(map[string]any)
		env := d["_envelope"].(map[string]any)
		if na == nil || na["tool"] != tool || fmt.Sprint(na["arguments"]) != fmt.Sprint(args) || fmt.Sprint(env["next_action"]) != fmt.Sprint(na) {
			t.Fatalf("state %v: next_action %v (envelope %v), want %s %v", d["state"], na, env["next_action"], tool, args)
		}
	}
	if d["state"] == "running" {
		wantNext(d, "get_job", map[string]any{"job_id": d["job_id"]})
	}
	var j map[string]any
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		j = mustCall(t, reg, "get_job", map[string]any{"job_id": d["job_id"]})
		if j["state"] != "running" {
			break
		}
		wantNext(j, "get_job", map[string]any{"job_id": d["job_id"]})
		time.Sleep(10 * time.Millisecond)
	}
	if j["state"] != "succeeded" || j["rows"] != nil {
		t.Fatalf("raw job %v %v", j["state"], j["rows"])
	}
	wantNext(j, "read_capture", map[string]any{"capture_id": j["capture_id"]})
	// a modules capture (running at first with wait_ms 0) names get_job
	m := mustCall(t, reg, "start_capture", map[string]any{"kind": "modules", "process_ref": refOf(t, reg, os.Getpid())})
	if m["state"] == "running" {
		wantNext(m, "get_job", map[string]any{"job_id": m["job_id"]})
	} else {
		wantNext(m, "read_capture", map[string]any{"capture_id": m["capture_id"]})
	}
	// network with wait_ms 3000 and no read: succeeded, read_capture next
	n := mustCall(t, reg, "start_capture", map[string]any{"kind": "network", "wait_ms": 3000})
	if n["state"] != "succeeded" {
		t.Fatalf("network with wait: %v", n["state"])
	}
	wantNext(n, "read_capture", map[string]any{"capture_id": n["capture_id"]})
	p := mustCall(t, reg, "read_capture", map[string]any{"capture_id": j["capture_id"]})
	if n := len(rowsOf(p)); n == 0 || n > 100 || (n < 100 && p["next_cursor"] != nil) {
		t.Fatalf("raw page of %d rows", n)
	}
	if _, ok := p["capture_retained"]; ok {
		t.Fatal("raw mode added managed metadata")
	}
	// the capture stays until released
	mustCall(t, reg, "read_capture", map[string]any{"capture_id": j["capture_id"]})
	if rel := mustCall(t, reg, "release_capture", map[string]any{"capture_id": j["capture_id"]}); rel["released"] != true {
		t.Fatal("release")
	}
	// raw with explicit read and wait
	w := mustCall(t, reg, "start_capture", map[string]any{"kind": "network", "wait_ms": 5000, "read": map[string]any{"limit": 1}})
	if w["state"] != "succeeded" || len(rowsOf(page(w))) > 1 || w["retained_capture_ids"] == nil || w["capture_retained"] != nil {
		t.Fatalf("raw explicit read %v", w)
	}
}

func TestImmediateHandleAndCancel(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	d := mustCall(t, reg, "start_capture", map[string]any{"kind": "file_users", "wait_ms": 0, "read": map[string]any{"projection": []string{"path"}, "distinct_paths": true}})
	if d["state"] == "running" {
		na := nextOf(d).(map[string]any)
		args := na["arguments"].(map[string]any)
		if na["tool"] != "get_job" || args["read"] == nil {
			t.Fatalf("running job continuation %v", na)
		}
	}
	c := mustCall(t, reg, "cancel_job", map[string]any{"job_id": d["job_id"]})
	if c["state"] == "running" {
		t.Fatalf("cancel left the job running: %v", c)
	}
	if c["state"] == "failed" {
		if e := c["result"].(map[string]any)["error"].(map[string]any); e["code"] != "CANCELLED" {
			t.Fatalf("cancelled job error %v", e)
		}
	}
	if _, err := call(t, reg, "get_job", map[string]any{"job_id": "job-9-9"}); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("unknown job: %v", err)
	}
}

// TestLimitsThroughTools drives each limit's error through the tool
// surface with limits injected at their boundary.
func TestLimitsThroughTools(t *testing.T) {
	l := jobs.DefaultLimits()
	l.Workers = 0
	reg, _ := registry(t, false, l)
	if _, err := call(t, reg, "start_capture", map[string]any{"kind": "network"}); contract.CodeOf(err) != contract.CodeBusy {
		t.Fatalf("no worker slot: %v", err)
	}
	l = jobs.DefaultLimits()
	l.RetainedPerSession = 1
	reg, _ = registry(t, false, l)
	mustCall(t, reg, "start_capture", map[string]any{"kind": "network", "retain_capture": true})
	_, err := call(t, reg, "start_capture", map[string]any{"kind": "network"})
	if contract.CodeOf(err) != contract.CodeResourceLimit {
		t.Fatalf("retained limit: %v", err)
	}
	l = jobs.DefaultLimits()
	l.RetainedBytes = 2048
	reg, _ = registry(t, false, l)
	// The starter got no result: isError with the job's code and job_id,
	// and a message naming the collection filter.
	_, err = call(t, reg, "start_capture", map[string]any{"kind": "file_users"})
	ce := contract.AsError(err)
	if ce == nil || ce.Code != contract.CodeResultTooLarge || ce.Details["job_id"] == nil || !strings.Contains(ce.Message, "filter (path, extension, owner_name)") {
		t.Fatalf("over budget start: %v", err)
	}
	// get_job keeps the getter semantics (isError false, data.state failed)
	// but the envelope names the failure in a warning.
	d := mustCall(t, reg, "get_job", map[string]any{"job_id": ce.Details["job_id"]})
	env := d["_envelope"].(map[string]any)
	e, _ := d["result"].(map[string]any)["error"].(map[string]any)
	ws, _ := env["warnings"].([]any)
	if d["state"] != "failed" || e["code"] != "RESULT_TOO_LARGE" || d["rows"] != nil || env["status"] != "complete" ||
		len(ws) != 1 || !strings.Contains(ws[0].(string), "failed: RESULT_TOO_LARGE") {
		t.Fatalf("over budget get_job: state %v error %v status %v warnings %v", d["state"], e, env["status"], ws)
	}
	// The recovery is real: the same scan with a collection filter keeps
	// only matching rows and fits.
	path := tempFile(t, "needle-in-haystack.dat")
	h := holder(t, path)
	f := mustCall(t, reg, "start_capture", map[string]any{"kind": "file_users", "filter": map[string]any{"path": "needle-in-haystack"}})
	rs := rowsOf(page(f))
	if f["state"] != "succeeded" || len(rs) != 1 || rs[0]["path"] != path || int(rs[0]["pid"].(float64)) != h.Process.Pid {
		t.Fatalf("filtered scan: %v rows %v", f["state"], rs)
	}
	cov := coverageOf(f)
	if cov["collection_filter"].(map[string]any)["path"] != "needle-in-haystack" || cov["rows_filtered_out"].(float64) == 0 {
		t.Fatalf("filtered coverage %v", cov)
	}
	// filter terms are checked against the kind
	_, err = call(t, reg, "start_capture", map[string]any{"kind": "open_files", "process_ref": refOf(t, reg, h.Process.Pid), "filter": map[string]any{"owner_name": "x"}})
	if ce := contract.AsError(err); ce == nil || ce.Code != contract.CodeInvalidArgument || ce.Field != "/filter/owner_name" {
		t.Fatalf("owner filter on open_files: %v", err)
	}
	_, err = call(t, reg, "start_capture", map[string]any{"kind": "file_users", "filter": map[string]any{"path": "   "}})
	if contract.CodeOf(err) != contract.CodeInvalidArgument {
		t.Fatalf("blank filter path: %v", err)
	}
}
