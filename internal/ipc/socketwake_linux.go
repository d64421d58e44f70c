//go:build linux

package ipc

import (
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// socketBackstop is how often an inotify-driven socket watch checks
// anyway: inotify does not see every way the endpoint directory can go
// (an ancestor renamed away), nor a lost event (queue overflow). A
// variable so that tests can prove the events alone suffice.
var socketBackstop = 30 * time.Second

// socketWatchMask: the names in the endpoint directory created, deleted,
// renamed or changed in mode, and the directory itself going.
const socketWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
	unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// inotifySocketWaker wakes the socket watch when one of its names in the
// endpoint directory changes (or the directory goes), and every
// socketBackstop.
type inotifySocketWaker struct {
	f     *os.File
	fd    int
	dir   string
	names map[string]bool
	c     chan struct{}
	tick  *time.Ticker
	// lost is set when the directory's watch ended (the directory was
	// removed or renamed away); Wait watches the path again, which the
	// check in between has recreated.
	lost atomic.Bool
}

// newSocketWaker returns the inotify waker for names in dir, or a poll
// every SocketCheckInterval when inotify cannot watch dir.
func newSocketWaker(dir string, names ...string) socketWaker {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return newPollSocketWaker()
	}
	if _, err := unix.InotifyAddWatch(fd, dir, socketWatchMask); err != nil {
		unix.Close(fd)
		return newPollSocketWaker()
	}
	w := &inotifySocketWaker{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, dir: dir, names: map[string]bool{}, c: make(chan struct{}, 1),
		tick: time.NewTicker(socketBackstop)}
	for _, n := range names {
		w.names[n] = true
	}
	// A non-blocking descriptor joins the runtime's poller: Read parks the
	// goroutine without a thread, and Close wakes it.
	go w.read()
	return w
}

// read wakes the watch for every batch of events that names one of the
// watched files or the directory itself, until Close.
func (w *inotifySocketWaker) read() {
	buf := make([]byte, 16*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		if w.relevant(buf[:n]) {
			select {
			case w.c <- struct{}{}:
			default: // a check is already due
			}
		}
	}
}

// relevant reports whether the events in b concern a watched name, the
// directory itself or a lost event (queue overflow).
func (w *inotifySocketWaker) relevant(b []byte) bool {
	for off := 0; off+unix.SizeofInotifyEvent <= len(b); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[off]))
		name := b[off+unix.SizeofInotifyEvent : min(len(b), off+unix.SizeofInotifyEvent+int(ev.Len))]
		off += unix.SizeofInotifyEvent + int(ev.Len)
		if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
			w.lost.Store(true)
			return true
		}
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			return true
		}
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if w.names[string(name)] {
			return true
		}
	}
	return false
}

// Wait returns true on a relevant event or the backstop, false when stop
// is closed first.
func (w *inotifySocketWaker) Wait(stop <-chan struct{}) bool {
	if w.lost.Load() {
		// A moved directory keeps its watch under its new name: watch
		// the path again (the same directory gives the same watch).
		if _, err := unix.InotifyAddWatch(w.fd, w.dir, socketWatchMask); err == nil {
			w.lost.Store(false)
		}
	}
	select {
	case <-stop:
		return false
	case <-w.c:
		return true
	case <-w.tick.C:
		return true
	}
}

// Close stops the backstop and the inotify reader.
func (w *inotifySocketWaker) Close() {
	w.tick.Stop()
	w.f.Close()
}
