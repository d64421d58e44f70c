package history

import (
	"math"
	"math/big"
	"math/bits"
	"sort"

	"github.com/inquest-dev/inquest/internal/sample"
)

// Aggregates of a window (rank_processes). Increase suits cumulative
// counters; Max, Mean and Last suit gauges; Last also suits counters (the
// lifetime's total at its last sample inside the window).
const (
	AggIncrease = "increase"
	AggMax      = "max"
	AggMean     = "mean"
	AggLast     = "last"
	// AggSlope is the least-squares slope of a gauge's available values
	// against their sample times, in the metric's unit per second.
	AggSlope = "slope"
)

// LifetimeView is one retained lifetime with its frozen ring, taken with
// every other lifetime under one lock by Store.Views.
type LifetimeView struct {
	Lifetime
	View *View
	// Child holds the steps of the lifetime's reaped-children CPU time,
	// oldest first (empty when the platform does not expose it);
	// ChildTrimmed says older steps were dropped.
	Child        []ChildStep
	ChildTrimmed bool
}

// ChildAt returns the reaped-children CPU time (ns) the lifetime had at
// ms: the last step at or before ms. seen is false when no step is that
// old: the lifetime was first seen later, or (ChildTrimmed) the steps
// that old were dropped.
func (lv *LifetimeView) ChildAt(ms int64) (ns uint64, seen bool) {
	i := sort.Search(len(lv.Child), func(i int) bool { return lv.Child[i].Ms > ms })
	if i == 0 {
		return 0, false
	}
	return lv.Child[i-1].Ns, true
}

// Views returns every retained lifetime with a frozen view of its ring,
// all taken under one lock: one immutable view of the whole retained
// history, so a ranking never mixes two sampling
// states. Lifetimes with no samples are left out. Order is unspecified.
func (st *Store) Views() []LifetimeView {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]LifetimeView, 0, len(st.procs))
	for _, e := range st.procs {
		if e.series.Len() == 0 {
			continue
		}
		out = append(out, LifetimeView{Lifetime: e.snapshot(), View: e.series.View(), Child: e.child, ChildTrimmed: e.childTrimmed})
	}
	return out
}

// Pruned says what identity pruning has removed since the store started:
// Count lifetimes that had samples, the latest of whose last samples was
// at LastMs (ms since the Unix epoch; meaningful when Count > 0). A window
// ending at or after LastMs may miss lifetimes that had samples inside it.
// Tracked counts those of them that were tracked (pruned beyond
// MaxEndedTracked ended tracked lifetimes), Untracked the others (beyond
// MaxEndedUntracked, or ended more than EndedUntrackedAge ago).
type Pruned struct {
	Count              int
	LastMs             int64
	Tracked, Untracked int
}

// PrunedLifetimes returns what identity pruning has removed so far.
func (st *Store) PrunedLifetimes() Pruned {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pruned
}

// Bounds of the CPU-accounting records of pruned lifetimes.
const (
	// MaxPrunedCPU bounds the records kept (oldest dropped); records
	// older than EndedUntrackedAge are dropped too.
	MaxPrunedCPU = 4096
	// MaxPrunedLineage bounds the samples one record keeps (the newest).
	MaxPrunedLineage = 128
)

// PrunedCPU is what CPU accounting keeps of an ended lifetime that
// identity pruning removed: when it was reaped, by whom, and the CPU its
// line had spent by each of its retained samples, so a window in which
// it was reaped can still take off its reaper's row the part spent
// before the window.
type PrunedCPU struct {
	ID sample.Identity
	// LastPPID is its parent PID in the last snapshot that listed it.
	LastPPID int32
	// EndedAtMs is Lifetime.EndedAt, FirstMs its first retained sample
	// (ms since the Unix epoch); Whole says the ring still held its first
	// sample (so it started at or after FirstMs's previous sample).
	EndedAtMs, FirstMs int64
	Whole              bool
	// Lineage holds, per retained sample (newest MaxPrunedLineage), Ms
	// and Ns = cpu_time_ns + reaped-children CPU at that sample.
	Lineage []ChildStep
}

// PrunedCPURecords returns the accounting records of pruned lifetimes,
// oldest first.
func (st *Store) PrunedCPURecords() []PrunedCPU {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.prunedCPU[:len(st.prunedCPU):len(st.prunedCPU)]
}

// notePruned records that e is being pruned (the caller holds st.mu).
func (st *Store) notePruned(e *entry) {
	if e.series.Len() == 0 {
		return
	}
	st.keepPrunedCPU(e)
	st.pruned.Count++
	if e.Tracked {
		st.pruned.Tracked++
	} else {
		st.pruned.Untracked++
	}
	st.pruned.LastMs = max(st.pruned.LastMs, e.series.prevMs)
}

// Window is what one lifetime's stored samples inside an interval say
// about one slot: the get_history summary counts (SampleCount stored
// samples inside, Available of them with a finite value), and over the
// available values: Min, Max, First/FirstAt, Last/LastAt, the exact sum
// (128-bit SumHi:SumLo for integer slots, FloatSum for float slots), and
// Decreased, set when an available value is below the previous available
// one (never expected of a lifetime's cumulative counter).
type Window struct {
	Summary
	Decreased bool
	gauge     bool // set by Gauge: increase may be negative
	// Least-squares sums over the available values: t in seconds since
	// FirstAt, x the value minus First (float slots: as float64).
	st, sx, stt, stx float64
}

// Window computes the window statistics of slot over every stored sample
// inside iv, in one pass.
func (v *View) Window(iv Interval, slot int) Window {
	var w Window
	s := &w.Summary
	isFloat := v.IsFloat(slot)
	v.Each(func(ms int64, av uint32, vals []uint64) bool {
		if !iv.Contains(ms) {
			return true
		}
		s.SampleCount++
		if av&(1<<uint(slot)) == 0 || !v.finite(slot, vals[slot]) {
			return true
		}
		x := vals[slot]
		switch {
		case s.Available == 0:
			s.Min, s.Max, s.First, s.FirstAt = x, x, x, ms
		case isFloat:
			f := math.Float64frombits(x)
			if f < math.Float64frombits(s.Min) {
				s.Min = x
			}
			if f > math.Float64frombits(s.Max) {
				s.Max = x
			}
		default:
			if x < s.Last {
				w.Decreased = true
			}
			s.Min, s.Max = min(s.Min, x), max(s.Max, x)
		}
		s.Available++
		s.Last, s.LastAt = x, ms
		t := float64(ms-s.FirstAt) / 1000
		var d float64
		if isFloat {
			d = math.Float64frombits(x) - math.Float64frombits(s.First)
		} else {
			d = float64(int64(x - s.First))
		}
		w.st += t
		w.sx += d
		w.stt += t * t
		w.stx += t * d
		if isFloat {
			s.FloatSum += math.Float64frombits(x)
		} else {
			var c uint64
			s.SumLo, c = bits.Add64(s.SumLo, x, 0)
			s.SumHi += c
		}
		return true
	})
	s.Missing = s.SampleCount - s.Available
	return w
}

// Gauge marks w as a gauge's window: its increase is Last - First even
// when values went down (a change, not a counter's growth).
func (w Window) Gauge() Window { w.gauge = true; return w }

// Value is one aggregate of a window: for integer slots Int (exact; a mean
// is the rational Int/Den reduced), for float slots Float. OK is false when
// the window holds too few available values for the aggregate (increase
// needs two; the others one) or the counter decreased.
type Value struct {
	OK      bool
	IsFloat bool
	Float   float64
	Int     *big.Int
	Den     *big.Int // mean of an integer slot: the denominator (> 1 when not whole); nil otherwise
	// Reason says why OK is false: "no_samples", "no_available_value",
	// "single_value" (increase needs two), "counter_decreased".
	Reason string
}

// Aggregate computes agg over w. Increase is Last - First of the
// available values: the growth of a cumulative counter between the first
// and last stored samples the lifetime has inside the window, which is
// the sum of the increments between its adjacent stored samples there;
// of a gauge, its change (negative when it shrank; Decreased is ignored).
// Slope is the ordinary least-squares slope of the available values
// against their times in seconds (a float Value, unit per second): it
// needs two values at distinct times ("single_value" otherwise).
func (w Window) Aggregate(agg string, isFloat bool) Value {
	v := Value{IsFloat: isFloat}
	switch {
	case w.SampleCount == 0:
		v.Reason = "no_samples"
		return v
	case w.Available == 0:
		v.Reason = "no_available_value"
		return v
	}
	fl := func(x uint64) float64 { return math.Float64frombits(x) }
	in := func(x uint64) *big.Int { return new(big.Int).SetUint64(x) }
	switch agg {
	case AggIncrease:
		if w.Available < 2 {
			v.Reason = "single_value"
			return v
		}
		if w.Decreased && !w.gauge {
			v.Reason = "counter_decreased"
			return v
		}
		if isFloat {
			v.Float = fl(w.Last) - fl(w.First)
		} else {
			v.Int = new(big.Int).Sub(in(w.Last), in(w.First))
		}
	case AggSlope:
		if w.Available < 2 || w.LastAt == w.FirstAt {
			v.Reason = "single_value"
			return v
		}
		n := float64(w.Available)
		den := n*w.stt - w.st*w.st
		if den <= 0 {
			v.Reason = "single_value"
			return v
		}
		v.IsFloat = true
		v.Float = (n*w.stx - w.st*w.sx) / den
	case AggMax:
		if isFloat {
			v.Float = fl(w.Max)
		} else {
			v.Int = in(w.Max)
		}
	case AggLast:
		if isFloat {
			v.Float = fl(w.Last)
		} else {
			v.Int = in(w.Last)
		}
	case AggMean:
		if isFloat {
			v.Float = w.FloatSum / float64(w.Available)
		} else {
			sum := new(big.Int).Lsh(in(w.SumHi), 64)
			sum.Or(sum, in(w.SumLo))
			r := new(big.Rat).SetFrac(sum, big.NewInt(int64(w.Available)))
			v.Int = new(big.Int).Set(r.Num())
			if !r.IsInt() {
				v.Den = new(big.Int).Set(r.Denom())
			}
		}
	default:
		v.Reason = "unknown_aggregate"
		return v
	}
	if isFloat && (math.IsNaN(v.Float) || math.IsInf(v.Float, 0)) {
		v.Reason = "no_available_value"
		return v
	}
	v.OK = true
	return v
}

// Cmp compares two available values of the same slot and aggregate
// exactly: -1, 0 or +1.
func (v Value) Cmp(o Value) int {
	if v.IsFloat {
		switch {
		case v.Float < o.Float:
			return -1
		case v.Float > o.Float:
			return 1
		}
		return 0
	}
	return v.rat().Cmp(o.rat())
}

func (v Value) rat() *big.Rat {
	if v.Den == nil {
		return new(big.Rat).SetInt(v.Int)
	}
	return new(big.Rat).SetFrac(v.Int, v.Den)
}

// Overlap returns the part of [a0, a1] inside [b0, b1] in ms (0 when they
// do not meet).
func Overlap(a0, a1, b0, b1 int64) int64 {
	lo, hi := max(a0, b0), min(a1, b1)
	if hi < lo {
		return 0
	}
	return hi - lo
}

// keepPrunedCPU stores e's accounting record (the caller holds st.mu).
func (st *Store) keepPrunedCPU(e *entry) {
	if !e.Ended {
		return
	}
	lv := LifetimeView{Lifetime: e.snapshot(), Child: e.child, ChildTrimmed: e.childTrimmed}
	r := PrunedCPU{ID: e.ID, LastPPID: e.LastPPID, EndedAtMs: e.EndedAt.UnixMilli(), FirstMs: lv.From.UnixMilli(), Whole: lv.Samples < lv.Capacity}
	e.series.View().Each(func(ms int64, av uint32, vals []uint64) bool {
		if av&(1<<uint(sample.PCPUTime)) == 0 {
			return true
		}
		c, _ := lv.ChildAt(ms)
		r.Lineage = append(r.Lineage, ChildStep{Ms: ms, Ns: vals[sample.PCPUTime] + c})
		return true
	})
	if n := len(r.Lineage); n > MaxPrunedLineage {
		r.Lineage = append([]ChildStep(nil), r.Lineage[n-MaxPrunedLineage:]...)
	}
	cut := 0
	old := st.now().Add(-EndedUntrackedAge).UnixMilli()
	for cut < len(st.prunedCPU) && (len(st.prunedCPU)-cut >= MaxPrunedCPU || st.prunedCPU[cut].EndedAtMs < old) {
		cut++
	}
	if cut > 0 {
		// A new slice: returned records stay as they were.
		st.prunedCPU = append(make([]PrunedCPU, 0, len(st.prunedCPU)-cut+1), st.prunedCPU[cut:]...)
	}
	st.prunedCPU = append(st.prunedCPU, r)
}
