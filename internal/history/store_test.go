package history

import (
	"runtime"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

type fakeProc struct {
	pid   int32
	ppid  int32
	ticks uint64
	name  string
	rss   uint64
}

func snapOf(seq uint64, at time.Time, ps ...fakeProc) *sample.Snapshot {
	s := &sample.Snapshot{Seq: seq, Time: at}
	for _, f := range ps {
		p := sample.Process{PID: f.pid, PPID: f.ppid, StartTicks: f.ticks, Name: f.name}
		p.Set(sample.PRSS, f.rss)
		s.Procs = append(s.Procs, p)
	}
	// sorted by PID as the collector publishes
	for i := 1; i < len(s.Procs); i++ {
		for j := i; j > 0 && s.Procs[j].PID < s.Procs[j-1].PID; j-- {
			s.Procs[j], s.Procs[j-1] = s.Procs[j-1], s.Procs[j]
		}
	}
	s.System.Set(sample.SProcesses, uint64(len(ps)))
	return s
}

// A reused PID is another identity: the ended lifetime keeps its own
// samples and is never resolved to the new process.
func TestStoreReusedPID(t *testing.T) {
	st := NewStore()
	st.now = func() time.Time { return t0.Add(3 * time.Second) }
	old := fakeProc{pid: 4242, ppid: 1, ticks: 100, name: "worker", rss: 111}
	st.Apply(snapOf(1, t0, old))
	st.Apply(snapOf(2, t0.Add(time.Second), old))
	young := fakeProc{pid: 4242, ppid: 1, ticks: 900, name: "worker", rss: 999}
	st.Apply(snapOf(3, t0.Add(2*time.Second), young))

	v, lt, ok := st.Process(sample.Identity{PID: 4242, StartTicks: 100})
	if !ok || !lt.Ended || v.Len() != 2 {
		t.Fatalf("old lifetime: ok %v ended %v len %d", ok, lt.Ended, v.Len())
	}
	// It ended by the first snapshot without its PID and start time (the
	// one that lists the PID's new lifetime), and stays so.
	st.Apply(snapOf(4, t0.Add(3*time.Second), young))
	if _, lt, _ := st.Process(sample.Identity{PID: 4242, StartTicks: 100}); !lt.EndedAt.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("old lifetime ended at %v, want the first snapshot without it (%v)", lt.EndedAt, t0.Add(2*time.Second))
	}
	for _, s := range v.Raw(Interval{}, []int{sample.PRSS}) {
		if s.Vals[0] != 111 {
			t.Fatalf("old lifetime holds a sample of the new one: %d", s.Vals[0])
		}
	}
	v2, lt2, _ := st.Process(sample.Identity{PID: 4242, StartTicks: 900})
	if lt2.Ended || !lt2.EndedAt.IsZero() || v2.Len() != 2 {
		t.Fatalf("new lifetime: %+v", lt2)
	}
	if _, _, ok := st.Process(sample.Identity{PID: 4242, StartTicks: 500}); ok {
		t.Fatal("an identity never seen resolved")
	}
	if n := len(st.Lifetimes()); n != 2 {
		t.Fatalf("lifetimes %d", n)
	}
}

// Tracking by name covers observed descendants; capacity follows; removal
// previews and applies the discard.
func TestStoreTrackingScope(t *testing.T) {
	st := NewStore()
	st.SetTracking([]string{"Postgres"})
	pg := fakeProc{pid: 10, ppid: 1, ticks: 5, name: "postgres"}
	child := fakeProc{pid: 11, ppid: 10, ticks: 6, name: "bgwriter"}
	grand := fakeProc{pid: 12, ppid: 11, ticks: 7, name: "sh"}
	other := fakeProc{pid: 20, ppid: 1, ticks: 8, name: "sshd"}
	// a process whose "parent" started later is not a verified descendant
	fakeKid := fakeProc{pid: 9, ppid: 10, ticks: 9999, name: "odd"}
	fakeKid.ticks = 1
	for i := 0; i < 300; i++ {
		st.Apply(snapOf(uint64(i+1), t0.Add(time.Duration(i)*time.Second), pg, child, grand, other, fakeKid))
	}
	want := map[int32]bool{10: true, 11: true, 12: true, 20: false, 9: false}
	for _, l := range st.Lifetimes() {
		if l.Tracked != want[l.ID.PID] {
			t.Errorf("pid %d tracked %v", l.ID.PID, l.Tracked)
		}
		wantLen := UntrackedCapacity
		if l.Tracked {
			wantLen = 300
		}
		if l.Samples != wantLen {
			t.Errorf("pid %d samples %d want %d", l.ID.PID, l.Samples, wantLen)
		}
	}
	loss := st.PreviewTracking(nil)
	if len(loss) != 3 || loss[0].Discard != 180 {
		t.Fatalf("preview %+v", loss)
	}
	if got := st.SetTracking(nil); len(got) != 3 {
		t.Fatalf("applied loss %+v", got)
	}
	for _, l := range st.Lifetimes() {
		if l.Tracked || l.Samples != UntrackedCapacity {
			t.Errorf("after removal pid %d: %+v", l.ID.PID, l)
		}
	}
}

// Ended untracked lifetimes are pruned by age and count; tracked ones by
// their own bound; live ones never.
func TestStorePruning(t *testing.T) {
	st := NewStore()
	now := t0
	st.now = func() time.Time { return now }
	var ps []fakeProc
	for i := 0; i < MaxEndedUntracked+10; i++ {
		ps = append(ps, fakeProc{pid: int32(1000 + i), ppid: 1, ticks: uint64(i + 1), name: "short"})
	}
	seq := uint64(0)
	for i, p := range ps { // each lives for one sample, then ends
		seq++
		now = t0.Add(time.Duration(i) * time.Millisecond)
		st.Apply(snapOf(seq, now, p))
	}
	seq++
	st.Apply(snapOf(seq, now.Add(time.Millisecond)))
	if n := len(st.Lifetimes()); n != MaxEndedUntracked {
		t.Fatalf("ended untracked retained %d, want %d", n, MaxEndedUntracked)
	}
	if _, _, ok := st.Process(sample.Identity{PID: 1000, StartTicks: 1}); ok {
		t.Fatal("the oldest ended lifetime was kept")
	}
	now = now.Add(EndedUntrackedAge + time.Minute)
	seq++
	live := fakeProc{pid: 5, ppid: 1, ticks: 1, name: "init"}
	st.Apply(snapOf(seq, now, live))
	if ls := st.Lifetimes(); len(ls) != 1 || ls[0].ID.PID != 5 {
		t.Fatalf("after age pruning: %d lifetimes", len(ls))
	}
}

// BenchmarkStoreTrackedMemory applies 7,200 snapshots of 1,000 tracked
// processes through the Store (the host's path) and reports heap bytes per
// process-sample, all per-lifetime overhead included.
func BenchmarkStoreTrackedMemory(b *testing.B) {
	const procs, samples = 1000, TrackedCapacity
	for range b.N {
		gens := make([]*synth, procs)
		for i := range gens {
			gens[i] = newSynth(uint64(i))
		}
		before := heap()
		st := NewStore()
		st.SetTracking([]string{"svc"})
		snap := &sample.Snapshot{Procs: make([]sample.Process, procs)}
		for k := 0; k < samples; k++ {
			s := &sample.Snapshot{Seq: uint64(k + 1), Procs: snap.Procs}
			for i, g := range gens {
				at, av, vals := g.next()
				p := &s.Procs[i]
				*p = sample.Process{PID: int32(100 + i), PPID: 1, StartTicks: uint64(i + 1), Name: "svc", Avail: av}
				copy(p.Vals[:], vals)
				s.Time = at
			}
			st.Apply(s)
		}
		snap = nil
		gens = nil
		after := heap()
		runtime.KeepAlive(st)
		b.ReportMetric(float64(after-before)/float64(procs*samples), "B/process-sample")
		b.ReportMetric(float64(st.MemoryBytes())/float64(procs*samples), "encoded-B/process-sample")
	}
}

// The store's O(1) totals (RetainedLifetimes, MemoryBytes) equal a walk of
// every ring after each kind of change: new lifetimes, appends that open
// and seal blocks, zombies, ends, pruning by count and age, and tracking
// changes that grow and shrink rings.
func TestStoreTotalsMatchWalk(t *testing.T) {
	walk := func(st *Store) (retained, bytes int) {
		st.mu.Lock()
		defer st.mu.Unlock()
		for _, b := range st.system.blocks {
			bytes += cap(b.data)
		}
		for _, e := range st.procs {
			if e.series.Len() > 0 {
				retained++
			}
			for _, b := range e.series.blocks {
				bytes += cap(b.data)
			}
		}
		return retained, bytes
	}
	st := NewStore()
	now := t0
	st.now = func() time.Time { return now }
	check := func(step string) {
		t.Helper()
		r, b := walk(st)
		if got := st.RetainedLifetimes(); got != r || got != len(st.Lifetimes()) {
			t.Fatalf("%s: RetainedLifetimes %d, walk %d, Lifetimes %d", step, got, r, len(st.Lifetimes()))
		}
		if got := st.MemoryBytes(); got != b {
			t.Fatalf("%s: MemoryBytes %d, walk %d", step, got, b)
		}
		var tracked []Lifetime // Tracked is the tracked part of Lifetimes
		for _, l := range st.Lifetimes() {
			if l.Tracked {
				tracked = append(tracked, l)
			}
		}
		if got := st.Tracked(); len(got) != len(tracked) || (len(got) > 0 && (got[0].ID != tracked[0].ID || got[len(got)-1].ID != tracked[len(tracked)-1].ID)) {
			t.Fatalf("%s: Tracked %d lifetimes, Lifetimes has %d tracked", step, len(got), len(tracked))
		}
		for _, l := range st.Lifetimes() { // From is the first retained sample's time
			v, _, _ := st.Process(l.ID)
			var first int64
			v.Each(func(ms int64, _ uint32, _ []uint64) bool { first = ms; return false })
			if l.From.UnixMilli() != first {
				t.Fatalf("%s: pid %d From %d, first sample %d", step, l.ID.PID, l.From.UnixMilli(), first)
			}
		}
	}
	seq := uint64(0)
	apply := func(ps ...fakeProc) {
		seq++
		now = now.Add(time.Second)
		st.Apply(snapOf(seq, now, ps...))
	}
	check("empty")
	st.SetTracking([]string{"keep"})
	keeper := fakeProc{pid: 2, ppid: 1, ticks: 2, name: "keep"}
	for i := 0; i < 3*BlockSamples+5; i++ {
		var ps []fakeProc
		for k := 0; k < 40; k++ { // a churning batch of short lifetimes
			ps = append(ps, fakeProc{pid: int32(100 + (i/7)*40 + k), ppid: 2, ticks: uint64(i/7 + 10), name: "short", rss: uint64(i * k)})
		}
		keeper.rss = uint64(i)
		apply(append(ps, keeper, fakeProc{pid: 3, ppid: 1, ticks: 3, name: "other", rss: uint64(i * 4096)})...)
	}
	check("churn")
	// a zombie's first sight adds a lifetime with no sample
	z := snapOf(seq+1, now.Add(time.Second), keeper)
	z.Procs = append(z.Procs, sample.Process{PID: 90000, PPID: 1, StartTicks: 77, Name: "z", State: 'Z'})
	seq++
	now = now.Add(time.Second)
	st.Apply(z)
	check("zombie")
	st.SetTracking([]string{"short", "other"}) // grows rings of ended lifetimes too
	check("track more")
	for i := 0; i < 2*BlockSamples; i++ {
		apply(keeper, fakeProc{pid: 3, ppid: 1, ticks: 3, name: "other", rss: uint64(i)})
	}
	check("grown")
	st.SetTracking(nil) // shrinks every ring to UntrackedCapacity
	check("untrack")
	apply(keeper)
	check("end")
	now = now.Add(EndedUntrackedAge + time.Minute)
	apply(keeper)
	check("age prune")
	for i := 0; i < MaxEndedUntracked+50; i++ {
		apply(fakeProc{pid: int32(200000 + i), ppid: 1, ticks: uint64(i + 1), name: "blip"})
	}
	apply()
	check("count prune")
}

// walkLifetimes is Lifetimes computed afresh from the store's entries.
func walkLifetimes(st *Store) []Lifetime {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := []Lifetime{}
	for _, e := range st.procs {
		if e.series.Len() > 0 {
			out = append(out, e.snapshot())
		}
	}
	sortLifetimes(out)
	return out
}

// Lifetimes keeps its sorted list between changes: after every kind of
// change (a snapshot with a new, an exec'd or an ended lifetime, a
// tracking change, pruning) it returns what a fresh walk of the store
// gives, and a caller changing its copy changes nothing for the next one.
func TestStoreLifetimesKept(t *testing.T) {
	st := NewStore()
	now := t0
	st.now = func() time.Time { return now }
	a := fakeProc{pid: 30, ppid: 1, ticks: 3, name: "a"}
	b := fakeProc{pid: 7, ppid: 30, ticks: 4, name: "b"}
	c := fakeProc{pid: 500, ppid: 1, ticks: 5, name: "c"}
	steps := []struct {
		name string
		do   func(seq uint64)
	}{
		{"first snapshot", func(seq uint64) { st.Apply(snapOf(seq, now, a)) }},
		{"new lifetimes", func(seq uint64) { st.Apply(snapOf(seq, now, a, b, c)) }},
		{"same processes", func(seq uint64) { st.Apply(snapOf(seq, now, a, b, c)) }},
		{"stale snapshot ignored", func(uint64) { st.Apply(snapOf(1, now, a)) }},
		{"exec renames", func(seq uint64) {
			b.name = "b2"
			st.Apply(snapOf(seq, now, a, b, c))
		}},
		{"tracking set", func(uint64) { st.SetTracking([]string{"a"}) }},
		{"lifetime ended", func(seq uint64) { st.Apply(snapOf(seq, now, a, b)) }},
		{"tracking cleared", func(uint64) { st.SetTracking(nil) }},
		{"ended lifetime pruned by age", func(seq uint64) {
			now = now.Add(EndedUntrackedAge + time.Hour)
			st.Apply(snapOf(seq, now, a, b))
		}},
	}
	for i, s := range steps {
		now = now.Add(time.Second)
		s.do(uint64(i + 1))
		for round := 0; round < 2; round++ {
			got, want := st.Lifetimes(), walkLifetimes(st)
			if len(got) != len(want) {
				t.Fatalf("%s (read %d): %d lifetimes, walk gives %d", s.name, round, len(got), len(want))
			}
			for j := range got {
				g, w := got[j], want[j]
				if g.ID != w.ID || g.Name != w.Name || g.Samples != w.Samples || g.Capacity != w.Capacity || g.Tracked != w.Tracked ||
					g.Ended != w.Ended || !g.From.Equal(w.From) || !g.To.Equal(w.To) || len(g.Names) != len(w.Names) {
					t.Fatalf("%s (read %d): lifetime %d is %+v, walk gives %+v", s.name, round, j, g, w)
				}
			}
			// the caller owns its copy
			for j := range got {
				got[j].Name, got[j].Samples = "changed by the caller", -1
			}
		}
	}
}
