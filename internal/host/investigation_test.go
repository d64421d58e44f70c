package host

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/config"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// testHost starts a host sampling every interval with inquest.toml in a
// temporary directory.
func testHost(t *testing.T, interval time.Duration, c sample.Collector) *Host {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	h, err := New(Options{Version: "test", Interval: interval, Collector: c})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	// Tests count samples: start from Start's two (the second is taken in
	// the background).
	h.awaitRates(context.Background())
	return h
}

func call(t *testing.T, h *Host, s *Session, method string, args any) (map[string]any, *contract.Result, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := h.Dispatch(context.Background(), s, method, b)
	if err != nil {
		return nil, nil, err
	}
	var data map[string]any
	out, _ := json.Marshal(res.Data)
	if e := json.Unmarshal(out, &data); e != nil {
		t.Fatal(e)
	}
	return data, res, nil
}

// covOf is a result's envelope coverage (a paged result states the same
// object as data.coverage).
func covOf(res *contract.Result) map[string]any {
	var m map[string]any
	b, _ := json.Marshal(res.Coverage)
	json.Unmarshal(b, &m)
	return m
}

func mustCall(t *testing.T, h *Host, s *Session, method string, args any) (map[string]any, *contract.Result) {
	t.Helper()
	d, r, err := call(t, h, s, method, args)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return d, r
}

func wantCode(t *testing.T, err error, code contract.Code) *contract.Error {
	t.Helper()
	if contract.CodeOf(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	return contract.AsError(err)
}

// waitFor polls fn until it returns true. d only guards against a hang:
// give it minutes, never the time the fact "should" take, since a loaded
// 2-core machine running -race can stall any goroutine for seconds.
func waitFor(t *testing.T, d time.Duration, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refOfPID waits for a snapshot collected wholly after the call (two
// sequence numbers on: the next one may have been under way) and returns
// pid's process_ref from it. A child started with exec.Command is then
// past its exec: a snapshot taken between fork and exec lists it under
// the test binary's name, which update_tracking would then resolve.
func refOfPID(t *testing.T, h *Host, s *Session, pid int) string {
	t.Helper()
	seq := h.Sampler().Latest().Seq
	waitFor(t, 2*time.Minute, "a snapshot after the child started", func() bool { return h.Sampler().Latest().Seq >= seq+2 })
	var ref string
	waitFor(t, 2*time.Minute, "the child in a snapshot", func() bool {
		d, _ := mustCall(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"pid": pid}})
		rows := d["rows"].([]any)
		if len(rows) == 1 {
			ref = rows[0].(map[string]any)["process_ref"].(string)
			return true
		}
		return false
	})
	return ref
}

func revision(t *testing.T, h *Host, s *Session) string {
	d, _ := mustCall(t, h, s, "get_tracking", map[string]any{})
	return d["revision"].(string)
}

// Acceptance: start a child, sample it, track it by ref, let it exit; then
// list_processes scope retained finds the ended lifetime (lifecycle
// unknown), get_history reads its samples, live inspection gives
// PROCESS_EXITED.
func TestTrackedChildOutlivesItsProcess(t *testing.T) {
	h := testHost(t, 50*time.Millisecond, nil)
	s := h.NewSession()
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	pid := child.Process.Pid
	ref := refOfPID(t, h, s, pid)

	out, _ := mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "track-1", "expected_revision": revision(t, h, s), "action": "add", "process_ref": ref})
	if out["state"] != "succeeded" {
		t.Fatalf("update_tracking: %v", out)
	}
	outcome := out["outcome"].(map[string]any)
	if outcome["root_name"] != "sleep" || outcome["resolved_from"] != "process_ref" || !strings.Contains(outcome["scope"].(string), "descendants") {
		t.Fatalf("outcome %v", outcome)
	}
	// Other sleep processes on the machine match the tracked name too:
	// follow every page of matching identities.
	found := false
	var matching []any
	for args := map[string]any{}; ; {
		tr, _ := mustCall(t, h, s, "get_tracking", args)
		matching = append(matching, tr["matching"].([]any)...)
		next, _ := tr["next_cursor"].(string)
		if next == "" {
			break
		}
		args = map[string]any{"cursor": next}
	}
	for _, m := range matching {
		m := m.(map[string]any)
		if m["process_ref"] == ref {
			found = m["history"].(map[string]any)["capacity_samples"].(float64) == 7200
		}
	}
	if !found {
		t.Fatalf("tracked child not matched with 7200-sample capacity among %d matching identities", len(matching))
	}
	// The history check after the exit wants at least three samples of
	// the child: wait until get_history has them, not for a duration
	// (a loaded machine may take no sample at all in 300 ms).
	waitFor(t, 2*time.Minute, "three samples of the child", func() bool {
		d, _ := mustCall(t, h, s, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "mode": "raw"})
		return len(d["rows"].([]any)) >= 3
	})
	// While it runs, scope all lists the identity once (live and retained
	// deduplicated by identity), live, with history bounds.
	all, _ := mustCall(t, h, s, "list_processes", map[string]any{"scope": "all", "filter": map[string]any{"pid": pid}})
	if rows := all["rows"].([]any); len(rows) != 1 || rows[0].(map[string]any)["lifecycle"] != "live" || rows[0].(map[string]any)["history"] == nil {
		t.Fatalf("scope all while live: %v", rows)
	}
	if v, listed := all["rows"].([]any)[0].(map[string]any)["exited_at"]; !listed || v != nil {
		t.Fatalf("scope all while live: exited_at %v (listed %v), want null", v, listed)
	}
	child.Process.Kill()
	child.Wait()
	// Wait until a snapshot no longer holds it.
	waitFor(t, 2*time.Minute, "the child to leave the snapshots", func() bool {
		return h.Sampler().Latest().Find(int32(pid)) == nil || h.Sampler().Latest().Find(int32(pid)).StartTicks == 0
	})

	// The history applies that snapshot too: the row then says when the
	// host saw the lifetime end (exited_at) and how (exit_basis), while
	// lifecycle stays unknown (known from history only).
	var row map[string]any
	waitFor(t, 2*time.Minute, "the retained row to carry exited_at", func() bool {
		d, _ := mustCall(t, h, s, "list_processes", map[string]any{"scope": "retained", "filter": map[string]any{"pid": pid},
			"projection": []string{"process_ref", "lifecycle", "exited_at", "exit_basis", "last_seen_at", "history"}})
		rows := d["rows"].([]any)
		if len(rows) != 1 {
			t.Fatalf("retained rows %v", rows)
		}
		row = rows[0].(map[string]any)
		return row["exited_at"] != nil
	})
	if row["process_ref"] != ref || row["lifecycle"] != "unknown" || row["history"] == nil || row["exit_basis"] != "absent_from_snapshot" {
		t.Fatalf("retained row %v", row)
	}
	exited, err1 := time.Parse(time.RFC3339Nano, row["exited_at"].(string))
	lastSeen, err2 := time.Parse(time.RFC3339Nano, row["last_seen_at"].(string))
	if err1 != nil || err2 != nil || !exited.After(lastSeen) {
		t.Fatalf("exited_at %v last_seen_at %v: want the first snapshot without it, after the last one with it", row["exited_at"], row["last_seen_at"])
	}
	all, _ = mustCall(t, h, s, "list_processes", map[string]any{"scope": "all", "filter": map[string]any{"pid": pid}})
	if rows := all["rows"].([]any); len(rows) != 1 || rows[0].(map[string]any)["lifecycle"] != "unknown" {
		t.Fatalf("scope all after exit: %v", rows)
	}
	live, _ := mustCall(t, h, s, "list_processes", map[string]any{"filter": map[string]any{"pid": pid}})
	if rows := live["rows"].([]any); len(rows) != 0 {
		t.Fatalf("scope live lists an ended lifetime: %v", rows)
	}
	hist, _ := mustCall(t, h, s, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes", "cpu_time_ns"}, "mode": "raw"})
	hrows := hist["rows"].([]any)
	if len(hrows) < 3 {
		t.Fatalf("history rows %d", len(hrows))
	}
	first := hrows[0].(map[string]any)
	if _, ok := first["values"].(map[string]any)["rss_bytes"].(string); !ok {
		t.Fatalf("rss not a decimal string: %v", first)
	}
	if hist["target"].(map[string]any)["lifecycle"] != "unknown" {
		t.Fatalf("target %v", hist["target"])
	}
	_, _, err := call(t, h, s, "get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
	wantCode(t, err, contract.CodeProcessExited)
	// The summary over the same frozen interval agrees with the raw rows.
	sum, _ := mustCall(t, h, s, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}, "mode": "summary"})
	if c := sum["metrics"].(map[string]any)["rss_bytes"].(map[string]any)["sample_count"].(float64); int(c) != len(hrows) {
		t.Fatalf("summary sample_count %v, raw rows %d", c, len(hrows))
	}
}

// A ref to an ended lifetime never resolves to a new process reusing the
// PID: an identity with a live PID and another start time.
func TestRefNeverResolvesToReusedPID(t *testing.T) {
	h := testHost(t, 50*time.Millisecond, nil)
	s := h.NewSession()
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	refOfPID(t, h, s, child.Process.Pid)
	live := h.Sampler().Latest().Find(int32(child.Process.Pid))
	ghost := sample.Identity{PID: live.PID, StartTicks: live.StartTicks - 1} // an earlier lifetime of the same PID
	ref := h.Ref(ghost)
	_, _, err := call(t, h, s, "get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
	wantCode(t, err, contract.CodeProcessExited)
	_, _, err = call(t, h, s, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}})
	e := wantCode(t, err, contract.CodeReferenceInvalid)
	if e.NextAction == nil || e.NextAction.Tool != "list_processes" {
		t.Fatalf("no refresh guidance: %+v", e)
	}
	_, _, err = call(t, h, s, "wait_condition", map[string]any{"condition": "process_exit", "process_ref": ref, "timeout_ms": 100})
	wantCode(t, err, contract.CodeProcessExited)
	_, _, err = call(t, h, s, "update_tracking", map[string]any{"operation_id": "x", "expected_revision": revision(t, h, s), "action": "add", "process_ref": ref})
	wantCode(t, err, contract.CodeReferenceInvalid)
	d, _ := mustCall(t, h, s, "list_processes", map[string]any{"scope": "all", "filter": map[string]any{"pid": live.PID}})
	for _, r := range d["rows"].([]any) {
		if r.(map[string]any)["process_ref"] == ref {
			t.Fatal("a fabricated earlier lifetime was listed")
		}
	}
}

// scripted is a collector that replays fixed snapshots (system values
// only), so history can be checked value by value.
type scripted struct {
	mu    sync.Mutex
	t0    time.Time
	steps []func(*sample.Snapshot)
	n     int
}

func (c *scripted) Platform() sample.Platform {
	return sample.Platform{OS: "test", Collector: "scripted"}
}

func (c *scripted) Collect(prev *sample.Snapshot) (*sample.Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	snap := &sample.Snapshot{Time: c.t0.Add(time.Duration(c.n) * time.Second)}
	if prev != nil {
		snap.Seq = prev.Seq + 1
	}
	if c.n < len(c.steps) {
		c.steps[c.n](snap)
	}
	c.n++
	return snap, nil
}

// The documented four-sample example (10, unavailable, 0, 20) through the host, and integers above
// 2^53 surviving JSON exactly in raw rows and summaries.
func TestHistoryFourSamplesAndExactIntegers(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	huge := uint64(1)<<60 + 7
	set := func(total *uint64, avail uint64) func(*sample.Snapshot) {
		return func(s *sample.Snapshot) {
			if total != nil {
				s.System.Set(sample.SMemTotal, *total)
			}
			s.System.Set(sample.SMemAvailable, avail)
		}
	}
	v10, v0, v20 := uint64(10), uint64(0), uint64(20)
	c := &scripted{t0: t0, steps: []func(*sample.Snapshot){set(&v10, huge), set(nil, huge+1), set(&v0, huge+3), set(&v20, ^uint64(0))}}
	h := testHost(t, time.Hour, c)
	h.Sampler().Step()
	h.Sampler().Step()
	s := h.NewSession()
	args := map[string]any{"metric_ids": []string{"memory_total_bytes", "memory_available_bytes"}, "mode": "summary",
		"from": t0.Add(-3 * time.Second).Format(time.RFC3339Nano), "to": t0.Add(7 * time.Second).Format(time.RFC3339Nano)}
	d, hres := mustCall(t, h, s, "get_history", args)
	mt := d["metrics"].(map[string]any)["memory_total_bytes"].(map[string]any)
	if mt["sample_count"] != 4.0 || mt["available_value_count"] != 3.0 || mt["missing_value_count"] != 1.0 {
		t.Fatalf("counts %v", mt)
	}
	if mt["min"] != "0" || mt["max"] != "20" || fmt.Sprint(mt["mean"]) != "map[denominator:1 numerator:10 value:10]" {
		t.Fatalf("stats %v", mt)
	}
	if _, ok := mt["delta"]; ok {
		t.Fatal("delta without exact endpoints")
	}
	cov := covOf(hres)
	if _, dup := d["coverage"]; dup {
		t.Fatalf("data.coverage %v repeats the envelope's coverage %v", d["coverage"], cov)
	}
	if cov["sample_count"] != 4.0 || cov["max_sample_interval_ms"] != 1000.0 {
		t.Fatalf("coverage %v", cov)
	}
	ma := d["metrics"].(map[string]any)["memory_available_bytes"].(map[string]any)
	sum := new(big.Int)
	for _, v := range []uint64{huge, huge + 1, huge + 3, ^uint64(0)} {
		sum.Add(sum, new(big.Int).SetUint64(v))
	}
	want := new(big.Rat).SetFrac(sum, big.NewInt(4))
	mean := ma["mean"].(map[string]any)
	if mean["numerator"] != want.Num().String() || mean["denominator"] != want.Denom().String() || ma["max"] != "18446744073709551615" {
		t.Fatalf("exact mean/max %v, want %s", ma, want)
	}
	// Beside the exact fraction, the mean as a JSON number.
	if wf, _ := want.Float64(); mean["value"] != wf {
		t.Fatalf("mean value %v, want %v", mean["value"], wf)
	}
	// Exact endpoints give a delta (signed decimal string).
	args["from"], args["to"] = t0.Format(time.RFC3339Nano), t0.Add(3*time.Second).Format(time.RFC3339Nano)
	d, _ = mustCall(t, h, s, "get_history", args)
	if dl := d["metrics"].(map[string]any)["memory_total_bytes"].(map[string]any)["delta"]; dl != "10" {
		t.Fatalf("delta %v", dl)
	}
	// Raw: every stored timestamp, an unavailable map, exact strings.
	args["mode"], args["limit"] = "raw", 1
	var rows []map[string]any
	for {
		d, res := mustCall(t, h, s, "get_history", args)
		for _, r := range d["rows"].([]any) {
			rows = append(rows, r.(map[string]any))
		}
		if res.NextAction == nil {
			break
		}
		args["cursor"] = res.NextAction.Arguments["cursor"]
	}
	if len(rows) != 4 {
		t.Fatalf("raw rows %d", len(rows))
	}
	if rows[1]["unavailable"].(map[string]any)["memory_total_bytes"] != "unknown" || rows[3]["values"].(map[string]any)["memory_available_bytes"] != "18446744073709551615" ||
		rows[0]["values"].(map[string]any)["memory_available_bytes"] != fmt.Sprint(huge) {
		t.Fatalf("raw rows %v", rows)
	}
	// A changed argument with the cursor is CURSOR_INVALID.
	args["cursor"] = nil
	delete(args, "cursor")
	_, res, _ := call(t, h, s, "get_history", args)
	args["cursor"] = res.NextAction.Arguments["cursor"]
	args["limit"] = 2
	_, _, err := call(t, h, s, "get_history", args)
	wantCode(t, err, contract.CodeCursorInvalid)
}

// Raw pages and the summary of the same interval agree on live data.
func TestHistoryRawSummaryAgreeAcrossPages(t *testing.T) {
	h := testHost(t, 20*time.Millisecond, nil)
	s := h.NewSession()
	waitFor(t, 2*time.Minute, "40 system samples", func() bool { return h.HistoryStore().System().Len() >= 40 })
	from := time.UnixMilli(time.Now().Add(-time.Hour).UnixMilli()).UTC().Format(time.RFC3339Nano)
	to := time.Now().UTC().Format(time.RFC3339Nano)
	metrics := []string{"memory_available_bytes", "system_cpu_percent", "process_count"}
	args := map[string]any{"metric_ids": metrics, "mode": "raw", "from": from, "to": to, "limit": 7}
	var rows []map[string]any
	for pages := 0; ; pages++ {
		d, res := mustCall(t, h, s, "get_history", args)
		for _, r := range d["rows"].([]any) {
			rows = append(rows, r.(map[string]any))
		}
		if res.NextAction == nil {
			if pages < 3 {
				t.Fatalf("only %d pages", pages+1)
			}
			break
		}
		args["cursor"] = res.NextAction.Arguments["cursor"]
	}
	sum, _ := mustCall(t, h, s, "get_history", map[string]any{"metric_ids": metrics, "mode": "summary", "from": from, "to": to})
	for _, m := range metrics {
		ms := sum["metrics"].(map[string]any)[m].(map[string]any)
		avail := 0
		var first, last any
		for _, r := range rows {
			if v, ok := r["values"].(map[string]any)[m]; ok {
				if avail == 0 {
					first = v
				}
				last = v
				avail++
			}
		}
		// The summary's frozen view may include samples taken after the
		// raw listing was frozen; compare over the raw rows' span.
		if int(ms["sample_count"].(float64)) < len(rows) {
			t.Fatalf("%s: summary %v < raw %d", m, ms["sample_count"], len(rows))
		}
		if avail > 0 && ms["first"].(map[string]any)["value"] != first {
			t.Fatalf("%s: first %v vs %v", m, ms["first"], first)
		}
		_ = last
	}
	// Exact agreement: summary bounded by the raw rows' last timestamp.
	lastAt := rows[len(rows)-1]["at"].(string)
	sum, _ = mustCall(t, h, s, "get_history", map[string]any{"metric_ids": metrics, "mode": "summary", "from": from, "to": lastAt})
	for _, m := range metrics {
		ms := sum["metrics"].(map[string]any)[m].(map[string]any)
		avail := 0
		var last any
		for _, r := range rows {
			if v, ok := r["values"].(map[string]any)[m]; ok {
				last = v
				avail++
			}
		}
		if int(ms["sample_count"].(float64)) != len(rows) || int(ms["available_value_count"].(float64)) != avail {
			t.Fatalf("%s: summary %v, raw %d rows %d available", m, ms, len(rows), avail)
		}
		if avail > 0 && ms["last"].(map[string]any)["value"] != last {
			t.Fatalf("%s: last %v vs %v", m, ms["last"], last)
		}
	}
}

// Concurrent clients: a stale revision is rejected, a repeated
// operation_id does not repeat the effect, reuse with other arguments is
// rejected, and racing clients change the list exactly once.
func TestTrackingConcurrentClients(t *testing.T) {
	h := testHost(t, 50*time.Millisecond, nil)
	a, b := h.NewSession(), h.NewSession()
	r1 := revision(t, h, a)
	if revision(t, h, b) != r1 {
		t.Fatal("sessions see different revisions")
	}
	addA := map[string]any{"operation_id": "a-1", "expected_revision": r1, "action": "add", "process_name": "Foo"}
	out, _ := mustCall(t, h, a, "update_tracking", addA)
	r2 := out["outcome"].(map[string]any)["revision"].(string)
	if r2 == r1 || out["outcome"].(map[string]any)["root_name"] != "foo" {
		t.Fatalf("outcome %v", out)
	}
	_, _, err := call(t, h, b, "update_tracking", map[string]any{"operation_id": "b-1", "expected_revision": r1, "action": "add", "process_name": "bar"})
	e := wantCode(t, err, contract.CodeStateConflict)
	if e.Details["current_revision"] != r2 {
		t.Fatalf("details %v", e.Details)
	}
	// The same op again (from the other session): the retained outcome, no new revision.
	again, _ := mustCall(t, h, b, "update_tracking", addA)
	if again["outcome"].(map[string]any)["revision"] != r2 || revision(t, h, a) != r2 {
		t.Fatalf("repeat changed state: %v", again)
	}
	// The stale-revision failure is retained too.
	_, _, err = call(t, h, b, "update_tracking", map[string]any{"operation_id": "b-1", "expected_revision": r1, "action": "add", "process_name": "bar"})
	wantCode(t, err, contract.CodeStateConflict)
	_, _, err = call(t, h, b, "update_tracking", map[string]any{"operation_id": "a-1", "expected_revision": r2, "action": "add", "process_name": "bar"})
	wantCode(t, err, contract.CodeStateConflict)
	// No-ops succeed without a new revision.
	noop, _ := mustCall(t, h, a, "update_tracking", map[string]any{"operation_id": "a-2", "expected_revision": r2, "action": "add", "process_name": "FOO"})
	if noop["outcome"].(map[string]any)["changed"] != false || revision(t, h, a) != r2 {
		t.Fatalf("noop %v", noop)
	}
	op, _ := mustCall(t, h, b, "get_operation", map[string]any{"operation_id": "a-1"})
	if op["state"] != "succeeded" {
		t.Fatalf("get_operation %v", op)
	}
	_, _, err = call(t, h, b, "get_operation", map[string]any{"operation_id": "never"})
	wantCode(t, err, contract.CodeOperationUnknown)

	// Eight clients race on the same revision: exactly one name is added.
	var wg sync.WaitGroup
	codes := make([]contract.Code, 8)
	retryable := make([]bool, 8)
	for i := range 8 {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := h.NewSession()
			b, _ := json.Marshal(map[string]any{"operation_id": fmt.Sprint("race-", i), "expected_revision": r2, "action": "add", "process_name": fmt.Sprint("n", i)})
			_, err := h.Dispatch(context.Background(), s, "update_tracking", b)
			codes[i] = contract.CodeOf(err)
			if e := contract.AsError(err); e != nil {
				retryable[i] = e.Retryable
			}
		}(i)
	}
	wg.Wait()
	// The losers wait for the winner and find its revision consumed
	// (STATE_CONFLICT); one still behind a running change after
	// MaxBusyWait is BUSY, never retryable (its revision is consumed).
	ok := 0
	for i, c := range codes {
		switch c {
		case "":
			ok++
		case contract.CodeStateConflict:
		case contract.CodeBusy:
			if retryable[i] {
				t.Fatalf("BUSY retryable on a revision the winner consumes")
			}
		default:
			t.Fatalf("unexpected code %s", c)
		}
	}
	tr, _ := mustCall(t, h, a, "get_tracking", map[string]any{})
	if ok != 1 || len(tr["names"].([]any)) != 2 {
		t.Fatalf("%d succeeded, names %v", ok, tr["names"])
	}
	// Persisted in inquest.toml.
	f, err := config.Load()
	if err != nil || len(f.Tracking) != 2 || f.Tracking[0] != "foo" {
		t.Fatalf("persisted %v %v", f.Tracking, err)
	}
}

// Removing a tracked name that would discard history needs a local
// confirmation; only a console session decides; deny, timeout and confirm.
func TestRemovalConfirmation(t *testing.T) {
	h := testHost(t, 10*time.Millisecond, nil)
	inv := investigationOf(h)
	s := h.NewSession()
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	ref := refOfPID(t, h, s, child.Process.Pid)
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "t1", "expected_revision": revision(t, h, s), "action": "add", "process_name": "sleep"})
	id, _ := h.ParseRef(ref)
	waitFor(t, 2*time.Minute, "more than 120 samples", func() bool {
		v, _, _ := inv.store.Process(id)
		return v.Len() > 130
	})
	console := h.NewSession()
	bridgeSess := h.NewSession()
	MarkMCPBridge(bridgeSess)
	remove := func(opID string) map[string]any {
		out, res := mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": opID, "expected_revision": revision(t, h, s), "action": "remove", "process_name": "SLEEP"})
		if out["state"] != "pending_confirmation" || res.NextAction != nil {
			t.Fatalf("not pending confirmation: %v", out)
		}
		conf := out["confirmation"].(map[string]any)["action"].(map[string]any)
		if len(conf["discard"].([]any)) == 0 {
			t.Fatalf("no discard scope: %v", conf)
		}
		return out
	}
	// deny
	remove("r-deny")
	_, _, err := call(t, h, s, ConfirmMethod, map[string]any{"operation_id": "r-deny", "decision": "confirm"})
	wantCode(t, err, contract.CodePermissionDenied) // the requester itself
	_, _, err = call(t, h, bridgeSess, ConfirmMethod, map[string]any{"operation_id": "r-deny", "decision": "confirm"})
	wantCode(t, err, contract.CodePermissionDenied) // an MCP bridge connection
	// The pending removal holds the mutation slot and will consume the
	// revision if confirmed: BUSY, and not retryable unchanged.
	if _, _, err := call(t, h, s, "update_tracking", map[string]any{"operation_id": "other", "expected_revision": revision(t, h, s), "action": "add", "process_name": "x"}); contract.CodeOf(err) != contract.CodeBusy || contract.AsError(err).Retryable {
		t.Fatalf("pending confirmation must hold the mutation slot (BUSY, retryable false): %+v", err)
	}
	pend, _ := mustCall(t, h, console, PendingConfirmationsMethod, map[string]any{})
	if len(pend["operations"].([]any)) != 1 {
		t.Fatalf("pending %v", pend)
	}
	denied, _ := mustCall(t, h, console, ConfirmMethod, map[string]any{"operation_id": "r-deny", "decision": "deny"})
	if denied["state"] != "failed" || denied["error"].(map[string]any)["code"] != "CANCELLED" {
		t.Fatalf("deny %v", denied)
	}
	_, _, err = call(t, h, s, "update_tracking", map[string]any{"operation_id": "r-deny", "expected_revision": "whatever", "action": "remove", "process_name": "SLEEP"})
	wantCode(t, err, contract.CodeStateConflict) // same id, other arguments
	// timeout
	inv.ledger.ConfirmTimeout = 200 * time.Millisecond
	remove("r-timeout")
	// The ledger's timer fails the operation on its own goroutine: wait
	// until get_operation shows it ended, not for 400 ms (a loaded
	// machine may not have run the timer by then).
	var op map[string]any
	waitFor(t, 2*time.Minute, "the unconfirmed removal to end", func() bool {
		op, _ = mustCall(t, h, s, "get_operation", map[string]any{"operation_id": "r-timeout"})
		return op["state"] != "pending_confirmation"
	})
	if op["state"] != "failed" || op["error"].(map[string]any)["code"] != "TIMEOUT" {
		t.Fatalf("timeout %v", op)
	}
	inv.ledger.ConfirmTimeout = time.Minute
	// confirm: a change sent meanwhile with the same expected_revision is
	// BUSY, retryable false, and its unchanged retry after the removal
	// commits is STATE_CONFLICT (the revision it named was consumed).
	before := revision(t, h, s)
	remove("r-ok")
	loser := map[string]any{"operation_id": "loser", "expected_revision": before, "action": "add", "process_name": "y"}
	_, _, err = call(t, h, h.NewSession(), "update_tracking", loser)
	if e := wantCode(t, err, contract.CodeBusy); e.Retryable || e.NextAction == nil || e.NextAction.Tool != "get_operation" {
		t.Fatalf("BUSY behind a revision-changing confirmation: %+v", e)
	}
	done, _ := mustCall(t, h, console, ConfirmMethod, map[string]any{"operation_id": "r-ok", "decision": "confirm"})
	if done["state"] != "succeeded" {
		t.Fatalf("confirm %v", done)
	}
	_, _, err = call(t, h, h.NewSession(), "update_tracking", loser)
	if e := wantCode(t, err, contract.CodeStateConflict); e.Retryable || e.Field != "/expected_revision" {
		t.Fatalf("unchanged retry after the commit: %+v", e)
	}
	v, lt, _ := inv.store.Process(id)
	if v.Len() > 120 || lt.Tracked {
		t.Fatalf("after removal: %d samples, tracked %v", v.Len(), lt.Tracked)
	}
}

// Profiles: save_as, duplicate name, rename, load over unsaved changes
// (confirmation), delete (always confirmation), persisted atomically.
func TestProfiles(t *testing.T) {
	h := testHost(t, 50*time.Millisecond, nil)
	s := h.NewSession()
	console := h.NewSession()
	n := 0
	op := func(args map[string]any) (map[string]any, error) {
		n++
		args["operation_id"] = fmt.Sprint("p", n)
		args["expected_revision"] = revision(t, h, s)
		d, _, err := call(t, h, s, "update_profile", args)
		return d, err
	}
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "t1", "expected_revision": revision(t, h, s), "action": "add", "process_name": "alpha"})
	d, err := op(map[string]any{"action": "save_as", "name": "Work"})
	if err != nil || d["state"] != "succeeded" {
		t.Fatalf("save_as %v %v", d, err)
	}
	prof := d["outcome"].(map[string]any)["profile"].(map[string]any)
	pid := prof["profile_id"].(string)
	_, err = op(map[string]any{"action": "save_as", "name": "work"})
	wantCode(t, err, contract.CodeStateConflict)
	d, err = op(map[string]any{"action": "rename", "profile_id": pid, "profile_revision": "1", "name": "Day job"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = op(map[string]any{"action": "rename", "profile_id": pid, "profile_revision": "1", "name": "again"})
	wantCode(t, err, contract.CodeStateConflict)
	// Unsaved change, then load the profile: confirmation required.
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "t2", "expected_revision": revision(t, h, s), "action": "add", "process_name": "beta"})
	lp, _ := mustCall(t, h, s, "list_profiles", map[string]any{})
	if lp["unsaved_changes"] != true || lp["active_profile_id"] != pid {
		t.Fatalf("list_profiles %v", lp)
	}
	d, err = op(map[string]any{"action": "load", "profile_id": pid, "profile_revision": "2"})
	if err != nil || d["state"] != "pending_confirmation" {
		t.Fatalf("load %v %v", d, err)
	}
	mustCall(t, h, console, ConfirmMethod, map[string]any{"operation_id": fmt.Sprint("p", n), "decision": "confirm"})
	tr, _ := mustCall(t, h, s, "get_tracking", map[string]any{})
	if fmt.Sprint(tr["names"]) != "[alpha]" {
		t.Fatalf("after load %v", tr["names"])
	}
	// Delete always confirms.
	d, err = op(map[string]any{"action": "delete", "profile_id": pid, "profile_revision": "2"})
	if err != nil || d["state"] != "pending_confirmation" {
		t.Fatalf("delete %v %v", d, err)
	}
	mustCall(t, h, console, ConfirmMethod, map[string]any{"operation_id": fmt.Sprint("p", n), "decision": "confirm"})
	f, err := config.Load()
	if err != nil || len(f.Profiles) != 0 || f.ActiveProfile != "" {
		t.Fatalf("after delete %+v %v", f, err)
	}
	raw, _ := os.ReadFile(os.Getenv("INQUEST_CONFIG"))
	if !strings.Contains(string(raw), "alpha") {
		t.Fatalf("toml %s", raw)
	}
}

// Waits: a child's exit is observed through the held pidfd, after the
// kill; a threshold on a child that allocates memory fires; a timeout is
// TIMEOUT with the last observation; appearance needs a sample newer than
// the request. How soon an exit is seen is speed, not correctness: no
// wall-clock bound is asserted (a loaded machine can delay any wake-up).
func TestWaitCondition(t *testing.T) {
	const interval = 500 * time.Millisecond
	h := testHost(t, interval, nil)
	s := h.NewSession()

	t.Run("exit", func(t *testing.T) {
		child := exec.Command("sleep", "30")
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		defer child.Process.Kill()
		ref := refOfPID(t, h, s, child.Process.Pid)
		killed := make(chan time.Time, 1)
		go func() {
			time.Sleep(700 * time.Millisecond)
			killed <- time.Now()
			child.Process.Kill()
			child.Wait()
		}()
		d, _ := mustCall(t, h, s, "wait_condition", map[string]any{"condition": "process_exit", "process_ref": ref, "timeout_ms": 60000, "wait_ms": 5000})
		for d["state"] == "running" {
			d, _ = mustCall(t, h, s, "wait_condition", map[string]any{"job_id": d["job_id"], "wait_ms": 5000})
		}
		if d["state"] != "succeeded" {
			t.Fatalf("exit wait %v", d)
		}
		ev := d["evidence"].(map[string]any)
		at, _ := time.Parse(time.RFC3339Nano, ev["detected_at"].(string))
		killedAt := <-killed
		if lag := at.Sub(killedAt); lag < 0 {
			t.Fatalf("exit detected %v after the kill (method %v)", lag, ev["method"])
		}
		if ev["method"] != "pidfd_poll" {
			t.Fatalf("exit observed by %v, want the held pidfd", ev["method"])
		}
	})

	t.Run("threshold", func(t *testing.T) {
		bin := buildAllocator(t)
		child := exec.Command(bin, "200")
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { child.Process.Kill(); child.Wait() }()
		ref := refOfPID(t, h, s, child.Process.Pid)
		d, _ := mustCall(t, h, s, "wait_condition", map[string]any{"condition": "metric_threshold", "process_ref": ref, "metric_id": "rss_bytes", "comparison": ">=", "threshold": "150000000", "timeout_ms": 60000, "wait_ms": 5000})
		for d["state"] == "running" {
			d, _ = mustCall(t, h, s, "wait_condition", map[string]any{"job_id": d["job_id"], "wait_ms": 5000})
		}
		ev := d["evidence"].(map[string]any)
		v, ok := new(big.Int).SetString(ev["value"].(string), 10)
		if d["state"] != "succeeded" || !ok || v.Cmp(big.NewInt(150000000)) < 0 {
			t.Fatalf("threshold %v", d)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		_, _, err := call(t, h, s, "wait_condition", map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest", "timeout_ms": 1200})
		e := wantCode(t, err, contract.CodeTimeout)
		last, ok := e.Details["last_observation"].(map[string]any)
		if !ok || last["match_count"] != 0 || last["sampled_at"] == nil {
			t.Fatalf("last observation %v", e.Details)
		}
		// The condition may hold later: the unchanged call may succeed
		// (docs/errors.md, TIMEOUT), so the wait's TIMEOUT is retryable.
		if !e.Retryable {
			t.Fatalf("a wait's TIMEOUT is not retryable: %+v", e)
		}
	})

	t.Run("present", func(t *testing.T) {
		// A uniquely named copy of sleep starts after the wait begins.
		bin := filepath.Join(t.TempDir(), "inqwaitprobe")
		b, err := os.ReadFile("/bin/sleep")
		if err != nil {
			t.Skip("no /bin/sleep to copy")
		}
		os.WriteFile(bin, b, 0o700)
		start := h.Sampler().Latest().Seq
		// The wait is running (wait_ms 0 returns its handle) before the
		// probe starts: no sleep stands in for that order.
		d, _ := mustCall(t, h, s, "wait_condition", map[string]any{"condition": "process_present", "process_name": "InqWaitProbe", "timeout_ms": 60000, "wait_ms": 0})
		c := exec.Command(bin, "600")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Kill(); c.Wait() }()
		for d["state"] == "running" {
			d, _ = mustCall(t, h, s, "wait_condition", map[string]any{"job_id": d["job_id"], "wait_ms": 5000})
		}
		ev, _ := d["evidence"].(map[string]any)
		if ev == nil {
			t.Fatalf("present %v", d)
		}
		procs := ev["processes"].([]any)
		if d["state"] != "succeeded" || uint64(ev["snapshot_seq"].(float64)) <= start || procs[0].(map[string]any)["name"] != "inqwaitprobe" {
			t.Fatalf("present %v", d)
		}
	})

	t.Run("get_job-cancel_job", func(t *testing.T) {
		d, _ := mustCall(t, h, s, "wait_condition", map[string]any{"condition": "process_present", "process_name": "no-such-process-inquest", "timeout_ms": 30000, "wait_ms": 0})
		id := d["job_id"].(string)
		j, _ := mustCall(t, h, s, "get_job", map[string]any{"job_id": id})
		if j["state"] != "running" || j["kind"] != "wait_condition" {
			t.Fatalf("get_job %v", j)
		}
		other := h.NewSession()
		_, _, err := call(t, h, other, "get_job", map[string]any{"job_id": id})
		wantCode(t, err, contract.CodeReferenceInvalid) // connection-owned
		c, _ := mustCall(t, h, s, "cancel_job", map[string]any{"job_id": id})
		if c["state"] != "failed" || c["cancellation_requested"] != true || c["result"].(map[string]any)["error"].(map[string]any)["code"] != "CANCELLED" {
			t.Fatalf("cancel_job %v", c)
		}
		// a later get_job reports the same field, still true (one name for captures and waits)
		if g, _ := mustCall(t, h, s, "get_job", map[string]any{"job_id": id}); g["cancellation_requested"] != true || g["cancel_requested"] != nil {
			t.Fatalf("get_job after cancel %v", g)
		}
		_, _, err = call(t, h, s, "wait_condition", map[string]any{"job_id": id})
		wantCode(t, err, contract.CodeCancelled)
	})

	t.Run("threshold-system-timeout", func(t *testing.T) {
		// The last observation carries a value once a sample newer than
		// the request arrived within timeout_ms; a loaded machine may take
		// none in 1.1 s (then it says so). Repeat until a TIMEOUT saw a
		// fresh sample, checking every TIMEOUT, rather than assume the
		// sampler kept its pace.
		waitFor(t, 2*time.Minute, "a TIMEOUT whose last observation has a fresh sample", func() bool {
			_, _, err := call(t, h, s, "wait_condition", map[string]any{"condition": "metric_threshold", "system": true, "metric_id": "memory_total_bytes", "comparison": "<", "threshold": 0, "timeout_ms": 1100})
			e := wantCode(t, err, contract.CodeTimeout)
			last, _ := e.Details["last_observation"].(map[string]any)
			if _, ok := last["value"].(string); ok {
				return true
			}
			if last["note"] != "no fresh sample yet" || last["sampled_at"] == nil {
				t.Fatalf("last observation %v", e.Details)
			}
			return false
		})
	})
}

// buildAllocator builds a program that allocates and touches N MiB after
// a short pause, then sleeps.
func buildAllocator(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := `package main
import ("os";"strconv";"time")
func main() {
	n, _ := strconv.Atoi(os.Args[1])
	time.Sleep(700 * time.Millisecond)
	b := make([]byte, n<<20)
	for i := range b { b[i] = byte(i) }
	time.Sleep(60 * time.Second)
	_ = b[len(b)-1]
}`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "alloc")
	cmd := exec.Command("go", "build", "-o", bin, "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestNoLocalDecisionRefusesConfirmation: on a host no local decision can
// reach (DisableLocalDecisions, the in-process face), an action needing a
// confirmation fails at once with UNSUPPORTED and changes nothing, while
// actions without one still apply.
func TestNoLocalDecisionRefusesConfirmation(t *testing.T) {
	h := testHost(t, 50*time.Millisecond, nil)
	DisableLocalDecisions(h)
	s := h.NewSession()
	d, _ := mustCall(t, h, s, "update_profile", map[string]any{"operation_id": "s1", "expected_revision": revision(t, h, s), "action": "save_as", "name": "p3"})
	if d["state"] != "succeeded" {
		t.Fatalf("save_as without confirmation: %v", d)
	}
	pid := d["outcome"].(map[string]any)["profile"].(map[string]any)["profile_id"].(string)
	_, _, err := call(t, h, s, "update_profile", map[string]any{"operation_id": "d1", "expected_revision": revision(t, h, s), "action": "delete", "profile_id": pid, "profile_revision": "1"})
	wantCode(t, err, contract.CodeUnsupported)
	if !strings.Contains(err.Error(), "in-process") || !strings.Contains(err.Error(), "inquest confirm") {
		t.Fatalf("message: %v", err)
	}
	if p, _ := mustCall(t, h, s, PendingConfirmationsMethod, map[string]any{}); len(p["operations"].([]any)) != 0 {
		t.Fatalf("pending after refusal: %v", p)
	}
	op, _, err := call(t, h, s, "get_operation", map[string]any{"operation_id": "d1"})
	if err != nil || op["state"] != "failed" {
		t.Fatalf("get_operation d1: %v %v", op, err)
	}
	if lp, _ := mustCall(t, h, s, "list_profiles", map[string]any{}); len(lp["profiles"].([]any)) != 1 {
		t.Fatalf("profile deleted without a decision: %v", lp)
	}
}
