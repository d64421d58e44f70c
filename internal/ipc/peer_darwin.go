package ipc

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads LOCAL_PEERCRED (uid) and LOCAL_PEERPID (pid) of a unix
// socket connection.
func peerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("ipc: not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var p Peer
	var serr error
	if err := raw.Control(func(fd uintptr) {
		var x *unix.Xucred
		x, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if serr != nil {
			return
		}
		p.UID = int(x.Uid)
		p.PID, serr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	}); err != nil {
		return Peer{}, err
	}
	if serr != nil {
		return Peer{}, fmt.Errorf("ipc: LOCAL_PEERCRED: %w", serr)
	}
	return p, nil
}
