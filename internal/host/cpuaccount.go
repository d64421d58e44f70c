package host

import (
	"github.com/inquest-dev/inquest/internal/history"
	"github.com/inquest-dev/inquest/internal/sample"
)

// cpuAccount is the CPU accounting of one window (rank_processes with
// cpu_time_ns): every CPU nanosecond /proc/stat counted as user, nice or
// system between the window's first and last system samples (From, To),
// attributed to the lifetimes that spent it and to the reaped children of
// each parent.
//
// A lifetime's own CPU in the window is the increase of its cpu_time_ns
// from its sample at From, or its whole cpu_time_ns when it was first seen
// after From (it started inside the window: its counter began at 0 then).
// When a parent reaps a child, the parent's reaped-children time (cutime +
// cstime) grows by the child's whole CPU, its own reaped descendants
// included, even when the child started and ended between two samples. A
// parent's children row is that growth inside the window less what the
// children it reaped there had spent before the window (their cpu_time_ns
// and reaped-children time at From): the CPU its children used inside the
// window. A lifetime reaped inside the window by a retained parent is
// folded into that row: its own row is shown but counted once, in the
// parent's row (and its own children row in it too); not when that
// parent's reaped-children time did not grow in the window (autoreaped
// children: kernel threads, a parent ignoring SIGCHLD), whose CPU
// reaches no cutime and stays in their own rows. A child orphaned
// before it exits is reaped by init or the nearest subreaper, whose row
// then holds it.
type cpuAccount struct {
	ok bool
	// From and To are the first and last system samples of the window
	// (ms since the Unix epoch); SystemNs is user+nice+system between them.
	From, To int64
	SystemNs uint64
	// own is each lifetime's own CPU in the window (ns), children each
	// parent's children row; both keyed by identity. folded maps a
	// lifetime reaped inside the window to the lifetime whose children row
	// counts it.
	own      map[sample.Identity]uint64
	children map[sample.Identity]uint64
	folded   map[sample.Identity]sample.Identity
	// clamped counts children rows whose computed value was negative (a
	// child's reaping fell between the parent's and the child's reads of
	// one sample at the window's start), counted as 0.
	clamped int
	// cut counts lifetimes that lived at the window's start but whose
	// ring (or reaped-children steps) no longer reaches back to it: the
	// sum misses their CPU before their first retained sample.
	cut int
	// prunedNs is the CPU of pruned lifetimes reaped inside the window
	// that no children row holds (no row shows it).
	prunedNs uint64
	// TotalNs is the sum of every own and children value not folded,
	// and prunedNs.
	TotalNs uint64
}

// startedIn reports whether lv was first seen after ms (by a ring that
// still holds its first sample) and, where its start time is known
// (/proc/PID/stat starttime after boot), began no earlier than a second
// before ms (the slack of the boot time's and the ticks' rounding): it
// started inside a window from ms. A process that ran long before it was
// first seen (the host started, or a read failed, after ms) did not: its
// CPU and its reaped children's before its first sample are not the
// window's.
func startedIn(lv *history.LifetimeView, ms int64) bool {
	if lv.From.UnixMilli() <= ms || lv.Samples >= lv.Capacity {
		return false
	}
	return lv.StartTime.IsZero() || lv.StartTime.UnixMilli() > ms-1000
}

// acctNode is one lifetime in the accounting: a retained one (view >= 0)
// or the record of a pruned one (view < 0).
type acctNode struct {
	id       sample.Identity
	lastPPID int32
	view     int
	// reaped says it ended inside the window; started that it was first
	// seen after the window's start; pre is the CPU its line had spent by
	// the window's start (own cpu_time_ns + reaped-children time).
	reaped, started bool
	pre             uint64
	// last is a pruned lifetime's CPU (own + reaped children) at its
	// last sample.
	last uint64
}

// accountCPU computes the CPU accounting of iv over every retained
// lifetime and the records of pruned ones (scope and filter apply to the
// rows shown, never to the sum).
func accountCPU(views []history.LifetimeView, pruned []history.PrunedCPU, sys *history.View, iv history.Interval) cpuAccount {
	var a cpuAccount
	sw := sys.Window(iv, sample.SCPUTime)
	if sw.Available < 2 || sw.Last < sw.First {
		return a
	}
	a.ok, a.From, a.To, a.SystemNs = true, sw.FirstAt, sw.LastAt, sw.Last-sw.First
	win := history.Interval{From: a.From, To: a.To, HasFrom: true, HasTo: true}
	before := history.Interval{To: a.From, HasTo: true}
	a.own = make(map[sample.Identity]uint64, len(views))
	a.children = map[sample.Identity]uint64{}
	a.folded = map[sample.Identity]sample.Identity{}
	in := func(ms int64) bool { return ms > a.From && ms <= a.To }
	nodes := make([]acctNode, 0, len(views))
	gain := make(map[sample.Identity]int64)
	for i := range views {
		lv := &views[i]
		n := acctNode{id: lv.ID, lastPPID: lv.LastPPID, view: i, started: startedIn(lv, a.From), reaped: lv.Ended && in(lv.EndedAt.UnixMilli())}
		if w := lv.View.Window(win, sample.PCPUTime); w.Available > 0 {
			v := w.Last
			if !n.started {
				v = w.Last - min(w.First, w.Last)
			}
			a.own[lv.ID] = v
		}
		if !n.started && lv.From.UnixMilli() > a.From {
			a.cut++
		}
		if end, ok := lv.ChildAt(a.To); ok {
			start, ok := lv.ChildAt(a.From)
			// No step at the window's start: the steps before it were
			// dropped, or the lifetime was first seen inside the window
			// though it began before (its first step holds children
			// reaped before the window); only one that started inside
			// the window reaped all its children there.
			if !ok && (lv.ChildTrimmed || !n.started) && len(lv.Child) > 0 {
				start = lv.Child[0].Ns
				if lv.From.UnixMilli() <= a.From {
					a.cut++
				}
			}
			if end > start {
				gain[lv.ID] += int64(end - start)
			}
		}
		if n.reaped && !n.started {
			if w := lv.View.Window(before, sample.PCPUTime); w.Available > 0 {
				n.pre = w.Last
			}
			if c, ok := lv.ChildAt(a.From); ok {
				n.pre += c
			}
		}
		nodes = append(nodes, n)
	}
	for _, r := range pruned {
		if r.EndedAtMs <= a.From || len(r.Lineage) == 0 {
			continue
		}
		n := acctNode{id: r.ID, lastPPID: r.LastPPID, view: -1, reaped: in(r.EndedAtMs), started: r.FirstMs > a.From && r.Whole}
		n.last = r.Lineage[len(r.Lineage)-1].Ns
		if n.reaped && !n.started {
			n.pre = r.Lineage[0].Ns
			for _, st := range r.Lineage {
				if st.Ms > a.From {
					break
				}
				n.pre = st.Ns
			}
		}
		nodes = append(nodes, n)
	}
	byPID := make(map[int32][]int, len(nodes))
	for i := range nodes {
		byPID[nodes[i].id.PID] = append(byPID[nodes[i].id.PID], i)
	}
	reaper := make(map[int]int) // node -> the node that reaped it inside the window
	for i := range nodes {
		if nodes[i].reaped {
			if r := reaperOf(nodes, byPID, i); r >= 0 {
				reaper[i] = r
			}
		}
	}
	// A retained reaper whose reaped-children time did not grow inside
	// the window collected none of them: its children were reaped
	// without adding to it (kernel threads, children of a parent that
	// ignores SIGCHLD), so they keep their own rows. Unless that reaper
	// was itself reaped inside the window by a reaper that stays: a
	// process that waits for its child and exits at once (timeout, a
	// shell running one command, go run) is never sampled after the
	// reap, so its growth is not seen, but its reaper's reaped-children
	// time holds its whole CPU and its children's; the child folds
	// through it (else the child would count twice: in its own row and
	// in that reaper's). Links are dropped until none changes (a chain
	// of such reapers ends at one that stays or at none).
	for changed := true; changed; {
		changed = false
		for i, r := range reaper {
			if nodes[r].view < 0 || gain[nodes[r].id] != 0 {
				continue
			}
			if _, up := reaper[r]; up && nodes[r].reaped {
				continue
			}
			delete(reaper, i)
			changed = true
		}
	}
	// Each folded lifetime is counted in the row of its nearest reaper
	// that is not folded itself; that row's growth holds the lifetime's
	// whole CPU, of which the part spent before the window comes off.
	for i, r := range reaper {
		for n := 0; n < 64; n++ {
			next, ok := reaper[r]
			if !ok {
				break
			}
			r = next
		}
		a.folded[nodes[i].id] = nodes[r].id
		gain[nodes[r].id] -= int64(nodes[i].pre)
	}
	for id, g := range gain {
		if _, ok := a.folded[id]; ok {
			continue
		}
		if g < 0 {
			a.clamped++
			continue
		}
		if g > 0 {
			a.children[id] = uint64(g)
		}
	}
	for id, v := range a.own {
		if _, ok := a.folded[id]; !ok {
			a.TotalNs += v
		}
	}
	for _, v := range a.children {
		a.TotalNs += v
	}
	// A pruned lifetime no reaper's row holds keeps its share as the
	// sampler saw it (it has no row of its own any more).
	for i := range nodes {
		n := &nodes[i]
		if n.view >= 0 || !n.reaped {
			continue
		}
		if _, ok := a.folded[n.id]; !ok && n.last > n.pre {
			a.prunedNs += n.last - n.pre
		}
	}
	a.TotalNs += a.prunedNs
	return a
}

// reaperOf returns the node that reaped node i: the one with its last
// parent PID that started no later than it, the latest such; -1 when
// none is known.
func reaperOf(nodes []acctNode, byPID map[int32][]int, i int) int {
	c := &nodes[i]
	best := -1
	for _, j := range byPID[c.lastPPID] {
		p := &nodes[j]
		if p.id.StartTicks > c.id.StartTicks || j == i {
			continue
		}
		if best < 0 || p.id.StartTicks > nodes[best].id.StartTicks {
			best = j
		}
	}
	return best
}
