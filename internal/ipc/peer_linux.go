package ipc

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads SO_PEERCRED of a unix socket connection: the pid and uid of
// the process that connected (on accept) or that listens (on connect), as
// recorded by the kernel at connect/listen time.
func peerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("ipc: not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if serr != nil {
		return Peer{}, fmt.Errorf("ipc: SO_PEERCRED: %w", serr)
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid)}, nil
}
