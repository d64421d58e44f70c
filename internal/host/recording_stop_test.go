package host

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/recording"
	"github.com/inquest-dev/inquest/internal/sample"
)

// TestStopRecordingEndsWithTheLatestSample: the sampler publishes a
// snapshot (what get_metrics reads) before it hands it to its subscribers,
// the recorder among them. A stop_recording that lands in between still
// ends the log with that snapshot's frame. The test holds the sampler
// inside a subscriber of its own, after the publication; whether the
// recorder's subscriber already ran is map order, so 32 recordings are
// stopped there (without the fix, 10 runs of 10 had one that ended a
// sample short).
func TestStopRecordingEndsWithTheLatestSample(t *testing.T) {
	h := testHost(t, 20*time.Millisecond, nil)
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	s := h.NewSession()
	defer s.Close()
	mustCall(t, h, s, "update_tracking", map[string]any{"operation_id": "t1", "expected_revision": revision(t, h, s), "action": "add", "process_name": "nonexistent-proc"})
	for i := range 32 {
		d, _ := mustCall(t, h, s, "start_recording", map[string]any{"operation_id": fmt.Sprint("r", i), "expected_revision": revision(t, h, s), "interval_seconds": 1})
		out := d["outcome"].(map[string]any)
		path := filepath.Join(data, "inquest", "recordings", out["name"].(string))
		started := h.Sampler().Latest().Seq
		held, release := make(chan *sample.Snapshot, 1), make(chan struct{})
		armed := true
		unsub := h.Sampler().Subscribe(func(sn *sample.Snapshot) {
			// Runs on the sampler goroutine only: armed needs no lock.
			if armed && sn.Seq > started+1 {
				armed = false
				held <- sn
				<-release
			}
		})
		sn := <-held
		if l := h.Sampler().Latest(); l.Seq != sn.Seq {
			t.Fatalf("latest %d while the sampler holds %d", l.Seq, sn.Seq)
		}
		stop, _ := mustCall(t, h, s, "stop_recording", map[string]any{"operation_id": fmt.Sprint("s", i), "recording_session_id": out["recording_session_id"]})
		close(release)
		unsub()
		if stop["state"] != "succeeded" {
			t.Fatalf("stop: %v", stop)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var last int64
		in, err := recording.Read(b, func(f *recording.Frame) error { last = f.At; return nil })
		if err != nil || !in.Complete() {
			t.Fatalf("read %s: %v %+v", path, err, in)
		}
		if want := sn.Time.UnixMilli(); last != want {
			t.Fatalf("recording %d: last frame at %d ms, the newest sample (seq %d, published before the stop) at %d ms", i, last, sn.Seq, want)
		}
	}
}
