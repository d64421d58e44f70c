package history

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/sample"
)

// Identity-pruning rules. Live lifetimes are always retained. A lifetime
// that has left the snapshots ("ended"; the history cannot tell an exit
// from a lost view) is kept until one of these prunes it, oldest last
// sample first.
const (
	// MaxEndedUntracked bounds ended untracked lifetimes.
	MaxEndedUntracked = 512
	// EndedUntrackedAge prunes an ended untracked lifetime this long after
	// its last sample.
	EndedUntrackedAge = 30 * time.Minute
	// MaxEndedTracked bounds ended tracked lifetimes (7,200-sample rings).
	MaxEndedTracked = 128
	// MaxNameSpans bounds the names kept per lifetime (a process that
	// execs in a loop): the first MaxNameSpans-1 spans and the latest one
	// are kept.
	MaxNameSpans = 16
)

// NameSpan is one name a lifetime had: from its first sample (At) until
// the next span's At. exec(2) starts a new span within the same lifetime
// (same PID and start time).
type NameSpan struct {
	// At is the time of the first sample that showed this name.
	At time.Time
	// Name follows sample.FullName; Comm is the kernel command name; Exe
	// the executable path ("" when unreadable); Argv0 argv[0] ("" when
	// unread).
	Name, Comm, Exe, Argv0 string
}

// facts returns what the name rule reads of the span.
func (n NameSpan) facts() sample.NameFacts {
	return sample.NameFacts{Name: n.Name, Comm: n.Comm, Exe: n.Exe, Argv0: n.Argv0}
}

// Lifetime is what the store knows about one retained process lifetime.
type Lifetime struct {
	ID sample.Identity
	// Name, Comm and Exe are the latest (the last span's); Names lists
	// every span, oldest first (Names[0] is the name at the start of the
	// retained lifetime, the last one the name at its end).
	Name  string
	Comm  string
	Exe   string
	Names []NameSpan
	PPID  int32
	// LastPPID is the parent PID in the latest snapshot that listed the
	// lifetime: the process that reaps it, unless it is reparented
	// (to init or a subreaper) after that.
	LastPPID  int32
	StartTime time.Time
	UID       uint32
	UIDKnown  bool
	// Parent is the verified parent identity at first sight (ok false when
	// the parent was not in that snapshot or started later).
	Parent   sample.Identity
	ParentOK bool
	// Tracked says the lifetime is in the tracking scope (name match or an
	// observed descendant of a tracked lifetime).
	Tracked bool
	// Ended says the lifetime is absent from the latest applied snapshot.
	Ended bool
	// EndedAt is the time of the first applied snapshot the lifetime was
	// absent from (its PID with its start time was not listed), zero
	// while it is in the latest: it ended after its last sample (To) and
	// by EndedAt, as far as the sampler saw.
	EndedAt time.Time
	// From and To bound its retained samples.
	From, To time.Time
	// Samples is the number of retained samples; Capacity the ring size.
	Samples, Capacity int
}

type entry struct {
	Lifetime
	series *Series
	// child holds the steps of the reaped-children CPU (ChildStep);
	// childTrimmed says older steps were dropped.
	child        []ChildStep
	childTrimmed bool
	// seenGen is the store's gen of the last snapshot that listed the
	// lifetime (Apply marks it instead of building a set per snapshot).
	seenGen uint64
}

// ChildStep is one value of a lifetime's reaped-children CPU time
// (sample.Process.ChildCPUNs: cutime + cstime in ns) from the sample at
// Ms (ms since the Unix epoch) until the next step. Only changes are
// stored: the value changes when the process reaps a child.
type ChildStep struct {
	Ms int64
	Ns uint64
}

// appendChild records the reaped-children CPU of one sample: a new step
// when it differs from the last one (the first sample always makes one).
// A sample adds at most one step; when the steps outnumber the ring's
// capacity, those older than the ring's first retained sample are
// dropped but the latest of them, which stays the value from then on.
func (e *entry) appendChild(ms int64, ns uint64) {
	if n := len(e.child); n > 0 && e.child[n-1].Ns == ns {
		return
	}
	if len(e.child) >= e.series.Capacity() {
		first := e.series.prevMs
		if from, _, ok := e.series.Bounds(); ok {
			first = from.UnixMilli()
		}
		i := sort.Search(len(e.child), func(i int) bool { return e.child[i].Ms > first })
		if i > 1 {
			// A new slice: frozen views keep reading the old one.
			e.child = append(make([]ChildStep, 0, len(e.child)-i+2), e.child[i-1:]...)
			e.childTrimmed = true
		}
	}
	e.child = append(e.child, ChildStep{Ms: ms, Ns: ns})
}

// Store holds the system ring and one ring per process lifetime. It is
// safe for concurrent use: Apply runs on the sampler goroutine, queries
// take Views.
type Store struct {
	mu      sync.Mutex
	system  *Series
	procs   map[sample.Identity]*entry
	names   map[string]bool // lower-cased tracked names
	lastSeq uint64
	now     func() time.Time
	pruned  Pruned // what identity pruning removed (rank.go)

	// Totals kept as rings change, so status reads are O(1): lifetimes
	// with at least one sample, and encoded bytes of every ring (the
	// system's included).
	retained int
	bytes    int
	// prunedCPU keeps the CPU-accounting records of pruned lifetimes.
	prunedCPU []PrunedCPU

	// gen counts the changes to what Lifetimes returns (an applied
	// snapshot, a tracking change); lives is Lifetimes' sorted result as
	// of livesGen, kept until the next change (livesOK false: none yet).
	gen      uint64
	lives    []Lifetime
	livesGen uint64
	livesOK  bool
}

var procFloat, sysFloat uint32

func init() {
	for _, m := range sample.ProcessMetrics {
		if m.Repr == sample.ReprNumber {
			procFloat |= 1 << uint(m.Index)
		}
	}
	for _, m := range sample.SystemMetrics {
		if m.Repr == sample.ReprNumber {
			sysFloat |= 1 << uint(m.Index)
		}
	}
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		system: NewSeries(sample.NumSystemMetrics, sysFloat, TrackedCapacity),
		procs:  map[sample.Identity]*entry{},
		names:  map[string]bool{},
		now:    time.Now,
	}
}

// NormalizeName is the tracking-list form of a process name: trimmed and
// case-folded on exact bytes (sample.FoldBytes; names compare
// case-insensitively, and a byte that is not UTF-8 stays itself).
func NormalizeName(n string) string { return sample.FoldBytes(strings.TrimSpace(n)) }

// nameMatch reports whether any name the lifetime had matches a tracked
// name by the one name rule (sample.NameFacts.Matches).
func (st *Store) nameMatch(l *Lifetime) bool {
	for n := range st.names {
		if l.MatchesAny(n) {
			return true
		}
	}
	return false
}

// MatchesAny reports whether want (a tracking or wait name) names any
// span of the lifetime by the one name rule (sample.NameFacts.Matches:
// exe base name, comm, argv[0]).
func (l *Lifetime) MatchesAny(want string) bool {
	for _, n := range l.Names {
		if n.facts().Matches(want) {
			return true
		}
	}
	return sample.NameFacts{Name: l.Name, Comm: l.Comm, Exe: l.Exe}.Matches(want)
}

// Apply stores one published snapshot: appends every process (a zombie,
// state Z or X, keeps its lifetime but adds no sample) and the system, creates rings for new lifetimes (tracked ones get
// TrackedCapacity), marks absent lifetimes ended and prunes. Snapshots
// with a Seq not above the last applied one are ignored.
func (st *Store) Apply(snap *sample.Snapshot) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if snap.Seq != 0 && snap.Seq <= st.lastSeq {
		return
	}
	st.lastSeq = snap.Seq
	st.gen++
	st.appendTo(st.system, snap.Time, snap.System.Avail, snap.System.Vals[:])
	var fresh, renamed []*entry
	for i := range snap.Procs {
		p := &snap.Procs[i]
		id := p.ID()
		e := st.procs[id]
		if e == nil {
			e = &entry{Lifetime: Lifetime{ID: id, Name: p.Name, Comm: p.Comm, Exe: p.Exe, PPID: p.PPID, LastPPID: p.PPID, StartTime: p.StartTime, UID: p.UID, UIDKnown: p.UIDKnown,
				Names: []NameSpan{{At: snap.Time, Name: p.Name, Comm: p.Comm, Exe: p.Exe, Argv0: p.Argv0}}}}
			if par := snap.Find(p.PPID); par != nil && par.StartTicks <= p.StartTicks && par.PID != p.PID {
				e.Parent, e.ParentOK = par.ID(), true
			}
			e.series = NewSeries(sample.NumProcessMetrics, procFloat, UntrackedCapacity)
			st.procs[id] = e
			fresh = append(fresh, e)
		}
		e.seenGen = st.gen
		if p.Name != e.Name || p.Comm != e.Comm {
			// exec: same lifetime, new name (kept with its time)
			e.Name, e.Comm, e.Exe = p.Name, p.Comm, p.Exe
			if len(e.Names) < MaxNameSpans {
				e.Names = append(slices.Clip(e.Names), NameSpan{At: snap.Time, Name: p.Name, Comm: p.Comm, Exe: p.Exe, Argv0: p.Argv0})
			} else {
				e.Names = append(slices.Clone(e.Names[:MaxNameSpans-1]), NameSpan{At: snap.Time, Name: p.Name, Comm: p.Comm, Exe: p.Exe, Argv0: p.Argv0})
			}
			if !e.Tracked {
				renamed = append(renamed, e)
			}
		} else if e.Exe == "" && p.Exe != "" {
			e.Exe = p.Exe
		}
		if n := len(e.Names) - 1; n >= 0 && e.Names[n].Argv0 == "" && p.Argv0 != "" {
			e.Names = slices.Clone(e.Names)
			e.Names[n].Argv0 = p.Argv0
		}
		e.Ended, e.EndedAt = false, time.Time{}
		e.LastPPID = p.PPID
		if p.ChildCPUOK {
			// A zombie's reaped-children time is final and still its own
			// until its parent reaps it, so it is kept.
			e.appendChild(snap.Time.UnixMilli(), p.ChildCPUNs)
		}
		if p.State == 'Z' || p.State == 'X' || p.Exiting {
			// A zombie has exited and only awaits reaping: its RSS and
			// sizes read 0 and its CPU has stopped, which are not samples
			// of the live lifetime; the series ends at its last live one.
			// A process inside exit() (Exiting) may read so already.
			continue
		}
		st.appendTo(e.series, snap.Time, p.Avail, p.Vals[:])
	}
	for _, e := range fresh {
		st.evalTracked(e, 0)
	}
	for _, e := range renamed {
		st.evalTracked(e, 0)
	}
	for _, e := range st.procs {
		if e.seenGen != st.gen {
			if !e.Ended {
				e.EndedAt = snap.Time
			}
			e.Ended = true
		}
	}
	st.prune()
}

// evalTracked sets e.Tracked from the name list and its parent's state,
// and sizes its ring. depth bounds the parent walk.
func (st *Store) evalTracked(e *entry, depth int) bool {
	t := st.nameMatch(&e.Lifetime)
	if !t && e.ParentOK && depth < 64 {
		if p := st.procs[e.Parent]; p != nil {
			t = st.evalTracked(p, depth+1)
		}
	}
	e.Tracked = t
	c := UntrackedCapacity
	if t {
		c = TrackedCapacity
	}
	if e.series.Capacity() != c {
		b, n := e.series.Bytes(), e.series.Len()
		e.series.SetCapacity(c)
		st.bytes += e.series.Bytes() - b
		if n > 0 && e.series.Len() == 0 {
			st.retained--
		}
	}
	return t
}

// appendTo appends one sample to s (the system ring or a lifetime's) and
// moves the store's totals by what it changed.
func (st *Store) appendTo(s *Series, t time.Time, avail uint32, vals []uint64) {
	b, n := s.Bytes(), s.Len()
	s.Append(t, avail, vals)
	st.bytes += s.Bytes() - b
	if n == 0 && s != st.system {
		st.retained++
	}
}

// remove drops a lifetime and its ring from the store and its totals.
func (st *Store) remove(id sample.Identity, e *entry) {
	st.bytes -= e.series.Bytes()
	if e.series.Len() > 0 {
		st.retained--
	}
	delete(st.procs, id)
}

func (st *Store) prune() {
	now := st.now()
	var untracked, tracked []*entry
	for id, e := range st.procs {
		if !e.Ended {
			continue
		}
		if e.series.Len() == 0 {
			st.remove(id, e)
			continue
		}
		if e.Tracked {
			tracked = append(tracked, e)
			continue
		}
		if now.Sub(time.UnixMilli(e.series.prevMs)) > EndedUntrackedAge {
			st.notePruned(e)
			st.remove(id, e)
			continue
		}
		untracked = append(untracked, e)
	}
	drop := func(es []*entry, keep int) {
		if len(es) <= keep {
			return
		}
		sort.Slice(es, func(i, j int) bool { return es[i].series.prevMs < es[j].series.prevMs })
		for _, e := range es[:len(es)-keep] {
			st.notePruned(e)
			st.remove(e.ID, e)
		}
	}
	drop(untracked, MaxEndedUntracked)
	drop(tracked, MaxEndedTracked)
}

// Loss is history that a tracking change would discard: a lifetime whose
// ring shrinks below its retained sample count.
type Loss struct {
	ID      sample.Identity
	Name    string
	Discard int // samples that would be discarded
}

// SetTracking replaces the tracked name list, re-evaluates every
// lifetime's scope and capacity and returns the history discarded.
func (st *Store) SetTracking(names []string) []Loss {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.gen++
	st.names = map[string]bool{}
	for _, n := range names {
		st.names[NormalizeName(n)] = true
	}
	// Lengths first: evaluating one lifetime re-evaluates (and may shrink)
	// its ancestors, so a per-entry before/after would miss their loss
	// depending on map order.
	before := make(map[*entry]int, len(st.procs))
	for _, e := range st.procs {
		before[e] = e.series.Len()
	}
	for _, e := range st.procs {
		st.evalTracked(e, 0)
	}
	var out []Loss
	for e, n := range before {
		if d := n - e.series.Len(); d > 0 {
			out = append(out, Loss{ID: e.ID, Name: e.Name, Discard: d})
		}
	}
	sortLoss(out)
	return out
}

// PreviewTracking returns the history that SetTracking(names) would
// discard now, without changing anything.
func (st *Store) PreviewTracking(names []string) []Loss {
	st.mu.Lock()
	defer st.mu.Unlock()
	probe := &Store{names: map[string]bool{}, procs: st.procs}
	for _, n := range names {
		probe.names[NormalizeName(n)] = true
	}
	memo := map[sample.Identity]bool{}
	var tracked func(e *entry, depth int) bool
	tracked = func(e *entry, depth int) bool {
		if v, ok := memo[e.ID]; ok {
			return v
		}
		t := probe.nameMatch(&e.Lifetime)
		if !t && e.ParentOK && depth < 64 {
			if p := st.procs[e.Parent]; p != nil {
				t = tracked(p, depth+1)
			}
		}
		memo[e.ID] = t
		return t
	}
	var out []Loss
	for _, e := range st.procs {
		if !tracked(e, 0) && e.series.Len() > UntrackedCapacity {
			out = append(out, Loss{ID: e.ID, Name: e.Name, Discard: e.series.Len() - UntrackedCapacity})
		}
	}
	sortLoss(out)
	return out
}

func sortLoss(l []Loss) {
	slices.SortFunc(l, func(a, b Loss) int {
		if a.ID.PID != b.ID.PID {
			return int(a.ID.PID - b.ID.PID)
		}
		if a.ID.StartTicks < b.ID.StartTicks {
			return -1
		}
		return 1
	})
}

func (e *entry) snapshot() Lifetime {
	l := e.Lifetime
	l.From, l.To, _ = e.series.Bounds()
	l.Samples, l.Capacity = e.series.Len(), e.series.Capacity()
	return l
}

// Lifetimes returns every retained lifetime (live and ended), sorted by
// PID then start. The caller owns the slice (its Names are shared and
// must not be changed). The sorted list is kept between changes (an
// applied snapshot, a tracking change), so repeated calls between two
// samples copy it without walking and sorting the store again.
func (st *Store) Lifetimes() []Lifetime {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.livesOK || st.livesGen != st.gen {
		out := st.lives[:0]
		for _, e := range st.procs {
			if e.series.Len() > 0 {
				out = append(out, e.snapshot())
			}
		}
		sortLifetimes(out)
		clear(out[len(out):cap(out)]) // drop what pruned lifetimes held
		st.lives, st.livesGen, st.livesOK = out, st.gen, true
	}
	return append(make([]Lifetime, 0, len(st.lives)), st.lives...)
}

// Generation returns a number that changes whenever what Lifetimes
// returns may have changed (a snapshot applied, the tracking list set):
// a caller that derives values from Lifetimes may keep them while it
// reads the same generation.
func (st *Store) Generation() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.gen
}

// Process returns a frozen view of one lifetime's ring and its facts; ok
// false when the identity is not retained (never resolved by PID or name).
func (st *Store) Process(id sample.Identity) (*View, Lifetime, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.procs[id]
	if e == nil {
		return nil, Lifetime{}, false
	}
	return e.series.View(), e.snapshot(), true
}

// System returns a frozen view of the system ring.
func (st *Store) System() *View {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.system.View()
}

// Tracked returns the retained lifetimes in the tracking scope, sorted
// by PID then start; only they are copied.
func (st *Store) Tracked() []Lifetime {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []Lifetime
	for _, e := range st.procs {
		if e.Tracked && e.series.Len() > 0 {
			out = append(out, e.snapshot())
		}
	}
	sortLifetimes(out)
	return out
}

// sortLifetimes orders lifetimes by PID, then start.
func sortLifetimes(out []Lifetime) {
	slices.SortFunc(out, func(a, b Lifetime) int {
		if a.ID.PID != b.ID.PID {
			return cmp.Compare(a.ID.PID, b.ID.PID)
		}
		return cmp.Compare(a.ID.StartTicks, b.ID.StartTicks)
	})
}

// MemoryBytes returns the encoded sample bytes held by every ring (the
// system's and every lifetime's), kept as rings change (O(1)).
func (st *Store) MemoryBytes() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.bytes
}

// RetainedLifetimes returns the number of retained lifetimes (live and
// ended) with at least one sample: len(Lifetimes()) without copying them
// (O(1)).
func (st *Store) RetainedLifetimes() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.retained
}
