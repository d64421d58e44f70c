//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// settingsBackstop is how often an inotify-driven settings watch checks
// anyway: inotify does not see every way the runtime directory can go
// (an ancestor renamed away), nor a lost event (queue overflow).
const settingsBackstop = 30 * time.Second

// inotify event masks: the config file's directory (or, while it does not
// exist, its deepest existing ancestor) and the runtime directory.
const (
	configWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB |
		unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	lockWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
)

// inotifyWaker wakes the settings watch when the config file's directory
// or the runtime directory changes, and every settingsBackstop.
type inotifyWaker struct {
	f        *os.File
	fd       int
	cfgPath  string
	c        chan struct{}
	tick     *time.Ticker
	mu       sync.Mutex
	cfgWd    int // watch on the config file's directory or an ancestor; -1 none
	lockWd   int
	stopOnce sync.Once
	done     chan struct{}
}

// newSettingsWaker returns the inotify waker for cfgPath and lockPath, or
// a poll every configPollInterval when inotify cannot watch them.
func newSettingsWaker(cfgPath, lockPath string) settingsWaker {
	if w := newInotifyWaker(cfgPath, lockPath); w != nil {
		return w
	}
	return newPollWaker()
}

func newInotifyWaker(cfgPath, lockPath string) *inotifyWaker {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	lockWd, err := unix.InotifyAddWatch(fd, filepath.Dir(lockPath), lockWatchMask)
	if err != nil {
		unix.Close(fd)
		return nil
	}
	// A non-blocking descriptor joins the runtime's poller: Read parks the
	// goroutine without a thread, and Close wakes it.
	w := &inotifyWaker{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, cfgPath: cfgPath, c: make(chan struct{}, 1),
		cfgWd: -1, lockWd: lockWd, done: make(chan struct{})}
	if !w.rewatch() {
		w.f.Close()
		return nil
	}
	w.tick = time.NewTicker(settingsBackstop)
	w.c <- struct{}{} // the first check runs at once
	go w.read()
	go w.backstop()
	return w
}

// rewatch moves the config watch to the deepest existing directory on
// the way to the config file (the file's own directory once it exists);
// false when no directory can be watched.
func (w *inotifyWaker) rewatch() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for d := filepath.Dir(w.cfgPath); ; d = filepath.Dir(d) {
		wd, err := unix.InotifyAddWatch(w.fd, d, configWatchMask)
		if err == nil {
			if w.cfgWd >= 0 && w.cfgWd != wd && w.cfgWd != w.lockWd {
				unix.InotifyRmWatch(w.fd, uint32(w.cfgWd))
			}
			w.cfgWd = wd
			return true
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}

func (w *inotifyWaker) wake() {
	select {
	case w.c <- struct{}{}:
	default: // a check is already due
	}
}

// read turns every batch of inotify events into one wake until Close.
func (w *inotifyWaker) read() {
	buf := make([]byte, 16*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		if n > 0 {
			// any event is a reason to check; the check reads the files
			w.wake()
		}
	}
}

func (w *inotifyWaker) backstop() {
	for {
		select {
		case <-w.done:
			return
		case <-w.tick.C:
			w.wake()
		}
	}
}

// C receives when the settings watch should check the files.
func (w *inotifyWaker) C() <-chan struct{} { return w.c }

// Changed is called before each check: the config directory may have been
// created or removed, so the watch moves to the deepest existing one.
func (w *inotifyWaker) Changed() { w.rewatch() }

// Close stops the waker.
func (w *inotifyWaker) Close() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.tick.Stop()
		w.f.Close()
	})
}
