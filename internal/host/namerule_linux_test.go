//go:build linux

package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/recording"
)

// TestNameRuleTrackingAndRecording: a process started through a symlink
// "pyx3" to an executable "pyx3.11" (comm pyx3, exe base name pyx3.11, as
// python3 → python3.11) and one whose only distinguishing name is argv[0]
// ("confload") are tracked by live history and recorded alike:
// start_recording lists each tracked name with the identity it names now
// and warns for a name that names none; the recording holds both.
func TestNameRuleTrackingAndRecording(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	real := filepath.Join(dir, "pyx3.11")
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pyx3.11", filepath.Join(dir, "pyx3")); err != nil {
		t.Fatal(err)
	}
	start := func(path, argv0 string) *exec.Cmd {
		c := exec.Command(path, "600")
		c.Args[0] = argv0
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	py := start(filepath.Join(dir, "pyx3"), filepath.Join(dir, "pyx3"))
	conf := start(real, "/srv/bin/confload")

	h := testHost(t, 100*time.Millisecond, nil)
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	s := h.NewSession()
	defer s.Close()
	refPy, idPy := rankRefOf(t, h, py.Process.Pid)
	refConf, idConf := rankRefOf(t, h, conf.Process.Pid)
	if p := h.Sampler().Latest().Find(int32(py.Process.Pid)); p.Comm != "pyx3" || p.Name != "pyx3.11" {
		t.Fatalf("fixture: comm %q name %q, want pyx3 and pyx3.11", p.Comm, p.Name)
	}
	for i, n := range []string{"pyx3", "confload", "nosuchproc-31"} {
		mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "t" + string(rune('a'+i)), "expected_revision": revision(t, h, s), "action": "add", "process_name": n})
	}
	tracked := map[int32]bool{}
	for _, l := range h.HistoryStore().Tracked() {
		tracked[l.ID.PID] = true
	}
	if !tracked[idPy.PID] || !tracked[idConf.PID] {
		t.Errorf("live tracking: pyx3 %v, confload %v; want both", tracked[idPy.PID], tracked[idConf.PID])
	}

	d, res := mustCall(t, h, s, "start_recording", map[string]any{"operation_id": "r1", "expected_revision": revision(t, h, s), "interval_seconds": 1})
	out := d["outcome"].(map[string]any)
	want := map[string]string{"pyx3": refPy, "confload": refConf, "nosuchproc-31": ""}
	for _, m := range out["name_matches"].([]any) {
		m := m.(map[string]any)
		ids := m["identities"].([]any)
		ref := want[m["name"].(string)]
		switch {
		case ref == "" && (m["count"].(float64) != 0 || len(ids) != 0):
			t.Errorf("%v matches %v", m["name"], ids)
		case ref != "" && (m["count"].(float64) != 1 || len(ids) != 1 || ids[0].(map[string]any)["process_ref"] != ref):
			t.Errorf("%v: %v, want %s", m["name"], m, ref)
		}
		delete(want, m["name"].(string))
	}
	if len(want) != 0 {
		t.Errorf("names missing from name_matches: %v", want)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `"nosuchproc-31"`) {
		t.Errorf("warnings %q, want one for nosuchproc-31", res.Warnings)
	}
	path := filepath.Join(data, "inquest", "recordings", out["name"].(string))
	waitFor(t, 3*time.Minute, "two frames", func() bool { return readRecording(t, path).Frames >= 2 })
	mustCall(t, h, s, "stop_recording", map[string]any{"operation_id": "s1", "recording_session_id": out["recording_session_id"]})
	l, err := recording.Load(path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]bool{}
	for _, p := range l.Procs {
		got[p.PID] = p.Samples > 0
	}
	if !got[idPy.PID] || !got[idConf.PID] {
		t.Errorf("recorded: pyx3 %v, confload %v; want both", got[idPy.PID], got[idConf.PID])
	}
}
