package history

// Last returns the newest sample of the view: its time (ms since the Unix
// epoch), availability and values (a fresh slice; unavailable slots hold
// stale values and must not be read). ok is false for an empty view. Only
// the newest block is decoded (at most BlockSamples samples).
func (v *View) Last() (ms int64, avail uint32, vals []uint64, ok bool) {
	if v.count == 0 || len(v.blocks) == 0 {
		return 0, 0, nil, false
	}
	last := &View{n: v.n, floatMask: v.floatMask, blocks: v.blocks[len(v.blocks)-1:]}
	last.count = last.blocks[0].count
	if len(v.blocks) == 1 {
		last.skip = v.skip
		last.count -= v.skip
	}
	last.Each(func(t int64, a uint32, vs []uint64) bool {
		ms, avail, ok = t, a, true
		vals = append(vals[:0], vs...)
		return true
	})
	return ms, avail, vals, ok
}

// TrackedLive returns the lifetimes in the tracking scope that are in the
// latest applied snapshot (not Ended) and have samples, each with a frozen
// view of its ring, all taken under one lock. Order is unspecified.
func (st *Store) TrackedLive() []LifetimeView {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []LifetimeView
	for _, e := range st.procs {
		if !e.Tracked || e.Ended || e.series.Len() == 0 {
			continue
		}
		out = append(out, LifetimeView{Lifetime: e.snapshot(), View: e.series.View()})
	}
	return out
}
