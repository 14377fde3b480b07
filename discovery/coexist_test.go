//go:build unix

package discovery

import (
	"context"
	"net"
	"syscall"
	"testing"

	"github.com/grandcat/zeroconf"
	"golang.org/x/sys/unix"
)

// TestCoexistsWithResponder holds UDP 5353 as the OS's own responder does
// (mDNSResponder on macOS, avahi-daemon on Linux: the wildcard address with
// SO_REUSEADDR and SO_REUSEPORT) and checks that zeroconf still opens its
// sockets beside it. zeroconf binds the group address, for which Go's net
// package sets SO_REUSEADDR, and on macOS and the BSDs SO_REUSEPORT too.
func TestCoexistsWithResponder(t *testing.T) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	responder, err := lc.ListenPacket(context.Background(), "udp4", "0.0.0.0:5353")
	if err != nil {
		t.Skipf("cannot stand in for the OS's responder here: %v", err)
	}
	defer responder.Close()
	ifaces, err := SelectInterfaces(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ifaces) == 0 {
		t.Skip("no multicast interface here to join the group on")
	}
	res, err := zeroconf.NewResolver(zeroconf.SelectIfaces(ifaces), zeroconf.SelectIPTraffic(zeroconf.IPv4))
	if err != nil {
		t.Fatalf("open mDNS beside the OS's responder on %s: %v", interfaceNames(ifaces), err)
	}
	// A browse whose context is done closes the resolver's sockets, then
	// entries.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	entries := make(chan *zeroconf.ServiceEntry)
	_ = res.Browse(ctx, Service, Domain, entries)
	for range entries {
	}
}
