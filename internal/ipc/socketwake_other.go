//go:build !linux

package ipc

// newSocketWaker polls every SocketCheckInterval (inotify is Linux's).
func newSocketWaker(dir string, names ...string) socketWaker { return newPollSocketWaker() }
