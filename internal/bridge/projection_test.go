//go:build linux

package bridge_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/jobs"
	"github.com/inquest-dev/inquest/internal/tool"
)

// rowKeys returns a row's field names, sorted.
func rowKeys(r map[string]any) []string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestListProcessesProjection: a list_processes row without projection
// carries exactly the compact fields of its scope (values too when
// metric_ids asks for them); projection ["all"] returns every field but
// the opt-in user and command_line, which can be listed beside it; a
// field list returns exactly those fields.
func TestListProcessesProjection(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	refOf(t, reg, os.Getpid()) // sampled
	self := map[string]any{"pid": os.Getpid()}
	all := append([]string{}, host.ProcessFields[:len(host.ProcessFields)-2]...)
	cases := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"default live", map[string]any{"filter": self}, host.CompactProcessFields},
		{"default all", map[string]any{"filter": self, "scope": "all"}, host.CompactRetainedProcessFields},
		{"default retained", map[string]any{"filter": self, "scope": "retained"}, host.CompactRetainedProcessFields},
		{"metric_ids keep values", map[string]any{"filter": self, "metric_ids": []string{"rss_bytes"}}, append([]string{"values", "unavailable"}, host.CompactProcessFields...)},
		{"all", map[string]any{"filter": self, "projection": []string{"all"}}, all},
		{"all and user", map[string]any{"filter": self, "projection": []string{"user", "all"}}, append([]string{"user"}, all...)},
		{"all and command_line", map[string]any{"filter": self, "projection": []string{"all", "command_line"}}, append([]string{"command_line", "command_line_truncated"}, all...)},
		{"fields", map[string]any{"filter": self, "projection": []string{"pid", "comm"}}, []string{"pid", "comm"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows := rowsOf(mustCall(t, reg, "list_processes", c.args))
			if len(rows) != 1 {
				t.Fatalf("rows %v", rows)
			}
			got, want := rowKeys(rows[0]), sorted(c.want)
			if !slices.Equal(got, want) {
				t.Fatalf("fields %v, want %v (row %v)", got, want, rows[0])
			}
		})
	}
}

// TestListProcessesCompactPage: each listing's pages together hold every
// process exactly once, a 16 KiB budget ends the first page of both
// projections within the budget, and one process's default (compact) row
// is smaller than its projection ["all"] row. It logs rows per page for
// both (a count that depends on the machine's processes, so not asserted).
func TestListProcessesCompactPage(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	refOf(t, reg, os.Getpid())
	perRow := func(scope string, proj []string) (int, float64) {
		args := map[string]any{"scope": scope}
		if proj != nil {
			args["projection"] = proj
		}
		rows, total := followPages(t, context.Background(), reg, "list_processes", args, "rows")
		exactlyOnce(t, "list_processes", rows, total)
		n := 0
		for _, r := range rows {
			n += len(r) + 1
		}
		return len(rows), float64(n) / float64(len(rows))
	}
	budget := float64(tool.RowBudget(context.Background()))
	for _, scope := range []string{"live", "all"} {
		n, all := perRow(scope, []string{"all"})
		_, def := perRow(scope, nil)
		t.Logf("scope %s, %d rows: projection all %.0f bytes a row (%d rows a 64 KiB page), default %.0f bytes (%d rows)", scope, n, all, int(budget/all), def, int(budget/def))
	}
	// A small budget makes bytes end the first page of both.
	ctx := tool.WithResultBudget(context.Background(), 16<<10)
	first := func(proj []string) int {
		args := map[string]any{"scope": "all"}
		if proj != nil {
			args["projection"] = proj
		}
		env, _, size := deliver(t, ctx, reg, "list_processes", args)
		if 2*size > 16<<10 {
			t.Fatalf("%v: %d bytes delivered, budget %d", proj, 2*size, 16<<10)
		}
		// a paged result states its coverage once, in the envelope
		if cov, _ := env["coverage"].(map[string]any); cov["total"] == nil || env["data"].(map[string]any)["coverage"] != nil {
			t.Fatalf("envelope coverage %v, data.coverage %v", env["coverage"], env["data"].(map[string]any)["coverage"])
		}
		var d struct {
			Rows []json.RawMessage `json:"rows"`
		}
		b, _ := json.Marshal(env["data"])
		json.Unmarshal(b, &d)
		return len(d.Rows)
	}
	a, d := first([]string{"all"}), first(nil)
	t.Logf("a 16 KiB page holds %d compact rows, %d full rows", d, a)
	if a == 0 || d == 0 {
		t.Fatalf("a 16 KiB page holds %d compact rows, %d full rows: want at least one of each", d, a)
	}
	// The row of one process (this test's), whatever else runs on the
	// machine: the default projection is a strict subset of "all", so
	// its row is smaller.
	own := func(proj []string) (fields, bytes int) {
		args := map[string]any{"filter": map[string]any{"pid": os.Getpid()}}
		if proj != nil {
			args["projection"] = proj
		}
		rows := rowsOf(mustCall(t, reg, "list_processes", args))
		if len(rows) != 1 {
			t.Fatalf("%v: %d rows for pid %d", proj, len(rows), os.Getpid())
		}
		b, _ := json.Marshal(rows[0])
		return len(rows[0]), len(b)
	}
	fa, ba := own([]string{"all"})
	fd, bd := own(nil)
	if fd >= fa || bd >= ba {
		t.Fatalf("this process's default row has %d fields in %d bytes, its projection all row %d fields in %d bytes: want fewer", fd, bd, fa, ba)
	}
}

// TestCaptureProjectionEveryKind: every capture kind accepts projection
// on its first page (start_capture read) and on read_capture of the
// retained capture; rows carry only the projected fields (and the
// *_bytes form of a lossy text field), and without projection a row
// carries only fields of its kind.
func TestCaptureProjectionEveryKind(t *testing.T) {
	reg, _ := registry(t, false, jobs.DefaultLimits())
	h := helper(t, "BRIDGE_HELPER_FDS=3")
	ref := refOf(t, reg, h.Process.Pid)
	for _, kind := range capture.Kinds {
		t.Run(kind, func(t *testing.T) {
			var proj []string
			for _, f := range host.CaptureFields[kind] {
				if !strings.HasSuffix(f, "_bytes") || f == "size_bytes" || f == "mapped_bytes" {
					proj = append(proj, f)
				}
				if len(proj) == 2 {
					break
				}
			}
			args := map[string]any{"kind": kind, "wait_ms": 10000, "retain_capture": true}
			if kind != capture.KindFileUsers {
				args["process_ref"] = ref
			}
			check := func(what string, rows []map[string]any, allowed []string, exact bool) {
				if len(rows) == 0 && kind != capture.KindNetwork {
					t.Fatalf("%s: no rows", what)
				}
				for _, r := range rows {
					for k := range r {
						if !slices.Contains(allowed, k) && !slices.Contains(allowed, strings.TrimSuffix(k, "_bytes")) {
							t.Fatalf("%s: field %q outside %v (row %v)", what, k, allowed, r)
						}
					}
					for _, f := range allowed {
						if _, ok := r[f]; exact && !ok {
							t.Fatalf("%s: no field %q (row %v)", what, f, r)
						}
					}
				}
			}
			full := mustCall(t, reg, "start_capture", args)
			rows := rowsOf(page(full))
			check("default", rows, host.CaptureFields[kind], false)
			if len(rows) > 0 {
				b, _ := json.Marshal(rows)
				t.Logf("%s: %d rows, %d bytes a row by default", kind, len(rows), len(b)/len(rows))
			}
			id := full["capture_id"].(string)
			args["read"] = map[string]any{"projection": proj}
			first := mustCall(t, reg, "start_capture", args)
			check("start_capture read.projection", rowsOf(page(first)), proj, true)
			check("read_capture projection", rowsOf(mustCall(t, reg, "read_capture", map[string]any{"capture_id": id, "projection": proj})), proj, true)
			for _, c := range []string{id, first["capture_id"].(string)} {
				mustCall(t, reg, "release_capture", map[string]any{"capture_id": c})
			}
		})
	}
}
