package history

import (
	"slices"
	"testing"
	"time"
)

// TestViewLast: Last is the final sample Each yields, for rings inside
// one block, across block boundaries and trimmed to capacity (a skip in
// the only block), with slots that come and go; an empty view has none.
func TestViewLast(t *testing.T) {
	for _, c := range []struct{ n, capacity int }{
		{0, 10}, {1, 10}, {5, 10}, {BlockSamples, 1000}, {BlockSamples + 1, 1000}, {3*BlockSamples + 7, 1000},
		{30, 10}, {BlockSamples + 3, 2}, {200, 130},
	} {
		s := NewSeries(3, 1<<2, c.capacity)
		for i := 0; i < c.n; i++ {
			avail := uint32(0b111)
			if i%3 == 1 {
				avail = 0b101
			}
			s.Append(time.UnixMilli(int64(1000+i*1000)), avail, []uint64{uint64(i * 7), uint64(1 << i % 64), uint64(i) << 52})
		}
		v := s.View()
		var wantMs int64
		var wantAvail uint32
		var wantVals []uint64
		v.Each(func(ms int64, avail uint32, vals []uint64) bool {
			wantMs, wantAvail, wantVals = ms, avail, slices.Clone(vals)
			return true
		})
		ms, avail, vals, ok := v.Last()
		if ok != (v.Len() > 0) || ms != wantMs || avail != wantAvail {
			t.Fatalf("n %d cap %d: Last %d %b %v, Each ends at %d %b", c.n, c.capacity, ms, avail, ok, wantMs, wantAvail)
		}
		for i := 0; i < 3; i++ {
			if avail&(1<<i) != 0 && vals[i] != wantVals[i] {
				t.Fatalf("n %d cap %d: slot %d is %d, Each says %d", c.n, c.capacity, i, vals[i], wantVals[i])
			}
		}
	}
}
