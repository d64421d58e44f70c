package recording

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"

	"github.com/inquest-dev/inquest/internal/testbuild"
)

// TestDiskFullGap: on a real full tmpfs the writer loses frames, not the
// recording. Frames whose write fails are counted; once space is free the
// partly written bytes are truncated away, a gap frame names the lost
// frames and their span, and a keyframe resumes the values exactly. A
// close while the disk is still full leaves a file that ends at its last
// complete frame without an end record, and the reader's wording does not
// claim a crash.
func TestDiskFullGap(t *testing.T) {
	dir := testbuild.SmallTmpfs(t, "256k")
	path := filepath.Join(dir, "r.log")
	w, err := Create(path, Header{CreatedAt: t0, IntervalMs: 1000, Tracked: []string{"worker"}})
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	put := func() error {
		s := synth(k, 12)
		k++
		return w.WriteSnapshot(s, procsOf(s))
	}
	for k < 5 {
		if err := put(); err != nil {
			t.Fatal(err)
		}
	}
	filler := testbuild.FillDisk(t, dir)
	// The log's last page may still hold a few frames; write until the
	// file system refuses one.
	firstLost := -1
	for i := 0; i < 10000 && firstLost < 0; i++ {
		if err := put(); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write on a full disk: %v", err)
			}
			firstLost = k - 1
		}
	}
	if firstLost < 0 {
		t.Fatal("the full tmpfs accepted every frame")
	}
	for i := 0; i < 3; i++ {
		if err := put(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("retry on a full disk: %v", err)
		}
	}
	if w.LostFrames() != 4 || w.Err() == nil {
		t.Fatalf("lost %d err %v, want 4 lost and the error kept", w.LostFrames(), w.Err())
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	resumed := k
	for i := 0; i < 5; i++ {
		if err := put(); err != nil {
			t.Fatalf("write after space was freed: %v", err)
		}
	}
	if w.Err() != nil {
		t.Fatal(w.Err())
	}
	end, err := w.Close("stopped")
	if err != nil || end.LostFrames != 4 {
		t.Fatalf("close: %v %+v", err, end)
	}
	l, err := Load(path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	in := l.Info
	if in.Torn != nil || len(in.Damaged) != 0 || in.End == nil || in.End.LostFrames != 4 {
		t.Fatalf("info: torn %+v damaged %+v end %+v", in.Torn, in.Damaged, in.End)
	}
	if in.Frames != uint64(firstLost+5) || len(in.Gaps) != 1 || in.LostFrames() != 4 || in.Complete() {
		t.Fatalf("frames %d gaps %+v complete %v (first lost %d)", in.Frames, in.Gaps, in.Complete(), firstLost)
	}
	g := in.Gaps[0]
	if g.AfterFrame != int64(firstLost-1) || !g.From.Equal(synth(firstLost, 1).Time) || !g.To.Equal(synth(resumed-1, 1).Time) ||
		!strings.Contains(g.Error, "no space left on device") {
		t.Fatalf("gap %+v", g)
	}
	p := strings.Join(in.Problems(), "\n")
	if !strings.Contains(p, "4 sample frames due from") || !strings.Contains(p, "no space left on device") {
		t.Fatalf("problems: %s", p)
	}
	// Every frame in the file holds exactly what was written: the frames
	// before the gap and the keyframe-resumed ones after it.
	var times []time.Time
	for _, pr := range l.Procs {
		if pr.PID != 3 {
			continue
		}
		pr.Series.View().Each(func(ms int64, avail uint32, vals []uint64) bool {
			times = append(times, time.UnixMilli(ms).UTC())
			var j int
			for j = 0; j < k && !synth(j, 12).Time.Equal(time.UnixMilli(ms)); j++ {
			}
			src := synth(j, 12).Lookup(sample.Identity{PID: pr.PID, StartTicks: pr.StartTicks})
			for i := range vals {
				if avail != src.Avail || (avail&(1<<uint(i)) != 0 && vals[i] != src.Vals[i]) {
					t.Fatalf("frame at %d slot %d: %d want %d", ms, i, vals[i], src.Vals[i])
				}
			}
			return true
		})
	}
	if len(times) != int(in.Frames) || !times[firstLost].Equal(synth(resumed, 1).Time) {
		t.Fatalf("pid 3 frame times %v", times)
	}

	// Closing while the disk is full: no end record, no torn bytes.
	w2, err := Create(filepath.Join(dir, "r2.log"), Header{CreatedAt: t0, IntervalMs: 1000, Tracked: []string{"worker"}})
	if err != nil {
		t.Fatal(err)
	}
	s := synth(0, 12)
	if err := w2.WriteSnapshot(s, procsOf(s)); err != nil {
		t.Fatal(err)
	}
	testbuild.FillDisk(t, dir)
	// System-only frames (tens of bytes) until one fails: the log's last
	// page then has less room than the gap frame and end record need.
	for i := 1; w2.LostFrames() == 0 && i < 10000; i++ {
		s := synth(i, 0)
		w2.WriteSnapshot(s, nil)
	}
	if _, err := w2.Close("stopped"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("close on a full disk: %v", err)
	}
	l2, err := Load(filepath.Join(dir, "r2.log"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	in2 := l2.Info
	if in2.End != nil || in2.Torn != nil || len(in2.Damaged) != 0 || in2.Frames != w2.Frames() {
		t.Fatalf("full close: end %+v torn %+v damaged %+v frames %d want %d", in2.End, in2.Torn, in2.Damaged, in2.Frames, w2.Frames())
	}
	// inquest log show prints Summary: it says the end record is missing
	// and what that can mean, not that the host crashed.
	var sum strings.Builder
	if err := l2.Summary(&sum); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.String(), "status:      incomplete") || !strings.Contains(sum.String(), "ends without its end record") ||
		!strings.Contains(sum.String(), "disk was full") || strings.Contains(sum.String(), "was interrupted") {
		t.Fatalf("summary:\n%s", sum.String())
	}
}
