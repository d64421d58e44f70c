package sample

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Interval is the sampling period (the host samples every second).
const Interval = time.Second

// Sampler runs a Collector every Interval and publishes immutable snapshots.
// Latest never blocks on collection; subscribers get every published
// snapshot in order on their own goroutine and must not retain the sampler's
// goroutine (a slow subscriber only delays later deliveries to itself).
type Sampler struct {
	c        Collector
	interval time.Duration
	cur      atomic.Pointer[Snapshot]
	lastErr  atomic.Pointer[string]

	mu   sync.Mutex
	subs map[int]func(*Snapshot)
	next int
}

// NewSampler returns a sampler over c with period interval (0 = Interval).
func NewSampler(c Collector, interval time.Duration) *Sampler {
	if interval <= 0 {
		interval = Interval
	}
	return &Sampler{c: c, interval: interval, subs: map[int]func(*Snapshot){}}
}

// Collector returns the sampler's collector.
func (s *Sampler) Collector() Collector { return s.c }

// Interval returns the sampling period.
func (s *Sampler) Interval() time.Duration { return s.interval }

// Latest returns the newest published snapshot, or nil before the first.
func (s *Sampler) Latest() *Snapshot { return s.cur.Load() }

// LastError returns the last collection error text, or "".
func (s *Sampler) LastError() string {
	if p := s.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

// Subscribe calls fn with every snapshot published after the call, on the
// sampler goroutine, in order. fn must return quickly (copy or hand off).
// The returned function unsubscribes.
func (s *Sampler) Subscribe(fn func(*Snapshot)) (cancel func()) {
	s.mu.Lock()
	id := s.next
	s.next++
	s.subs[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
	}
}

// Step collects and publishes one snapshot now. Run calls it every
// interval; tests and one-shot CLI commands call it directly.
func (s *Sampler) Step() (*Snapshot, error) {
	snap, err := s.c.Collect(s.cur.Load())
	if err != nil {
		msg := err.Error()
		s.lastErr.Store(&msg)
		return nil, err
	}
	s.lastErr.Store(nil)
	s.cur.Store(snap)
	s.mu.Lock()
	fns := make([]func(*Snapshot), 0, len(s.subs))
	for _, fn := range s.subs {
		fns = append(fns, fn)
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(snap)
	}
	return snap, nil
}

// Run samples every interval until ctx ends. The first sample is taken
// immediately.
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		s.Step()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// WaitNewer blocks until a snapshot with Seq > seq is published, or ctx ends.
func (s *Sampler) WaitNewer(ctx context.Context, seq uint64) (*Snapshot, error) {
	if cur := s.cur.Load(); cur != nil && cur.Seq > seq {
		return cur, nil
	}
	ch := make(chan *Snapshot, 1)
	cancel := s.Subscribe(func(sn *Snapshot) {
		if sn.Seq > seq {
			select {
			case ch <- sn:
			default:
			}
		}
	})
	defer cancel()
	if cur := s.cur.Load(); cur != nil && cur.Seq > seq {
		return cur, nil
	}
	select {
	case sn := <-ch:
		return sn, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
