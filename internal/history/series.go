// Package history keeps retained live history (docs/investigation.md,
// "Retained history"): one compact columnar ring of
// samples per process lifetime and one for the system, with the documented
// capacities (about 120 samples for untracked lifetimes, 7,200 for tracked
// lifetimes and for the system), identity pruning, immutable views, and the
// raw and summary queries of get_history.
//
// A Series stores samples in blocks of BlockSamples. Inside a block each
// sample is a byte string: the timestamp as a zigzag varint delta in
// milliseconds from the previous sample, the availability bitmap as a
// uvarint, then one value per available slot: integer slots as a zigzag
// varint of the wrapping difference from the slot's previous available
// value, number (float64 bits) slots as a uvarint of the bit-reversed XOR
// with the previous bits (Gorilla-style: equal values cost one byte). A
// block starts from zero state, so it decodes alone. Bytes once written are
// never rewritten, so a View taken under the store's lock stays valid
// while the writer appends and drops whole blocks.
package history

import (
	"encoding/binary"
	"math/bits"
	"time"
)

// BlockSamples is the number of samples per encoded block; retention is
// exact (a query never sees more than the capacity) while memory may hold up
// to BlockSamples-1 extra samples in the oldest block.
const BlockSamples = 64

// Retention capacities in samples (docs/investigation.md, "Retained history").
const (
	// UntrackedCapacity is the ring size of a lifetime that is not tracked.
	UntrackedCapacity = 120
	// TrackedCapacity is the ring size of a tracked lifetime and of the system.
	TrackedCapacity = 7200
)

// MaxSlots is the largest number of metric slots a Series can hold (the
// availability bitmap is a uint32).
const MaxSlots = 32

type block struct {
	first int64 // ms since the Unix epoch of the block's first sample
	count int
	data  []byte
}

// Series is one target's ring: n metric slots, with the slots in floatMask
// holding float64 bits. It is not safe for concurrent use; the Store locks.
type Series struct {
	n         int
	floatMask uint32
	capacity  int
	blocks    []block
	total     int // samples across blocks
	skip      int // samples at the front of blocks[0] past retention

	// encoder state of the open (last) block
	prevMs  int64
	prev    []uint64
	scratch []byte
	lastLen int

	nbytes int // sum of cap(data) over blocks, kept as blocks change
}

// NewSeries returns an empty ring of n slots (n <= MaxSlots) whose slots in
// floatMask are float64 bits, retaining at most capacity samples.
func NewSeries(n int, floatMask uint32, capacity int) *Series {
	if n > MaxSlots {
		panic("history: too many slots")
	}
	return &Series{n: n, floatMask: floatMask, capacity: capacity, prev: make([]uint64, n)}
}

// Len returns the number of retained samples.
func (s *Series) Len() int { return s.total - s.skip }

// Capacity returns the retention capacity in samples.
func (s *Series) Capacity() int { return s.capacity }

// SetCapacity changes the retention capacity. Shrinking discards the oldest
// samples beyond the new capacity at once (the discard that tracking
// removal must confirm); growing never restores discarded samples.
func (s *Series) SetCapacity(c int) {
	s.capacity = c
	s.trim()
}

// Bounds returns the first and last retained sample times (ok false when
// the ring is empty).
func (s *Series) Bounds() (from, to time.Time, ok bool) {
	if s.Len() == 0 {
		return time.Time{}, time.Time{}, false
	}
	return time.UnixMilli(s.firstMs()), time.UnixMilli(s.prevMs), true
}

// firstMs is the time of the first retained sample (the ring is not
// empty): trim keeps skip below the first block's count, so it is in the
// first block, after skip samples decoded only to step over their bytes.
func (s *Series) firstMs() int64 {
	b := s.blocks[0]
	ms, d := b.first, b.data
	for k := 0; k < s.skip; k++ {
		dt, n := binary.Varint(d)
		d = d[n:]
		ms += dt
		av, n := binary.Uvarint(d)
		d = d[n:]
		for i := 0; i < s.n; i++ {
			if av&(1<<uint(i)) == 0 {
				continue
			}
			_, n := binary.Uvarint(d) // a varint and a uvarint span the same bytes
			d = d[n:]
		}
	}
	dt, _ := binary.Varint(d)
	return ms + dt
}

// Append stores one sample taken at t with the slot values vals (len n)
// whose availability is avail (bit i = slot i measured).
func (s *Series) Append(t time.Time, avail uint32, vals []uint64) {
	ms := t.UnixMilli()
	if len(s.blocks) == 0 || s.blocks[len(s.blocks)-1].count == BlockSamples {
		s.seal()
		est := s.lastLen + 16
		if est < 64 {
			est = 64
		}
		s.scratch = make([]byte, 0, est)
		s.blocks = append(s.blocks, block{first: ms})
		s.prevMs = ms
		clear(s.prev)
	}
	b := s.scratch
	b = binary.AppendVarint(b, ms-s.prevMs)
	avail &= (1 << uint(s.n)) - 1
	b = binary.AppendUvarint(b, uint64(avail))
	for i := 0; i < s.n; i++ {
		if avail&(1<<uint(i)) == 0 {
			continue
		}
		v := vals[i]
		if s.floatMask&(1<<uint(i)) != 0 {
			b = binary.AppendUvarint(b, bits.Reverse64(v^s.prev[i]))
		} else {
			b = binary.AppendVarint(b, int64(v-s.prev[i]))
		}
		s.prev[i] = v
	}
	s.scratch = b
	s.prevMs = ms
	last := &s.blocks[len(s.blocks)-1]
	s.nbytes += len(b) - cap(last.data)
	last.data = b[:len(b):len(b)]
	last.count++
	s.total++
	s.trim()
}

// seal trims the open block's backing array to its length when the waste
// is large (views may hold it, so it is copied, never rewritten).
func (s *Series) seal() {
	if len(s.blocks) == 0 {
		return
	}
	last := &s.blocks[len(s.blocks)-1]
	s.lastLen = len(last.data)
	if cap(s.scratch)-len(last.data) > len(last.data)/8 {
		old := cap(last.data)
		last.data = append([]byte(nil), last.data...)
		s.nbytes += cap(last.data) - old
	}
	s.scratch = nil
}

func (s *Series) trim() {
	for s.total-s.skip > s.capacity {
		s.skip = s.total - s.capacity
	}
	for len(s.blocks) > 0 && s.skip >= s.blocks[0].count {
		s.skip -= s.blocks[0].count
		s.total -= s.blocks[0].count
		s.nbytes -= cap(s.blocks[0].data)
		s.blocks[0] = block{}
		s.blocks = s.blocks[1:]
	}
	if cap(s.blocks) > 2*len(s.blocks)+8 {
		s.blocks = append([]block(nil), s.blocks...)
	}
}

// Bytes returns the encoded bytes the series holds (for memory reports),
// kept as blocks are written and dropped (O(1)).
func (s *Series) Bytes() int { return s.nbytes }

// View returns an immutable view of the retained samples. It stays valid
// (and unchanged) while the series keeps appending and dropping blocks.
func (s *Series) View() *View {
	return &View{n: s.n, floatMask: s.floatMask, blocks: append([]block(nil), s.blocks...), skip: s.skip, count: s.total - s.skip}
}

// View is a frozen view of one series (a request is evaluated
// against one immutable view of retained history).
type View struct {
	n         int
	floatMask uint32
	blocks    []block
	skip      int
	count     int
}

// Len returns the number of samples in the view.
func (v *View) Len() int { return v.count }

// IsFloat reports whether slot i holds float64 bits.
func (v *View) IsFloat(i int) bool { return v.floatMask&(1<<uint(i)) != 0 }

// Each calls fn for every sample in time order with its time (ms since the
// Unix epoch), availability and values (the slice is reused between calls;
// unavailable slots hold stale values and must not be read). fn returns
// false to stop.
func (v *View) Each(fn func(ms int64, avail uint32, vals []uint64) bool) {
	vals := make([]uint64, v.n)
	skip := v.skip
	for _, b := range v.blocks {
		clear(vals)
		ms := b.first
		d := b.data
		for k := 0; k < b.count; k++ {
			dt, n := binary.Varint(d)
			d = d[n:]
			ms += dt
			av, n := binary.Uvarint(d)
			d = d[n:]
			for i := 0; i < v.n; i++ {
				if av&(1<<uint(i)) == 0 {
					continue
				}
				if v.floatMask&(1<<uint(i)) != 0 {
					x, n := binary.Uvarint(d)
					d = d[n:]
					vals[i] ^= bits.Reverse64(x)
				} else {
					x, n := binary.Varint(d)
					d = d[n:]
					vals[i] += uint64(x)
				}
			}
			if skip > 0 {
				skip--
				continue
			}
			if !fn(ms, uint32(av), vals) {
				return
			}
		}
	}
}
