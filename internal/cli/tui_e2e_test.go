//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"golang.org/x/sys/unix"
)

// tmuxTUI is the real `inquest` binary running as the TUI host inside a
// detached tmux session of 120x40 (its own tmux server socket).
type tmuxTUI struct {
	t    *testing.T
	sock string
}

func (m *tmuxTUI) tmux(args ...string) string {
	m.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", m.sock}, args...)...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (m *tmuxTUI) keys(keys ...string) {
	m.t.Helper()
	m.tmux(append([]string{"send-keys", "-t", "tui"}, keys...)...)
}

func (m *tmuxTUI) screen() string {
	m.t.Helper()
	out, _ := exec.Command("tmux", "-S", m.sock, "capture-pane", "-p", "-t", "tui").CombinedOutput()
	return string(out)
}

// screenWait bounds each wait for a screen fact: a hang guard only (the
// screen is polled, so no machine waits longer than it needs), kept below
// go test's default 10-minute timeout so a hang fails naming the fact
// that never came. A graph operation still running after its wait is
// followed by the TUI to its outcome, so a loaded machine shows
// "graph g1 added" or "exported N rows" late, never not at all.
const screenWait = 4 * time.Minute

// waitFor polls the screen until cond holds; the generous deadline only
// fails on a real hang, never on a slow machine's normal pace. The poll
// interval is only the pace of polling (each poll runs tmux, which
// competes for the same CPUs), never a synchronization.
func (m *tmuxTUI) waitFor(what string, cond func(screen string) bool) string {
	m.t.Helper()
	deadline := time.Now().Add(screenWait)
	for {
		s := m.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("%s: not on screen within %v:\n%s", what, screenWait, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *tmuxTUI) waitText(text string) string {
	m.t.Helper()
	return m.waitFor(strconvQuoteE2E(text), func(s string) bool { return strings.Contains(s, text) })
}

func strconvQuoteE2E(s string) string { return `"` + s + `"` }

var (
	// titleCursorValue is a graph title with a value at the cursor;
	// titleMarkerA, with a value at marker A ("A -" is a marker with no
	// sample at or before it).
	titleCursorValue = regexp.MustCompile(`(?m)^[> ] g\d+ .*  cursor [0-9]`)
	titleMarkerA     = regexp.MustCompile(`(?m)^[> ] g\d+ .*  A [0-9]`)
	// graphsCursor is the cursor time in the graphs header; axisEnd, the
	// time under the right end of the time axis (the workspace's end).
	graphsCursor = regexp.MustCompile(`(?m)^Graphs \(.*  cursor (\d\d:\d\d:\d\d)`)
	axisEnd      = regexp.MustCompile(`(?m)└.*\n\s*\d\d:\d\d:\d\d\s+(\d\d:\d\d:\d\d)\s*$`)
)

// cursorBackSeconds is how far the graph cursor on screen is behind the
// end of the time axis, in seconds, or -1 when either is not on screen.
func cursorBackSeconds(screen string) int {
	c, e := graphsCursor.FindStringSubmatch(screen), axisEnd.FindStringSubmatch(screen)
	if c == nil || e == nil {
		return -1
	}
	ct, err1 := time.Parse("15:04:05", c[1])
	et, err2 := time.Parse("15:04:05", e[1])
	if err1 != nil || err2 != nil {
		return -1
	}
	return int(et.Sub(ct) / time.Second)
}

func headerLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// startTUIInTmux runs the real `inquest` (NO_COLOR) in e's isolated
// environment inside a detached tmux session of w x h started in dir, on
// its own tmux server socket, killed when the test ends.
func startTUIInTmux(t *testing.T, e *heEnv, dir string, w, h int) *tmuxTUI {
	t.Helper()
	script := filepath.Join(e.base, "run-tui.sh")
	var sb strings.Builder
	sb.WriteString("#!/bin/sh\ncd " + dir + "\n")
	for _, kv := range e.env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || strings.ContainsAny(k, " ;'\"") || k == "TERM" {
			continue
		}
		sb.WriteString("export " + k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'\n")
	}
	sb.WriteString("export NO_COLOR=1\nexec " + e.bin + "\n")
	os.WriteFile(script, []byte(sb.String()), 0o755)
	m := &tmuxTUI{t: t, sock: filepath.Join(e.base, "tmux.sock")}
	m.tmux("new-session", "-d", "-s", "tui", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), script)
	t.Cleanup(func() { exec.Command("tmux", "-S", m.sock, "kill-server").Run() })
	return m
}

// TestTUIInTmux drives the real binary as a person would: navigate,
// filter, sort, open the detail, add a graph, set A/B markers, export CSV,
// toggle Disable MCP connections, confirm an MCP client's mutation in the
// overlay (with the MCP badge and the agent's calls on screen, and the
// badge gone after the client leaves), record, and enter and leave Log
// view. Quitting stops the host it started.
func TestTUIInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	e := newHeEnv(t)
	exportDir := filepath.Join(e.base, "export")
	os.MkdirAll(exportDir, 0o755)
	// A process of our own with a unique name to filter, track and graph.
	target := filepath.Join(e.base, "inqtuitarget")
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(sleepBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, b, 0o755); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(target, "600")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })

	m := startTUIInTmux(t, e, exportDir, 120, 40)

	s := m.waitText("PID USER")
	if !strings.Contains(headerLine(s), "inquest host") {
		t.Fatalf("header:\n%s", s)
	}
	// navigate
	m.keys("Down", "Down", "Up")
	// filter (incremental) and sort
	m.keys("/")
	m.keys("-l", "inqtuitarget")
	m.keys("Enter")
	s = m.waitFor("filtered to the target", func(s string) bool {
		return strings.Contains(s, "> ") && strings.Contains(s, "inqtuitarget") && strings.Contains(s, "[filter: inqtuitarget]")
	})
	m.keys("M")
	m.waitText("MEM▼")
	// detail
	m.keys("Enter")
	m.waitText("── inqtuitarget  pid ")
	m.waitText("samples of retained history")
	m.keys("f")
	m.waitText("Open files: rows 1–")
	m.keys("Escape", "Escape")
	// graph of the selected process (memory sort: rss_bytes), markers
	m.keys("+")
	m.waitText("graph g1 added")
	m.keys("g")
	m.waitText("inqtuitarget[")
	m.keys("s")
	m.waitText("system:memory_used_bytes")
	// A two seconds back and B now. A marker before the first sample has
	// no value ("A -") however long one waits, so A is set only once the
	// cursor two seconds back shows g1's value on screen: the screen, not
	// a count of samples, says when the history reaches that far.
	m.keys("Left", "Left")
	m.waitFor("a value two seconds back", func(s string) bool {
		return cursorBackSeconds(s) == 2 && titleCursorValue.MatchString(s)
	})
	m.keys("A")
	m.waitFor("marker A with a value", func(s string) bool { return titleMarkerA.MatchString(s) })
	m.keys("Right", "Right", "B")
	s = m.waitFor("A/B values", func(s string) bool {
		return strings.Contains(s, " A ") && strings.Contains(s, " B ") && strings.Contains(s, "Δ ")
	})
	// export CSV
	m.keys("x")
	s = m.waitText("exported ")
	path := regexp.MustCompile(`exported \d+ rows to (\S+\.csv)`).FindStringSubmatch(s)
	if path == nil {
		t.Fatalf("no export path:\n%s", s)
	}
	csv, err := os.ReadFile(path[1])
	if err != nil || !strings.HasPrefix(string(csv), "timestamp,inqtuitarget[") {
		t.Fatalf("export %s: %v\n%s", path[1], err, csv)
	}
	m.keys("Escape")
	m.waitText("PID USER")

	// an MCP client: the badge and its calls appear; its profile delete
	// waits for the local decision in the overlay
	br := e.bridge()
	tr := br.mustCall("get_tracking", nil)
	rev := dig(tr, "data", "revision").(string)
	br.mustCall("update_profile", map[string]any{"operation_id": "e2e-save", "expected_revision": rev, "action": "save_as", "name": "e2e"})
	lp := br.mustCall("list_profiles", nil)
	prof := dig(lp, "data", "profiles").([]any)[0].(map[string]any)
	del := br.mustCall("update_profile", map[string]any{"operation_id": "e2e-del", "expected_revision": dig(lp, "data", "revision"),
		"action": "delete", "profile_id": prof["profile_id"], "profile_revision": prof["revision"], "wait_ms": 0})
	if st := dig(del, "data", "state"); st != "pending_confirmation" {
		t.Fatalf("delete: %v", del)
	}
	m.waitFor("MCP badge", func(s string) bool { return strings.Contains(headerLine(s), "MCP") })
	m.waitText("Confirm update_profile")
	m.keys("a")
	m.waitText("Agent activity")
	m.waitText("list_profiles")
	m.keys("y")
	m.waitText("e2e-del: succeeded")
	m.waitFor("overlay closed", func(s string) bool { return !strings.Contains(s, "Confirm update_profile") })
	if got := br.mustCall("get_operation", map[string]any{"operation_id": "e2e-del"}); dig(got, "data", "state") != "succeeded" {
		t.Fatalf("operation after confirm: %v", got)
	}
	br.cs.Close()
	m.waitFor("badge gone", func(s string) bool { return !strings.Contains(headerLine(s), "MCP") })
	m.keys("a")

	// settings: Disable MCP connections, persisted and applied
	cfg := filepath.Join(e.base, "config", "inquest", "inquest.toml")
	m.keys("S")
	m.waitText("[ ] Disable MCP connections")
	m.keys("Space")
	m.waitText("[x] Disable MCP connections")
	m.waitText("MCP listener: disabled")
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), "mcp_connections_disabled = true") {
		t.Fatalf("not persisted:\n%s", b)
	}
	m.keys("Space")
	m.waitText("[ ] Disable MCP connections")
	m.waitText("MCP listener: listening")
	m.keys("Escape")

	// track the target; tracking and profiles: save the tracked names as a
	// profile, change them, load the profile back (it replaces unsaved
	// tracking, so it asks in the overlay), delete it (asks too)
	m.keys("*")
	m.waitText("now tracking inqtuitarget")
	m.keys("o")
	m.waitText("Tracking and profiles")
	m.waitText("   inqtuitarget")
	m.keys("A")
	m.waitText("Save the tracked names as profile: ")
	m.keys("-l", "e2eprof")
	m.keys("Enter")
	m.waitText("save as e2eprof: done")
	m.waitFor("active profile", func(s string) bool {
		return strings.Contains(s, "active profile: e2eprof") && strings.Contains(s, "[active]")
	})
	m.keys("+")
	m.waitText("Track process name: ")
	m.keys("-l", "inqnothing")
	m.keys("Enter")
	m.waitText("track inqnothing: done")
	m.waitText("e2eprof (unsaved changes)")
	m.keys("Down", "Down", "Down", "Enter")
	m.waitText("load profile e2eprof: waiting for your decision")
	m.waitText("replaces_unsaved_tracking: true")
	m.keys("y")
	m.waitFor("profile loaded", func(s string) bool {
		return !strings.Contains(s, "Confirm update_profile") && !strings.Contains(s, "inqnothing") && !strings.Contains(s, "unsaved changes")
	})
	m.keys("d")
	m.waitText("delete profile e2eprof: waiting for your decision")
	m.waitText("Confirm update_profile")
	m.keys("y")
	m.waitText("none: A saves the tracked names as a profile")
	m.keys("Escape")
	m.waitText("PID USER")

	// record, stop (asks), then Log view with its graphs, and back
	m.keys("R")
	s = m.waitText("REC LIVE")
	// Stop only after three samples newer than the one shown with REC (it
	// was the latest when the recording had started): the recording then
	// holds frames in at least two whole seconds before its last one, so
	// the cursor one second back from the end (a whole second, before
	// which valueAt takes the latest frame) has a recorded value even
	// when a loaded machine put the first frame late in its second.
	clock := regexp.MustCompile(`\d\d:\d\d:\d\d$`)
	seen := map[string]bool{clock.FindString(strings.TrimSpace(headerLine(s))): true}
	m.waitFor("three recorded samples", func(s string) bool {
		if c := clock.FindString(strings.TrimSpace(headerLine(s))); c != "" {
			seen[c] = true
		}
		return len(seen) >= 4
	})
	m.keys("R")
	m.waitText("Stop the recording?")
	m.keys("y")
	m.waitText("recording stopped")
	m.keys("L")
	m.waitText("Saved recordings")
	m.waitText("> inquest-")
	m.keys("Enter")
	s = m.waitFor("Log view", func(s string) bool { return strings.Contains(headerLine(s), "LOG inquest-") })
	m.waitText("inqtuitarget")
	// the graph workspace shows the recording: its system series and the
	// recorded target, with markers, exported as an agent would export it
	m.keys("g")
	m.waitText("No graphs of this recording yet")
	m.keys("s")
	m.waitText("system:memory_used_bytes")
	m.keys("Escape")
	m.waitText("PID USER")
	m.keys("+")
	m.waitText(" added; g opens the graphs")
	m.keys("g")
	s = m.waitFor("recorded target graph", func(s string) bool {
		return strings.Contains(s, "recording inquest-") && strings.Contains(s, "inqtuitarget[") && strings.ContainsFunc(s, func(r rune) bool { return r > 0x2800 && r <= 0x28ff })
	})
	// As in Live: A one second back once a graph has a value there.
	m.keys("Left")
	m.waitFor("a recorded value one second back", func(s string) bool {
		return cursorBackSeconds(s) == 1 && titleCursorValue.MatchString(s)
	})
	m.keys("A")
	m.waitFor("marker A with a recorded value", func(s string) bool { return titleMarkerA.MatchString(s) })
	m.keys("Right", "B")
	m.waitFor("A/B values in Log view", func(s string) bool {
		return strings.Contains(s, " A ") && strings.Contains(s, " B ") && strings.Contains(s, "Δ ")
	})
	m.keys("x")
	s = m.waitText("exported ")
	path = regexp.MustCompile(`exported \d+ rows to (\S+\.csv)`).FindStringSubmatch(s)
	if path == nil {
		t.Fatalf("no Log view export path:\n%s", s)
	}
	logCSV, err := os.ReadFile(path[1])
	if err != nil || !strings.HasPrefix(string(logCSV), "timestamp,system:system_cpu_percent,system:memory_used_bytes,inqtuitarget[") {
		t.Fatalf("Log view export %s: %v\n%s", path[1], err, logCSV)
	}
	// The recording's first frame holds the recorded process as well as
	// the system: every row (the first too) has a value in every column.
	for i, row := range strings.Split(strings.TrimSpace(string(logCSV)), "\n")[1:] {
		if strings.Contains(row+",", ",,") {
			t.Fatalf("Log view export row %d lacks a value:\n%s", i+1, logCSV)
		}
	}
	br2 := e.bridge()
	mcpDir := filepath.Join(e.base, "mcp-export")
	exp := br2.mustCall("export_graphs", map[string]any{"output_directory": mcpDir, "filename": "log.csv"})
	if dig(exp, "data", "outcome", "workspace", "source") != "log" || dig(exp, "data", "state") != "succeeded" || dig(exp, "source") != "log" {
		t.Fatalf("export_graphs in Log view: %v", exp)
	}
	if mcpCSV, err := os.ReadFile(filepath.Join(mcpDir, "log.csv")); err != nil || string(mcpCSV) != string(logCSV) {
		t.Fatalf("TUI and MCP exports of the Log view differ (%v):\n%s\n---\n%s", err, logCSV, mcpCSV)
	}
	br2.cs.Close()
	m.keys("Escape")
	m.waitText("PID USER")
	m.keys("L")
	m.waitFor("Live again", func(s string) bool {
		return strings.Contains(headerLine(s), "LIVE") && !strings.Contains(headerLine(s), "LOG")
	})
	// the Live graphs are back
	m.keys("g")
	m.waitFor("Live graphs again", func(s string) bool {
		return strings.Contains(s, "Graphs (3)") && strings.Contains(s, "inqtuitarget[") && !strings.Contains(s, "recording inquest-")
	})
	m.keys("Escape")

	// help, then quit: the host this TUI started stops with it
	m.keys("?")
	m.waitText("Keys")
	m.keys("Escape")
	pid := e.hostPID()
	if !hostAlive(pid) {
		t.Fatalf("host lock pid %d not alive", pid)
	}
	m.keys("q")
	waitUntil(t, "the TUI host to exit", func() bool { return processGone(pid) })
}

// waitFact polls cond (a fact outside the screen: a process gone) with
// the same hang guard as the screen waits.
func waitFact(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(screenWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v", what, screenWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startNamed starts a copy of sleep named name (its comm), killed when
// the test ends.
func startNamed(t *testing.T, dir, name string) *exec.Cmd {
	t.Helper()
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(sleepBin)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(bin, "600")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// lastLine is the footer of a captured screen.
func lastLine(s string) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return l[len(l)-1]
}

// TestTUIHtopKeysInTmux drives the real binary at 80x24 with htop's
// keys: the footer shows q:quit; F1 help (with the read-only note's key),
// F9 says the monitor is read-only, F4 filters, F6 sorts from its menu,
// F5 toggles the tree, F3 searches and selects; when the selected process
// exits the selection moves to the live row beside it while the ended one
// stays as a ghost; F10 quits and stops the host it started.
func TestTUIHtopKeysInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	e := newHeEnv(t)
	victim := startNamed(t, e.base, "inqselvictim")
	survivor := startNamed(t, e.base, "inqselsurvivor")
	m := startTUIInTmux(t, e, e.base, 80, 24)
	s := m.waitText("PID USER")
	if !strings.HasPrefix(lastLine(s), "q:quit ?:help /:filter F6:sort") {
		t.Fatalf("footer at 80x24 %q:\n%s", lastLine(s), s)
	}

	m.keys("F1")
	m.waitText("nothing to kill or renice")
	m.keys("Escape")
	m.waitText("PID USER")
	m.keys("F9")
	m.waitText("read-only monitor: no kill or renice")

	m.keys("F4")
	m.waitText("Filter: ")
	m.keys("-l", "inqsel")
	m.keys("Enter")
	m.waitFor("both processes under the filter", func(s string) bool {
		return strings.Contains(s, "inqselvictim") && strings.Contains(s, "inqselsurvivor") && strings.Contains(lastLine(s), "[filter: inqsel]")
	})
	m.keys("F6")
	m.waitText("Sort by")
	// from CPU% (the current sort) down to PID
	m.keys("Down", "Down", "Down", "Down", "Down")
	m.waitFor("PID highlighted", func(s string) bool { return regexp.MustCompile(`(?m)^> PID`).MatchString(s) })
	m.keys("Enter")
	m.waitText("PID▲")
	m.keys("F5")
	m.waitFor("tree on", func(s string) bool { return strings.Contains(lastLine(s), "[tree]") })
	m.keys("F5")
	m.waitFor("tree off", func(s string) bool { return !strings.Contains(lastLine(s), "[tree]") && strings.Contains(s, "PID▲") })

	vpid, spid := strconv.Itoa(victim.Process.Pid), strconv.Itoa(survivor.Process.Pid)
	m.keys("F3")
	m.waitText("Search: ")
	m.keys("-l", vpid)
	m.waitFor("the victim selected", func(s string) bool {
		return regexp.MustCompile(`(?m)^>\s+` + vpid + ` `).MatchString(s)
	})
	m.keys("Enter")
	m.waitFor("search closed", func(s string) bool { return !strings.Contains(lastLine(s), "Search: ") })
	// tracked, so its ended lifetime stays on screen as a ghost row
	m.keys("*")
	m.waitText("now tracking inqselvictim")
	victim.Process.Kill()
	victim.Wait()
	ghost := regexp.MustCompile(`(?m)^ \s+` + vpid + ` \S+\s+x `)
	onSurvivor := regexp.MustCompile(`(?m)^>\s+` + spid + ` \S+\s+[A-Za-z] `)
	s = m.waitFor("the selection on the live neighbour of the ended process", func(s string) bool {
		return ghost.MatchString(s) && onSurvivor.MatchString(s)
	})
	if regexp.MustCompile(`(?m)^>.* x `).MatchString(s) {
		t.Fatalf("the selection is on an ended row:\n%s", s)
	}

	pid := e.hostPID()
	if !hostAlive(pid) {
		t.Fatalf("host lock pid %d not alive", pid)
	}
	m.keys("F10")
	waitFact(t, "F10 to stop the TUI host", func() bool { return processGone(pid) })
	waitFact(t, "the tmux session to end", func() bool {
		return exec.Command("tmux", "-S", m.sock, "has-session", "-t", "tui").Run() != nil
	})
}

// `inquest history` draws braille charts with axes and units on a
// terminal and prints only the table when piped.
func TestHistoryChartOnTerminal(t *testing.T) {
	e := newHeEnv(t)
	if out, code := e.run("serve", "--detach"); code != 0 {
		t.Fatalf("serve: %s", out)
	}
	// two samples at least, so the chart has a line
	waitUntil(t, "two samples", func() bool {
		out, _ := e.run("history", "--metric", "memory_used_bytes", "--raw", "--table")
		return strings.Count(out, "\n") >= 3 // header and two rows
	})
	piped, code := e.run("history", "--metric", "memory_used_bytes,system_cpu_percent")
	if code != 0 || strings.ContainsRune(piped, '│') || !strings.Contains(piped, "METRIC") {
		t.Fatalf("piped output:\n%s", piped)
	}
	cmd := exec.Command(e.bin, "history", "--metric", "memory_used_bytes,system_cpu_percent")
	cmd.Env = e.env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	cmd.Wait()
	s := out.String()
	for _, want := range []string{"memory_used_bytes (bytes)", "system_cpu_percent (percent)", "100.0%│", "0B│", "└──", "METRIC"} {
		if !strings.Contains(s, want) {
			t.Fatalf("terminal output lacks %q:\n%s", want, s)
		}
	}
	if !regexp.MustCompile("[\u2801-\u28ff]").MatchString(s) {
		t.Fatalf("no braille dots:\n%s", s)
	}
	// inquest log show: charts of the recorded system on a terminal only
	logFile, _ := filepath.Abs(filepath.Join("..", "recording", "testdata", "complete.log"))
	s = ptyOutput(t, e, "log", "show", logFile)
	if !strings.Contains(s, "memory_used_bytes (bytes)") || !strings.Contains(s, "2.0G│⠉") || !strings.Contains(s, "frames:      8") {
		t.Fatalf("log show on a terminal:\n%s", s)
	}
	if piped, _ := e.run("log", "show", logFile); strings.ContainsRune(piped, '│') || !strings.Contains(piped, "frames:      8") {
		t.Fatalf("log show piped:\n%s", piped)
	}
}

func ptyOutput(t *testing.T, e *heEnv, args ...string) string {
	t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Env = e.env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	cmd.Wait()
	return out.String()
}

// With a host already running, `inquest` attaches as a view (the header
// says so, no second sampler starts) and quitting leaves the host running.
func TestTUIAttachesToRunningHost(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	e := newHeEnv(t)
	if out, code := e.run("serve", "--detach"); code != 0 {
		t.Fatalf("serve: %s", out)
	}
	pid := e.hostPID()
	script := filepath.Join(e.base, "run-tui.sh")
	var sb strings.Builder
	sb.WriteString("#!/bin/sh\n")
	for _, kv := range e.env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || strings.ContainsAny(k, " ;'\"") || k == "TERM" {
			continue
		}
		sb.WriteString("export " + k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'\n")
	}
	sb.WriteString("exec " + e.bin + "\n")
	os.WriteFile(script, []byte(sb.String()), 0o755)
	m := &tmuxTUI{t: t, sock: filepath.Join(e.base, "tmux.sock")}
	m.tmux("new-session", "-d", "-s", "tui", "-x", "80", "-y", "24", script)
	t.Cleanup(func() { exec.Command("tmux", "-S", m.sock, "kill-server").Run() })
	s := m.waitText("PID USER")
	if want := "inquest view of host pid " + strconv.Itoa(pid); !strings.Contains(headerLine(s), want) {
		t.Fatalf("header lacks %q:\n%s", want, s)
	}
	m.keys("q")
	m.waitFor("the view to quit", func(string) bool {
		return exec.Command("tmux", "-S", m.sock, "has-session", "-t", "tui").Run() != nil
	})
	if !hostAlive(pid) || e.hostPID() != pid {
		t.Fatal("quitting the view stopped the host")
	}
}

// Without a terminal, `inquest` alone prints help (and starts nothing).
func TestRootWithoutTerminalPrintsHelp(t *testing.T) {
	var out, errb strings.Builder
	if code := Run(t.Context(), nil, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Usage:") || !strings.Contains(out.String(), "Available Commands:") {
		t.Fatalf("no help:\n%s", out.String())
	}
}

// At 60x15, as a tester ran it: the open-files pane of a process with
// 900 extra descriptors pages through all of them (End shows the last,
// the total is /proc/PID/fd's count read in the same run), help scrolls
// to its last key and says how to close, and the recording notice names
// the file the recording writes.
func TestTUIPagingHelpRecordingInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	e := newHeEnv(t)
	target := filepath.Join(e.base, "inqmanyfds")
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(sleepBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, b, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []*os.File
	for i := 0; i < 900; i++ {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	child := exec.Command(target, "600")
	child.ExtraFiles = files
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	for _, f := range files {
		f.Close()
	}
	// sleep maps its locale files after the loader is done: its rows
	// settle once it sleeps in nanosleep (state S; a starting process is
	// R or, waiting for the disk, D).
	pid := child.Process.Pid
	waitUntil(t, "the target to sleep", func() bool { return procState(pid) == "S" })

	m := startTUIInTmux(t, e, e.base, 60, 15)
	m.waitText("PID USER")
	m.keys("/")
	m.keys("-l", "inqmanyfds")
	m.keys("Enter")
	m.waitFor("filtered to the target", func(s string) bool { return strings.Contains(s, "> ") && strings.Contains(s, "inqmanyfds") })
	m.keys("Enter")
	m.waitText("── inqmanyfds  pid ")
	m.keys("f")
	// The pane's own total is the one to page through; it must be what
	// /proc says of the (settled) target, read after the pane showed it.
	first := regexp.MustCompile(`Open files: rows 1–(\d+) of (\d+)\b`)
	s := m.waitFor("the first rows", func(s string) bool { return first.MatchString(s) })
	sub := first.FindStringSubmatch(s)
	shown, _ := strconv.Atoi(sub[1])
	total, _ := strconv.Atoi(sub[2])
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	// open_files lists cwd, rtd, txt and the mapped files before the fds
	lastFD := 0
	for _, en := range ents {
		n, _ := strconv.Atoi(en.Name())
		lastFD = max(lastFD, n)
	}
	if want := len(ents) + nonFDRows(t, pid); total != want || len(ents) < 900 {
		t.Fatalf("the pane shows %d rows, /proc/%d has %d descriptors and %d other rows (want the sum, with at least 900 descriptors):\n%s",
			total, pid, len(ents), want-len(ents), s)
	}
	m.keys("End")
	lastRow := regexp.MustCompile(`(?m)^\s+` + strconv.Itoa(lastFD) + `r  device\s+/dev/null`)
	m.waitFor("the last rows", func(s string) bool {
		return strings.Contains(s, "Open files: rows "+strconv.Itoa(total-shown+1)+"–"+strconv.Itoa(total)+" of "+strconv.Itoa(total)) &&
			lastRow.MatchString(s)
	})
	m.keys("PageUp")
	m.waitText("Open files: rows " + strconv.Itoa(total-2*shown+1) + "–" + strconv.Itoa(total-shown) + " of ")
	m.keys("Escape", "Escape")
	m.waitFor("detail closed", func(s string) bool { return !strings.Contains(s, "── inqmanyfds") })

	// help: scrolls, shows its last key, says how to close
	m.keys("?")
	s = m.waitText("Esc/q: close help")
	pos := regexp.MustCompile(`lines 1–(\d+) of (\d+)`).FindStringSubmatch(s)
	if pos == nil || strings.Contains(s, "q Esc") {
		t.Fatalf("help at 60x15:\n%s", s)
	}
	n, _ := strconv.Atoi(pos[1])
	m.keys("PageDown")
	m.waitText(fmt.Sprintf("lines %d–", n+1))
	m.keys("End")
	m.waitFor("the last help lines", func(s string) bool {
		return strings.Contains(s, "'-' means not measured (never zero).") && strings.Contains(s, "of "+pos[2]+"\n")
	})
	m.keys("Escape")
	m.waitText("PID USER")

	// record the target: the notice names the file on disk
	m.keys("*")
	m.waitText("now tracking inqmanyfds")
	m.keys("R")
	s = m.waitText("recording to inquest-")
	name := regexp.MustCompile(`recording to (inquest-\d{8}T\d{6}Z-[0-9a-f]{12}\.log)`).FindStringSubmatch(s)
	if name == nil {
		t.Fatalf("recording notice:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(e.base, "data", "inquest", "recordings", name[1])); err != nil {
		t.Fatalf("the notice names %s: %v", name[1], err)
	}
	m.waitText("REC LIVE")
	m.keys("R")
	m.waitText("Stop the recording?")
	m.keys("y")
	m.waitText("recording stopped: " + name[1][:35])
	host := e.hostPID()
	m.keys("q")
	waitUntil(t, "the TUI host to exit", func() bool { return processGone(host) })
}

// TestTUIPanesPageInTmux: an MCP client tracks 60 names through a real
// bridge; the real binary's Tracking and profiles pane (80x24, far fewer
// lines) reaches the last with End and says which rows it shows, and the
// agent activity pane pages through the client's calls the same way.
func TestTUIPanesPageInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	e := newHeEnv(t)
	m := startTUIInTmux(t, e, e.base, 80, 24)
	m.waitText("PID USER")
	br := e.bridge()
	const names = 60
	for i := 0; i < names; i++ {
		rev := dig(br.mustCall("get_tracking", nil), "data", "revision")
		br.mustCall("update_tracking", map[string]any{"operation_id": fmt.Sprintf("e2e-track-%d", i), "expected_revision": rev,
			"action": "add", "process_name": fmt.Sprintf("inqpage%03d", i)})
	}
	m.keys("o")
	m.waitText("Tracking and profiles")
	m.waitFor("the first page of the names", func(s string) bool {
		return strings.Contains(s, ">   inqpage000") && strings.Contains(s, fmt.Sprintf(" of %d (tracked names", names)) &&
			!strings.Contains(s, "inqpage059")
	})
	m.keys("End")
	m.waitFor("the last name after End", func(s string) bool {
		return strings.Contains(s, ">   inqpage059") && regexp.MustCompile(fmt.Sprintf(`rows \d+–%d of %d`, names, names)).MatchString(s)
	})
	m.keys("PgUp")
	m.waitFor("the page before", func(s string) bool {
		return !strings.Contains(s, "inqpage059") && !regexp.MustCompile(fmt.Sprintf(`rows \d+–%d of %d`, names, names)).MatchString(s)
	})
	m.keys("Home")
	m.waitFor("the first name after Home", func(s string) bool {
		return strings.Contains(s, ">   inqpage000") && strings.Contains(s, "rows 1–")
	})
	m.keys("Escape")
	m.waitText("PID USER")
	// the bridge's 120 calls: the host keeps the last 32 finished
	m.keys("a")
	m.waitText("── Agent activity rows 1–6 of ")
	m.keys("End")
	actPos := regexp.MustCompile(`Agent activity rows (\d+)–(\d+) of (\d+)`)
	s := m.waitFor("the oldest kept call after End", func(s string) bool {
		g := actPos.FindStringSubmatch(s)
		return g != nil && g[2] == g[3] && g[1] != "1"
	})
	if !strings.Contains(s, "Esc/a: close agent activity") {
		t.Fatalf("the activity pane's footer does not say how to close it:\n%s", s)
	}
	br.cs.Close()
	m.keys("Escape")
	m.waitFor("the activity pane closed", func(s string) bool { return !strings.Contains(s, "Agent activity") })
	m.keys("q")
}

// nonFDRows is how many rows open_files (and lsof) list for pid before
// its descriptors: cwd, rtd, txt and one per distinct mapped file other
// than the executable (/proc/PID/maps).
func nonFDRows(t *testing.T, pid int) int {
	t.Helper()
	proc := "/proc/" + strconv.Itoa(pid) + "/"
	b, err := os.ReadFile(proc + "maps")
	if err != nil {
		t.Fatal(err)
	}
	var exe syscall.Stat_t
	if err := syscall.Stat(proc+"exe", &exe); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{fmt.Sprintf("%02x:%02x %d", unix.Major(exe.Dev), unix.Minor(exe.Dev), exe.Ino): true}
	n := 3
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[4] == "0" || !strings.HasPrefix(f[5], "/") {
			continue
		}
		if k := f[3] + " " + f[4]; !seen[k] {
			seen[k] = true
			n++
		}
	}
	return n
}

// procState is the state letter of process pid (/proc/PID/stat, the field
// after the parenthesised name: R, S, D, ...), "" when it cannot be read.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+3 > len(b) {
		return ""
	}
	return string(b[i+2 : i+3])
}
