package host

import (
	"bufio"
	"context"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

var (
	rankChildOnce sync.Once
	rankChildBin  string
	rankChildErr  error
)

// rankChildBinary builds testdata/rankchild once per test run.
func rankChildBinary(t *testing.T) string {
	t.Helper()
	rankChildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inquest-rankchild")
		if err != nil {
			rankChildErr = err
			return
		}
		rankChildBin = filepath.Join(dir, "rankchild")
		out, err := exec.Command("go", "build", "-o", rankChildBin, "./testdata/rankchild/main.go").CombinedOutput()
		if err != nil {
			rankChildErr = &buildErr{out: string(out), err: err}
		}
	})
	if rankChildErr != nil {
		t.Fatal(rankChildErr)
	}
	return rankChildBin
}

type buildErr struct {
	out string
	err error
}

func (e *buildErr) Error() string { return e.err.Error() + "\n" + e.out }

// startRankChild starts the fixture in mode args and waits for its
// "ready" line; the test's cleanup kills and reaps it.
func startRankChild(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command(rankChildBinary(t), args...)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("rankchild %v: %q %v", args, line, err)
	}
	return c
}

// refOfPID waits until the host's latest snapshot holds pid and returns
// its process_ref and identity.
func rankRefOf(t *testing.T, h *Host, pid int) (string, sample.Identity) {
	t.Helper()
	var p *sample.Process
	waitFor(t, time.Minute, "pid in a snapshot", func() bool {
		p = h.Sampler().Latest().Find(int32(pid))
		return p != nil
	})
	return h.Ref(p.ID()), p.ID()
}

// cpuSpan is get_history's summary of cpu_time_ns for one lifetime.
type cpuSpan struct {
	n               int
	first, last     uint64
	firstAt, lastAt string
}

func (c cpuSpan) increase() uint64 { return c.last - c.first }

func historySpan(t *testing.T, h *Host, s *Session, ref, from string) cpuSpan {
	t.Helper()
	args := map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"cpu_time_ns"}}
	if from != "" {
		args["from"] = from
	}
	d, _ := mustCall(t, h, s, "get_history", args)
	m := d["metrics"].(map[string]any)["cpu_time_ns"].(map[string]any)
	var c cpuSpan
	c.n = int(m["available_value_count"].(float64))
	if c.n == 0 {
		return c
	}
	f, l := m["first"].(map[string]any), m["last"].(map[string]any)
	c.first, _ = strconv.ParseUint(f["value"].(string), 10, 64)
	c.last, _ = strconv.ParseUint(l["value"].(string), 10, 64)
	c.firstAt, c.lastAt = f["at"].(string), l["at"].(string)
	return c
}

func parseTS(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRankProcessesThreeChildren is the acceptance: a child busy
// for the whole window, one busy for half of it that then exits, one idle;
// ranked by CPU time over the window they come in that order, the exited
// one included with its partial coverage stated, and every value equals
// the sum of the increments between that lifetime's own retained samples
// (read back with get_history raw).
//
// Nothing depends on timing: the phases end when the host's retained
// samples say so (counts and CPU time seen by the sampler), and the
// window's bounds are stored sample timestamps.
func TestRankProcessesThreeChildren(t *testing.T) {
	rankChildBinary(t)
	h := testHost(t, 250*time.Millisecond, nil)
	// Tracked lifetimes keep 7,200 samples, so a slow machine never
	// pushes the window's start out of the rings.
	h.HistoryStore().SetTracking([]string{"rankchild"})
	s := h.NewSession()
	a := startRankChild(t, "busy")
	b := startRankChild(t, "busy")
	c := startRankChild(t, "idle")
	refA, _ := rankRefOf(t, h, a.Process.Pid)
	refB, idB := rankRefOf(t, h, b.Process.Pid)
	refC, _ := rankRefOf(t, h, c.Process.Pid)

	// The window starts at the first sample all three have.
	var t0 string
	waitFor(t, 2*time.Minute, "two samples of each child", func() bool {
		t0 = ""
		for _, ref := range []string{refA, refB, refC} {
			sp := historySpan(t, h, s, ref, "")
			if sp.n < 2 {
				return false
			}
			if t0 == "" || parseTS(t, sp.firstAt).After(parseTS(t, t0)) {
				t0 = sp.firstAt
			}
		}
		return true
	})
	// Phase 1: B (and A) busy until B has 8 samples and 0.5 s of CPU in
	// the window.
	waitFor(t, 3*time.Minute, "phase 1", func() bool {
		sp := historySpan(t, h, s, refB, t0)
		return sp.n >= 8 && sp.increase() >= 500e6
	})
	b.Process.Kill()
	b.Wait()
	waitFor(t, time.Minute, "B ended in the history", func() bool {
		_, lt, ok := h.HistoryStore().Process(idB)
		return ok && lt.Ended
	})
	spB := historySpan(t, h, s, refB, t0)
	afterB := parseTS(t, spB.lastAt).Add(time.Millisecond).Format(time.RFC3339Nano)
	// Phase 2: A alone until it has at least as many samples after B's
	// last one as B had in the window, and more CPU in the window than B.
	var tEnd string
	waitFor(t, 3*time.Minute, "phase 2", func() bool {
		after := historySpan(t, h, s, refA, afterB)
		all := historySpan(t, h, s, refA, t0)
		tEnd = all.lastAt
		return after.n >= spB.n && all.increase() >= spB.increase()+500e6
	})

	d, res, all := rankAll(t, h, s, map[string]any{"metric_id": "cpu_time_ns", "from": t0, "to": tEnd, "limit": MaxRankLimit})
	if d["aggregate"] != "increase" {
		t.Fatalf("default aggregate of a counter: %v", d["aggregate"])
	}
	rows := map[string]map[string]any{}
	for _, row := range all {
		rows[row["process_ref"].(string)] = row
	}
	rank := func(ref string) int {
		r, ok := rows[ref]
		if !ok {
			t.Fatalf("%s not ranked: %v %v", ref, res.Warnings, covOf(res))
		}
		return int(r["rank"].(float64))
	}
	if !(rank(refA) < rank(refB) && rank(refB) < rank(refC)) {
		t.Fatalf("ranks A %d, B %d, C %d; want A < B < C", rank(refA), rank(refB), rank(refC))
	}
	cov := func(ref string) map[string]any { return rows[ref]["coverage"].(map[string]any) }
	if cb := cov(refB); cb["ended_in_window"] != true || cb["fraction"].(float64) >= 1 || rows[refB]["lifecycle"] != "unknown" {
		t.Errorf("exited child's coverage: %v lifecycle %v", cb, rows[refB]["lifecycle"])
	}
	// The host saw B end: exited_at is the history's end (the first
	// snapshot without it), after its last sample; basis absence.
	_, ltB, _ := h.HistoryStore().Process(idB)
	if ex, _ := rows[refB]["exited_at"].(string); ex == "" || !parseTS(t, ex).Equal(ltB.EndedAt) || !parseTS(t, ex).After(parseTS(t, spB.lastAt)) || rows[refB]["exit_basis"] != "absent_from_snapshot" {
		t.Errorf("exited child: exited_at %v (history ended %v, last sample %s), exit_basis %v", rows[refB]["exited_at"], ltB.EndedAt, spB.lastAt, rows[refB]["exit_basis"])
	}
	for _, ref := range []string{refA, refC} {
		if cv := cov(ref); cv["ended_in_window"] != false || cv["fraction"].(float64) != 1 || cv["started_in_window"] != false {
			t.Errorf("whole-window child's coverage: %v", cv)
		}
		if rows[ref]["exited_at"] != nil || rows[ref]["exit_basis"] != nil {
			t.Errorf("live child: exited_at %v, exit_basis %v", rows[ref]["exited_at"], rows[ref]["exit_basis"])
		}
	}

	// Every value is the sum of the increments between the lifetime's own
	// retained samples inside the window, and rests on exactly them.
	for _, ref := range []string{refA, refB, refC} {
		hd, _ := mustCall(t, h, s, "get_history", map[string]any{"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"cpu_time_ns"},
			"from": t0, "to": tEnd, "mode": "raw"})
		sum, prev, have, avail := new(big.Int), uint64(0), false, 0
		samples := hd["rows"].([]any)
		for _, r := range samples {
			v, ok := r.(map[string]any)["values"].(map[string]any)["cpu_time_ns"].(string)
			if !ok {
				continue
			}
			x, _ := strconv.ParseUint(v, 10, 64)
			if have {
				sum.Add(sum, new(big.Int).Sub(new(big.Int).SetUint64(x), new(big.Int).SetUint64(prev)))
			}
			prev, have = x, true
			avail++
		}
		row := rows[ref]
		if row["value"] != sum.String() {
			t.Errorf("value %v, sum of retained increments %s", row["value"], sum)
		}
		if int(row["sample_count"].(float64)) != len(samples) || int(row["available_value_count"].(float64)) != avail {
			t.Errorf("rests on %v/%v samples, history has %d/%d", row["sample_count"], row["available_value_count"], len(samples), avail)
		}
	}
	if res.NextAction == nil || res.NextAction.Tool != "get_history" {
		t.Errorf("next_action %v", res.NextAction)
	}

	// scope live leaves the ended lifetime out; a name filter keeps only
	// the children.
	d, _ = mustCall(t, h, s, "rank_processes", map[string]any{"metric_id": "cpu_time_ns", "from": t0, "to": tEnd, "scope": "live", "filter": map[string]any{"name": "rankchild"}})
	// (rankchild processes of other test runs on the machine may rank
	// too: only this test's three children are compared)
	var live []string
	for _, r := range d["rows"].([]any) {
		if ref := r.(map[string]any)["process_ref"].(string); ref == refA || ref == refB || ref == refC {
			live = append(live, ref)
		}
	}
	if len(live) != 2 || live[0] != refA || live[1] != refC {
		t.Errorf("scope live, name rankchild: %v; want [A C]", live)
	}

	// last_seconds ends the window at the latest snapshot.
	d, res = mustCall(t, h, s, "rank_processes", map[string]any{"metric_id": "cpu_percent", "aggregate": "max", "last_seconds": 20, "limit": 3})
	w := d["window"].(map[string]any)
	if w["duration_ms"].(float64) != 20000 || w["last_seconds"].(float64) != 20 || parseTS(t, w["to"].(string)).UnixMilli() != time.Time(*res.CapturedAt).UnixMilli() {
		t.Errorf("window %v, captured_at %v", w, res.CapturedAt)
	}
	if n := len(d["rows"].([]any)); n != 3 {
		t.Errorf("limit 3: %d rows", n)
	}
}

// TestRankProcessesArguments: every check the schema cannot express is
// INVALID_ARGUMENT naming the argument, both in the bridge's pre-dispatch
// check (CheckRankArgs) and in the host; list_processes rejects a sort key
// that is not a process metric and an unknown order.
// rankAll reads every page of a ranking from args on, following
// next_action (rank_processes with the cursor) until it names something
// else; it checks that ranks run 1, 2, ... across the pages without a gap
// or repeat, that no process_ref repeats and that every page states the
// ranking's total. It returns the last page, its result and all rows.
func rankAll(t *testing.T, h *Host, s *Session, args map[string]any) (map[string]any, *contract.Result, []map[string]any) {
	t.Helper()
	d, res := mustCall(t, h, s, "rank_processes", args)
	var all []map[string]any
	seen := map[string]bool{}
	for {
		for _, r := range d["rows"].([]any) {
			row := r.(map[string]any)
			if int(row["rank"].(float64)) != len(all)+1 {
				t.Fatalf("rank %v at position %d", row["rank"], len(all)+1)
			}
			// A parent's reaped-children row shares its process_ref.
			ref := row["process_ref"].(string) + " " + row["kind"].(string)
			if seen[ref] {
				t.Fatalf("%s twice", ref)
			}
			seen[ref] = true
			all = append(all, row)
		}
		pg := d["page"].(map[string]any)
		if int(pg["total"].(float64)) != int(covOf(res)["ranked"].(float64)) {
			t.Fatalf("page total %v, ranked %v", pg["total"], covOf(res)["ranked"])
		}
		if res.NextAction == nil || res.NextAction.Tool != "rank_processes" {
			if pg["more"] != false || len(all) != int(pg["total"].(float64)) {
				t.Fatalf("listing ended at %d rows of %v (page %v)", len(all), pg["total"], pg)
			}
			return d, res, all
		}
		if d["next_cursor"] != res.NextAction.Arguments["cursor"] {
			t.Fatalf("next_cursor %v, next_action %v", d["next_cursor"], res.NextAction.Arguments)
		}
		d, res = mustCall(t, h, s, "rank_processes", res.NextAction.Arguments)
	}
}

// A ranking larger than the result budget is paged row-complete: each
// page's delivered bytes fit the caller's budget, a page the budget ended
// is partial with the budget warning and names the next page, pages read
// while newer snapshots arrive continue the same frozen ranking, and every
// ranked lifetime arrives exactly once, in rank order.
func TestRankProcessesPagedWithinBudget(t *testing.T) {
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	waitFor(t, time.Minute, "two samples", func() bool { return h.Sampler().Latest().Seq >= 2 })
	const budget = 16 << 10
	ctx := tool.WithResultBudget(context.Background(), budget)
	args := map[string]any{"metric_id": "rss_bytes", "limit": MaxRankLimit, "last_seconds": 600}
	b, _ := json.Marshal(args)
	res, err := h.Dispatch(ctx, s, "rank_processes", b)
	if err != nil {
		t.Fatal(err)
	}
	ranked := int(covOf(res)["ranked"].(float64))
	if ranked < 40 {
		t.Skipf("only %d processes ranked; the test needs a ranking larger than %d bytes", ranked, budget)
	}
	seen := map[string]bool{}
	pages := 0
	for {
		pages++
		body, _ := json.Marshal(res)
		if n := tool.DeliveredBytes(body); n > budget {
			t.Fatalf("page %d delivers %d bytes, budget %d", pages, n, budget)
		}
		var d struct {
			Rows []struct {
				Rank int    `json:"rank"`
				Ref  string `json:"process_ref"`
			} `json:"rows"`
			Page       tool.Page `json:"page"`
			NextCursor *string   `json:"next_cursor"`
		}
		out, _ := json.Marshal(res.Data)
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatal(err)
		}
		for _, r := range d.Rows {
			if r.Rank != len(seen)+1 || seen[r.Ref] {
				t.Fatalf("page %d: rank %d (%s) after %d rows", pages, r.Rank, r.Ref, len(seen))
			}
			seen[r.Ref] = true
		}
		if !d.Page.More {
			if res.NextAction == nil || res.NextAction.Tool != "get_history" {
				t.Fatalf("last page's next_action %+v", res.NextAction)
			}
			break
		}
		if res.Status != contract.StatusPartial || !slices.Contains(res.Warnings, tool.BudgetWarning) || res.NextAction == nil ||
			res.NextAction.Tool != "rank_processes" || d.NextCursor == nil || res.NextAction.Arguments["cursor"] != *d.NextCursor {
			t.Fatalf("page %d ended by bytes: status %s warnings %v next %+v", pages, res.Status, res.Warnings, res.NextAction)
		}
		seq := h.Sampler().Latest().Seq
		if _, err := h.Sampler().WaitNewer(context.Background(), seq); err != nil {
			t.Fatal(err)
		}
		nb, _ := json.Marshal(res.NextAction.Arguments)
		if res, err = h.Dispatch(ctx, s, "rank_processes", nb); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != ranked || pages < 2 {
		t.Fatalf("%d rows over %d pages, ranked %d", len(seen), pages, ranked)
	}
	// A cursor with other arguments is refused.
	bad := map[string]any{"metric_id": "rss_bytes", "limit": 5, "last_seconds": 600, "cursor": "x"}
	_, _, err = call(t, h, s, "rank_processes", bad)
	if contract.CodeOf(err) != contract.CodeCursorInvalid {
		t.Fatalf("a foreign cursor: %v", err)
	}
}

func TestRankProcessesArguments(t *testing.T) {
	h := testHost(t, 250*time.Millisecond, nil)
	s := h.NewSession()
	for _, tc := range []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"no metric", map[string]any{}, "/metric_id"},
		{"system metric", map[string]any{"metric_id": "load1"}, "/metric_id"},
		{"mean of a counter", map[string]any{"metric_id": "cpu_time_ns", "aggregate": "mean"}, "/aggregate"},
		{"slope of a counter", map[string]any{"metric_id": "cpu_time_ns", "aggregate": "slope"}, "/aggregate"},
		{"last_seconds and from", map[string]any{"metric_id": "rss_bytes", "last_seconds": 5, "from": "2026-01-01T00:00:00Z"}, "/from"},
		{"last_seconds and to", map[string]any{"metric_id": "rss_bytes", "last_seconds": 5, "to": "2026-01-01T00:00:00Z"}, "/to"},
		{"to without from", map[string]any{"metric_id": "rss_bytes", "to": "2026-01-01T00:00:00Z"}, "/to"}, // the member given, as for end without start
		{"from after to", map[string]any{"metric_id": "rss_bytes", "from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, "/from"},
		{"from not RFC 3339", map[string]any{"metric_id": "rss_bytes", "from": "yesterday at noon, UTC"}, "/from"},
		{"last_seconds zero", map[string]any{"metric_id": "rss_bytes", "last_seconds": 0}, "/last_seconds"},
		{"limit too large", map[string]any{"metric_id": "rss_bytes", "limit": MaxRankLimit + 1}, "/limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(tc.args)
			if e := wantCode(t, CheckRankArgs(b), contract.CodeInvalidArgument); e.Field != tc.field {
				t.Errorf("bridge check field %q, want %q", e.Field, tc.field)
			}
			_, _, err := call(t, h, s, "rank_processes", tc.args)
			if e := wantCode(t, err, contract.CodeInvalidArgument); e.Field != tc.field {
				t.Errorf("host field %q, want %q", e.Field, tc.field)
			}
		})
	}
	for _, tc := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"sort": "load1"}, "/sort"},
		{map[string]any{"sort": "rss_bytes", "order": "up"}, "/order"},
	} {
		_, _, err := call(t, h, s, "list_processes", tc.args)
		if e := wantCode(t, err, contract.CodeInvalidArgument); e.Field != tc.field {
			t.Errorf("list_processes %v: field %q, want %q", tc.args, e.Field, tc.field)
		}
	}
}

// TestListProcessesMetricSortPagesStable: a metric sort is frozen with
// the listing; pages read while newer snapshots arrive continue the same
// order, every row carries the sort value (or says why not), rows without
// a value come last, and no row repeats.
func TestListProcessesMetricSortPagesStable(t *testing.T) {
	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	for _, order := range []string{"desc", "asc"} {
		args := map[string]any{"sort": "cpu_time_ns", "order": order, "limit": 7, "projection": []string{"pid"}}
		d, res := mustCall(t, h, s, "list_processes", args)
		total := int(covOf(res)["total"].(float64))
		var vals []*big.Int
		seen := map[float64]bool{}
		missing := 0
		for {
			for _, r := range d["rows"].([]any) {
				row := r.(map[string]any)
				pid := row["pid"].(float64)
				if seen[pid] {
					t.Fatalf("pid %v twice", pid)
				}
				seen[pid] = true
				v, ok := row["values"].(map[string]any)["cpu_time_ns"].(string)
				if !ok {
					if row["unavailable"].(map[string]any)["cpu_time_ns"] == nil {
						t.Fatalf("row without value or reason: %v", row)
					}
					missing++
					continue
				}
				if missing > 0 {
					t.Fatalf("a row with a value after one without")
				}
				x, _ := new(big.Int).SetString(v, 10)
				vals = append(vals, x)
			}
			if res.NextAction == nil {
				break
			}
			// A newer snapshot arrives between pages.
			seq := h.Sampler().Latest().Seq
			if _, err := h.Sampler().WaitNewer(context.Background(), seq); err != nil {
				t.Fatal(err)
			}
			d, res = mustCall(t, h, s, "list_processes", res.NextAction.Arguments)
		}
		if len(seen) != total {
			t.Fatalf("%d rows over the pages, total %d", len(seen), total)
		}
		ok := sort.SliceIsSorted(vals, func(i, j int) bool {
			if order == "desc" {
				return vals[i].Cmp(vals[j]) > 0
			}
			return vals[i].Cmp(vals[j]) < 0
		})
		if !ok {
			t.Errorf("order %s: values not in order across pages", order)
		}
	}
}

// psRSS runs `ps -eo pid,rss --sort=-rss` and returns the PIDs in its
// order and their RSS in KiB.
func psRSS(t *testing.T) ([]int, map[int]uint64) {
	t.Helper()
	out, err := exec.Command("ps", "-eo", "pid,rss", "--sort=-rss", "--no-headers").Output()
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	rss := map[int]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		kb, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("ps line %q", l)
		}
		order = append(order, pid)
		rss[pid] = kb
	}
	return order, rss
}

// orderMargin is the least difference of ps's RSS for which list_processes
// must order two processes as ps does. rss_bytes is statm resident, the
// same exact count as ps's VmRSS, so a process whose RSS did not move is
// equal to ps; the margin only covers a process of the machine (not one of
// the test's) that moved and came back between the two ps runs.
const orderMargin = 1 << 20

// TestListProcessesSortRSSMatchesPs: list_processes sort rss_bytes agrees
// with `ps -eo pid,rss --sort=-rss` (run in the same test) on the top 10.
// Snapshot tolerance: ps and the host sample at different instants, so a
// process enters the comparison only when ps reports the same RSS in two
// runs bracketing the host snapshot (the snapshot starts after the first
// run, the listing is read before the second). Five children with
// distinct fixed, touched allocations (48 MiB apart), idle after, must
// have rss_bytes equal to ps's RSS x 1024, and the order must agree for
// every pair of stable processes whose ps values differ by more than
// orderMargin.
func TestListProcessesSortRSSMatchesPs(t *testing.T) {
	if _, err := exec.LookPath("ps"); err != nil {
		t.Skip("ps (procps) is not installed")
	}
	h := testHost(t, 250*time.Millisecond, nil)
	s := h.NewSession()
	var kids []int
	for _, mib := range []int{352, 304, 256, 208, 160} {
		kids = append(kids, startRankChild(t, "alloc", strconv.Itoa(mib)).Process.Pid)
	}
	psOrder1, rss1 := psRSS(t)
	// A snapshot started after the first ps run.
	psDone := time.Now()
	waitFor(t, time.Minute, "a snapshot after ps", func() bool { return h.Sampler().Latest().Time.After(psDone) })
	d, _ := mustCall(t, h, s, "list_processes", map[string]any{"sort": "rss_bytes", "projection": []string{"pid"}})
	_, rss2 := psRSS(t)
	ours := map[int]uint64{}
	var ourOrder []int
	for _, r := range d["rows"].([]any) {
		row := r.(map[string]any)
		pid := int(row["pid"].(float64))
		v, ok := row["values"].(map[string]any)["rss_bytes"].(string)
		if !ok {
			continue
		}
		ours[pid], _ = strconv.ParseUint(v, 10, 64)
		ourOrder = append(ourOrder, pid)
	}
	// ps's top 10 among stable processes the snapshot holds.
	var top []int
	for _, pid := range psOrder1 {
		if len(top) == 10 {
			break
		}
		if _, in := ours[pid]; in && rss1[pid] == rss2[pid] {
			top = append(top, pid)
		}
	}
	for _, k := range kids {
		if rss1[k] != rss2[k] {
			t.Fatalf("child %d: RSS moved between ps runs (%d, %d KiB)", k, rss1[k], rss2[k])
		}
		if ours[k] != rss1[k]*1024 {
			t.Errorf("child %d: rss_bytes %d, ps %d KiB (%d bytes)", k, ours[k], rss1[k], rss1[k]*1024)
		}
	}
	pos := map[int]int{}
	for i, pid := range ourOrder {
		pos[pid] = i
	}
	compared := 0
	for i := 0; i < len(top); i++ {
		for j := i + 1; j < len(top); j++ {
			x, y := top[i], top[j]
			if (rss1[x]-rss1[y])*1024 <= orderMargin {
				continue
			}
			compared++
			if pos[x] > pos[y] {
				t.Errorf("ps puts %d (%d KiB) before %d (%d KiB); list_processes after (%d, %d bytes)", x, rss1[x], y, rss1[y], ours[x], ours[y])
			}
		}
	}
	// The children are stable, distinct and the largest 5 of them appear
	// in the same order as allocated.
	for i := 1; i < len(kids); i++ {
		if pos[kids[i-1]] > pos[kids[i]] {
			t.Errorf("child of larger allocation %d listed after %d", kids[i-1], kids[i])
		}
	}
	for _, pid := range top {
		t.Logf("pid %d: ps %d KiB, rss_bytes %d (%+d KiB)", pid, rss1[pid], ours[pid], int64(ours[pid]/1024)-int64(rss1[pid]))
	}
	t.Logf("compared %d pairs over ps's top %d stable processes: %v", compared, len(top), top)
	if compared == 0 {
		t.Fatal("nothing compared")
	}
}

// FuzzCheckRankArgs: any argument bytes give nil or INVALID_ARGUMENT with
// a field, never a panic.
func FuzzCheckRankArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"metric_id":"cpu_time_ns","last_seconds":60}`, `{"metric_id":"rss_bytes","from":"2026-01-01T00:00:00Z","to":"2026-01-01T00:00:01Z"}`,
		`{"metric_id":"rss_bytes","aggregate":"increase"}`, `{"metric_id":"cpu_percent","last_seconds":-1}`, `[1]`, `{"from":5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckRankArgs(b)
		if err == nil {
			return
		}
		if contract.CodeOf(err) != contract.CodeInvalidArgument {
			t.Fatalf("code %v", contract.CodeOf(err))
		}
	})
}
