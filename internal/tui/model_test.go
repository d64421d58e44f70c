package tui

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/sample"
	tea "github.com/inquest-dev/inquest/third_party/bubbletea"
)

var update = flag.Bool("update", false, "rewrite testdata golden views")

func TestMain(m *testing.M) {
	time.Local = time.UTC // golden headers show the sample time
	os.Exit(m.Run())
}

// scripted replays fixed snapshots through the real host, so views are
// reproducible: the host's list_processes, get_metrics, get_history and
// ledger answer the TUI exactly as they answer agents.
type scripted struct {
	mu    sync.Mutex
	t0    time.Time
	steps [][]sample.Process
	n     int
}

func (c *scripted) Platform() sample.Platform {
	return sample.Platform{OS: "test", Collector: "scripted"}
}

func (c *scripted) Collect(prev *sample.Snapshot) (*sample.Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := min(c.n, len(c.steps)-1)
	snap := &sample.Snapshot{Time: c.t0.Add(time.Duration(c.n) * time.Second), BootID: "boot"}
	if prev != nil {
		snap.Seq = prev.Seq + 1
	}
	snap.Procs = append([]sample.Process(nil), c.steps[i]...)
	for j := range snap.Procs {
		p := &snap.Procs[j]
		p.Comm = p.Name
		p.UIDKnown = true
		p.StartTime = c.t0.Add(-time.Hour).Add(time.Duration(p.StartTicks) * 10 * time.Millisecond)
		// values grow by step so sparklines and IO rates move
		p.Set(sample.PCPUPercent, sample.F(float64(p.Vals[sample.PCPUPercent]+uint64(c.n))))
		p.Set(sample.PRSS, p.Vals[sample.PRSS]+uint64(c.n)<<20)
		p.Set(sample.PReadBytes, uint64(c.n)*uint64(p.PID)*1024)
		p.Set(sample.PWriteBytes, 0)
		// CPU time: pid seconds plus 1.5 s per step (TIME+)
		p.Set(sample.PCPUTime, uint64(p.PID)*uint64(time.Second)+uint64(c.n)*1500*uint64(time.Millisecond))
	}
	snap.System.Set(sample.SCPUPercent, sample.F(42))
	snap.System.Set(sample.SMemTotal, 8<<30)
	snap.System.Set(sample.SMemUsed, 3<<30)
	snap.System.Set(sample.SSwapTotal, 2<<30)
	snap.System.Set(sample.SSwapUsed, 0)
	snap.System.CoreCPUPercent = []float64{40, 44}
	c.n++
	return snap, nil
}

func proc(pid, ppid int32, ticks uint64, name string, cpu, rssMiB, threads uint64, state byte) sample.Process {
	p := sample.Process{PID: pid, PPID: ppid, StartTicks: ticks, Name: name, State: state}
	p.Vals[sample.PCPUPercent] = cpu
	p.Vals[sample.PRSS] = rssMiB << 20
	p.Set(sample.PThreads, threads)
	return p
}

// fixture is a host over a scripted collector, after steps samples, and
// a TUI backend session on it. "gone" (pid 300) ends after the second
// sample and stays as a ghost.
func fixture(t testing.TB, steps int) (*host.Host, Backend) {
	t.Helper()
	return fixtureAt(t, steps, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
}

// fixtureAt is fixture with the first sample at t0 (a recording keeps
// only samples taken after it started, so recording tests sample "now").
func fixtureAt(t testing.TB, steps int, t0 time.Time) (*host.Host, Backend) {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // recordings
	base := []sample.Process{
		proc(1, 0, 1, "init", 0, 12, 1, 'S'),
		proc(100, 1, 50, "bash", 1, 5, 1, 'S'),
		proc(101, 100, 60, "worker", 55, 300, 8, 'R'),
		proc(102, 1, 70, "postgres", 12, 900, 24, 'S'),
		proc(103, 102, 80, "postgres: wal", 3, 40, 2, 'D'),
	}
	withGone := append(append([]sample.Process(nil), base...), proc(300, 1, 90, "gone", 7, 20, 1, 'S'))
	c := &scripted{t0: t0, steps: [][]sample.Process{withGone, withGone, base}}
	h, err := host.New(host.Options{Version: "test", Collector: c, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	s := h.NewSession()
	host.MarkLocalFace(s) // as the TUI host's own session
	b := BackendFunc(func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		return h.Dispatch(ctx, s, method, args)
	})
	for i := 0; i < steps; i++ {
		if _, err := h.Sampler().Step(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// "gone" is tracked, so its ended lifetime stays retained
			// (untracked ended lifetimes age out by wall-clock time).
			res, err := call(context.Background(), b, "get_tracking", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			var tr struct {
				Revision string `json:"revision"`
			}
			decode(res, &tr)
			if _, err := call(context.Background(), b, "update_tracking", map[string]any{"operation_id": "fixture",
				"expected_revision": tr.Revision, "action": "add", "process_name": "gone"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h, b
}

// drive feeds the model a frame fetched now (as the tick would) and runs
// the commands a key returns synchronously, so a view is deterministic.
type driver struct {
	t testing.TB
	m *Model
}

func newDriver(t testing.TB, b Backend) *driver {
	saved := Settings{RecordingDirectory: "/home/u/.local/share/inquest/recordings (default)"}
	m := New(Options{Backend: b, NoColor: true,
		LoadSettings:   func() (Settings, error) { return saved, nil },
		SetMCPDisabled: func(v bool) error { saved.MCPConnectionsDisabled = v; return nil }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	d := &driver{t, m}
	d.refresh()
	return d
}

func (d *driver) refresh() {
	d.t.Helper()
	f, err := Fetch(context.Background(), d.m.opt.Backend, d.m.frame, d.m.log)
	if err != nil {
		d.t.Fatal(err)
	}
	d.m.Update(frameMsg{f: f, src: d.m.log})
}

// run executes cmd and feeds its message back, except ticks and batches.
func (d *driver) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	switch msg := msg.(type) {
	case nil, tickMsg, tea.QuitMsg:
		return
	case tea.BatchMsg:
		for _, c := range msg {
			d.run(c)
		}
		return
	}
	_, next := d.m.Update(msg)
	switch msg.(type) {
	case confirmedMsg, frameMsg: // their follow-ups are the next refresh or tick
	default:
		d.run(next)
	}
}

func (d *driver) keys(ks ...string) {
	for _, k := range ks {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		case "up":
			msg = tea.KeyMsg{Type: tea.KeyUp}
		case "left":
			msg = tea.KeyMsg{Type: tea.KeyLeft}
		case "right":
			msg = tea.KeyMsg{Type: tea.KeyRight}
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		case "pgup":
			msg = tea.KeyMsg{Type: tea.KeyPgUp}
		case "pgdown":
			msg = tea.KeyMsg{Type: tea.KeyPgDown}
		case "home":
			msg = tea.KeyMsg{Type: tea.KeyHome}
		case "end":
			msg = tea.KeyMsg{Type: tea.KeyEnd}
		case "backspace":
			msg = tea.KeyMsg{Type: tea.KeyBackspace}
		case " ":
			msg = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
		case "f1", "f3", "f4", "f5", "f6", "f9", "f10":
			msg = tea.KeyMsg{Type: map[string]tea.KeyType{"f1": tea.KeyF1, "f3": tea.KeyF3, "f4": tea.KeyF4,
				"f5": tea.KeyF5, "f6": tea.KeyF6, "f9": tea.KeyF9, "f10": tea.KeyF10}[k]}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		_, cmd := d.m.Update(msg)
		d.run(cmd)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("view %s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// checkShape: every view is exactly height lines of at most width cells.
func checkShape(t *testing.T, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Fatalf("view has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > w {
			t.Fatalf("line %d is %d cells wide (> %d): %q", i, n, w, l)
		}
	}
}

func TestGoldenViews(t *testing.T) {
	cases := []struct {
		name string
		keys []string
	}{
		{"table_cpu", nil},
		{"sort_mem", []string{"M"}},
		{"sort_name_reversed", []string{"N", "N"}},
		{"sort_pid", []string{"#"}},
		{"sort_threads", []string{"H"}},
		{"sort_io", []string{"I"}},
		{"filter_post", []string{"/", "p", "o", "s", "t", "enter"}},
		{"tree", []string{"t", "#"}},
		{"tree_filter_wal", []string{"t", "/", "w", "a", "l", "enter"}},
		{"detail", []string{"#", "down", "down", "enter"}},
		{"help", []string{"?"}},
		{"settings", []string{"S"}},
		{"agents", []string{"a"}},
		{"search", []string{"f3", "p", "o", "s", "t", "g", "r", "e", "s", ":"}},
		{"sort_menu_f6", []string{"f6", "down"}},
		{"cpu_all_cores", []string{"S", "c", "esc"}},
		{"read_only_note", []string{"f9"}},
		{"sort_time", []string{"T"}},
	}
	// each at 120x40 (golden NAME) and 80x24 (NAME_80x24)
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		for _, tc := range cases {
			name := tc.name
			if sz[0] != 120 {
				name = fmt.Sprintf("%s_%dx%d", name, sz[0], sz[1])
			}
			t.Run(name, func(t *testing.T) {
				h, b := fixture(t, 3)
				d := newDriver(t, b)
				d.m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
				h.Sampler().Step()
				d.refresh() // second frame one sample later: IO rates
				d.keys(tc.keys...)
				v := d.m.View()
				checkShape(t, v, sz[0], sz[1])
				golden(t, name, v)
			})
		}
	}
}

// The table shows what list_processes says: ghost rows for ended
// lifetimes, "-" for unmeasured values, never 0.
func TestTableFacts(t *testing.T) {
	h, b := fixture(t, 3)
	d := newDriver(t, b)
	d.keys("#")
	var gone *Row
	for _, v := range d.m.rows {
		if v.r.PID == 300 {
			gone = v.r
		}
	}
	if gone == nil || !gone.Ended || gone.CPUOK || gone.RSSOK {
		t.Fatalf("ended lifetime not a ghost row with unknown values: %+v", gone)
	}
	if !strings.Contains(d.m.View(), "    300 root      x      -       -       -    -         -  gone") {
		t.Fatalf("ghost row not drawn:\n%s", d.m.View())
	}
	// first frame: no IO rate yet (needs two frames), shown as "-"
	for _, v := range d.m.rows {
		if v.r.IORateOK {
			t.Fatalf("IO rate from a single frame: %+v", v.r)
		}
	}
	d.refresh() // same snapshot again: no interval, still no rate
	for _, v := range d.m.rows {
		if v.r.IORateOK {
			t.Fatalf("IO rate without a newer sample: %+v", v.r)
		}
	}
	h.Sampler().Step() // one second later, read_bytes grew by pid*1024
	d.refresh()
	for _, v := range d.m.rows {
		if !v.r.Ended && (!v.r.IORateOK || v.r.IORate != float64(v.r.PID)*1024) {
			t.Fatalf("IO rate %v, want %d B/s: %+v", v.r.IORate, v.r.PID*1024, v.r)
		}
	}
}

// An MCP bridge session's calls appear in the activity panel with tool
// name, state and outcome code, and the badge shows while it is open.
func TestAgentActivityAndBadge(t *testing.T) {
	h, b := fixture(t, 3)
	d := newDriver(t, b)
	if strings.Contains(strings.Split(d.m.View(), "\n")[0], "MCP") {
		t.Fatal("badge without a bridge")
	}
	bs := h.NewSession()
	host.MarkMCPBridge(bs)
	ctx := context.Background()
	if _, err := h.Dispatch(ctx, bs, "list_processes", json.RawMessage(`{"limit":1}`)); err != nil {
		t.Fatal(err)
	}
	_, err := h.Dispatch(ctx, bs, "get_history", json.RawMessage(`{"metric_ids":["no_such_metric"]}`))
	code := contract.CodeOf(err)
	if code == "" {
		t.Fatal("bad get_history succeeded")
	}
	d.refresh()
	d.keys("a")
	v := d.m.View()
	if !strings.Contains(strings.Split(v, "\n")[0], "MCP") {
		t.Fatalf("no MCP badge with a bridge session:\n%s", v)
	}
	if !strings.Contains(v, "list_processes") || !strings.Contains(v, "get_history") || !strings.Contains(v, string(code)) {
		t.Fatalf("agent calls missing from the panel:\n%s", v)
	}
	if strings.Contains(v, "no_such_metric") || strings.Contains(v, `"limit"`) {
		t.Fatalf("arguments leaked into the panel:\n%s", v)
	}
	bs.Close()
	d.refresh()
	if strings.Contains(strings.Split(d.m.View(), "\n")[0], "MCP") {
		t.Fatal("badge stays after the bridge closed")
	}
}

// A pending confirmation (profile delete by an MCP client) appears as an
// overlay; y confirms it through the same ledger as `inquest confirm`.
func TestConfirmOverlay(t *testing.T) {
	h, b := fixture(t, 3)
	bs := h.NewSession()
	host.MarkMCPBridge(bs)
	ctx := context.Background()
	callJSON := func(method string, args any) map[string]any {
		t.Helper()
		raw, _ := json.Marshal(args)
		res, err := h.Dispatch(ctx, bs, method, raw)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var m map[string]any
		bb, _ := json.Marshal(res.Data)
		json.Unmarshal(bb, &m)
		return m
	}
	tr := callJSON("get_tracking", map[string]any{})
	rev := fmt.Sprint(tr["revision"])
	callJSON("update_profile", map[string]any{"operation_id": "p1", "expected_revision": rev, "action": "save_as", "name": "web"})
	lp := callJSON("list_profiles", map[string]any{})
	prof := lp["profiles"].([]any)[0].(map[string]any)
	rev = fmt.Sprint(lp["revision"])
	out := callJSON("update_profile", map[string]any{"operation_id": "p2", "expected_revision": rev, "action": "delete",
		"profile_id": prof["profile_id"], "profile_revision": fmt.Sprint(prof["revision"]), "wait_ms": 0})
	if out["state"] != "pending_confirmation" {
		t.Fatalf("delete not pending: %v", out)
	}
	d := newDriver(t, b)
	v := d.m.View()
	if !strings.Contains(v, "Confirm update_profile") || !strings.Contains(v, "operation p2") {
		t.Fatalf("no overlay:\n%s", v)
	}
	v = regexp.MustCompile(`expires \S+ *`).ReplaceAllString(v, "expires TIME")
	golden(t, "confirm_overlay", regexp.MustCompile(`prof_[0-9a-f]+`).ReplaceAllString(v, "prof_ID"))
	d.keys("y")
	if !strings.Contains(d.m.notice, "p2: succeeded") {
		t.Fatalf("confirm notice %q", d.m.notice)
	}
	d.refresh()
	if strings.Contains(d.m.View(), "Confirm update_profile") {
		t.Fatal("overlay stays after the decision")
	}
	if ps := callJSON("list_profiles", map[string]any{})["profiles"].([]any); len(ps) != 0 {
		t.Fatalf("profile not deleted: %v", ps)
	}
}

// The view keeps its shape from 80x24 down to tiny terminals.
func TestSmallTerminals(t *testing.T) {
	_, b := fixture(t, 3)
	for _, sz := range [][2]int{{80, 24}, {60, 15}, {40, 10}, {20, 5}} {
		d := newDriver(t, b)
		d.m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		for _, ks := range [][]string{nil, {"enter"}, {"a"}, {"?"}} {
			d.keys(ks...)
			checkShape(t, d.m.View(), sz[0], sz[1])
			d.keys("esc")
			if d.m.mode != modeTable {
				d.keys("q")
			}
		}
	}
	d := newDriver(t, b)
	d.m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	golden(t, "table_80x24", d.m.View())
}

// The graph workspace: + graphs the selected process, s adds system
// graphs, A/B markers show values and delta, x exports; the CSV the TUI
// writes equals export_graphs' from an MCP bridge session byte for byte,
// and every cell equals get_history's raw value.
func TestGraphsMarkersAndExport(t *testing.T) {
	h, b := fixture(t, 3)
	for i := 0; i < 3; i++ {
		h.Sampler().Step()
	}
	dir := t.TempDir()
	d := newDriver(t, b)
	d.m.opt.ExportDir = filepath.Join(dir, "tui")
	d.keys("/", "w", "o", "r", "k", "e", "r", "enter") // select pid 101
	d.keys("+")                                        // sort CPU: cpu_percent
	d.keys("M", "+")                                   // sort memory: rss_bytes
	d.keys("g", "s")
	d.refresh()
	d.keys("left", "left", "left", "A", "right", "right", "B")
	v := d.m.View()
	checkShape(t, v, 120, 40)
	golden(t, "graphs_ab", v)
	if !strings.Contains(v, "A 57.0%") || !strings.Contains(v, "B 59.0%") || !strings.Contains(v, "Δ 2.0%") {
		t.Fatalf("marker values/delta missing:\n%s", v)
	}
	d.keys("x")
	if !strings.Contains(d.m.notice, "exported 6 rows") {
		t.Fatalf("notice %q", d.m.notice)
	}
	tuiCSV := readOnly(t, filepath.Join(dir, "tui"))
	// the same workspace exported by an agent
	bs := h.NewSession()
	host.MarkMCPBridge(bs)
	res, err := h.Dispatch(context.Background(), bs, "export_graphs", json.RawMessage(`{"wait_ms":10000,"output_directory":`+strconvQuote(filepath.Join(dir, "mcp"))+`,"filename":"a.csv"}`))
	if err != nil {
		t.Fatal(err)
	}
	mcpCSV := readOnly(t, filepath.Join(dir, "mcp"))
	if tuiCSV != mcpCSV {
		t.Fatalf("TUI and MCP exports differ:\n%s\n---\n%s", tuiCSV, mcpCSV)
	}
	var out struct {
		State   string `json:"state"`
		Outcome struct {
			Rows int `json:"rows"`
		} `json:"outcome"`
	}
	decode(res, &out)
	if out.State != "succeeded" || out.Outcome.Rows != 6 {
		t.Fatalf("export: %+v", out)
	}
	// cells against get_history raw (the reference: what agents read)
	lines := strings.Split(strings.TrimSpace(tuiCSV), "\n")
	if lines[0] != "timestamp,worker[101]:cpu_percent,worker[101]:rss_bytes,system:system_cpu_percent,system:memory_used_bytes" {
		t.Fatalf("header %q", lines[0])
	}
	hist, err := call(context.Background(), b, "get_history", map[string]any{"target": map[string]any{"process_ref": d.m.rows[d.m.sel].r.Ref},
		"metric_ids": []string{"cpu_percent", "rss_bytes"}, "mode": "raw"})
	if err != nil {
		t.Fatal(err)
	}
	var hr struct {
		Rows []struct {
			At     string         `json:"at"`
			Values map[string]any `json:"values"`
		} `json:"rows"`
	}
	decode(hist, &hr)
	if len(hr.Rows) != len(lines)-1 {
		t.Fatalf("history rows %d, csv rows %d", len(hr.Rows), len(lines)-1)
	}
	for i, r := range hr.Rows {
		cells := strings.Split(lines[i+1], ",")
		at, _ := time.Parse(time.RFC3339Nano, r.At)
		if cells[0] != at.UTC().Format("2006-01-02T15:04:05.000Z07:00") {
			t.Fatalf("row %d time %s vs %s", i, cells[0], r.At)
		}
		if fmt.Sprint(r.Values["cpu_percent"]) != cells[1] || fmt.Sprint(r.Values["rss_bytes"]) != cells[2] {
			t.Fatalf("row %d: csv %v, history %v", i, cells, r.Values)
		}
	}
	// the export writer never overwrites
	_, err = h.Dispatch(context.Background(), bs, "export_graphs", json.RawMessage(`{"output_directory":`+strconvQuote(filepath.Join(dir, "mcp"))+`,"filename":"a.csv"}`))
	if contract.CodeOf(err) != contract.CodeExportFailed {
		t.Fatalf("overwrite: %v", err)
	}
	// a relative export directory is the TUI's, resolved on the TUI's side
	// (the host refuses relative paths: its working directory is not ours)
	t.Chdir(dir)
	d.m.opt.ExportDir = "rel/out"
	d.keys("x")
	if !strings.Contains(d.m.notice, "exported") || !strings.Contains(d.m.notice, filepath.Join(dir, "rel", "out")) {
		t.Fatalf("relative export: notice %q", d.m.notice)
	}
	if readOnly(t, filepath.Join(dir, "rel", "out")) == "" {
		t.Fatal("empty export")
	}
	// MCP sessions cannot change the TUI's display state
	if _, err := h.Dispatch(context.Background(), bs, "update_graph_workspace", json.RawMessage(`{"action":"pause"}`)); contract.CodeOf(err) != contract.CodePermissionDenied {
		t.Fatalf("bridge paused the display: %v", err)
	}
}

func readOnly(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil || len(es) != 1 {
		t.Fatalf("%s: %v %v", dir, es, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, es[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// Recording from the TUI (R starts, R then y stops), then Log view over
// the saved file: the same table shows the recorded processes, live
// inspection is ACTIVITY_CONFLICT for an agent while saved-log reads
// keep working, and leaving restores Live.
func TestRecordingAndLogView(t *testing.T) {
	h, b := fixtureAt(t, 3, time.Now().Add(time.Hour)) // every sample after the start, however slow the machine
	d := newDriver(t, b)
	d.keys("/", "w", "o", "r", "k", "e", "r", "enter", "*")
	if !strings.Contains(d.m.notice, "now tracking worker") {
		t.Fatalf("track: %q", d.m.notice)
	}
	d.keys("esc")
	d.keys("R")
	// The notice names the file get_recording names.
	rec, err := call(context.Background(), b, "get_recording", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var active recState
	decode(rec, &active)
	if !regexp.MustCompile(`^inquest-\d{8}T\d{6}Z-[0-9a-f]{12}\.log$`).MatchString(active.Name) ||
		d.m.notice != "recording to "+active.Name+" (R stops)" {
		t.Fatalf("start: %q, get_recording names %q", d.m.notice, active.Name)
	}
	for i := 0; i < 3; i++ {
		h.Sampler().Step()
	}
	d.refresh()
	if !strings.Contains(strings.Split(d.m.View(), "\n")[0], "REC LIVE") {
		t.Fatalf("no REC in header:\n%s", d.m.View())
	}
	d.keys("R")
	if !strings.Contains(d.m.View(), "Stop the recording?") {
		t.Fatalf("stop does not ask:\n%s", d.m.View())
	}
	d.keys("n")
	d.refresh()
	if !d.m.frame.Recording.Active {
		t.Fatal("n stopped the recording")
	}
	d.keys("R", "y")
	if !regexp.MustCompile(`^recording stopped: ` + regexp.QuoteMeta(active.Name) + ` \([1-9]\d* frames\)$`).MatchString(d.m.notice) {
		t.Fatalf("stop: %q (recording %s)", d.m.notice, active.Name)
	}
	d.refresh()
	if d.m.frame.Recording.Active {
		t.Fatal("recording still active")
	}
	d.keys("L")
	if len(d.m.logs) != 1 {
		t.Fatalf("logs %v %s", d.m.logs, d.m.logsErr)
	}
	d.keys("enter")
	if d.m.log == nil {
		t.Fatalf("not in Log view: %q", d.m.notice)
	}
	d.refresh()
	v := d.m.View()
	if !strings.Contains(strings.Split(v, "\n")[0], "LOG "+d.m.log.Name) || !strings.Contains(v, "worker") {
		t.Fatalf("Log view:\n%s", v)
	}
	// A recording keeps neither per-core values nor process states: both
	// show as unknown, never "Cores 0" or "?".
	if !strings.Contains(v, "Cores -") || strings.Contains(v, "Cores 0") {
		t.Fatalf("Log view cores:\n%s", v)
	}
	for _, line := range strings.Split(v, "\n") {
		if strings.Contains(line, "worker") && !regexp.MustCompile(`^..\s*\d+ \S+\s+- `).MatchString(line) {
			t.Fatalf("Log view state of a recorded row: %q", line)
		}
	}
	// The table's values of a recorded row are those of the final frame,
	// as get_metrics with the log_ref reads them.
	var worker *Row
	for i := range d.m.frame.Rows {
		if d.m.frame.Rows[i].Name == "worker" {
			worker = &d.m.frame.Rows[i]
		}
	}
	if worker == nil || !worker.CPUOK || !worker.RSSOK || !worker.ThreadsOK {
		t.Fatalf("Log view row without recorded values: %+v", worker)
	}
	res, err := call(context.Background(), b, "get_metrics", map[string]any{"source": "log", "log_ref": d.m.log.Ref,
		"metric_ids": []string{"cpu_percent", "rss_bytes", "threads"}, "targets": []any{map[string]any{"process_ref": worker.Ref}}})
	if err != nil {
		t.Fatal(err)
	}
	var gm struct {
		Samples []struct {
			Values map[string]any `json:"values"`
		} `json:"samples"`
	}
	if decode(res, &gm); len(gm.Samples) != 1 {
		t.Fatalf("get_metrics log: %+v", res.Data)
	}
	gv := gm.Samples[0].Values
	if cpu, _ := number(gv["cpu_percent"]); cpu != worker.CPU {
		t.Fatalf("cpu_percent: table %v, get_metrics %v", worker.CPU, gv["cpu_percent"])
	}
	if rss, _ := intString(gv["rss_bytes"]); rss != worker.RSS {
		t.Fatalf("rss_bytes: table %v, get_metrics %v", worker.RSS, gv["rss_bytes"])
	}
	if thr, _ := intString(gv["threads"]); thr != worker.Threads {
		t.Fatalf("threads: table %v, get_metrics %v", worker.Threads, gv["threads"])
	}
	// The loaded log goes away under the view (it expires 5 minutes after
	// loading; closing it is the same to the view): the next refresh loads
	// it again and the Log view goes on.
	oldRef := d.m.log.Ref
	if _, err := call(context.Background(), b, "close_log", map[string]any{"log_ref": oldRef}); err != nil {
		t.Fatal(err)
	}
	_, next := d.m.Update(d.m.fetch()())
	d.run(next)
	if d.m.log == nil || d.m.log.Ref == oldRef || d.m.err != nil || d.m.frame == nil || len(d.m.frame.Rows) == 0 {
		t.Fatalf("Log view after its log_ref expired: log %+v err %v", d.m.log, d.m.err)
	}
	if v := d.m.View(); !strings.Contains(strings.Split(v, "\n")[0], "LOG "+d.m.log.Name) || !strings.Contains(v, "worker") {
		t.Fatalf("Log view after renewal:\n%s", v)
	}
	bs := h.NewSession()
	host.MarkMCPBridge(bs)
	ctx := context.Background()
	for _, c := range []struct{ method, args string }{
		{"list_processes", `{}`},
		{"get_metrics", `{"metric_ids":["system_cpu_percent"]}`},
		{"get_history", `{"metric_ids":["system_cpu_percent"]}`},
	} {
		if _, err := h.Dispatch(ctx, bs, c.method, json.RawMessage(c.args)); contract.CodeOf(err) != contract.CodeActivityConflict {
			t.Fatalf("%s in Log view: %v", c.method, err)
		}
	}
	if _, err := h.Dispatch(ctx, bs, "get_status", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	// the TUI's own Log view reads (log_ref) keep working
	d.keys("#", "enter")
	if d.m.hist == nil || d.m.hist.err != "" || len(d.m.hist.series["cpu_percent"]) == 0 {
		t.Fatalf("log history: %+v", d.m.hist)
	}
	d.keys("esc", "L")
	if d.m.log != nil {
		t.Fatal("still in Log view")
	}
	if _, err := h.Dispatch(ctx, bs, "list_processes", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("live after Log view: %v", err)
	}
	// q in Log view returns the host to Live before the program ends,
	// even while the view's session stays open.
	d.keys("L", "enter")
	if d.m.log == nil {
		t.Fatalf("not in Log view again: %q", d.m.notice)
	}
	if _, err := h.Dispatch(ctx, bs, "list_processes", json.RawMessage(`{}`)); contract.CodeOf(err) != contract.CodeActivityConflict {
		t.Fatalf("list_processes in Log view: %v", err)
	}
	_, cmd := d.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'q'}})
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q in Log view does not quit")
	}
	if _, err := h.Dispatch(ctx, bs, "list_processes", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("live after quitting in Log view: %v", err)
	}
}

// The graph tools' rules, as an agent meets them through the host.
func TestGraphToolRules(t *testing.T) {
	h, b := fixture(t, 3)
	bs := h.NewSession()
	host.MarkMCPBridge(bs)
	ctx := context.Background()
	do := func(method, args string) (map[string]any, error) {
		if method != "get_graphs" {
			// as the bridge's default delivery: wait for the outcome
			args = strings.Replace(args, "{", `{"wait_ms":10000,`, 1)
		}
		res, err := h.Dispatch(ctx, bs, method, json.RawMessage(args))
		if err != nil {
			return nil, err
		}
		var m map[string]any
		bb, _ := json.Marshal(res.Data)
		json.Unmarshal(bb, &m)
		if o, ok := m["outcome"].(map[string]any); ok {
			return o, nil
		}
		return m, nil
	}
	g, err := do("get_graphs", `{"process_name":"POST","target_limit":1}`)
	if err != nil {
		t.Fatal(err)
	}
	procs := g["processes"].([]any)
	if len(procs) != 1 || g["processes_total"].(float64) != 2 || g["processes_truncated"] != true {
		t.Fatalf("targets: %v total %v", procs, g["processes_total"])
	}
	ref := procs[0].(map[string]any)["process_ref"].(string)
	rev := g["revision"].(string)
	// an export that fails before acceptance adds no graph and leaves no file
	existsDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(existsDir, "same.csv"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	for _, c := range []struct {
		name, method, args string
		code               contract.Code
	}{
		{"existing file", "export_graphs", `{"output_directory":"` + existsDir + `","filename":"same.csv","metrics":[{"metric_id":"uptime_seconds"}]}`, contract.CodeExportFailed},
		{"relative directory", "export_graphs", `{"output_directory":"relative/dir","metrics":[{"metric_id":"uptime_seconds"}]}`, contract.CodeInvalidArgument},
		{"unknown metric", "add_graphs", `{"metrics":[{"metric_id":"nope"}]}`, contract.CodeInvalidArgument},
		{"process metric without ref", "add_graphs", `{"metrics":[{"metric_id":"rss_bytes"}]}`, contract.CodeInvalidArgument},
		{"system metric with ref", "add_graphs", `{"metrics":[{"metric_id":"load1","process_ref":"` + ref + `"}]}`, contract.CodeInvalidArgument},
		{"foreign ref", "add_graphs", `{"metrics":[{"metric_id":"rss_bytes","process_ref":"pr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}`, contract.CodeReferenceInvalid},
		{"stale revision", "add_graphs", `{"metrics":[{"metric_id":"load1"}],"expected_revision":"x-g99"}`, contract.CodeStateConflict},
		{"ab without markers", "export_graphs", `{"output_directory":"` + t.TempDir() + `","metrics":[{"metric_id":"load1"}],"range":"ab"}`, contract.CodeStateConflict},
		{"empty workspace", "export_graphs", `{"output_directory":"` + t.TempDir() + `"}`, contract.CodeInvalidArgument},
		{"bad filename", "export_graphs", `{"output_directory":"` + t.TempDir() + `","filename":".csv"}`, contract.CodeInvalidArgument},
	} {
		if _, err := do(c.method, c.args); contract.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	if b, err := os.ReadFile(filepath.Join(existsDir, "same.csv")); err != nil || string(b) != "keep\n" {
		t.Fatalf("the existing file changed: %q %v", b, err)
	}
	if es, _ := os.ReadDir(existsDir); len(es) != 1 {
		t.Fatalf("a failed export left files: %v", es)
	}
	if _, err := os.Lstat(filepath.Join(wd, "relative")); err == nil {
		t.Fatal("a relative output_directory was created under the working directory")
	}
	if _, err := os.Lstat("/relative"); err == nil {
		t.Fatal("a relative output_directory was created under /")
	}
	// nothing was added by the failures
	if g, _ := do("get_graphs", `{}`); len(g["graphs"].([]any)) != 0 || g["revision"] != rev {
		t.Fatalf("failed calls changed the workspace: %v", g)
	}
	// a write failure after acceptance is EXPORT_FAILED naming the path
	// and the accepted workspace, and keeps the requested additions
	if _, err := do("export_graphs", `{"output_directory":"/proc/1","metrics":[{"metric_id":"uptime_seconds"}]}`); contract.CodeOf(err) != contract.CodeExportFailed {
		t.Fatalf("unwritable directory: %v", err)
	} else if e := contract.AsError(err); !strings.HasPrefix(fmt.Sprint(e.Details["output_path"]), "/proc/1/inquest-graphs-") || e.Details["workspace"] == nil {
		t.Fatalf("unwritable directory: details %v", e.Details)
	}
	g, _ = do("get_graphs", `{}`)
	if gs := g["graphs"].([]any); len(gs) != 1 || gs[0].(map[string]any)["metric_id"] != "uptime_seconds" {
		t.Fatalf("accepted addition not kept after a write failure: %v", gs)
	}
	bsT := h.NewSession() // the TUI removes it again
	defer bsT.Close()
	if _, err := h.Dispatch(ctx, bsT, host.GraphWorkspaceMethod, json.RawMessage(`{"action":"remove","graph_id":"`+g["graphs"].([]any)[0].(map[string]any)["graph_id"].(string)+`"}`)); err != nil {
		t.Fatal(err)
	}
	g, _ = do("get_graphs", `{}`)
	rev = g["revision"].(string)
	add := `{"operation_id":"op1","expected_revision":"` + rev + `","metrics":[{"metric_id":"cpu_percent","process_ref":"` + ref + `"},{"metric_id":"load1"},{"metric_id":"load1"}]}`
	a1, err := do("add_graphs", add)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a1["added"]) != "[g2 g3]" { // g1 was the kept, then removed, addition
		t.Fatalf("added %v", a1["added"])
	}
	a2, err := do("add_graphs", add) // same id and arguments: the retained outcome
	if err != nil || fmt.Sprint(a2["added"]) != "[g2 g3]" {
		t.Fatalf("repeat: %v %v", a2, err)
	}
	if _, err := do("add_graphs", `{"operation_id":"op1","metrics":[{"metric_id":"load5"}]}`); contract.CodeOf(err) != contract.CodeStateConflict {
		t.Fatalf("reused id: %v", err)
	}
	a3, _ := do("add_graphs", `{"metrics":[{"metric_id":"load1"}]}`)
	if fmt.Sprint(a3["added"]) != "[]" || fmt.Sprint(a3["already_present"]) != "[g3]" {
		t.Fatalf("duplicate: %v", a3)
	}
	// capacity is checked before anything is added
	var many []string
	for _, id := range []string{"cpu_percent", "cpu_time_ns", "rss_bytes", "virtual_bytes", "swap_bytes", "threads", "fd_count", "minor_faults", "major_faults", "read_bytes", "write_bytes", "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"} {
		many = append(many, `{"metric_id":"`+id+`","process_ref":"REF"}`)
	}
	refs := []string{}
	g, _ = do("get_graphs", `{"include_processes":true}`)
	for _, p := range g["processes"].([]any) {
		refs = append(refs, p.(map[string]any)["process_ref"].(string))
	}
	added := 2
	for _, r := range refs[:2] {
		body := strings.ReplaceAll(strings.Join(many, ","), "REF", r)
		res, err := do("add_graphs", `{"metrics":[`+body+`]}`)
		if err != nil {
			t.Fatal(err)
		}
		added += len(res["added"].([]any))
	}
	body := strings.ReplaceAll(strings.Join(many, ","), "REF", refs[2])
	if _, err := do("add_graphs", `{"metrics":[`+body+`]}`); contract.CodeOf(err) != contract.CodeResourceLimit {
		t.Fatalf("over capacity: %v", err)
	}
	if g, _ := do("get_graphs", `{}`); len(g["graphs"].([]any)) != added {
		t.Fatalf("partial add over capacity: %d graphs, want %d", len(g["graphs"].([]any)), added)
	}
	_ = b
}

// Keys that arrive in one read ("/" and the filter text together) act as
// separate key presses.
func TestKeysInOneRead(t *testing.T) {
	_, b := fixture(t, 3)
	d := newDriver(t, b)
	d.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/wal")})
	d.m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if d.m.filter != "wal" || len(d.m.rows) != 1 || d.m.rows[0].r.PID != 103 {
		t.Fatalf("filter %q rows %d", d.m.filter, len(d.m.rows))
	}
}

// Esc and a key read together arrive as Alt+key: Esc leaves Settings,
// then the key acts on the table.
func TestEscThenKeyInOneRead(t *testing.T) {
	_, b := fixture(t, 3)
	d := newDriver(t, b)
	d.keys("S")
	if d.m.mode != modeSettings {
		t.Fatal("S did not open Settings")
	}
	d.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("M"), Alt: true})
	if d.m.mode != modeTable || d.m.sortKey != SortMem {
		t.Fatalf("after Esc+M: mode %v sort %v", d.m.mode, d.m.sortKey)
	}
}

// Settings: Space toggles "Disable MCP connections" through the saver.
func TestSettingsToggleKey(t *testing.T) {
	_, b := fixture(t, 3)
	d := newDriver(t, b)
	d.keys("S")
	if !strings.Contains(d.m.View(), "[ ] Disable MCP connections") {
		t.Fatalf("settings:\n%s", d.m.View())
	}
	d.keys(" ")
	if !strings.Contains(d.m.View(), "[x] Disable MCP connections") || !strings.Contains(d.m.View(), "MCP connections disabled") {
		t.Fatalf("after Space:\n%s", d.m.View())
	}
	if s, _ := d.m.opt.LoadSettings(); !s.MCPConnectionsDisabled {
		t.Fatal("not saved")
	}
	d.keys(" ")
	if s, _ := d.m.opt.LoadSettings(); s.MCPConnectionsDisabled {
		t.Fatal("not re-enabled")
	}
}

// flaky is a view's attachment to a host whose connection can be lost:
// while down every call fails as a lost connection or an absent host
// does; up again, calls reach the host attached now (instance).
type flaky struct {
	mu       sync.Mutex
	b        Backend
	down     bool
	lost     bool // the next failing call is the in-flight one (OUTCOME_UNKNOWN)
	pid      int
	instance string
}

func (f *flaky) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	f.mu.Lock()
	down, lost, b := f.down, f.lost, f.b
	f.lost = false
	f.mu.Unlock()
	if down && lost {
		return nil, contract.Errorf(contract.CodeOutcomeUnknown, "the connection to the host was lost before a reply arrived")
	}
	if down {
		return nil, contract.Errorf(contract.CodeBackendUnavailable, "the host is gone; this view reattaches when one starts")
	}
	return b.Call(ctx, method, args)
}

func (f *flaky) Host() (int, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return f.pid, "", false
	}
	return f.pid, f.instance, true
}

func (f *flaky) set(fn func(f *flaky)) { f.mu.Lock(); fn(f); f.mu.Unlock() }

// TestViewHostGoneAndBack: a view whose host goes away stops saying LIVE:
// the header says the host is gone with the time of the last frame, the
// meter line gives the error; the refresh keeps running, and when a host
// answers again the view is LIVE with fresh frames. A new host (another
// backend_instance_id) ends a Log view opened on the old one.
func TestViewHostGoneAndBack(t *testing.T) {
	h, b := fixtureAt(t, 3, time.Now().Add(time.Hour))
	fb := &flaky{b: b, pid: 4242, instance: "host-1"}
	m := New(Options{Backend: fb, Attached: true, HostPID: 4242, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	// fetch fires the scheduled refresh (tickMsg), runs the fetch it
	// returns and feeds its frame back, returning the follow-up command
	// (the next refresh).
	fetch := func() tea.Cmd {
		t.Helper()
		_, cmd := m.Update(tickMsg{})
		msg := cmd()
		fm, ok := msg.(frameMsg)
		if !ok {
			t.Fatalf("fetch gave %T", msg)
		}
		_, next := m.Update(fm)
		return next
	}
	headerOf := func() string { return strings.Split(m.View(), "\n")[0] }
	fetch()
	if hd := headerOf(); !strings.Contains(hd, "LIVE") || !strings.Contains(hd, "host pid 4242") {
		t.Fatalf("attached header: %q", hd)
	}
	last := m.frame.At.Local().Format("15:04:05")

	for _, lost := range []bool{true, false} {
		fb.set(func(f *flaky) { f.down, f.lost = true, lost })
		if next := fetch(); next == nil {
			t.Fatal("no refresh scheduled after a failed frame: the view would freeze")
		}
		hd := headerOf()
		if strings.Contains(hd, "LIVE") || !strings.Contains(hd, "NO HOST CONNECTION, reconnecting") || !strings.Contains(hd, "last "+last) {
			t.Fatalf("lost=%v header: %q", lost, hd)
		}
		if v := m.View(); !strings.Contains(v, "error: ") {
			t.Fatalf("no error line:\n%s", v)
		}
	}

	// the host is back (a new one, pid 4343): LIVE and current again.
	h.Sampler().Step()
	fb.set(func(f *flaky) { f.down, f.pid, f.instance = false, 4343, "host-2" })
	fetch()
	if hd := headerOf(); !strings.Contains(hd, "LIVE") || strings.Contains(hd, "NO HOST") || !strings.Contains(hd, "host pid 4343") {
		t.Fatalf("after reconnect header: %q", hd)
	}
	if m.err != nil {
		t.Fatalf("error after reconnect: %v", m.err)
	}

	// Log view on host-2, then host-3 replaces it: the view returns to Live.
	m.log = &LogSource{ID: "x", Name: "old.inqlog", Ref: "log_gone"}
	m.frame = nil
	fb.set(func(f *flaky) { f.instance = "host-3" })
	next := fetch()
	if m.log != nil || !strings.Contains(m.notice, "host restarted") {
		t.Fatalf("Log view kept on a new host: log %v notice %q", m.log, m.notice)
	}
	if next == nil {
		t.Fatal("no fetch after leaving the stale Log view")
	}
	fetch()
	if hd := headerOf(); !strings.Contains(hd, "LIVE") || m.err != nil {
		t.Fatalf("after the new host: %q %v", hd, m.err)
	}
}

// Help fits any width and scrolls: descriptions wrap beside (or below)
// the keys, Up/Down and PgUp/PgDn move through it, the footer says how to
// close it and which lines show, and every key and every word of its
// description can be reached.
func TestHelpScrollsAndWraps(t *testing.T) {
	_, b := fixture(t, 3)
	for _, sz := range [][2]int{{120, 40}, {80, 24}, {60, 15}, {40, 12}, {30, 10}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			d := newDriver(t, b)
			d.m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
			d.keys("?")
			lines := func(v string) []string { return strings.Split(v, "\n") }
			foot := func() string { l := lines(d.m.View()); return l[len(l)-1] }
			pos := regexp.MustCompile(`(\d+)–(\d+) of (\d+)$`)
			var seen strings.Builder
			for i := 0; ; i++ {
				v := d.m.View()
				checkShape(t, v, sz[0], sz[1])
				l := lines(v)
				for _, x := range l[3 : len(l)-1] {
					if strings.Contains(x, "…") {
						t.Fatalf("help line cut instead of wrapped: %q", x)
					}
					seen.WriteString(x + "\n")
				}
				f := foot()
				if !strings.HasPrefix(f, "Esc/q: close") {
					t.Fatalf("footer %q does not say how to close help", f)
				}
				m := pos.FindStringSubmatch(strings.TrimSpace(f))
				if m == nil {
					if len(helpLines(sz[0])) > d.m.helpShown() {
						t.Fatalf("help longer than the screen without a position: %q", f)
					}
					break
				}
				if i == 0 {
					d.keys("down")
					if m2 := pos.FindStringSubmatch(strings.TrimSpace(foot())); m2 == nil || m2[1] != "2" {
						t.Fatalf("Down did not scroll one line: %q", foot())
					}
					d.keys("up")
					if m2 := pos.FindStringSubmatch(strings.TrimSpace(foot())); m2 == nil || m2[1] != "1" {
						t.Fatalf("Up did not scroll back: %q", foot())
					}
				}
				if m[2] == m[3] {
					d.keys("pgdown") // at the end: stays
					if foot() != f {
						t.Fatalf("PgDn past the end: %q, was %q", foot(), f)
					}
					d.keys("home")
					if m := pos.FindStringSubmatch(strings.TrimSpace(foot())); m == nil || m[1] != "1" {
						t.Fatalf("Home: %q", foot())
					}
					d.keys("end")
					if foot() != f {
						t.Fatalf("End: %q, want %q", foot(), f)
					}
					break
				}
				d.keys("pgdown")
				if i > 100 {
					t.Fatal("PgDn does not reach the end")
				}
			}
			all := strings.Join(strings.Fields(seen.String()), " ")
			for _, e := range helpEntries {
				for _, w := range append(strings.Fields(e.key), strings.Fields(e.text)...) {
					if !strings.Contains(all, w) {
						t.Fatalf("help never shows %q (of %q)", w, e.key)
					}
				}
			}
			if sz == [2]int{60, 15} {
				golden(t, "help_60x15", d.m.View())
				d.keys("home")
				golden(t, "help_60x15_top", d.m.View())
			}
			d.keys("esc")
			if d.m.mode != modeTable {
				t.Fatal("Esc did not close help")
			}
		})
	}
}

// Esc pressed twice fast arrives as one Alt+Esc: it closes the capture
// pane, then the detail, as two presses do.
func TestEscEscInOneRead(t *testing.T) {
	_, b := fixture(t, 3)
	d := newDriver(t, b)
	d.keys("enter")
	if !d.m.detail {
		t.Fatal("Enter did not open the detail")
	}
	d.m.capture = &captureView{ref: d.m.selected().Ref, kind: "open_files", total: -1}
	d.m.Update(tea.KeyMsg{Type: tea.KeyEscape, Alt: true})
	if d.m.capture != nil || d.m.detail {
		t.Fatalf("after Esc Esc: capture %v detail %v", d.m.capture, d.m.detail)
	}
}
