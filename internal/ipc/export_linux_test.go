package ipc

import "time"

// SetSocketBackstop sets the inotify socket watch's backstop period for
// the endpoints enabled after it; the returned func restores it.
func SetSocketBackstop(d time.Duration) (restore func()) {
	old := socketBackstop
	socketBackstop = d
	return func() { socketBackstop = old }
}
