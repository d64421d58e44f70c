package managed

import (
	"math/bits"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/managed/hsperf"
)

// Space is one heap space or generation of a JVM, in bytes, from the
// sun.gc.generation.G.space.S.{used,capacity,maxCapacity} (or
// sun.gc.metaspace.*) counters. Committed is HotSpot's "capacity" (what
// jstat prints as EC, OC, MC...).
type Space struct {
	Name                 string
	Used, Committed, Max int64
	// Counter is the counter prefix the values come from.
	Counter string
}

// Collector is one HotSpot GC collector (sun.gc.collector.N): its name
// ("G1 young collection pauses", "Copy", "MSC"...), invocations and
// accumulated time in nanoseconds (ticks / sun.os.hrt.frequency).
type Collector struct {
	Name        string
	Invocations int64
	TimeNS      int64
	Counter     string
}

// JVM is what one read of a JVM's performance data yields. Every value
// comes from a counter of that read; a counter the file does not hold
// leaves its Has bit false (never 0).
type JVM struct {
	// Version is java.property.java.version ("17.0.15"); VMVersion is
	// java.property.java.vm.version; both "" when absent.
	Version, VMVersion string
	// Policy is sun.gc.policy.name ("GarbageFirst", "Copy:MSC"...).
	Policy string
	// CreateVMBeginMS is sun.rt.createVmBeginTime (ms since the epoch).
	CreateVMBeginMS int64
	// HRTFrequency is sun.os.hrt.frequency (ticks per second).
	HRTFrequency int64
	// Eden, Survivor (s0+s1), Old and Metaspace are the spaces jstat -gc
	// prints; Spaces lists every space of every generation as read.
	Eden, Survivor, Old, Metaspace Space
	Spaces                         []Space
	// HeapUsed/Committed are eden+survivors+old (jstat EU+S0U+S1U+OU and
	// EC+S0C+S1C+OC); HeapMax is the sum of the generations' maxCapacity,
	// except under G1 where every generation reports the whole heap as its
	// maximum and the old generation's maxCapacity is the heap's.
	HeapUsed, HeapCommitted, HeapMax int64
	// Collectors lists sun.gc.collector.N in order (0 young, 1 full/old,
	// 2 G1/ZGC concurrent cycles where present).
	Collectors []Collector
	// ThreadsLive is java.threads.live; ClassesLoaded and ClassesUnloaded
	// are java.cls.{loaded,unloaded}Classes plus their shared (CDS)
	// counterparts, as jstat -class counts them.
	ThreadsLive, ClassesLoaded, ClassesUnloaded int64
	// Safepoints is sun.rt.safepoints; SafepointTimeNS
	// sun.rt.safepointTime; JITTimeNS java.ci.totalTime (or
	// sun.ci.totalTime), both converted from ticks.
	Safepoints, SafepointTimeNS, JITTimeNS int64
	// Has says which of the scalar fields above were read (Field* bits).
	Has uint32
}

// Field bits of JVM.Has.
const (
	HasHeap = 1 << iota
	HasHeapMax
	HasEden
	HasSurvivor
	HasOld
	HasMetaspace
	HasYoungGC
	HasOldGC
	HasThreads
	HasClassesLoaded
	HasClassesUnloaded
	HasSafepoints
	HasSafepointTime
	HasJIT
)

// TicksToNS converts HotSpot ticks at frequency hz to nanoseconds without
// overflow; ok is false for a frequency <= 0, negative ticks or a result
// beyond int64.
func TicksToNS(ticks, hz int64) (int64, bool) {
	if hz <= 0 || ticks < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(ticks), 1e9)
	if hi >= uint64(hz) {
		return 0, false
	}
	q, _ := bits.Div64(hi, lo, uint64(hz))
	if q > 1<<63-1 {
		return 0, false
	}
	return int64(q), true
}

func space(f *hsperf.File, prefix string) (Space, bool) {
	s := Space{Counter: prefix}
	var ok1, ok2, ok3 bool
	s.Used, ok1 = f.Long(prefix + ".used")
	s.Committed, ok2 = f.Long(prefix + ".capacity")
	s.Max, ok3 = f.Long(prefix + ".maxCapacity")
	s.Name, _ = f.Str(prefix + ".name")
	return s, ok1 && ok2 && ok3
}

// ReadJVM derives a JVM's metrics from its parsed performance data.
func ReadJVM(f *hsperf.File) *JVM {
	j := &JVM{}
	j.Version, _ = f.Str("java.property.java.version")
	j.VMVersion, _ = f.Str("java.property.java.vm.version")
	j.Policy, _ = f.Str("sun.gc.policy.name")
	j.CreateVMBeginMS, _ = f.Long("sun.rt.createVmBeginTime")
	hz, hzOK := f.Long("sun.os.hrt.frequency")
	if hzOK {
		j.HRTFrequency = hz
	}
	ns := func(name string) (int64, bool) {
		t, ok := f.Long(name)
		if !ok || !hzOK {
			return 0, false
		}
		return TicksToNS(t, hz)
	}

	// Spaces of the generations (bounded: a real JVM has 2 generations of
	// at most 3 spaces).
	var s0, s1 Space
	var haveEden, haveS0, haveS1, haveOld bool
	var genMax int64
	genMaxOK := true
	var oldMax int64
	gens, _ := f.Long("sun.gc.policy.generations")
	for g := int64(0); g < min(gens, 4); g++ {
		gp := "sun.gc.generation." + strconv.FormatInt(g, 10)
		if m, ok := f.Long(gp + ".maxCapacity"); ok {
			genMax += m
			if g == 1 {
				oldMax = m
			}
		} else {
			genMaxOK = false
		}
		n, _ := f.Long(gp + ".spaces")
		for sp := int64(0); sp < min(n, 8); sp++ {
			s, ok := space(f, gp+".space."+strconv.FormatInt(sp, 10))
			if !ok {
				continue
			}
			if g == 1 && s.Name == "space" {
				// The old generation's one space is named "space".
				s.Name = "old"
			}
			j.Spaces = append(j.Spaces, s)
			switch {
			case g == 0 && s.Name == "eden":
				j.Eden, haveEden = s, true
			case g == 0 && s.Name == "s0":
				s0, haveS0 = s, true
			case g == 0 && s.Name == "s1":
				s1, haveS1 = s, true
			case g == 1 && !haveOld:
				j.Old, haveOld = s, true
			}
		}
	}
	if haveS0 && haveS1 {
		j.Survivor = Space{Name: "survivor", Used: s0.Used + s1.Used, Committed: s0.Committed + s1.Committed, Max: max(s0.Max, s1.Max), Counter: "sun.gc.generation.0.space.{1,2}"}
		j.Has |= HasSurvivor
	}
	if haveEden {
		j.Has |= HasEden
	}
	if haveOld {
		j.Has |= HasOld
	}
	if haveEden && haveS0 && haveS1 && haveOld {
		j.HeapUsed = j.Eden.Used + j.Survivor.Used + j.Old.Used
		j.HeapCommitted = j.Eden.Committed + j.Survivor.Committed + j.Old.Committed
		j.Has |= HasHeap
		if strings.Contains(j.Policy, "GarbageFirst") && oldMax > 0 {
			j.HeapMax, j.Has = oldMax, j.Has|HasHeapMax
		} else if genMaxOK && gens > 0 {
			j.HeapMax, j.Has = genMax, j.Has|HasHeapMax
		}
	}
	if m, ok := space(f, "sun.gc.metaspace"); ok {
		m.Name = "metaspace"
		j.Metaspace = m
		j.Spaces = append(j.Spaces, m)
		j.Has |= HasMetaspace
	}

	for c := 0; c < 8; c++ {
		cp := "sun.gc.collector." + strconv.Itoa(c)
		inv, ok1 := f.Long(cp + ".invocations")
		t, ok2 := ns(cp + ".time")
		if !ok1 || !ok2 {
			break
		}
		name, _ := f.Str(cp + ".name")
		j.Collectors = append(j.Collectors, Collector{Name: name, Invocations: inv, TimeNS: t, Counter: cp})
		switch c {
		case 0:
			j.Has |= HasYoungGC
		case 1:
			j.Has |= HasOldGC
		}
	}
	var ok bool
	if j.ThreadsLive, ok = f.Long("java.threads.live"); ok {
		j.Has |= HasThreads
	}
	l1, ok1 := f.Long("java.cls.loadedClasses")
	l2, ok2 := f.Long("java.cls.sharedLoadedClasses")
	if ok1 {
		j.ClassesLoaded, j.Has = l1+l2, j.Has|HasClassesLoaded // shared is 0 without CDS
		_ = ok2
	}
	u1, ok3 := f.Long("java.cls.unloadedClasses")
	u2, _ := f.Long("java.cls.sharedUnloadedClasses")
	if ok3 {
		j.ClassesUnloaded, j.Has = u1+u2, j.Has|HasClassesUnloaded
	}
	if j.Safepoints, ok = f.Long("sun.rt.safepoints"); ok {
		j.Has |= HasSafepoints
	}
	if j.SafepointTimeNS, ok = ns("sun.rt.safepointTime"); ok {
		j.Has |= HasSafepointTime
	}
	if j.JITTimeNS, ok = ns("java.ci.totalTime"); ok {
		j.Has |= HasJIT
	} else if j.JITTimeNS, ok = ns("sun.ci.totalTime"); ok {
		j.Has |= HasJIT
	}
	return j
}
