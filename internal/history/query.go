package history

import (
	"math"
	"math/big"
	"math/bits"
	"time"
)

// Interval is an inclusive [From, To] request interval in ms since the
// Unix epoch; HasFrom/HasTo false leave that side open.
type Interval struct {
	From, To       int64
	HasFrom, HasTo bool
}

// Contains reports whether ms lies inside the interval.
func (iv Interval) Contains(ms int64) bool {
	return (!iv.HasFrom || ms >= iv.From) && (!iv.HasTo || ms <= iv.To)
}

// Sample is one stored sample of a raw query: its time, and for each
// requested slot (in request order) the value and whether it is available.
type Sample struct {
	At    int64 // ms since the Unix epoch
	Vals  []uint64
	Avail []bool
}

// Raw returns every stored sample inside iv with the values of slots, in
// time order. Samples whose selected slots are all unavailable are kept
// (raw output preserves every stored timestamp). A float slot
// holding NaN or an infinity is reported unavailable.
func (v *View) Raw(iv Interval, slots []int) []Sample {
	var out []Sample
	v.Each(func(ms int64, av uint32, vals []uint64) bool {
		// No early stop at To: a wall-clock step back can store samples
		// out of time order, and every stored sample must be counted.
		if !iv.Contains(ms) {
			return true
		}
		s := Sample{At: ms, Vals: make([]uint64, len(slots)), Avail: make([]bool, len(slots))}
		for k, i := range slots {
			if av&(1<<uint(i)) != 0 && v.finite(i, vals[i]) {
				s.Vals[k], s.Avail[k] = vals[i], true
			}
		}
		out = append(out, s)
		return true
	})
	return out
}

func (v *View) finite(i int, x uint64) bool {
	if !v.IsFloat(i) {
		return true
	}
	f := math.Float64frombits(x)
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}

// Coverage is the temporal coverage of a request (docs/investigation.md, "get_history"):
// the retained bounds of the target, the stored samples inside the
// interval and the largest gap between adjacent ones (HasMaxInterval false
// with fewer than two samples; HasBounds false for an empty ring).
type Coverage struct {
	RetainedFrom, RetainedTo int64
	HasBounds                bool
	SampleCount              int
	MaxIntervalMs            int64
	HasMaxInterval           bool
}

// Coverage computes the temporal coverage of iv over the view.
func (v *View) Coverage(iv Interval) Coverage {
	var c Coverage
	prev, have := int64(0), false
	v.Each(func(ms int64, _ uint32, _ []uint64) bool {
		if !c.HasBounds {
			c.RetainedFrom, c.HasBounds = ms, true
		}
		c.RetainedTo = ms
		if !iv.Contains(ms) {
			return true
		}
		c.SampleCount++
		if have {
			if d := ms - prev; !c.HasMaxInterval || d > c.MaxIntervalMs {
				c.MaxIntervalMs, c.HasMaxInterval = d, true
			}
		}
		prev, have = ms, true
		return true
	})
	return c
}

// Summary is the per-metric summary of get_history. Min, Max,
// First, Last are raw slot values (float64 bits for float slots) valid
// only when Available > 0. For integer slots the mean is SumHi:SumLo /
// Available exactly (128-bit sum); for float slots FloatSum is the sum.
// Delta is set (HasDelta) only when both requested endpoints are exact
// stored timestamps with available values.
type Summary struct {
	SampleCount, Available, Missing int
	Min, Max                        uint64
	First, Last                     uint64
	FirstAt, LastAt                 int64
	SumHi, SumLo                    uint64
	FloatSum                        float64
	HasDelta                        bool
	DeltaFrom, DeltaTo              uint64
}

// Summarize computes the summary of slot over every stored sample inside
// iv (never one page: the whole interval of the view).
func (v *View) Summarize(iv Interval, slot int) Summary {
	var s Summary
	isFloat := v.IsFloat(slot)
	var fromV, toV uint64
	var fromOK, toOK bool
	v.Each(func(ms int64, av uint32, vals []uint64) bool {
		if !iv.Contains(ms) {
			return true
		}
		s.SampleCount++
		if av&(1<<uint(slot)) == 0 || !v.finite(slot, vals[slot]) {
			return true
		}
		x := vals[slot]
		if s.Available == 0 {
			s.Min, s.Max, s.First, s.FirstAt = x, x, x, ms
		} else if isFloat {
			f := math.Float64frombits(x)
			if f < math.Float64frombits(s.Min) {
				s.Min = x
			}
			if f > math.Float64frombits(s.Max) {
				s.Max = x
			}
		} else {
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
		if iv.HasFrom && ms == iv.From {
			fromV, fromOK = x, true
		}
		if iv.HasTo && ms == iv.To {
			toV, toOK = x, true
		}
		return true
	})
	s.Missing = s.SampleCount - s.Available
	if fromOK && toOK {
		s.HasDelta, s.DeltaFrom, s.DeltaTo = true, fromV, toV
	}
	return s
}

// MeanRational returns the exact mean of an integer slot as a reduced
// fraction numerator/denominator in decimal (ok false with no values).
func (s Summary) MeanRational() (num, den string, ok bool) {
	if s.Available == 0 {
		return "", "", false
	}
	sum := new(big.Int).Lsh(new(big.Int).SetUint64(s.SumHi), 64)
	sum.Or(sum, new(big.Int).SetUint64(s.SumLo))
	r := new(big.Rat).SetFrac(sum, big.NewInt(int64(s.Available)))
	return r.Num().String(), r.Denom().String(), true
}

// IntDelta returns DeltaTo - DeltaFrom of an integer slot as a signed
// decimal string (exact beyond 2^63).
func (s Summary) IntDelta() string {
	d := new(big.Int).Sub(new(big.Int).SetUint64(s.DeltaTo), new(big.Int).SetUint64(s.DeltaFrom))
	return d.String()
}

// MsTime converts stored ms to a time.Time (UTC).
func MsTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
