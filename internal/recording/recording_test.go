package recording

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/sample"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// synth returns snapshot k of a deterministic workload of n processes:
// RSS grows, CPU time advances, cpu_percent varies, one process (pid 7)
// is absent in frames 3..4, and fd_count is unavailable for odd pids.
func synth(k, n int) *sample.Snapshot {
	s := &sample.Snapshot{Seq: uint64(k + 1), Time: t0.Add(time.Duration(k) * time.Second)}
	for i := 0; i < n; i++ {
		pid := int32(i + 2)
		if pid == 7 && (k == 3 || k == 4) {
			continue
		}
		p := sample.Process{PID: pid, PPID: 1, StartTicks: uint64(1000 + i), StartTime: t0.Add(-time.Duration(i) * time.Minute),
			Name: "worker" + string(rune('a'+i%26)), Exe: "/usr/bin/worker", UID: 1000, UIDKnown: i%3 != 0}
		if i > 0 {
			p.PPID = 2 // child of the first process
		}
		p.Set(sample.PRSS, uint64(1<<20+k*4096*(i+1)))
		p.Set(sample.PCPUTime, uint64(k)*10_000_000*uint64(i%4))
		if k > 0 {
			p.Set(sample.PCPUPercent, sample.F(float64((k*i)%7)*0.5))
		}
		p.Set(sample.PThreads, uint64(1+i%5))
		if pid%2 == 0 {
			p.Set(sample.PFDs, uint64(3+k%2))
		}
		s.Procs = append(s.Procs, p)
	}
	s.System.Set(sample.SMemTotal, 8<<30)
	s.System.Set(sample.SMemUsed, uint64(2<<30+k*1000))
	s.System.Set(sample.SLoad1, sample.F(0.25*float64(k%4)))
	return s
}

func procsOf(s *sample.Snapshot) []*sample.Process {
	out := make([]*sample.Process, len(s.Procs))
	for i := range s.Procs {
		out[i] = &s.Procs[i]
	}
	return out
}

// record writes frames snapshots of n processes and returns the file bytes
// and the byte offset where each sample frame starts.
func record(t testing.TB, frames, n int, end bool) ([]byte, []int64) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{CreatedAt: t0, IntervalMs: 1000, Tracked: []string{"worker"}})
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for k := 0; k < frames; k++ {
		offs = append(offs, int64(buf.Len()))
		s := synth(k, n)
		if err := w.WriteSnapshot(s, procsOf(s)); err != nil {
			t.Fatal(err)
		}
	}
	if end {
		if _, err := w.Close("stopped"); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes(), offs
}

func TestRoundTrip(t *testing.T) {
	data, _ := record(t, 130, 12, true)
	l, err := LoadBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Info.Complete() || l.Info.Frames != 130 || l.Info.End == nil || l.Info.End.Frames != 130 {
		t.Fatalf("info %+v problems %v", l.Info, l.Info.Problems())
	}
	if len(l.Procs) != 12 || l.Interval != time.Second {
		t.Fatalf("procs %d interval %v", len(l.Procs), l.Interval)
	}
	for _, p := range l.Procs {
		want := 130
		if p.PID == 7 {
			want = 128
		}
		if p.Samples != want || p.Series.Len() != want {
			t.Fatalf("pid %d samples %d series %d want %d", p.PID, p.Samples, p.Series.Len(), want)
		}
		if p.PID > 2 && (!p.ParentOK || l.ProcByIndex(p.Parent).PID != 2) {
			t.Fatalf("pid %d parent not verified", p.PID)
		}
		// Every stored value equals what was written.
		k := 0
		p.Series.View().Each(func(ms int64, avail uint32, vals []uint64) bool {
			for k < 130 && synth(k, 12).Lookup(sample.Identity{PID: p.PID, StartTicks: p.StartTicks}) == nil {
				k++
			}
			src := synth(k, 12).Lookup(sample.Identity{PID: p.PID, StartTicks: p.StartTicks})
			if ms != t0.Add(time.Duration(k)*time.Second).UnixMilli() || avail != src.Avail {
				t.Fatalf("pid %d frame %d: at %d avail %b want %b", p.PID, k, ms, avail, src.Avail)
			}
			for i := 0; i < sample.NumProcessMetrics; i++ {
				if avail&(1<<uint(i)) != 0 && vals[i] != src.Vals[i] {
					t.Fatalf("pid %d frame %d slot %d: %d want %d", p.PID, k, i, vals[i], src.Vals[i])
				}
			}
			k++
			return true
		})
		if !p.InFinal || p.Final.Vals[sample.PRSS] != synth(129, 12).Lookup(sample.Identity{PID: p.PID, StartTicks: p.StartTicks}).Vals[sample.PRSS] {
			t.Fatalf("pid %d final frame differs", p.PID)
		}
	}
	if l.System.Len() != 130 || l.FinalSystem.Vals[sample.SMemUsed] != synth(129, 12).System.Vals[sample.SMemUsed] {
		t.Fatal("system series or final frame wrong")
	}
}

func TestCreateNeverOverwrites(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(p, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(p, Header{IntervalMs: 1000}); !errors.Is(err, os.ErrExist) {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "keep" {
		t.Fatal("existing file changed")
	}
}

// A file cut anywhere keeps every frame that ends before the cut and
// reports the torn rest; it is never complete.
func TestTornTail(t *testing.T) {
	data, offs := record(t, 20, 5, true)
	for _, cut := range []int64{offs[10] + 1, offs[10] + 12, offs[11] - 1, int64(len(data)) - 2} {
		l, err := LoadBytes(data[:cut])
		if err != nil {
			t.Fatal(err)
		}
		in := l.Info
		if in.Complete() || in.Torn == nil || in.End != nil {
			t.Fatalf("cut %d: %+v", cut, in)
		}
		want := uint64(0)
		for _, o := range offs {
			if o < cut {
				want++
			}
		}
		want-- // the frame the cut lies in
		if cut == int64(len(data))-2 {
			want = 20 // cut inside the end record
		}
		if in.Frames != want {
			t.Fatalf("cut %d: frames %d want %d", cut, in.Frames, want)
		}
		if in.Torn.Offset+in.Torn.Bytes != cut {
			t.Fatalf("cut %d: torn %+v", cut, in.Torn)
		}
	}
}

// A flipped byte in a middle frame: the reader names the damaged range,
// skips to the next keyframe, keeps every frame before and after, and
// never reports the file complete.
func TestFlippedByte(t *testing.T) {
	data, offs := record(t, 150, 8, true)
	bad := append([]byte(nil), data...)
	bad[offs[70]+20] ^= 0x40
	l, err := LoadBytes(bad)
	if err != nil {
		t.Fatal(err)
	}
	in := l.Info
	if in.Complete() || len(in.Damaged) != 1 {
		t.Fatalf("%+v", in)
	}
	d := in.Damaged[0]
	if d.Offset != offs[70] || d.End != offs[120] || d.AfterFrame != 69 || d.Skipped != 49 {
		t.Fatalf("damage %+v want offset %d end %d", d, offs[70], offs[120])
	}
	if in.Frames != 150-50 {
		t.Fatalf("frames %d", in.Frames)
	}
	if !strings.Contains(strings.Join(in.Problems(), " "), "damaged") {
		t.Fatal(in.Problems())
	}
	// Values after the resync are exact.
	p := l.Procs[0]
	var lastRSS uint64
	p.Series.View().Each(func(ms int64, avail uint32, vals []uint64) bool { lastRSS = vals[sample.PRSS]; return true })
	if lastRSS != synth(149, 8).Procs[0].Vals[sample.PRSS] {
		t.Fatal("value after resync differs")
	}
}

func TestFormatErrors(t *testing.T) {
	data, _ := record(t, 3, 2, true)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("NOTAREC!"), data[8:]...),
		"header":    append(append([]byte(nil), data[:20]...), 0xff),
		"truncated": data[:10],
	} {
		_, err := LoadBytes(b)
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestLoadBudget(t *testing.T) {
	data, _ := record(t, 10, 3, true)
	p := filepath.Join(t.TempDir(), "r.log")
	os.WriteFile(p, data, 0o600)
	var be *BudgetError
	if _, err := Load(p, Reservation(int64(len(data)))-1); !errors.As(err, &be) {
		t.Fatalf("err %v", err)
	}
	if l, err := Load(p, Reservation(int64(len(data)))); err != nil || l.Info.Frames != 10 {
		t.Fatalf("err %v", err)
	}
}

func FuzzRead(f *testing.F) {
	data, offs := record(f, 65, 3, true)
	f.Add(data)
	f.Add(data[:offs[30]+7])
	flipped := append([]byte(nil), data...)
	flipped[offs[2]+15] ^= 1
	f.Add(flipped)
	firstLen := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(firstLen[offs[0]+4:], 0xFFFFFFFF)
	f.Add(firstLen)
	// A file with a gap frame (frames lost to a failed write) before a
	// keyframe.
	var gapped bytes.Buffer
	gw, err := NewWriter(&gapped, Header{CreatedAt: t0, IntervalMs: 1000, Tracked: []string{"worker"}})
	if err != nil {
		f.Fatal(err)
	}
	for k := 0; k < 5; k++ {
		s := synth(k, 3)
		gw.WriteSnapshot(s, procsOf(s))
	}
	gw.gap = Gap{LostFrames: 2, From: synth(5, 0).Time, To: synth(6, 0).Time, Error: "no space left on device"}
	gw.forceKey = true
	for k := 7; k < 10; k++ {
		s := synth(k, 3)
		gw.WriteSnapshot(s, procsOf(s))
	}
	gw.Close("stopped")
	f.Add(gapped.Bytes())
	for _, fx := range fixtures {
		if b, err := os.ReadFile(filepath.Join("testdata", fx.name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := LoadBytes(b)
		if err != nil {
			return
		}
		in := l.Info
		if in.Complete() && (in.Torn != nil || len(in.Damaged) > 0 || in.End == nil || len(in.Gaps) > 0) {
			t.Fatal("complete with problems")
		}
		if _, ok := l.FinalTime(); ok != (in.Frames > 0) {
			t.Fatalf("final time known %v with %d frames", ok, in.Frames)
		}
		for _, d := range in.Damaged {
			switch d.Resumed {
			case ResumedKeyframe, ResumedSample, ResumedEndRecord, ResumedEndOfFile:
			default:
				t.Fatalf("damage without resumed_at: %+v", d)
			}
			if (d.AfterFrame < 0) != strings.Contains(d.Describe(), "before the first sample frame") || strings.Contains(d.Describe(), "frame -1") {
				t.Fatalf("position: %s", d.Describe())
			}
			if d.Offset < 0 || d.End < d.Offset || d.End > in.Size {
				t.Fatalf("range: %+v size %d", d, in.Size)
			}
		}
		n := 0
		for _, p := range l.Procs {
			n += p.Samples
			if p.Series.Len() != p.Samples {
				t.Fatal("series length differs from samples")
			}
		}
		_ = history.BlockSamples
	})
}
