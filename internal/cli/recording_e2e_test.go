//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/recording"
)

// growSource is a child that grows its resident memory in 8 steps of 8 MiB
// (touching every page), writes its pid to the marker file named by its
// first argument once all 64 MiB are resident, and then sleeps holding them.
const growSource = `package main

import (
	"os"
	"strconv"
	"time"
)

var keep [][]byte

func main() {
	for i := 0; i < 8; i++ {
		b := make([]byte, 8<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
		time.Sleep(600 * time.Millisecond)
	}
	os.WriteFile(os.Args[1]+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o600)
	os.Rename(os.Args[1]+".tmp", os.Args[1])
	time.Sleep(10 * time.Minute)
	_ = keep
}
`

// growAllocated is what the grow child holds when its marker appears.
const growAllocated = 64 << 20

var (
	growOnce sync.Once
	growBin  string
	growErr  error
)

// growBinary builds the grow child once (named inqgrow, its comm).
func growBinary(t *testing.T) string {
	t.Helper()
	growOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inquest-grow")
		if err != nil {
			growErr = err
			return
		}
		src := filepath.Join(dir, "main.go")
		os.WriteFile(src, []byte(growSource), 0o600)
		growBin = filepath.Join(dir, "inqgrow")
		cmd := exec.Command("go", "build", "-o", growBin, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GO111MODULE=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			growErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if growErr != nil {
		t.Fatal(growErr)
	}
	return growBin
}

func (b *heBridge) revision() string {
	b.t.Helper()
	rev, _ := dig(b.mustCall("get_tracking", nil), "data", "revision").(string)
	return rev
}

var opSeq int

func opID(prefix string) string {
	opSeq++
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), opSeq)
}

func (b *heBridge) track(name string) {
	b.t.Helper()
	m := b.mustCall("update_tracking", map[string]any{"operation_id": opID("track"), "expected_revision": b.revision(), "action": "add", "process_name": name})
	if dig(m, "data", "state") != "succeeded" {
		b.t.Fatalf("track: %v", m)
	}
}

// startRecording starts a recording and returns its outcome.
func (b *heBridge) startRecording(interval int) map[string]any {
	b.t.Helper()
	m := b.mustCall("start_recording", map[string]any{"operation_id": opID("start"), "expected_revision": b.revision(), "interval_seconds": interval})
	if dig(m, "data", "state") != "succeeded" {
		b.t.Fatalf("start_recording: %v", m)
	}
	return dig(m, "data", "outcome").(map[string]any)
}

func (b *heBridge) openLog(logID string) (string, map[string]any) {
	b.t.Helper()
	m := b.mustCall("open_log", map[string]any{"log_id": logID, "wait_ms": 10000})
	for dig(m, "data", "state") == "running" {
		m = b.mustCall("open_log", map[string]any{"job_id": dig(m, "data", "job_id"), "wait_ms": 10000})
	}
	ref, _ := dig(m, "data", "log_ref").(string)
	if ref == "" {
		b.t.Fatalf("open_log: %v", m)
	}
	return ref, m
}

func recordingsDir(e *heEnv) string { return filepath.Join(e.base, "data", "inquest", "recordings") }

// framesIn reads a recording file the way a third party would and returns
// its Info (frames fully written so far).
func framesIn(t *testing.T, path string) *recording.Info {
	data, err := os.ReadFile(path)
	if err != nil {
		return &recording.Info{}
	}
	in, _ := recording.Read(data, nil)
	return in
}

func asInt(t *testing.T, v any) int64 {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("not a decimal string: %v", v)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRecordingGrowingChild: record a child that grows its memory at a 1 s
// interval, stop, open the log over MCP: the get_history max RSS is at
// least what the child allocated, raw frame timestamps follow the
// interval, get_metrics returns the final frame, and promtool imports the
// OpenMetrics export with the log's sample count.
func TestRecordingGrowingChild(t *testing.T) {
	e := newHeEnv(t)
	bin := growBinary(t)
	b := e.bridge()
	b.track("inqgrow")
	rec := b.startRecording(1)
	sid, logID := rec["recording_session_id"].(string), rec["log_id"].(string)

	marker := filepath.Join(e.base, "tmp", "grown")
	child := exec.Command(bin, marker)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	waitUntil(t, "child allocated", func() bool { _, err := os.Stat(marker); return err == nil })
	ref := b.refOf(child.Process.Pid)
	waitUntil(t, "a sample with the child's full RSS", func() bool {
		m := b.mustCall("get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{map[string]any{"process_ref": ref}}})
		v, _ := dig(m["data"].(map[string]any)["samples"].([]any)[0].(map[string]any), "values", "rss_bytes").(string)
		n, _ := strconv.ParseInt(v, 10, 64)
		return n >= growAllocated
	})
	// Tracking is fixed while recording.
	if m, isErr := b.call("update_tracking", map[string]any{"operation_id": opID("t"), "expected_revision": b.revision(), "action": "add", "process_name": "other"}); !isErr || errCode(m) != "ACTIVITY_CONFLICT" {
		t.Fatalf("tracking change during recording: %v", m)
	}
	stop := b.mustCall("stop_recording", map[string]any{"operation_id": opID("stop"), "recording_session_id": sid})
	if dig(stop, "data", "state") != "succeeded" || dig(stop, "data", "outcome", "reason") != "stopped" {
		t.Fatalf("stop: %v", stop)
	}
	path := filepath.Join(recordingsDir(e), dig(stop, "data", "outcome", "name").(string))
	if in := framesIn(t, path); !in.Complete() || float64(in.Frames) != dig(stop, "data", "outcome", "frames").(float64) {
		t.Fatalf("file after stop: %+v", in)
	}

	logRef, opened := b.openLog(logID)
	if opened["status"] != "complete" || dig(opened, "data", "recording", "interval_seconds") != 1.0 {
		t.Fatalf("open_log: %v", opened)
	}
	procs := b.mustCall("list_processes", map[string]any{"source": "log", "log_ref": logRef, "scope": "all", "filter": map[string]any{"pid": child.Process.Pid}})
	if procs["source"] != "log" {
		t.Fatalf("list_processes source %v", procs["source"])
	}
	rows := dig(procs, "data", "rows").([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["lifecycle"] != "unknown" {
		t.Fatalf("log rows: %v", rows)
	}
	lref := rows[0].(map[string]any)["process_ref"].(string)
	target := map[string]any{"process_ref": lref}
	sum := b.mustCall("get_history", map[string]any{"source": "log", "log_ref": logRef, "target": target, "metric_ids": []string{"rss_bytes"}})
	if maxRSS := asInt(t, dig(sum, "data", "metrics", "rss_bytes", "max")); maxRSS < growAllocated {
		t.Fatalf("max RSS %d < allocated %d", maxRSS, growAllocated)
	}
	raw := b.mustCall("get_history", map[string]any{"source": "log", "log_ref": logRef, "target": target, "metric_ids": []string{"rss_bytes"}, "mode": "raw"})
	hrows := dig(raw, "data", "rows").([]any)
	if len(hrows) < 2 || float64(len(hrows)) != dig(sum, "data", "metrics", "rss_bytes", "sample_count").(float64) {
		t.Fatalf("raw rows %d vs summary %v", len(hrows), dig(sum, "data", "metrics", "rss_bytes"))
	}
	// Frames are written when the interval (1 s) less half a sampling
	// period has elapsed since the previous frame; the stop flush adds the
	// latest sample not yet written, which may be closer. So timestamps
	// strictly increase and all but the last gap are at least 500 ms.
	var prev time.Time
	for i, r := range hrows {
		at, err := time.Parse(time.RFC3339Nano, r.(map[string]any)["at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && !at.After(prev) {
			t.Fatalf("frame %d at %v is not after frame %d at %v", i, at, i-1, prev)
		}
		if i > 0 && i < len(hrows)-1 && at.Sub(prev) < 500*time.Millisecond {
			t.Fatalf("frames %d and %d are %v apart at a 1 s interval", i-1, i, at.Sub(prev))
		}
		prev = at
	}
	last := hrows[len(hrows)-1].(map[string]any)
	met := b.mustCall("get_metrics", map[string]any{"source": "log", "log_ref": logRef, "metric_ids": []string{"rss_bytes"}, "targets": []any{target}})
	sample := dig(met, "data").(map[string]any)["samples"].([]any)[0].(map[string]any)
	if dig(sample, "values", "rss_bytes") != dig(last, "values", "rss_bytes") || met["captured_at"] != last["at"] {
		t.Fatalf("get_metrics %v is not the final frame %v", met, last)
	}
	// A live ref cannot target the log; the log ref cannot target live data.
	if m, isErr := b.call("get_history", map[string]any{"source": "log", "log_ref": logRef, "target": map[string]any{"process_ref": ref}, "metric_ids": []string{"rss_bytes"}}); !isErr || errCode(m) != "REFERENCE_INVALID" {
		t.Fatalf("live ref on log: %v", m)
	}
	if m, isErr := b.call("get_metrics", map[string]any{"metric_ids": []string{"rss_bytes"}, "targets": []any{target}}); !isErr || errCode(m) != "REFERENCE_INVALID" {
		t.Fatalf("log ref on live: %v", m)
	}
	if m := b.mustCall("close_log", map[string]any{"log_ref": logRef}); dig(m, "data", "released") != true {
		t.Fatalf("close: %v", m)
	}
	if m, isErr := b.call("get_metrics", map[string]any{"source": "log", "log_ref": logRef, "metric_ids": []string{"rss_bytes"}}); !isErr || errCode(m) != "REFERENCE_INVALID" {
		t.Fatalf("closed log: %v", m)
	}
	if m := b.mustCall("close_log", map[string]any{"log_ref": logRef}); dig(m, "data", "released") != false {
		t.Fatalf("second close: %v", m)
	}

	// inquest log show and the promtool round trip of the export.
	out, code := e.run("log", "show", path)
	if code != 0 || !strings.Contains(out, "status:      complete") || !strings.Contains(out, "rss_bytes") {
		t.Fatalf("log show: %d %s", code, out)
	}
	checkPromtool(t, e, path)
}

// checkPromtool exports path as OpenMetrics, imports it with promtool tsdb
// create-blocks-from openmetrics and compares promtool tsdb dump's sample
// count with the number of available values in the log.
func checkPromtool(t *testing.T, e *heEnv, path string) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus; .ci/run installs it)")
	}
	om := filepath.Join(e.base, "tmp", "export.om")
	out, code := e.run("log", "export", path, "--format", "openmetrics", "-o", om)
	if code != 0 {
		t.Fatalf("export: %s", out)
	}
	var exported int
	fmt.Sscanf(out[strings.Index(out, "exported "):], "exported %d samples", &exported)
	// The log's own count of available values, read independently.
	data, _ := os.ReadFile(path)
	want := 0
	recording.Read(data, func(f *recording.Frame) error {
		want += popcount(f.System.Avail)
		for _, p := range f.Procs {
			want += popcount(p.Avail)
		}
		return nil
	})
	if exported != want {
		t.Fatalf("export wrote %d samples, the log holds %d available values", exported, want)
	}
	db := filepath.Join(e.base, "tmp", "tsdb")
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, db).CombinedOutput(); err != nil {
		t.Fatalf("promtool create-blocks-from: %v\n%s", err, out)
	}
	// tsdb dump opens the database, which needs a (here empty) WAL directory.
	os.MkdirAll(filepath.Join(db, "wal"), 0o700)
	cmd := exec.Command(promtool, "tsdb", "dump", db)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte("{")) {
			n++
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("promtool tsdb dump: %v", err)
	}
	if n != want {
		t.Fatalf("promtool tsdb dump shows %d samples, the log holds %d", n, want)
	}
}

func popcount(x uint32) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// TestRecordingOwnedByHost: one bridge starts a recording and disconnects;
// the recording continues; another bridge stops it by session id; a
// stale session id is STATE_CONFLICT and stops nothing.
func TestRecordingOwnedByHost(t *testing.T) {
	e := newHeEnv(t)
	child := startChild(t)
	_ = child
	a, b := e.bridge(), e.bridge()
	a.track("sleep")
	rec := a.startRecording(1)
	sid := rec["recording_session_id"].(string)
	path := filepath.Join(recordingsDir(e), rec["name"].(string))
	if m, isErr := b.call("start_recording", map[string]any{"operation_id": opID("s2"), "expected_revision": b.revision(), "interval_seconds": 2}); !isErr || errCode(m) != "ACTIVITY_CONFLICT" {
		t.Fatalf("second start: %v", m)
	}
	a.cmd.Process.Kill()
	waitUntil(t, "host notices the dead bridge", func() bool { return b.status().conns == 1 })
	before := framesIn(t, path).Frames
	waitUntil(t, "frames keep coming after the disconnect", func() bool { return framesIn(t, path).Frames > before+1 })
	st := b.mustCall("get_recording", nil)
	if dig(st, "data", "active") != true || dig(st, "data", "recording_session_id") != sid {
		t.Fatalf("get_recording: %v", st)
	}
	if m, isErr := b.call("stop_recording", map[string]any{"operation_id": opID("stale"), "recording_session_id": "rec_000000000000"}); !isErr || errCode(m) != "STATE_CONFLICT" {
		t.Fatalf("stale stop: %v", m)
	}
	if dig(b.mustCall("get_recording", nil), "data", "active") != true {
		t.Fatal("a stale stop stopped the recording")
	}
	stopOp := opID("stop")
	m := b.mustCall("stop_recording", map[string]any{"operation_id": stopOp, "recording_session_id": sid})
	if dig(m, "data", "state") != "succeeded" {
		t.Fatalf("stop: %v", m)
	}
	// The same operation id returns the retained outcome.
	if again := b.mustCall("stop_recording", map[string]any{"operation_id": stopOp, "recording_session_id": sid}); dig(again, "data", "outcome", "frames") != dig(m, "data", "outcome", "frames") {
		t.Fatalf("dedup: %v", again)
	}
	// The stopped session's id is stale now.
	if m, isErr := b.call("stop_recording", map[string]any{"operation_id": opID("late"), "recording_session_id": sid}); !isErr || errCode(m) != "STATE_CONFLICT" {
		t.Fatalf("stop of a stopped session: %v", m)
	}
	if in := framesIn(t, path); !in.Complete() {
		t.Fatalf("file: %+v", in)
	}
	// list_logs finds it.
	ll := b.mustCall("list_logs", map[string]any{"filter": map[string]any{"name": sid[4:]}})
	rows, _ := dig(ll, "data", "rows").([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["log_id"] != rec["log_id"] {
		t.Fatalf("list_logs: %v", ll)
	}
}

// TestRecordingSIGKILL: a host killed while recording leaves a file that
// opens partial with every complete frame; a torn last frame (a cut
// inside it) is reported; a flipped byte in a middle frame gives a named
// damaged range, never a complete result.
func TestRecordingSIGKILL(t *testing.T) {
	e := newHeEnv(t)
	startChild(t)
	b := e.bridge()
	b.track("sleep")
	rec := b.startRecording(1)
	path := filepath.Join(recordingsDir(e), rec["name"].(string))
	waitUntil(t, "three frames on disk", func() bool { return framesIn(t, path).Frames >= 3 })
	pid := e.hostPID()
	syscall.Kill(pid, syscall.SIGKILL)
	waitUntil(t, "host gone", func() bool { return processGone(pid) })
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int
	in, err := recording.Read(data, nil)
	if err != nil || in.End != nil || in.Frames < 3 {
		t.Fatalf("killed file: %+v %v", in, err)
	}
	// Frame offsets, found by the documented layout.
	for off := 8; off+13 <= len(data); {
		n := int(uint32(data[off+4]) | uint32(data[off+5])<<8 | uint32(data[off+6])<<16 | uint32(data[off+7])<<24)
		if data[off+8] == recording.TypeSample {
			offs = append(offs, off)
		}
		off += 13 + n
	}
	dir := recordingsDir(e)
	torn := data[:offs[len(offs)-1]+10]
	os.WriteFile(filepath.Join(dir, "torn.log"), torn, 0o600)
	flipped := append([]byte(nil), data...)
	mid := offs[len(offs)/2]
	flipped[mid+12] ^= 0x20
	os.WriteFile(filepath.Join(dir, "flipped.log"), flipped, 0o600)

	// Nothing was in flight when the host was killed: the next call starts
	// a new host (and succeeds there), where logs are listed and opened.
	if m, isErr := b.call("get_status", nil); isErr {
		t.Fatalf("first call after the kill: %v", m)
	}
	ll := b.mustCall("list_logs", nil)
	ids := map[string]string{}
	for _, r := range dig(ll, "data", "rows").([]any) {
		row := r.(map[string]any)
		ids[row["name"].(string)] = row["log_id"].(string)
	}
	check := func(name string, frames uint64, want string) map[string]any {
		t.Helper()
		_, m := b.openLog(ids[name])
		if m["status"] != "partial" || len(m["warnings"].([]any)) != 1 {
			t.Fatalf("%s: %v", name, m)
		}
		w := m["warnings"].([]any)[0].(string)
		if !strings.Contains(w, "incomplete") || !strings.Contains(w, want) {
			t.Fatalf("%s warning: %s", name, w)
		}
		if got := dig(m, "data", "recording", "frames").(float64); uint64(got) != frames {
			t.Fatalf("%s: %v frames, want %d", name, got, frames)
		}
		return m
	}
	check(rec["name"].(string), in.Frames, "ends without its end record")
	m := check("torn.log", uint64(len(offs)-1), fmt.Sprintf("incomplete frame at byte %d", offs[len(offs)-1]))
	if dig(m, "data", "recording", "torn", "offset").(float64) != float64(offs[len(offs)-1]) {
		t.Fatalf("torn: %v", dig(m, "data", "recording", "torn"))
	}
	m = check("flipped.log", uint64(len(offs)-(len(offs)-len(offs)/2)), fmt.Sprintf("bytes %d to", mid))
	_ = m
}
