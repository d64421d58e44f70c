package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/host"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

// Every pane with more rows than the screen holds pages with the table's
// keys: End shows the last row and "rows N–T of T" (or the pane's noun),
// Home the first, and PgDn from the top walks through every row to the
// end. The rows are made through the real host: tracked names by
// update_tracking, agent calls by an MCP bridge session's dispatches,
// graphs by add_graphs.
func TestPanesPage(t *testing.T) {
	type pane struct {
		name string
		// make returns the rows the pane must show (each a text its line
		// holds) after it opened the pane in d.
		make func(t *testing.T, h *host.Host, d *driver) []string
		noun string // the position line's noun
	}
	const many = 60
	panes := []pane{
		{"profiles", func(t *testing.T, h *host.Host, d *driver) []string {
			var names []string
			for i := 0; i < many; i++ {
				res, err := call(context.Background(), d.m.opt.Backend, "get_tracking", map[string]any{})
				if err != nil {
					t.Fatal(err)
				}
				var tr struct {
					Revision string `json:"revision"`
				}
				decode(res, &tr)
				n := fmt.Sprintf("tracked%03d", i)
				if _, err := call(context.Background(), d.m.opt.Backend, "update_tracking", map[string]any{"operation_id": "t-" + n,
					"expected_revision": tr.Revision, "action": "add", "process_name": n}); err != nil {
					t.Fatal(err)
				}
				names = append(names, n)
			}
			d.keys("o")
			d.refresh()
			return append([]string{"gone"}, names...) // the fixture tracks "gone"
		}, "rows"},
		{"agent activity", func(t *testing.T, h *host.Host, d *driver) []string {
			bs := h.NewSession()
			host.MarkMCPBridge(bs)
			defer bs.Close()
			// every proc tool once, with an argument none has (a failed
			// call, INVALID_ARGUMENT): rows newest first
			tools := []string{"add_graphs", "cancel_job", "close_log", "export_graphs", "get_graphs", "get_history", "get_job",
				"get_metrics", "get_operation", "get_process_info", "get_recording", "get_status", "get_system_info", "get_tracking",
				"list_logs", "list_metrics", "list_processes", "list_profiles", "open_log", "rank_processes", "read_capture",
				"release_capture", "start_capture", "start_recording", "stop_recording", "update_profile", "update_tracking", "wait_condition"}
			var want []string
			for _, tool := range tools {
				if _, err := h.Dispatch(context.Background(), bs, tool, json.RawMessage(`{"no_such_argument":1}`)); err == nil {
					t.Fatalf("%s succeeded", tool)
				}
				want = append([]string{"  " + tool + " "}, want...)
			}
			d.refresh()
			d.keys("a")
			return want
		}, "rows"},
		{"graphs", func(t *testing.T, h *host.Host, d *driver) []string {
			var want []string
			for _, r := range d.m.frame.Rows {
				if r.Ended {
					continue
				}
				for _, metric := range []string{"cpu_percent", "rss_bytes", "threads"} {
					if _, err := call(context.Background(), d.m.opt.Backend, "add_graphs", map[string]any{"metrics": []map[string]any{{"metric_id": metric, "process_ref": r.Ref}}}); err != nil {
						t.Fatal(err)
					}
					want = append(want, fmt.Sprintf("g%d ", len(want)+1))
				}
			}
			d.keys("g")
			d.refresh()
			return want
		}, "graphs"},
	}
	pos := regexp.MustCompile(`(\d+)–(\d+) of (\d+)`)
	for _, sz := range [][2]int{{120, 40}, {80, 24}, {60, 14}} {
		for _, p := range panes {
			t.Run(fmt.Sprintf("%s %dx%d", p.name, sz[0], sz[1]), func(t *testing.T) {
				h, b := fixture(t, 3)
				d := newDriver(t, b)
				d.m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
				rows := p.make(t, h, d)
				position := func() (string, []string) {
					t.Helper()
					v := d.m.View()
					checkShape(t, v, sz[0], sz[1])
					for _, l := range strings.Split(v, "\n") {
						if strings.Contains(l, p.noun+" ") {
							if m := pos.FindStringSubmatch(l); m != nil {
								return l, m
							}
						}
					}
					t.Fatalf("no %q position line with %d rows:\n%s", p.noun, len(rows), v)
					return "", nil
				}
				shows := func(row string) bool {
					return strings.Contains(d.m.View(), row)
				}
				_, m := position()
				if m[1] != "1" || m[3] != fmt.Sprint(len(rows)) || !shows(rows[0]) || shows(rows[len(rows)-1]) {
					t.Fatalf("first window %v, rows %d:\n%s", m, len(rows), d.m.View())
				}
				d.keys("end")
				line, m := position()
				if m[2] != m[3] || !shows(rows[len(rows)-1]) {
					t.Fatalf("after End %q: the last row %q is not shown:\n%s", line, rows[len(rows)-1], d.m.View())
				}
				d.keys("down")
				if l2, _ := position(); l2 != line {
					t.Fatalf("Down past the end moved: %q, was %q", l2, line)
				}
				d.keys("home")
				if _, m = position(); m[1] != "1" || !shows(rows[0]) {
					t.Fatalf("after Home %v:\n%s", m, d.m.View())
				}
				// PgDn from the top shows every row on the way to the end
				seen := map[string]bool{}
				for i := 0; ; i++ {
					for _, r := range rows {
						if shows(r) {
							seen[r] = true
						}
					}
					_, m := position()
					if m[2] == m[3] {
						break
					}
					d.keys("pgdown")
					if i > len(rows) {
						t.Fatal("PgDn does not reach the end")
					}
				}
				for _, r := range rows {
					if !seen[r] {
						t.Fatalf("row %q never shown paging down", r)
					}
				}
				d.keys("pgup")
				if _, m := position(); m[2] == m[3] {
					t.Fatalf("PgUp at the end stayed: %v", m)
				}
			})
		}
	}
}

// A pending confirmation shows whole, down to its expiry (a fixed
// seven-line overlay cut the last lines of a profile load); on a screen
// too small for it, the overlay says which lines it shows of how many.
func TestConfirmOverlayWhole(t *testing.T) {
	h, b := fixture(t, 3)
	bs := h.NewSession()
	host.MarkMCPBridge(bs)
	agent := func(method string, args map[string]any) map[string]any {
		t.Helper()
		raw, _ := json.Marshal(args)
		res, err := h.Dispatch(context.Background(), bs, method, raw)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var d map[string]any
		decode(res, &d)
		return d
	}
	p := agent("list_profiles", map[string]any{})
	agent("update_profile", map[string]any{"operation_id": "save", "expected_revision": p["revision"], "action": "save_as", "name": "dev"})
	p = agent("list_profiles", map[string]any{})
	agent("update_tracking", map[string]any{"operation_id": "add", "expected_revision": p["revision"], "action": "add", "process_name": "bash"})
	p = agent("list_profiles", map[string]any{})
	pr := p["profiles"].([]any)[0].(map[string]any)
	if d := agent("update_profile", map[string]any{"operation_id": "load-dev", "expected_revision": p["revision"], "action": "load",
		"profile_id": pr["profile_id"], "profile_revision": pr["revision"], "wait_ms": 0}); d["state"] != "pending_confirmation" {
		t.Fatalf("load: %v", d)
	}
	for _, c := range []struct {
		w, h  int
		whole bool
	}{{120, 40, true}, {80, 24, true}, {60, 14, false}} {
		d := newDriver(t, b)
		d.m.Update(tea.WindowSizeMsg{Width: c.w, Height: c.h})
		v := d.m.View()
		checkShape(t, v, c.w, c.h)
		body := d.m.confirmLines()
		if len(body) < 7 || !strings.HasPrefix(body[len(body)-1], "  expires ") {
			t.Fatalf("confirmation body %q", body)
		}
		for i, l := range body {
			shown := strings.Contains(v, "\n"+fit(l, c.w)+"\n")
			if c.whole && !shown {
				t.Fatalf("%dx%d: line %q of the confirmation is not shown:\n%s", c.w, c.h, l, v)
			}
			if !c.whole && i == len(body)-1 && shown {
				t.Fatalf("%dx%d: the whole confirmation fits?\n%s", c.w, c.h, v)
			}
		}
		want := fmt.Sprintf("lines 1–%d of %d (inquest confirm lists it whole)", d.m.confirmHeight()-2, len(body))
		if !c.whole && !strings.Contains(v, want) {
			t.Fatalf("%dx%d: no %q:\n%s", c.w, c.h, want, v)
		}
		if c.whole && strings.Contains(v, "inquest confirm lists") {
			t.Fatalf("%dx%d: a position for a confirmation shown whole:\n%s", c.w, c.h, v)
		}
	}
}

// Settings on a screen shorter than its text pages like help: the
// footer says which lines show, and End reaches the last.
func TestSettingsPage(t *testing.T) {
	_, b := fixture(t, 3)
	d := newDriver(t, b)
	d.m.Update(tea.WindowSizeMsg{Width: 70, Height: 8})
	d.keys("S")
	foot := func() string { l := strings.Split(d.m.View(), "\n"); return l[len(l)-1] }
	n := len(d.m.settingsLines(70))
	if want := fmt.Sprintf("lines 1–4 of %d", n); !strings.Contains(foot(), want) || strings.Contains(d.m.View(), "change with") {
		t.Fatalf("footer %q, want %q:\n%s", foot(), want, d.m.View())
	}
	d.keys("end")
	if want := fmt.Sprintf("lines %d–%d of %d", n-3, n, n); !strings.Contains(foot(), want) || !strings.Contains(d.m.View(), "change with") {
		t.Fatalf("after End: footer %q, want %q:\n%s", foot(), want, d.m.View())
	}
	d.keys(" ") // Space still toggles in Settings
	if !d.m.settings.MCPConnectionsDisabled {
		t.Fatal("Space did not toggle Disable MCP connections")
	}
	d.keys("home")
	if !strings.Contains(foot(), "lines 1–4") {
		t.Fatalf("after Home: %q", foot())
	}
}
