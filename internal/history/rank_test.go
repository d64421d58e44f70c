package history

import (
	"math"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

// smp is one stored smp of a two-slot series: slot 0 integer, slot
// 1 float; ok0/ok1 say which are available.
type smp struct {
	at       int // seconds after t0
	i        uint64
	f        float64
	ok0, ok1 bool
}

func windowSeries(samples []smp) *View {
	s := NewSeries(2, 1<<1, TrackedCapacity)
	for _, x := range samples {
		var av uint32
		if x.ok0 {
			av |= 1
		}
		if x.ok1 {
			av |= 2
		}
		s.Append(t0.Add(time.Duration(x.at)*time.Second), av, []uint64{x.i, sample.F(x.f)})
	}
	return s.View()
}

// TestWindowAggregate: each aggregate over the samples a lifetime has
// inside a window; increase is the sum of the increments between adjacent
// available samples there; unknown stays unknown with its reason.
func TestWindowAggregate(t *testing.T) {
	counter := []smp{{0, 100, 0, true, true}, {1, 150, 50, true, true}, {2, 0, 0, false, false}, {3, 400, 12.5, true, true}, {4, 1000, 100, true, true}}
	iv := func(from, to int) Interval {
		return Interval{From: ms(t0.Add(time.Duration(from) * time.Second)), To: ms(t0.Add(time.Duration(to) * time.Second)), HasFrom: true, HasTo: true}
	}
	for _, tc := range []struct {
		name    string
		samples []smp
		iv      Interval
		slot    int
		agg     string
		want    string // integer value, or "" when not OK
		wantF   float64
		reason  string
		n, avl  int
		wantDen string
	}{
		{name: "increase inside the window", samples: counter, iv: iv(1, 3), slot: 0, agg: AggIncrease, want: "250", n: 3, avl: 2},
		{name: "increase over all", samples: counter, iv: iv(-10, 10), slot: 0, agg: AggIncrease, want: "900", n: 5, avl: 4},
		{name: "increase needs two values", samples: counter, iv: iv(2, 3), slot: 0, agg: AggIncrease, reason: "single_value", n: 2, avl: 1},
		{name: "no samples", samples: counter, iv: iv(20, 30), slot: 0, agg: AggIncrease, reason: "no_samples"},
		{name: "no available value", samples: counter, iv: iv(2, 2), slot: 0, agg: AggMax, reason: "no_available_value", n: 1},
		{name: "a counter that decreased", samples: []smp{{0, 10, 0, true, false}, {1, 5, 0, true, false}, {2, 20, 0, true, false}}, iv: iv(0, 2), slot: 0, agg: AggIncrease, reason: "counter_decreased", n: 3, avl: 3},
		{name: "last of a counter", samples: counter, iv: iv(0, 3), slot: 0, agg: AggLast, want: "400", n: 4, avl: 3},
		{name: "max", samples: counter, iv: iv(0, 3), slot: 0, agg: AggMax, want: "400", n: 4, avl: 3},
		{name: "integer mean is exact", samples: counter, iv: iv(0, 3), slot: 0, agg: AggMean, want: "650", wantDen: "3", n: 4, avl: 3},
		{name: "whole integer mean", samples: counter, iv: iv(0, 1), slot: 0, agg: AggMean, want: "125", n: 2, avl: 2},
		{name: "float mean", samples: counter, iv: iv(0, 4), slot: 1, agg: AggMean, wantF: 162.5 / 4, n: 5, avl: 4},
		{name: "float max", samples: counter, iv: iv(0, 3), slot: 1, agg: AggMax, wantF: 50, n: 4, avl: 3},
		{name: "non-finite float is unavailable", samples: []smp{{0, 0, math.Inf(1), false, true}}, iv: iv(0, 0), slot: 1, agg: AggMean, reason: "no_available_value", n: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := windowSeries(tc.samples).Window(tc.iv, tc.slot)
			if w.SampleCount != tc.n || w.Available != tc.avl {
				t.Fatalf("counts %d/%d, want %d/%d", w.SampleCount, w.Available, tc.n, tc.avl)
			}
			v := w.Aggregate(tc.agg, tc.slot == 1)
			if tc.reason != "" {
				if v.OK || v.Reason != tc.reason {
					t.Fatalf("got OK %v reason %q, want %q", v.OK, v.Reason, tc.reason)
				}
				return
			}
			if !v.OK {
				t.Fatalf("not OK: %s", v.Reason)
			}
			if tc.slot == 1 {
				if v.Float != tc.wantF {
					t.Fatalf("float %v, want %v", v.Float, tc.wantF)
				}
				return
			}
			if v.Int.String() != tc.want {
				t.Fatalf("value %s, want %s", v.Int, tc.want)
			}
			den := ""
			if v.Den != nil {
				den = v.Den.String()
			}
			if den != tc.wantDen {
				t.Fatalf("denominator %q, want %q", den, tc.wantDen)
			}
		})
	}
}

// TestValueCmp: values compare exactly, rationals included.
func TestValueCmp(t *testing.T) {
	v := windowSeries([]smp{{0, 1, 0, true, false}, {1, 2, 0, true, false}}).Window(Interval{}, 0)
	mean := v.Aggregate(AggMean, false) // 3/2
	last := v.Aggregate(AggLast, false) // 2
	first := windowSeries([]smp{{0, 1, 0, true, false}}).Window(Interval{}, 0).Aggregate(AggMean, false)
	if mean.Cmp(last) >= 0 || last.Cmp(mean) <= 0 || mean.Cmp(first) <= 0 || mean.Cmp(mean) != 0 {
		t.Fatal("rational comparison")
	}
}

// TestStoreViewsAndPruned: Views lists every lifetime with samples under
// one lock; pruning an ended lifetime with samples is recorded.
func TestStoreViewsAndPruned(t *testing.T) {
	st := NewStore()
	now := t0
	st.now = func() time.Time { return now }
	snap := func(seq uint64, at time.Time, pids ...int32) *sample.Snapshot {
		s := &sample.Snapshot{Seq: seq, Time: at}
		for _, p := range pids {
			pr := sample.Process{PID: p, StartTicks: uint64(p), Name: "p"}
			pr.Set(sample.PCPUTime, uint64(seq)*1000)
			s.Procs = append(s.Procs, pr)
		}
		return s
	}
	st.Apply(snap(1, t0, 10, 11))
	st.Apply(snap(2, t0.Add(time.Second), 10))
	if vs := st.Views(); len(vs) != 2 {
		t.Fatalf("%d views", len(vs))
	}
	if p := st.PrunedLifetimes(); p.Count != 0 {
		t.Fatalf("pruned %+v before any prune", p)
	}
	now = t0.Add(EndedUntrackedAge + 2*time.Second)
	st.Apply(snap(3, now, 10))
	p := st.PrunedLifetimes()
	if p.Count != 1 || p.LastMs != ms(t0) {
		t.Fatalf("pruned %+v, want one with last sample at t0", p)
	}
	if vs := st.Views(); len(vs) != 1 || vs[0].ID.PID != 10 || vs[0].View.Len() != 3 {
		t.Fatalf("views after prune: %+v", vs)
	}
}

// BenchmarkRankWindow1000: the work of one rank_processes call over 1,000
// untracked lifetimes with full rings (120 samples of every process
// metric): one Views, then one Window and Aggregate per lifetime.
func BenchmarkRankWindow1000(b *testing.B) {
	st := NewStore()
	for seq := uint64(1); seq <= UntrackedCapacity; seq++ {
		s := &sample.Snapshot{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second)}
		for p := int32(1); p <= 1000; p++ {
			pr := sample.Process{PID: p, StartTicks: 1, Name: "p"}
			for i := 0; i < sample.NumProcessMetrics; i++ {
				pr.Set(i, uint64(seq)*uint64(p)*uint64(i+1))
			}
			pr.Set(sample.PCPUPercent, sample.F(float64(p%100)))
			s.Procs = append(s.Procs, pr)
		}
		st.Apply(s)
	}
	iv := Interval{From: ms(t0.Add(60 * time.Second)), To: ms(t0.Add(120 * time.Second)), HasFrom: true, HasTo: true}
	b.ResetTimer()
	for b.Loop() {
		for _, lv := range st.Views() {
			lv.View.Window(iv, sample.PCPUTime).Aggregate(AggIncrease, false)
		}
	}
}
