package bin

import (
	"runtime/debug"
	"sync"
	"time"
)

// maxKeptInspections bounds the inspections kept (keptInspections): the
// files of the listings being paged.
const maxKeptInspections = 2

// keptInspection is one file's inspection as a disassembly read it,
// with the bytes it was read from (the file's mapping, which its lazy
// readers still use), kept by the file's state (fileState).
type keptInspection struct {
	st   fileState
	data []byte
	in   *Inspection
	// release unmaps data; nil when data is not a mapping.
	release func()
	// refs counts the calls using data; evicted says the entry left
	// keptInspections, so the last call using it releases it.
	refs    int
	evicted bool
	// ahead is the page of a disassembly of this file state decoded
	// ahead (prefetch.go); nil when none.
	ahead *aheadPage
}

// keptInspections keeps the inspections of the last files disassembled,
// newest last: paging through a disassembly opens the file on every page,
// and parsing its headers, sections, symbols and dynamic tables each time
// was a measurable part of a page's cost. A page whose file is in another
// state (rewritten, replaced, touched) inspects the file anew, and its
// cursor is checked against that file's digest as before.
var keptInspections struct {
	sync.Mutex
	list []*keptInspection
}

// reuseInspection returns the inspection kept for f's state and makes f
// read the kept bytes: f's own mapping is released, and f.Close releases
// f's hold on the kept entry. ok is false when none is kept for f's
// state (f is unchanged).
func reuseInspection(f *File) (in *Inspection, ok bool) {
	if !f.state.keepable(time.Now()) {
		return nil, false
	}
	keptInspections.Lock()
	var e *keptInspection
	for _, k := range keptInspections.list {
		if k.st == f.state {
			e = k
			break
		}
	}
	if e == nil {
		keptInspections.Unlock()
		return nil, false
	}
	e.refs++
	keptInspections.Unlock()
	f.Close()
	prev := debug.SetPanicOnFault(true)
	f.Data, f.release, f.kept = e.data, nil, e
	f.unmap = func() {
		debug.SetPanicOnFault(prev)
		e.unref()
	}
	return e.in, true
}

// keepInspection keeps in, read from f's bytes, for later calls on the
// same file state, and hands f's mapping to the kept entry: f.Close then
// releases f's hold on it, and the entry's eviction releases the mapping
// once no call uses it. It keeps nothing for a file changed within
// racyWindow or whose state the platform does not report.
func keepInspection(f *File, in *Inspection) {
	if !f.state.keepable(time.Now()) || (f.unmap != nil && f.release == nil) {
		return
	}
	e := &keptInspection{st: f.state, data: f.Data, in: in, release: f.release, refs: 1}
	f.kept = e
	if f.release != nil {
		prev := f.prevFault
		f.release = nil
		f.unmap = func() {
			debug.SetPanicOnFault(prev)
			e.unref()
		}
	} else {
		f.unmap = e.unref
	}
	keptInspections.Lock()
	defer keptInspections.Unlock()
	for i, k := range keptInspections.list {
		if k.st == e.st {
			// Another call kept the same state meanwhile: this one
			// replaces it.
			keptInspections.list = append(keptInspections.list[:i], keptInspections.list[i+1:]...)
			k.evict()
			break
		}
	}
	if len(keptInspections.list) >= maxKeptInspections {
		keptInspections.list[0].evict()
		keptInspections.list = append(keptInspections.list[:0], keptInspections.list[1:]...)
	}
	keptInspections.list = append(keptInspections.list, e)
}

// evict marks e as out of keptInspections and releases its mapping when
// no call uses it. The caller holds keptInspections.
func (e *keptInspection) evict() {
	e.evicted = true
	e.ahead = nil
	if e.refs == 0 && e.release != nil {
		e.release()
		e.release = nil
	}
}

// unref ends one call's use of e.
func (e *keptInspection) unref() {
	keptInspections.Lock()
	defer keptInspections.Unlock()
	e.refs--
	if e.refs == 0 && e.evicted && e.release != nil {
		e.release()
		e.release = nil
	}
}

// dropKeptInspections evicts every kept inspection (tests).
func dropKeptInspections() {
	keptInspections.Lock()
	defer keptInspections.Unlock()
	for _, k := range keptInspections.list {
		k.evict()
	}
	keptInspections.list = nil
}
