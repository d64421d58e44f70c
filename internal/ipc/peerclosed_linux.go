package ipc

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed reports whether the other end of c has already closed the
// connection (the host process exited or closed it), as the kernel tells
// it now: poll(2) on the socket with a zero timeout sets POLLHUP or
// POLLRDHUP once the peer is gone, before the reader goroutine has read the
// end of file. A request written to such a connection can never be
// dispatched, so Call treats it as not sent. It returns false when c is not
// a socket or the state cannot be read (the usual write-then-read path
// then decides).
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds, 0)
		closed = err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLRDHUP|unix.POLLERR) != 0
	})
	return closed
}
