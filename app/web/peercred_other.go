//go:build !linux

package web

import (
	"errors"
	"net"
)

// peerOf has no peer credentials to read off Linux: the system agent is
// Linux's (the labpool package), and RequireAdmin admits nobody here.
func peerOf(net.Conn) (Peer, error) {
	return Peer{}, errors.New("read peer credentials: only Linux has a system agent")
}
