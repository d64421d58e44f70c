package history

import (
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func ms(t time.Time) int64 { return t.UnixMilli() }

// The documented example: four stored samples 10, unavailable, 0, 20 over a
// ten-second request give counts 4, 3, 1; mean 10 (30/3); min 0, max 20.
func TestFourSampleExample(t *testing.T) {
	s := NewSeries(2, 0, UntrackedCapacity)
	vals := []struct {
		v  uint64
		ok bool
	}{{10, true}, {0, false}, {0, true}, {20, true}}
	for i, x := range vals {
		var av uint32
		if x.ok {
			av = 1
		}
		s.Append(t0.Add(time.Duration(i)*time.Second), av|2, []uint64{x.v, 7})
	}
	v := s.View()
	iv := Interval{From: ms(t0.Add(-3 * time.Second)), To: ms(t0.Add(7 * time.Second)), HasFrom: true, HasTo: true}
	sum := v.Summarize(iv, 0)
	if sum.SampleCount != 4 || sum.Available != 3 || sum.Missing != 1 {
		t.Fatalf("counts = %d %d %d, want 4 3 1", sum.SampleCount, sum.Available, sum.Missing)
	}
	if sum.Min != 0 || sum.Max != 20 || sum.First != 10 || sum.Last != 20 {
		t.Fatalf("min/max/first/last = %d %d %d %d", sum.Min, sum.Max, sum.First, sum.Last)
	}
	if n, d, _ := sum.MeanRational(); n != "10" || d != "1" {
		t.Fatalf("mean = %s/%s", n, d)
	}
	if sum.HasDelta {
		t.Fatal("delta without samples at the exact endpoints")
	}
	exact := Interval{From: ms(t0), To: ms(t0.Add(3 * time.Second)), HasFrom: true, HasTo: true}
	if d := v.Summarize(exact, 0); !d.HasDelta || d.IntDelta() != "10" {
		t.Fatalf("exact endpoints delta = %v %s", d.HasDelta, d.IntDelta())
	}
	// An endpoint whose value is unavailable gives no delta.
	unavail := Interval{From: ms(t0.Add(time.Second)), To: ms(t0.Add(3 * time.Second)), HasFrom: true, HasTo: true}
	if d := v.Summarize(unavail, 0); d.HasDelta {
		t.Fatal("delta with an unavailable endpoint")
	}
	// An empty interval: all counts zero, empty coverage.
	empty := Interval{From: ms(t0.Add(time.Hour)), To: ms(t0.Add(2 * time.Hour)), HasFrom: true, HasTo: true}
	if e := v.Summarize(empty, 0); e.SampleCount != 0 || e.Available != 0 || e.Missing != 0 {
		t.Fatalf("empty interval counts %+v", e)
	}
	if c := v.Coverage(empty); c.SampleCount != 0 || c.HasMaxInterval || !c.HasBounds {
		t.Fatalf("empty coverage %+v", c)
	}
	if c := v.Coverage(iv); c.SampleCount != 4 || c.MaxIntervalMs != 1000 || c.RetainedFrom != ms(t0) || c.RetainedTo != ms(t0.Add(3*time.Second)) {
		t.Fatalf("coverage %+v", c)
	}
}

func TestExactBeyond2p53(t *testing.T) {
	big1 := uint64(1)<<53 + 1
	vals := []uint64{big1, math.MaxUint64, big1 + 2, 0, math.MaxUint64 - 1}
	s := NewSeries(1, 0, UntrackedCapacity)
	for i, v := range vals {
		s.Append(t0.Add(time.Duration(i)*time.Second), 1, []uint64{v})
	}
	raw := s.View().Raw(Interval{}, []int{0})
	for i, r := range raw {
		if r.Vals[0] != vals[i] {
			t.Fatalf("sample %d = %d, want %d", i, r.Vals[0], vals[i])
		}
	}
	sum := s.View().Summarize(Interval{}, 0)
	want := new(big.Int)
	for _, v := range vals {
		want.Add(want, new(big.Int).SetUint64(v))
	}
	wr := new(big.Rat).SetFrac(want, big.NewInt(int64(len(vals))))
	n, d, _ := sum.MeanRational()
	if n != wr.Num().String() || d != wr.Denom().String() {
		t.Fatalf("mean %s/%s, want %s", n, d, wr.String())
	}
	if sum.Max != math.MaxUint64 || sum.Min != 0 {
		t.Fatalf("min/max %d %d", sum.Min, sum.Max)
	}
	exact := Interval{From: ms(t0), To: ms(t0.Add(time.Second)), HasFrom: true, HasTo: true}
	if d := s.View().Summarize(exact, 0); d.IntDelta() != new(big.Int).Sub(new(big.Int).SetUint64(math.MaxUint64), new(big.Int).SetUint64(big1)).String() {
		t.Fatalf("delta %s", d.IntDelta())
	}
}

func TestRetentionExactAndViewsImmutable(t *testing.T) {
	for _, capacity := range []int{1, 63, 64, 65, UntrackedCapacity, 1000} {
		s := NewSeries(3, 1<<2, capacity)
		var early *View
		for i := 0; i < 3*capacity+70; i++ {
			s.Append(t0.Add(time.Duration(i)*time.Second), 0b111, []uint64{uint64(i), uint64(i * i), math.Float64bits(float64(i) / 3)})
			if i == capacity/2 {
				early = s.View()
			}
			if s.Len() > capacity {
				t.Fatalf("cap %d: len %d", capacity, s.Len())
			}
		}
		n := 3*capacity + 70
		raw := s.View().Raw(Interval{}, []int{0, 1, 2})
		if len(raw) != capacity {
			t.Fatalf("cap %d: raw has %d", capacity, len(raw))
		}
		for k, r := range raw {
			i := n - capacity + k
			if r.Vals[0] != uint64(i) || r.Vals[1] != uint64(i*i) || math.Float64frombits(r.Vals[2]) != float64(i)/3 || r.At != ms(t0.Add(time.Duration(i)*time.Second)) {
				t.Fatalf("cap %d: sample %d = %+v", capacity, i, r)
			}
		}
		er := early.Raw(Interval{}, []int{0})
		if len(er) != capacity/2+1 || er[len(er)-1].Vals[0] != uint64(capacity/2) {
			t.Fatalf("cap %d: early view changed: %d samples", capacity, len(er))
		}
	}
}

func TestShrinkDiscards(t *testing.T) {
	s := NewSeries(1, 0, TrackedCapacity)
	for i := 0; i < 500; i++ {
		s.Append(t0.Add(time.Duration(i)*time.Second), 1, []uint64{uint64(i)})
	}
	s.SetCapacity(UntrackedCapacity)
	raw := s.View().Raw(Interval{}, []int{0})
	if len(raw) != UntrackedCapacity || raw[0].Vals[0] != 380 {
		t.Fatalf("after shrink: %d samples, first %d", len(raw), raw[0].Vals[0])
	}
	s.SetCapacity(TrackedCapacity)
	if s.Len() != UntrackedCapacity {
		t.Fatal("growing restored discarded samples")
	}
}

func TestRawSummaryAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := NewSeries(2, 2, TrackedCapacity)
	at := t0
	for i := 0; i < 3000; i++ {
		at = at.Add(time.Duration(900+r.IntN(300)) * time.Millisecond)
		av := uint32(r.IntN(4))
		s.Append(at, av, []uint64{r.Uint64() >> uint(r.IntN(64)), math.Float64bits(r.Float64() * 100)})
	}
	v := s.View()
	iv := Interval{From: ms(t0.Add(10 * time.Minute)), To: ms(t0.Add(40 * time.Minute)), HasFrom: true, HasTo: true}
	raw := v.Raw(iv, []int{0, 1})
	for slot := 0; slot < 2; slot++ {
		sum := v.Summarize(iv, slot)
		if sum.SampleCount != len(raw) {
			t.Fatalf("sample_count %d, raw %d", sum.SampleCount, len(raw))
		}
		avail := 0
		var first, last uint64
		for _, x := range raw {
			if x.Avail[slot] {
				if avail == 0 {
					first = x.Vals[slot]
				}
				last = x.Vals[slot]
				avail++
			}
		}
		if avail != sum.Available || first != sum.First || last != sum.Last {
			t.Fatalf("slot %d: raw avail %d first %d last %d; summary %+v", slot, avail, first, last, sum)
		}
	}
}

// FuzzSeriesRoundTrip appends arbitrary samples and checks that the ring
// returns exactly what was stored (the decoder only reads what the
// encoder wrote; this checks the encoding for every bit pattern).
func FuzzSeriesRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, uint8(5))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 128, 1, 3, 7}, uint8(200))
	f.Fuzz(func(t *testing.T, data []byte, capacity uint8) {
		c := int(capacity) + 1
		s := NewSeries(3, 1<<1, c)
		type smp struct {
			at   int64
			av   uint32
			vals [3]uint64
		}
		var want []smp
		at := int64(1_700_000_000_000)
		for len(data) >= 10 {
			at += int64(int8(data[0])) * 37
			x := smp{at: at, av: uint32(data[1]) & 7}
			for i := 0; i < 3; i++ {
				x.vals[i] = uint64(data[2+i]) << (data[5+i] % 64)
				x.vals[i] ^= uint64(data[8]) << 56
			}
			data = data[9:]
			s.Append(time.UnixMilli(x.at), x.av, x.vals[:])
			want = append(want, x)
		}
		if len(want) > c {
			want = want[len(want)-c:]
		}
		got := s.View().Raw(Interval{}, []int{0, 1, 2})
		if len(got) != len(want) {
			t.Fatalf("len %d want %d", len(got), len(want))
		}
		for i := range got {
			if got[i].At != want[i].at {
				t.Fatalf("time %d", i)
			}
			for k := 0; k < 3; k++ {
				wantAv := want[i].av&(1<<uint(k)) != 0
				if k == 1 && wantAv {
					f := math.Float64frombits(want[i].vals[k])
					wantAv = !math.IsNaN(f) && !math.IsInf(f, 0)
				}
				if got[i].Avail[k] != wantAv || (wantAv && got[i].Vals[k] != want[i].vals[k]) {
					t.Fatalf("sample %d slot %d: %v %d want %v %d", i, k, got[i].Avail[k], got[i].Vals[k], wantAv, want[i].vals[k])
				}
			}
		}
	})
}

// synth models one process's metrics at 1 Hz: CPU time grows by whole
// clock ticks, cpu_percent follows from ticks over a jittered interval
// (a full-mantissa float, as the collector produces), RSS and virtual size
// change in pages now and then, faults, I/O and context switches grow by
// small counts.
type synth struct {
	r    *rand.Rand
	at   time.Time
	vals [sample.NumProcessMetrics]uint64
}

func newSynth(seed uint64) *synth {
	s := &synth{r: rand.New(rand.NewPCG(seed, seed*7+1)), at: t0}
	s.vals[sample.PRSS] = 30<<20 + uint64(s.r.IntN(1<<20))*4096
	s.vals[sample.PVirtual] = 1<<30 + uint64(s.r.IntN(1<<16))*4096
	s.vals[sample.PThreads] = uint64(1 + s.r.IntN(40))
	s.vals[sample.PFDs] = uint64(3 + s.r.IntN(200))
	return s
}

func (s *synth) next() (time.Time, uint32, []uint64) {
	r := s.r
	interval := time.Second + time.Duration(r.IntN(4_000_000)) - 2*time.Millisecond
	s.at = s.at.Add(interval)
	ticks := uint64(0)
	if r.IntN(3) == 0 {
		ticks = uint64(r.IntN(20))
	}
	s.vals[sample.PCPUTime] += ticks * 10_000_000
	s.vals[sample.PCPUPercent] = math.Float64bits(float64(ticks*10_000_000) / float64(interval) * 100 / 2)
	if r.IntN(5) == 0 {
		s.vals[sample.PRSS] += uint64(r.IntN(64)-32) * 4096
	}
	if r.IntN(50) == 0 {
		s.vals[sample.PVirtual] += uint64(r.IntN(256)) * 4096
	}
	if r.IntN(100) == 0 {
		s.vals[sample.PThreads] += uint64(r.IntN(3)) - 1
	}
	if r.IntN(20) == 0 {
		s.vals[sample.PFDs] += uint64(r.IntN(3)) - 1
	}
	s.vals[sample.PMinorFaults] += uint64(r.IntN(100))
	if r.IntN(200) == 0 {
		s.vals[sample.PMajorFaults]++
	}
	if r.IntN(4) == 0 {
		s.vals[sample.PReadBytes] += uint64(r.IntN(64)) * 4096
		s.vals[sample.PWriteBytes] += uint64(r.IntN(64)) * 4096
	}
	s.vals[sample.PVolCtx] += uint64(r.IntN(50))
	s.vals[sample.PInvolCtx] += uint64(r.IntN(5))
	return s.at, 1<<sample.NumProcessMetrics - 1, s.vals[:]
}

// fixedSeries is the reference: a plain fixed-width columnar ring (int64
// time, one uint64 column per metric, a uint32 availability column), the
// layout a straightforward implementation would use.
type fixedSeries struct {
	at    []int64
	avail []uint32
	cols  [sample.NumProcessMetrics][]uint64
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkTrackedMemory measures the heap held by 1,000 tracked lifetimes
// x 7,200 samples of every process metric, in bytes per process-sample,
// beside the fixed-width columnar reference built in the same run.
func BenchmarkTrackedMemory(b *testing.B) {
	const lifetimes, samples = 1000, TrackedCapacity
	for range b.N {
		before := heap()
		rings := make([]*Series, lifetimes)
		for i := range rings {
			rings[i] = NewSeries(sample.NumProcessMetrics, procFloat, TrackedCapacity)
			g := newSynth(uint64(i))
			for k := 0; k < samples; k++ {
				rings[i].Append(g.next())
			}
		}
		ours := float64(heap()-before) / float64(lifetimes*samples)
		runtime.KeepAlive(rings)
		rings = nil

		// Worst case: every value random (nothing compresses).
		before = heap()
		worst := make([]*Series, 100)
		r := rand.New(rand.NewPCG(9, 9))
		vals := make([]uint64, sample.NumProcessMetrics)
		for i := range worst {
			worst[i] = NewSeries(sample.NumProcessMetrics, procFloat, TrackedCapacity)
			for k := 0; k < samples; k++ {
				for j := range vals {
					vals[j] = r.Uint64()
				}
				worst[i].Append(t0.Add(time.Duration(k)*time.Second), 1<<sample.NumProcessMetrics-1, vals)
			}
		}
		worstB := float64(heap()-before) / float64(100*samples)
		runtime.KeepAlive(worst)
		worst = nil

		before = heap()
		ref := make([]*fixedSeries, 100)
		for i := range ref {
			f := &fixedSeries{at: make([]int64, samples), avail: make([]uint32, samples)}
			for c := range f.cols {
				f.cols[c] = make([]uint64, samples)
			}
			g := newSynth(uint64(i))
			for k := 0; k < samples; k++ {
				at, av, v := g.next()
				f.at[k], f.avail[k] = at.UnixMilli(), av
				for c := range f.cols {
					f.cols[c][k] = v[c]
				}
			}
			ref[i] = f
		}
		refB := float64(heap()-before) / float64(100*samples)
		runtime.KeepAlive(ref)
		b.ReportMetric(ours, "B/process-sample")
		b.ReportMetric(worstB, "B/process-sample-random")
		b.ReportMetric(refB, "B/process-sample-fixedwidth-ref")
	}
}

// BenchmarkAppend times one Append of a full process sample.
func BenchmarkAppend(b *testing.B) {
	s := NewSeries(sample.NumProcessMetrics, procFloat, TrackedCapacity)
	g := newSynth(1)
	for b.Loop() {
		s.Append(g.next())
	}
}

// BenchmarkSummarizeTracked times a summary over a full tracked ring.
func BenchmarkSummarizeTracked(b *testing.B) {
	s := NewSeries(sample.NumProcessMetrics, procFloat, TrackedCapacity)
	g := newSynth(1)
	for range TrackedCapacity {
		s.Append(g.next())
	}
	v := s.View()
	for b.Loop() {
		v.Summarize(Interval{}, sample.PRSS)
	}
}

// A wall-clock step back stores samples out of time order; interval
// queries still count every stored sample inside the interval.
func TestClockStepBack(t *testing.T) {
	s := NewSeries(1, 0, UntrackedCapacity)
	at := []time.Duration{0, 10 * time.Second, 20 * time.Second, 5 * time.Second, 6 * time.Second}
	for i, d := range at {
		s.Append(t0.Add(d), 1, []uint64{uint64(i)})
	}
	iv := Interval{From: ms(t0), To: ms(t0.Add(7 * time.Second)), HasFrom: true, HasTo: true}
	if got := s.View().Summarize(iv, 0); got.SampleCount != 3 || got.Last != 4 {
		t.Fatalf("summary %+v", got)
	}
	if got := s.View().Raw(iv, []int{0}); len(got) != 3 {
		t.Fatalf("raw %d", len(got))
	}
}
