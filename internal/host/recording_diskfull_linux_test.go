package host

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/recording"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestRecordingDiskFull runs a real host recording into a real 1 MiB
// tmpfs: a start on the full disk is RESOURCE_LIMIT (not retryable,
// details.directory) and leaves no file; when the disk fills during a
// recording get_recording and get_status carry write_error and a warning,
// the frames due meanwhile are counted as lost, and once space is freed
// the recording resumes: the log holds a gap frame counting them, frames
// after it and an end record. A stop while the disk is still full fails
// with RESOURCE_LIMIT and leaves a log that ends at its last complete
// frame, whose summary does not claim a crash.
func TestRecordingDiskFull(t *testing.T) {
	base := testbuild.SmallTmpfs(t, "1m")
	t.Setenv("XDG_DATA_HOME", base)
	dir := filepath.Join(base, "inquest", "recordings")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// 150 tracked processes make every frame a few KiB, so the log's last
	// page cannot absorb many frames once the disk is full.
	bin := filepath.Join(t.TempDir(), "inqfullsleep")
	src, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Skip("no /bin/sleep")
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 150; i++ {
		c := exec.Command(bin, "600")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}

	h := testHost(t, 100*time.Millisecond, nil)
	s := h.NewSession()
	defer s.Close()
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "t1", "expected_revision": revision(t, h, s), "action": "add", "process_name": "inqfullsleep"})
	n := 0
	start := func() (map[string]any, error) {
		n++
		d, _, err := call(t, h, s, "start_recording", map[string]any{"operation_id": fmt.Sprintf("start-%d", n), "expected_revision": revision(t, h, s), "interval_seconds": 1})
		return d, err
	}
	stop := func(sid string) (map[string]any, error) {
		n++
		d, _, err := call(t, h, s, "stop_recording", map[string]any{"operation_id": fmt.Sprintf("stop-%d", n), "recording_session_id": sid})
		return d, err
	}
	recState := func() map[string]any {
		d, _ := mustCall(t, h, s, "get_recording", map[string]any{})
		return d
	}

	// 1. Start on a full disk.
	filler := testbuild.FillDisk(t, base)
	_, err = start()
	e := wantCode(t, err, contract.CodeResourceLimit)
	if e.Retryable || e.Details["directory"] != dir {
		t.Fatalf("start on a full disk: %+v", e)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed start left %d files", len(ents))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}

	// 2. The disk fills during a recording, then space is freed.
	d, err := start()
	if err != nil {
		t.Fatal(err)
	}
	out := d["outcome"].(map[string]any)
	sid, path := out["recording_session_id"].(string), filepath.Join(dir, out["name"].(string))
	waitFor(t, 3*time.Minute, "a first frame", func() bool {
		st, err := os.Stat(path)
		return err == nil && st.Size() > 8<<10
	})
	filler = testbuild.FillDisk(t, base)
	waitFor(t, 3*time.Minute, "two lost frames", func() bool {
		g := recState()
		lf, _ := g["lost_frames"].(float64)
		return g["write_error"] != nil && lf >= 2
	})
	g, res := mustCall(t, h, s, "get_recording", map[string]any{})
	if we, _ := g["write_error"].(string); !strings.Contains(we, "no space left on device") || len(res.Warnings) == 0 {
		t.Fatalf("get_recording on a full disk: %v warnings %v", g, res.Warnings)
	}
	st, res := mustCall(t, h, s, "get_status", map[string]any{})
	rec := st["recording"].(map[string]any)
	if we, _ := rec["write_error"].(string); rec["active"] != true || !strings.Contains(we, "no space left on device") || rec["lost_frames"] == nil {
		t.Fatalf("get_status recording on a full disk: %v", rec)
	}
	if !contains(res.Warnings, RecordingWriteWarning) {
		t.Fatalf("get_status warnings on a full disk: %v", res.Warnings)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	before := readRecording(t, path).Frames
	waitFor(t, 3*time.Minute, "frames after the disk was freed", func() bool {
		return recState()["write_error"] == nil && readRecording(t, path).Frames >= before+2
	})
	if _, res := mustCall(t, h, s, "get_status", map[string]any{}); contains(res.Warnings, RecordingWriteWarning) {
		t.Fatal("get_status still warns after the recording resumed")
	}
	d, err = stop(sid)
	if err != nil {
		t.Fatal(err)
	}
	out = d["outcome"].(map[string]any)
	in := readRecording(t, path)
	lost := uint64(out["lost_frames"].(float64))
	if lost < 2 || in.End == nil || in.End.LostFrames != lost || in.LostFrames() != lost || len(in.Gaps) == 0 ||
		in.Torn != nil || len(in.Damaged) != 0 || uint64(out["frames"].(float64)) != in.Frames {
		t.Fatalf("resumed log: outcome %v info end %+v gaps %+v torn %+v damaged %+v frames %d", out, in.End, in.Gaps, in.Torn, in.Damaged, in.Frames)
	}
	if g := in.Gaps[0]; g.AfterFrame < 0 || uint64(g.AfterFrame) >= in.Frames-1 || !strings.Contains(g.Error, "no space left on device") {
		t.Fatalf("gap %+v of %d frames", g, in.Frames)
	}

	// 3. A stop while the disk is still full.
	d, err = start()
	if err != nil {
		t.Fatal(err)
	}
	out = d["outcome"].(map[string]any)
	sid, path = out["recording_session_id"].(string), filepath.Join(dir, out["name"].(string))
	waitFor(t, 3*time.Minute, "a first frame", func() bool {
		st, err := os.Stat(path)
		return err == nil && st.Size() > 8<<10
	})
	testbuild.FillDisk(t, base)
	waitFor(t, 3*time.Minute, "a lost frame", func() bool { return recState()["write_error"] != nil })
	// The gap frame and end record are small: they usually fit in the
	// room the log's last page still has. Either the log is closed with
	// them, or the stop fails with RESOURCE_LIMIT and the log ends at its
	// last complete frame; both are checked.
	d, err = stop(sid)
	if recState()["active"] != false {
		t.Fatal("the stop left the recording active")
	}
	l, lerr := recording.Load(path, 1<<30)
	if lerr != nil {
		t.Fatal(lerr)
	}
	in = l.Info
	if in.Torn != nil || len(in.Damaged) != 0 || in.Frames == 0 {
		t.Fatalf("log stopped on a full disk: torn %+v damaged %+v frames %d", in.Torn, in.Damaged, in.Frames)
	}
	if err == nil {
		out = d["outcome"].(map[string]any)
		if lost := uint64(out["lost_frames"].(float64)); lost == 0 || in.End == nil || in.End.LostFrames != lost || in.LostFrames() != lost {
			t.Fatalf("stopped on a full disk: outcome %v end %+v gaps %+v", out, in.End, in.Gaps)
		}
	} else {
		e = wantCode(t, err, contract.CodeResourceLimit)
		if e.Retryable || e.Details["directory"] != dir || e.Details["outcome"] == nil || in.End != nil {
			t.Fatalf("stop on a full disk: %+v end %+v", e, in.End)
		}
		var sum bytes.Buffer
		if err := l.Summary(io.Writer(&sum)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sum.String(), "ends without its end record") || strings.Contains(sum.String(), "was interrupted") {
			t.Fatalf("summary of a log closed on a full disk:\n%s", sum.String())
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
