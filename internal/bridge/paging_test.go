//go:build linux

package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/jobs"
	"github.com/inquest-dev/inquest/internal/tool"
)

// pageKeys is the one page shape every paged proc tool's data carries.
var pageKeys = []string{"more", "offset", "returned", "size", "total"}

// deliver calls name through the registry and returns the delivered
// envelope (as a client sees it) and its encoded size.
func deliver(t *testing.T, ctx context.Context, reg *tool.Registry, name string, args any) (map[string]any, *contract.Result, int) {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := reg.Call(ctx, name, b)
	if err != nil {
		t.Fatalf("%s %s: %v", name, b, err)
	}
	body, _ := contract.Marshal(res, nil)
	var env map[string]any
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	return env, res, len(body)
}

// followPages calls name with args and follows next_action until the page
// says more is false. Every page must carry the page shape, start where
// the previous one ended and name the exact next call; it returns every
// row (compact JSON) in order and the listing's total.
func followPages(t *testing.T, ctx context.Context, reg *tool.Registry, name string, args map[string]any, rowsKey string) ([]string, int) {
	t.Helper()
	return followFrom(t, ctx, reg, name, args, rowsKey, 0)
}

// followFrom is followPages for a listing whose first page (of start
// rows) was delivered elsewhere (a job's first page).
func followFrom(t *testing.T, ctx context.Context, reg *tool.Registry, name string, args map[string]any, rowsKey string, start int) ([]string, int) {
	t.Helper()
	var rows []string
	total := -1
	for calls := 0; ; calls++ {
		if calls > 10000 {
			t.Fatalf("%s: no end after %d pages", name, calls)
		}
		env, res, _ := deliver(t, ctx, reg, name, args)
		partialOnlyForMissing(t, name, res)
		data, _ := env["data"].(map[string]any)
		pg, _ := data["page"].(map[string]any)
		keys := make([]string, 0, len(pg))
		for k := range pg {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, pageKeys) {
			t.Fatalf("%s: page %v, want keys %v", name, pg, pageKeys)
		}
		got, _ := data[rowsKey].([]any)
		if int(pg["offset"].(float64)) != start+len(rows) || int(pg["returned"].(float64)) != len(got) {
			t.Fatalf("%s: page %v after %d rows with %d rows", name, pg, len(rows), len(got))
		}
		if total < 0 {
			total = int(pg["total"].(float64))
		} else if int(pg["total"].(float64)) != total {
			t.Fatalf("%s: total changed between pages: %v, first %d", name, pg, total)
		}
		for _, r := range got {
			b, _ := json.Marshal(r)
			rows = append(rows, string(b))
		}
		if pg["more"] != true {
			// The last page names no further page (rank_processes names
			// get_history of its top row instead).
			if (res.NextAction != nil && res.NextAction.Tool == name) || data["next_cursor"] != nil {
				t.Fatalf("%s: last page names a next call: %v %v", name, res.NextAction, data["next_cursor"])
			}
			return rows, total
		}
		if res.NextAction == nil || res.NextAction.Tool != name || data["next_cursor"] != res.NextAction.Arguments["cursor"] {
			t.Fatalf("%s: page with more has next_action %v, next_cursor %v", name, res.NextAction, data["next_cursor"])
		}
		args = res.NextAction.Arguments
	}
}

// exactlyOnce checks that rows hold total distinct rows.
func exactlyOnce(t *testing.T, name string, rows []string, total int) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			t.Errorf("%s: row delivered twice: %s", name, r)
		}
		seen[r] = true
	}
	if len(rows) != total {
		t.Errorf("%s: %d rows delivered, total %d", name, len(rows), total)
	}
}

// TestEveryPagedToolReplaysNextAction walks the proc toolset: every tool
// declared with paging is paged with a small limit over a real input
// (this host's processes, raw history of the system, tracked lifetimes of
// helper processes, the descriptors of a helper holding 60 of them), by
// following next_action until more is false, and yields each row exactly
// once under the same page shape.
func TestEveryPagedToolReplaysNextAction(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	ctx := context.Background()
	fds := helper(t, "BRIDGE_HELPER_FDS=60")
	for i := 0; i < 2; i++ {
		helper(t, "BRIDGE_HELPER_FDS=1")
	}
	cases := map[string]func(t *testing.T) (args map[string]any, rowsKey string, min int){
		"list_processes": func(t *testing.T) (map[string]any, string, int) {
			return map[string]any{"scope": "all", "limit": 3}, "rows", 4
		},
		"get_history": func(t *testing.T) (map[string]any, string, int) {
			for {
				d := mustCall(t, reg, "get_history", map[string]any{"metric_ids": []string{"memory_used_bytes"}})
				st, _ := d["metrics"].(map[string]any)["memory_used_bytes"].(map[string]any)
				if n, _ := st["sample_count"].(float64); n >= 5 {
					break
				}
				time.Sleep(100 * time.Millisecond) // until five samples are retained
			}
			return map[string]any{"metric_ids": []string{"memory_used_bytes"}, "mode": "raw", "limit": 2}, "rows", 5
		},
		"get_tracking": func(t *testing.T) (map[string]any, string, int) {
			rev := mustCall(t, reg, "get_tracking", map[string]any{})["revision"]
			mustCall(t, reg, "update_tracking", map[string]any{"operation_id": "page-test", "expected_revision": rev, "action": "add", "pid": fds.Process.Pid})
			return map[string]any{"limit": 1}, "matching", 3
		},
		"rank_processes": func(t *testing.T) (map[string]any, string, int) {
			return map[string]any{"metric_id": "rss_bytes", "last_seconds": 600, "limit": 3}, "rows", 4
		},
		"read_capture": func(t *testing.T) (map[string]any, string, int) {
			d := mustCall(t, reg, "start_capture", map[string]any{"kind": "open_files", "pid": fds.Process.Pid, "retain_capture": true, "wait_ms": 10000})
			if d["state"] != "succeeded" {
				t.Fatalf("open_files capture: %v", d)
			}
			return map[string]any{"capture_id": d["capture_id"], "limit": 7}, "rows", 63
		},
	}
	for _, d := range host.Tools() {
		if d.Paging == nil {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			c, ok := cases[d.Name]
			if !ok {
				t.Fatalf("paged tool %s has no case here: add one", d.Name)
			}
			args, key, min := c(t)
			rows, total := followPages(t, ctx, reg, d.Name, args, key)
			if total < min {
				t.Fatalf("%s: %d rows, want at least %d to page", d.Name, total, min)
			}
			exactlyOnce(t, d.Name, rows, total)
		})
	}
}

// TestResultBudgetEndsPages: under a small result byte budget the first
// page of list_processes {"scope":"all"} ends at bytes, not rows: it is
// complete (no evidence is missing) with the budget warning and names the
// exact next call, the
// delivered result fits the budget, and following next_action yields
// every row exactly once.
func TestResultBudgetEndsPages(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	const budget = 16 << 10
	ctx := tool.WithResultBudget(context.Background(), budget)
	env, res, size := deliver(t, ctx, reg, "list_processes", map[string]any{"scope": "all", "projection": []string{"process_ref", "pid", "name", "path", "parent", "start_time", "history"}})
	if res.Status != contract.StatusComplete || !slices.Contains(res.Warnings, tool.BudgetWarning) || res.NextAction == nil {
		t.Fatalf("first page under a %d-byte budget: status %s, warnings %v, next %v", budget, res.Status, res.Warnings, res.NextAction)
	}
	if 2*size > budget {
		t.Fatalf("delivered %d bytes (text and structuredContent), budget %d", 2*size, budget)
	}
	pg := env["data"].(map[string]any)["page"].(map[string]any)
	if pg["returned"].(float64) >= pg["size"].(float64) {
		t.Fatalf("page %v did not end by bytes", pg)
	}
	rows, total := followPages(t, ctx, reg, "list_processes", map[string]any{"scope": "all", "projection": []string{"process_ref", "pid", "name", "path", "parent", "start_time", "history"}}, "rows")
	exactlyOnce(t, "list_processes", rows, total)
	if total < 2 || len(rows) != total {
		t.Fatalf("%d of %d rows", len(rows), total)
	}
}

// TestDefaultFirstPagesFitTheBudget: with the default 64 KiB result
// budget, the first answers of start_capture {"kind":"file_users"} (a
// helper holds 400 files of its own) and list_processes
// {"scope":"all"} fit the budget as delivered (text and structuredContent);
// the capture's first page carries the budget warning and is partial only
// for evidence the scan could not read (a warning other than a paging
// note says what, never the budget alone), and following next_action
// yields every row exactly once, the helper's 400 paths among them. The
// helper's own open files (start_capture open_files of its pid, all
// readable) make a page the budget ends with every row reachable by the
// next call: complete, page.more true, next_action read_capture, and so
// is each read_capture page after it that the budget ends.
func TestDefaultFirstPagesFitTheBudget(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	ctx := context.Background()
	dir := t.TempDir()
	for i := 0; i < 400; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("held-%04d.dat", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := helper(t, "BRIDGE_HELPER_DIR="+dir)

	_, _, size := deliver(t, ctx, reg, "list_processes", map[string]any{"scope": "all"})
	if 2*size > tool.DefaultResultBytes {
		t.Errorf("list_processes scope all: %d bytes delivered, budget %d", 2*size, tool.DefaultResultBytes)
	}

	env, res, size := deliver(t, ctx, reg, "start_capture", map[string]any{"kind": "file_users", "wait_ms": 10000})
	if 2*size > tool.DefaultResultBytes {
		t.Fatalf("start_capture file_users: %d bytes delivered, budget %d", 2*size, tool.DefaultResultBytes)
	}
	if !slices.Contains(res.Warnings, tool.BudgetWarning) || res.NextAction == nil || res.NextAction.Tool != "read_capture" {
		t.Fatalf("first file_users page: status %s, warnings %v, next %v", res.Status, res.Warnings, res.NextAction)
	}
	partialOnlyForMissing(t, "start_capture file_users", res)
	first := env["data"].(map[string]any) // the first page is flat in the job's data
	var rows []string
	for _, r := range first["rows"].([]any) {
		b, _ := json.Marshal(r)
		rows = append(rows, string(b))
	}
	rest, total := followFrom(t, ctx, reg, "read_capture", res.NextAction.Arguments, "rows", len(rows))
	if len(rows)+len(rest) != total {
		t.Fatalf("%d + %d rows, total %d", len(rows), len(rest), total)
	}
	all := append(rows, rest...)
	exactlyOnce(t, "file_users", all, total)
	held := 0
	for _, r := range all {
		if strings.Contains(r, filepath.Base(dir)+"/held-") {
			held++
		}
	}
	if held != 400 {
		t.Fatalf("%d of the helper's 400 files listed; first page status %s, warnings %v, coverage %v", held, res.Status, res.Warnings, env["coverage"])
	}

	// The helper's own files: every fd readable, so nothing is missing.
	env, res, _ = deliver(t, ctx, reg, "start_capture", map[string]any{"kind": "open_files", "pid": h.Process.Pid, "wait_ms": 10000, "retain_capture": true})
	first = env["data"].(map[string]any)
	capID, _ := first["capture_id"].(string)
	t.Cleanup(func() { reg.Call(ctx, "release_capture", json.RawMessage(`{"capture_id":"`+capID+`"}`)) })
	budgetEnded := func(what string, env map[string]any, res *contract.Result) {
		t.Helper()
		data, _ := env["data"].(map[string]any)
		pg, _ := data["page"].(map[string]any)
		if pg["more"] != true || !slices.Contains(res.Warnings, tool.BudgetWarning) || res.NextAction == nil || res.NextAction.Tool != "read_capture" || res.NextAction.Arguments["cursor"] != data["next_cursor"] {
			t.Fatalf("%s: page %v, warnings %v, next %v: want a page the budget ended, with the next call", what, pg, res.Warnings, res.NextAction)
		}
		if res.Status != contract.StatusComplete {
			t.Errorf("%s: status %s with warnings %v, coverage %v: a page the budget ended, nothing unread, is complete", what, res.Status, res.Warnings, env["coverage"])
		}
	}
	budgetEnded("start_capture open_files", env, res)
	// read_capture's own first page of the same capture, ended by the budget.
	env, res, _ = deliver(t, ctx, reg, "read_capture", map[string]any{"capture_id": capID})
	budgetEnded("read_capture", env, res)
	n := len(env["data"].(map[string]any)["rows"].([]any))
	for {
		args := res.NextAction.Arguments
		env, res, _ = deliver(t, ctx, reg, "read_capture", args)
		pg := env["data"].(map[string]any)["page"].(map[string]any)
		n += int(pg["returned"].(float64))
		if pg["more"] != true {
			if res.Status != contract.StatusComplete || res.NextAction != nil {
				t.Errorf("last read_capture page: status %s, next %v", res.Status, res.NextAction)
			}
			if total := int(pg["total"].(float64)); n != total || total < 400 {
				t.Errorf("read %d rows over the pages, total %d (the helper holds 400 files)", n, total)
			}
			break
		}
		budgetEnded("a later read_capture page", env, res)
	}
}

// partialOnlyForMissing fails when res is partial with no warning but
// paging notes: partial means some evidence could not be read, and the
// warnings say what; a page ended by the budget or the row limit is not
// missing evidence.
func partialOnlyForMissing(t *testing.T, what string, res *contract.Result) {
	t.Helper()
	if res.Status != contract.StatusPartial {
		return
	}
	for _, w := range res.Warnings {
		if !tool.IsPagingNote(w) {
			return
		}
	}
	t.Errorf("%s: partial with only paging notes %q: paging is not missing evidence", what, res.Warnings)
}
