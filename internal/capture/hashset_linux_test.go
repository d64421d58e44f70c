//go:build linux

package capture

import (
	"math/rand/v2"
	"testing"
)

// TestHashSet checks the filtered-out link set against a Go map: add
// reports absence exactly as the map does, across growth, a hash of 0 and
// of 1 (stored alike: one entry), colliding low bits, and reset (the
// table kept or dropped).
func TestHashSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name   string
		hashes []uint64
	}{
		{"empty", nil},
		{"zero and one", []uint64{0, 1, 0, 1, 2}},
		{"same low bits", func() []uint64 {
			var hs []uint64
			for i := uint64(0); i < 300; i++ {
				hs = append(hs, i<<20|7, i<<20|7)
			}
			return hs
		}()},
		{"random with repeats", func() []uint64 {
			var hs []uint64
			for i := 0; i < 20000; i++ {
				hs = append(hs, rng.Uint64N(12000)*0x9e3779b97f4a7c15)
			}
			return hs
		}()},
		{"beyond the kept table", func() []uint64 {
			var hs []uint64
			for i := uint64(1); i <= 40000; i++ {
				hs = append(hs, i*0x9e3779b97f4a7c15)
			}
			return hs
		}()},
	}
	var s hashSet // one set across the cases, as a scan worker reuses it
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for round := 0; round < 2; round++ {
				s.reset()
				ref := map[uint64]bool{}
				for i, h := range tc.hashes {
					k := h
					if k == 0 {
						k = 1
					}
					want := !ref[k]
					ref[k] = true
					if got := s.add(h); got != want {
						t.Fatalf("round %d, add #%d (%#x) = %v, want %v", round, i, h, got, want)
					}
				}
				if s.n != len(ref) {
					t.Fatalf("round %d: %d entries, want %d", round, s.n, len(ref))
				}
			}
		})
	}
}
