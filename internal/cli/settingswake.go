package cli

import "time"

// settingsWaker says when watchSettings should look at inquest.toml and
// the host lock again: on Linux when inotify reports a change in their
// directories (newSettingsWaker, settingswake_linux.go), elsewhere every
// configPollInterval.
type settingsWaker interface {
	// C receives when a check is due; the first one is due at once.
	C() <-chan struct{}
	// Changed is called before each check.
	Changed()
	// Close releases the waker.
	Close()
}

// pollWaker is a settingsWaker that wakes every configPollInterval.
type pollWaker struct {
	t    *time.Ticker
	c    chan struct{}
	done chan struct{}
}

func newPollWaker() *pollWaker {
	w := &pollWaker{t: time.NewTicker(configPollInterval), c: make(chan struct{}), done: make(chan struct{})}
	go func() {
		for {
			select {
			case <-w.done:
				return
			case <-w.t.C:
			}
			select {
			case w.c <- struct{}{}:
			case <-w.done:
				return
			}
		}
	}()
	return w
}

// C receives every configPollInterval.
func (w *pollWaker) C() <-chan struct{} { return w.c }

// Changed does nothing: the poll does not depend on what it found.
func (w *pollWaker) Changed() {}

// Close stops the ticker.
func (w *pollWaker) Close() {
	w.t.Stop()
	close(w.done)
}
