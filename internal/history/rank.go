package history

import (
	"math"
	"math/big"
	"math/bits"
)

// Aggregates of a window (rank_processes). Increase suits cumulative
// counters; Max, Mean and Last suit gauges; Last also suits counters (the
// lifetime's total at its last sample inside the window).
const (
	AggIncrease = "increase"
	AggMax      = "max"
	AggMean     = "mean"
	AggLast     = "last"
)

// LifetimeView is one retained lifetime with its frozen ring, taken with
// every other lifetime under one lock by Store.Views.
type LifetimeView struct {
	Lifetime
	View *View
}

// Views returns every retained lifetime with a frozen view of its ring,
// all taken under one lock: one immutable view of the whole retained
// history (seed 000 section 6), so a ranking never mixes two sampling
// states. Lifetimes with no samples are left out. Order is unspecified.
func (st *Store) Views() []LifetimeView {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]LifetimeView, 0, len(st.procs))
	for _, e := range st.procs {
		if e.series.Len() == 0 {
			continue
		}
		out = append(out, LifetimeView{Lifetime: e.snapshot(), View: e.series.View()})
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

// notePruned records that e is being pruned (the caller holds st.mu).
func (st *Store) notePruned(e *entry) {
	if e.series.Len() == 0 {
		return
	}
	st.pruned.Count++
	if e.Tracked {
		st.pruned.Tracked++
	} else {
		st.pruned.Untracked++
	}
	st.pruned.LastMs = max(st.pruned.LastMs, e.series.prevMs)
}

// Window is what one lifetime's stored samples inside an interval say
// about one slot: the counts of seed 000 section 6 (SampleCount stored
// samples inside, Available of them with a finite value), and over the
// available values: Min, Max, First/FirstAt, Last/LastAt, the exact sum
// (128-bit SumHi:SumLo for integer slots, FloatSum for float slots), and
// Decreased, set when an available value is below the previous available
// one (never expected of a lifetime's cumulative counter).
type Window struct {
	Summary
	Decreased bool
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
// the sum of the increments between its adjacent stored samples there.
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
		if w.Decreased {
			v.Reason = "counter_decreased"
			return v
		}
		if isFloat {
			v.Float = fl(w.Last) - fl(w.First)
		} else {
			v.Int = new(big.Int).Sub(in(w.Last), in(w.First))
		}
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
