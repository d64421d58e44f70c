package bin

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// A disassembly page that ends with a next cursor is usually followed by
// the call for the next page of the same listing. That page is decoded
// ahead, in the background, while the page just served is encoded,
// written and read by the client: one page per kept inspection
// (keptinspect.go), for the same file state only, dropped with the kept
// inspection. The next call takes it only when it asks for the very page
// decoded ahead (same file state, range, syntax, offset and row limit),
// after its cursor was checked against the file as before; anything else
// decodes afresh. The rows are disassemble's own for those arguments, so
// a page taken ahead equals a page decoded in the call.

// aheadKey is what a disassembly page depends on besides the file's
// bytes (which the kept inspection's state fixes): the range, the
// architecture and syntax, the start offset and the row limit.
type aheadKey struct {
	arch, syntax string
	base         uint64
	size, sect   int
	off, limit   int
}

// aheadPage is one page decoded ahead: done is closed once rows and off
// are set; ok is false when the decoding faulted (the file shrank), so
// the call decodes the page itself and reports the fault.
type aheadPage struct {
	key  aheadKey
	done chan struct{}
	rows []Instruction
	off  int
	ok   bool
}

// noAhead turns decoding ahead off (tests compare pages with and without).
var noAhead bool

// aheadRunning counts the decodings ahead not yet ended (tests wait on
// it), aheadTaken the pages taken from a decoding ahead.
var (
	aheadRunning sync.WaitGroup
	aheadTaken   atomic.Int64
)

// decodeAhead starts decoding the page key names, with decode, in the
// background for e's file state, replacing any page e holds. The
// decoding holds e's bytes until it ends.
func decodeAhead(e *keptInspection, key aheadKey, decode func() ([]Instruction, int)) {
	if noAhead || e == nil {
		return
	}
	p := &aheadPage{key: key, done: make(chan struct{})}
	keptInspections.Lock()
	if e.evicted {
		keptInspections.Unlock()
		return
	}
	e.ahead = p
	e.refs++
	aheadRunning.Add(1)
	keptInspections.Unlock()
	go func() {
		defer aheadRunning.Done()
		defer e.unref()
		defer close(p.done)
		// A fault on the mapping (the file shrank) ends this decoding
		// only: the call that asks for the page decodes it itself.
		prev := debug.SetPanicOnFault(true)
		defer debug.SetPanicOnFault(prev)
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(interface{ Addr() uintptr }); !ok {
					panic(r)
				}
				p.rows, p.ok = nil, false
			}
		}()
		p.rows, p.off = decode()
		p.ok = true
	}()
}

// takeAhead returns the page e decoded ahead for key, waiting for its
// decoding to end; ok is false when e holds no page for key (a page for
// another key is dropped: the listing moved elsewhere).
func takeAhead(e *keptInspection, key aheadKey) (rows []Instruction, off int, ok bool) {
	if e == nil {
		return nil, 0, false
	}
	keptInspections.Lock()
	p := e.ahead
	e.ahead = nil
	keptInspections.Unlock()
	if p == nil || p.key != key {
		return nil, 0, false
	}
	<-p.done
	if p.ok {
		aheadTaken.Add(1)
	}
	return p.rows, p.off, p.ok
}
