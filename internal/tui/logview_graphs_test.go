package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
)

// recordAndOpen records the tracked worker over steps samples from the
// TUI (R, then R y), opens the recording in Log view and returns the
// driver. The samples are taken at fixed times after now, so the
// recording keeps them all and the views are reproducible.
func recordAndOpen(t *testing.T, steps int) (*host.Host, Backend, *driver) {
	t.Helper()
	h, b := fixtureAt(t, 3, time.Date(2100, 1, 2, 12, 0, 0, 0, time.UTC))
	d := newDriver(t, b)
	d.keys("/", "w", "o", "r", "k", "e", "r", "enter", "*", "esc", "R")
	if !strings.Contains(d.m.notice, "recording to ") {
		t.Fatalf("start: %q", d.m.notice)
	}
	for i := 0; i < steps; i++ {
		h.Sampler().Step()
	}
	d.refresh()
	d.keys("R", "y")
	if !strings.Contains(d.m.notice, "recording stopped") {
		t.Fatalf("stop: %q", d.m.notice)
	}
	// a Live graph, to see it come back after Log view
	d.keys("g", "s", "esc")
	d.keys("L", "enter")
	if d.m.log == nil {
		t.Fatalf("not in Log view: %q", d.m.notice)
	}
	d.refresh()
	return h, b, d
}

// anonymous replaces the recording's generated file name (it holds the
// wall-clock time it was made) with x's of the same width.
func anonymous(v, name string) string {
	return strings.ReplaceAll(v, name, strings.Repeat("x", len(name)))
}

// Log view graphs: the graph workspace draws the recording's series (its
// system metrics and its recorded processes, by log process reference),
// with markers and values; its CSV export equals an agent's export_graphs
// of the same workspace byte for byte and each cell is the recorded value
// get_history reads from the log; returning to Live brings the Live graphs
// back.
func TestLogViewGraphs(t *testing.T) {
	h, b, d := recordAndOpen(t, 4)
	d.keys("g")
	if v := d.m.View(); !strings.Contains(v, "No graphs of this recording yet") || !strings.Contains(v, "recording "+d.m.log.Name) {
		t.Fatalf("empty Log view workspace:\n%s", v)
	}
	d.keys("s", "esc")
	d.keys("/", "w", "o", "r", "k", "e", "r", "enter", "+")
	if !strings.Contains(d.m.notice, "graph g5 added; g opens the graphs") {
		t.Fatalf("+ in Log view: %q", d.m.notice)
	}
	worker := d.m.selected()
	if !strings.HasPrefix(worker.Ref, "lp_") {
		t.Fatalf("selected row is not a recorded identity: %+v", worker)
	}
	d.keys("g")
	d.refresh()
	d.keys("left", "left", "A", "right", "B")
	v := d.m.View()
	checkShape(t, v, 120, 40)
	golden(t, "graphs_log", anonymous(v, d.m.log.Name))
	if !strings.Contains(v, "worker[101]:cpu_percent") || !strings.Contains(v, "system:system_cpu_percent") || !strings.ContainsFunc(v, func(r rune) bool { return r > 0x2800 && r <= 0x28ff }) {
		t.Fatalf("Log view graphs:\n%s", v)
	}

	dir := t.TempDir()
	d.m.opt.ExportDir = filepath.Join(dir, "tui")
	d.keys("x")
	if !strings.Contains(d.m.notice, "exported") {
		t.Fatalf("export: %q", d.m.notice)
	}
	tuiCSV := readOnly(t, filepath.Join(dir, "tui"))
	bs := h.NewSession()
	host.MarkMCPBridge(bs)
	ctx := context.Background()
	res, err := h.Dispatch(ctx, bs, "export_graphs", json.RawMessage(`{"wait_ms":10000,"output_directory":`+strconvQuote(filepath.Join(dir, "mcp"))+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Source != "log" {
		t.Fatalf("export_graphs in Log view: source %q", res.Source)
	}
	if mcpCSV := readOnly(t, filepath.Join(dir, "mcp")); mcpCSV != tuiCSV {
		t.Fatalf("TUI and MCP exports of the Log view differ:\n%s\n---\n%s", tuiCSV, mcpCSV)
	}
	lines := strings.Split(strings.TrimSpace(tuiCSV), "\n")
	if lines[0] != "timestamp,system:system_cpu_percent,system:memory_used_bytes,worker[101]:cpu_percent" {
		t.Fatalf("header %q", lines[0])
	}
	// the reference: what get_history reads from the same recording
	hist, err := call(ctx, b, "get_history", map[string]any{"source": "log", "log_ref": d.m.log.Ref, "target": map[string]any{"process_ref": worker.Ref},
		"metric_ids": []string{"cpu_percent"}, "mode": "raw"})
	if err != nil {
		t.Fatal(err)
	}
	sys, err := call(ctx, b, "get_history", map[string]any{"source": "log", "log_ref": d.m.log.Ref,
		"metric_ids": []string{"system_cpu_percent", "memory_used_bytes"}, "mode": "raw"})
	if err != nil {
		t.Fatal(err)
	}
	type rows struct {
		Rows []struct {
			At     string         `json:"at"`
			Values map[string]any `json:"values"`
		} `json:"rows"`
	}
	var hw, hs rows
	decode(hist, &hw)
	decode(sys, &hs)
	if len(hw.Rows) != 4 || len(hs.Rows) != 4 || len(lines) != 5 {
		t.Fatalf("recorded rows: worker %d, system %d, csv %d (want 4 each)", len(hw.Rows), len(hs.Rows), len(lines)-1)
	}
	for i := range hw.Rows {
		cells := strings.Split(lines[i+1], ",")
		at, _ := time.Parse(time.RFC3339Nano, hw.Rows[i].At)
		want := []string{at.UTC().Format("2006-01-02T15:04:05.000Z07:00"), fmt.Sprint(hs.Rows[i].Values["system_cpu_percent"]),
			fmt.Sprint(hs.Rows[i].Values["memory_used_bytes"]), fmt.Sprint(hw.Rows[i].Values["cpu_percent"])}
		if strings.Join(cells, ",") != strings.Join(want, ",") {
			t.Fatalf("row %d: csv %v, recorded %v", i, cells, want)
		}
	}

	// agents see the displayed recording, and its references
	g, err := h.Dispatch(ctx, bs, "get_graphs", json.RawMessage(`{"process_name":"work"}`))
	if err != nil {
		t.Fatal(err)
	}
	var gd struct {
		Source string `json:"source"`
		Log    struct {
			Name string `json:"name"`
		} `json:"log"`
		Graphs    []any `json:"graphs"`
		Processes []struct {
			Ref       string `json:"process_ref"`
			Lifecycle string `json:"lifecycle"`
		} `json:"processes"`
	}
	decode(g, &gd)
	if g.Source != "log" || gd.Source != "log" || gd.Log.Name != d.m.log.Name || len(gd.Graphs) != 3 ||
		len(gd.Processes) != 1 || gd.Processes[0].Ref != worker.Ref || gd.Processes[0].Lifecycle != "unknown" {
		t.Fatalf("get_graphs in Log view: %+v (source %s)", gd, g.Source)
	}
	// a live reference does not graph the recording
	live := h.Ref(h.Sampler().Latest().Procs[0].ID())
	if _, err := h.Dispatch(ctx, bs, "add_graphs", json.RawMessage(`{"metrics":[{"metric_id":"rss_bytes","process_ref":"`+live+`"}]}`)); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("live ref in Log view: %v", err)
	}
	// an agent adds a recorded process's metric with a discovered reference
	if _, err := h.Dispatch(ctx, bs, "add_graphs", json.RawMessage(`{"metrics":[{"metric_id":"rss_bytes","process_ref":"`+worker.Ref+`"}]}`)); err != nil {
		t.Fatal(err)
	}

	// the loaded log is renewed (it expires 5 minutes after loading): the
	// log graphs stay
	if _, err := call(ctx, b, "close_log", map[string]any{"log_ref": d.m.log.Ref}); err != nil {
		t.Fatal(err)
	}
	_, next := d.m.Update(d.m.fetch()())
	d.run(next)
	d.keys("esc", "g")
	if d.m.ws == nil || d.m.ws.Source != "log" || len(d.m.ws.Graphs) != 4 {
		t.Fatalf("log graphs after the log was loaded again: %+v", d.m.ws)
	}

	// back to Live: the Live graphs (system CPU and memory) come back, the
	// log's are gone, and the recorded reference no longer graphs anything
	d.keys("esc", "L", "g")
	if d.m.log != nil || d.m.ws == nil || d.m.ws.Source != "live" || len(d.m.ws.Graphs) != 2 || d.m.ws.Graphs[0].ID != "g1" {
		t.Fatalf("Live graphs after Log view: %+v", d.m.ws)
	}
	if _, err := h.Dispatch(ctx, bs, "add_graphs", json.RawMessage(`{"metrics":[{"metric_id":"rss_bytes","process_ref":"`+worker.Ref+`"}]}`)); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("log ref in Live: %v", err)
	}
}

// The saved-recordings list holds every recording of the directory, not
// list_logs' first page: 600 copies of a recording fill more than one page.
func TestLogListEveryPage(t *testing.T) {
	h, b := fixtureAt(t, 3, time.Now().Add(time.Hour))
	d := newDriver(t, b)
	d.keys("/", "w", "o", "r", "k", "e", "r", "enter", "*", "esc", "R")
	for i := 0; i < 2; i++ {
		h.Sampler().Step()
	}
	d.refresh()
	d.keys("R", "y")
	dir := filepath.Join(os.Getenv("XDG_DATA_HOME"), "inquest", "recordings")
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("recordings %v %v", ents, err)
	}
	src, err := os.ReadFile(filepath.Join(dir, ents[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	const copies = 600
	for i := 0; i < copies; i++ {
		name := strings.Replace(ents[0].Name(), ".log", fmt.Sprintf("-c%03d.log", i), 1)
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// list_logs' first page alone holds fewer
	p, err := runCaptureJob(context.Background(), b, "list_logs", map[string]any{}, 500)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) >= copies+1 || p.Next == nil {
		t.Fatalf("the first list_logs page holds %d rows of %d: the test does not reach paging", len(p.Rows), copies+1)
	}
	d.keys("L")
	if d.m.logsErr != "" || len(d.m.logs) != copies+1 {
		t.Fatalf("%d recordings listed (%s), want %d", len(d.m.logs), d.m.logsErr, copies+1)
	}
	seen := map[string]bool{}
	for _, e := range d.m.logs {
		seen[e.Name] = true
	}
	if len(seen) != copies+1 {
		t.Fatalf("%d distinct names of %d", len(seen), len(d.m.logs))
	}
	// the list scrolls to the selection: End shows the last recording
	d.keys("end")
	v := d.m.View()
	checkShape(t, v, 120, 40)
	if !strings.Contains(v, "> "+d.m.logs[copies].Name) || !strings.Contains(v, fmt.Sprintf("recordings %d–%d of %d", copies+1-d.m.logsShown()+1, copies+1, copies+1)) {
		t.Fatalf("after End:\n%s", v)
	}
	d.keys("pgup", "home")
	if v := d.m.View(); !strings.Contains(v, "> "+d.m.logs[0].Name) {
		t.Fatalf("after Home:\n%s", v)
	}
}
