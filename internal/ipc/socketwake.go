package ipc

import "time"

// socketWaker says when a listening endpoint should check its socket file
// and listener.state again (HostEndpoint.CheckSocket): on Linux when
// inotify reports a change to either name in the endpoint directory, and
// every socketBackstop (socketwake_linux.go); elsewhere, or when inotify
// cannot watch the directory, every SocketCheckInterval.
type socketWaker interface {
	// Wait blocks until a check is due (true) or stop is closed (false).
	Wait(stop <-chan struct{}) bool
	// Close releases the waker.
	Close()
}

// pollSocketWaker wakes every SocketCheckInterval.
type pollSocketWaker struct{ t *time.Ticker }

func newPollSocketWaker() *pollSocketWaker {
	return &pollSocketWaker{t: time.NewTicker(SocketCheckInterval)}
}

// Wait returns true at the next tick, false when stop is closed first.
func (w *pollSocketWaker) Wait(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	case <-w.t.C:
		return true
	}
}

// Close stops the ticker.
func (w *pollSocketWaker) Close() { w.t.Stop() }
