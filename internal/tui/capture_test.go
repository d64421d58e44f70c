//go:build linux

package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/host"
	"golang.org/x/sys/unix"
)

// manyFDs is how many descriptors the capture test's child inherits: far
// more rows than one read_capture page holds within the result byte
// budget, and below the usual 1024 soft limit of a fresh machine.
const manyFDs = 900

// liveFixture is a host sampling this machine (the real collector) with a
// child process holding manyFDs extra descriptors, sampled once after the
// child started; it returns the host, a TUI backend and the child's PID.
func liveFixture(t *testing.T) (*host.Host, Backend, int) {
	t.Helper()
	t.Setenv("INQUEST_CONFIG", filepath.Join(t.TempDir(), "inquest.toml"))
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	dir := t.TempDir()
	var files []*os.File
	for i := 0; i < manyFDs; i++ {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%04d", i)))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	child := exec.Command(sleep, "600")
	child.ExtraFiles = files // descriptors 3 .. 3+manyFDs-1
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	for _, f := range files {
		f.Close()
	}
	h, err := host.New(host.Options{Version: "test", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	if _, err := h.Sampler().Step(); err != nil {
		t.Fatal(err)
	}
	s := h.NewSession()
	host.MarkLocalFace(s)
	b := BackendFunc(func(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
		return h.Dispatch(ctx, s, method, args)
	})
	return h, b, child.Process.Pid
}

// countingBackend counts the calls of each method.
type countingBackend struct {
	Backend
	calls map[string]int
}

func (c *countingBackend) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	c.calls[method]++
	return c.Backend.Call(ctx, method, args)
}

// The open-files pane of a process with more descriptors than one page
// holds pages through the whole capture as the MCP tools page it
// (read_capture with next_cursor): the title says "rows X–Y of TOTAL"
// with TOTAL the kernel's count (/proc/PID/fd read in the same run), End
// reads every page and shows the last descriptors, Home and PgDn move by
// rows and pages, and every descriptor of /proc/PID/fd is reached.
func TestCapturePaneReachesEveryRow(t *testing.T) {
	_, b, pid := liveFixture(t)
	cb := &countingBackend{Backend: b, calls: map[string]int{}}
	d := newDriver(t, cb)
	d.keys("/")
	d.keys(strings.Split(strconv.Itoa(pid), "")...)
	d.keys("enter")
	if r := d.m.selected(); r == nil || r.PID != pid {
		t.Fatalf("child %d not selected:\n%s", pid, d.m.View())
	}
	d.keys("enter", "f")

	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		fds = append(fds, n)
	}
	slices.Sort(fds)
	if len(fds) < manyFDs+3 {
		t.Fatalf("/proc/%d/fd lists %d descriptors, want at least %d", pid, len(fds), manyFDs+3)
	}
	// lsof's order: cwd, rtd, txt, one mem row per mapped file other than
	// the executable (from /proc/PID/maps), then the descriptors
	want := append([]string{"cwd", "rtd", "txt"}, slices.Repeat([]string{"mem"}, mappedFiles(t, pid))...)
	for _, n := range fds {
		want = append(want, strconv.Itoa(n))
	}
	total := len(want)
	c := d.m.capture
	if c == nil || c.err != "" || c.loading {
		t.Fatalf("capture: %+v\n%s", c, d.m.View())
	}
	shown := d.m.captureShown()
	if len(c.rows) >= total {
		t.Fatalf("the first page holds all %d rows: the test does not reach paging", total)
	}
	if c.total != total {
		t.Fatalf("capture total %d, /proc/%d has %d rows (%d fds)", c.total, pid, total, len(fds))
	}
	title := func() string {
		for _, l := range strings.Split(d.m.View(), "\n") {
			if strings.HasPrefix(l, "Open files") {
				return l
			}
		}
		t.Fatalf("no capture title:\n%s", d.m.View())
		return ""
	}
	if got, w := title(), fmt.Sprintf("Open files: rows 1–%d of %d   (Esc closes)", shown, total); !strings.HasPrefix(got, w) {
		t.Fatalf("title %q, want %q", got, w)
	}
	// FD is the first column, right-aligned, with its access mode as
	// lsof prints it (the test's files are open for reading, the
	// standard descriptors u, r or w)
	rowRe := regexp.MustCompile(`^\s*(\d+|cwd|rtd|txt|mem|DEL)[rwu]?  `)
	shownFDs := func() []string {
		var out []string
		for _, l := range strings.Split(d.m.View(), "\n") {
			if m := rowRe.FindStringSubmatch(l); m != nil {
				out = append(out, m[1])
			}
		}
		return out
	}
	if got := shownFDs(); !slices.Equal(got, want[:shown]) {
		t.Fatalf("first rows show fds %v, want %v:\n%s", got, want[:shown], d.m.View())
	}

	d.keys("pgdown")
	if got, w := title(), fmt.Sprintf("Open files: rows %d–%d of %d", shown+1, 2*shown, total); !strings.HasPrefix(got, w) {
		t.Fatalf("after PgDn: %q, want %q", got, w)
	}
	if got := shownFDs(); !slices.Equal(got, want[shown:2*shown]) {
		t.Fatalf("after PgDn fds %v, want %v", got, want[shown:2*shown])
	}
	reads := cb.calls["read_capture"]
	d.keys("end")
	if got, w := title(), fmt.Sprintf("Open files: rows %d–%d of %d", total-shown+1, total, total); !strings.HasPrefix(got, w) {
		t.Fatalf("after End: %q, want %q\n%s", got, w, d.m.View())
	}
	if got := shownFDs(); !slices.Equal(got, want[total-shown:]) {
		t.Fatalf("after End fds %v, want the last %v", got, want[total-shown:])
	}
	// the pane itself (pid, start time and test directory anonymous)
	var pane []string
	in := false
	for _, l := range strings.Split(d.m.View(), "\n") {
		in = in || strings.HasPrefix(l, "── ")
		if in {
			pane = append(pane, strings.TrimRight(l, " "))
		}
	}
	v := strings.Join(pane, "\n")
	v = regexp.MustCompile(`pid \d+  parent \d+`).ReplaceAllString(v, "pid PID  parent PPID")
	v = regexp.MustCompile(`started \S+`).ReplaceAllString(v, "started TIME")
	v = strings.ReplaceAll(v, filepath.Dir(d.m.capture.rows[total-1][2]), "DIR")
	// the count of mapped files (mem rows) is this machine's
	v = strings.ReplaceAll(v, fmt.Sprintf("rows %d–%d of %d", total-shown+1, total, total), "rows FIRST–TOTAL of TOTAL")
	golden(t, "capture_open_files_end", v)
	if cb.calls["read_capture"]-reads < 2 {
		t.Fatalf("End read %d further pages; the rows needed several", cb.calls["read_capture"]-reads)
	}
	// every row was read, once, in order
	var all []string
	for _, r := range d.m.capture.rows {
		all = append(all, strings.TrimRight(r[0], "rwu"))
	}
	if !slices.Equal(all, want) {
		t.Fatalf("capture rows %d, /proc has %d; differ", len(all), len(want))
	}
	if d.m.capture.next != "" {
		t.Fatal("a next_cursor after the last page")
	}
	d.keys("down") // at the end: stays
	if got := title(); !strings.HasPrefix(got, fmt.Sprintf("Open files: rows %d–%d of %d", total-shown+1, total, total)) {
		t.Fatalf("Down past the end: %q", got)
	}
	d.keys("up", "home")
	if got := title(); !strings.HasPrefix(got, fmt.Sprintf("Open files: rows 1–%d of %d", shown, total)) {
		t.Fatalf("after Home: %q", got)
	}
	checkShape(t, d.m.View(), 120, 40)
	// Esc closes the capture (released on the host); the selection keys
	// move the table again.
	id := d.m.capture.id
	d.keys("esc")
	if d.m.capture != nil || !d.m.detail {
		t.Fatal("Esc did not close the capture only")
	}
	if _, err := call(context.Background(), b, "read_capture", map[string]any{"capture_id": id}); contract.CodeOf(err) != contract.CodeReferenceInvalid {
		t.Fatalf("read of the closed capture: %v, want REFERENCE_INVALID (released)", err)
	}
}

// A cursor that no longer pages (the capture released behind the pane)
// keeps the rows read on screen and says why no more come.
func TestCapturePaneReadFailure(t *testing.T) {
	_, b, pid := liveFixture(t)
	d := newDriver(t, b)
	d.keys("/")
	d.keys(strings.Split(strconv.Itoa(pid), "")...)
	d.keys("enter", "enter", "f")
	c := d.m.capture
	if c == nil || c.next == "" {
		t.Fatalf("capture %+v", c)
	}
	read := len(c.rows)
	if _, err := call(context.Background(), b, "release_capture", map[string]any{"capture_id": c.id}); err != nil {
		t.Fatal(err)
	}
	d.keys("end")
	v := d.m.View()
	if len(d.m.capture.rows) != read || !strings.Contains(v, "reading more rows: CURSOR_INVALID") {
		t.Fatalf("after a failed read: %d rows (had %d)\n%s", len(d.m.capture.rows), read, v)
	}
	checkShape(t, v, 120, 40)
}

// mappedFiles counts the distinct files (device and inode) mapped by pid
// other than its executable, as lsof lists them as mem rows.
func mappedFiles(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	var exe syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/exe", pid), &exe); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{fmt.Sprintf("%02x:%02x %d", unix.Major(exe.Dev), unix.Minor(exe.Dev), exe.Ino): true}
	n := 0
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
