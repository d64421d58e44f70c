//go:build unix && !linux && !darwin

package ipc

import "net"

// peerOf is not implemented on this system: connections fail closed.
func peerOf(c net.Conn) (Peer, error) {
	return Peer{}, untrusted("peer credentials are not available on this system")
}
