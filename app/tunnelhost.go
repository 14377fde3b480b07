package app

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// tunnelHosts are the loopback addresses tunnels listen on, the first that
// can be bound (127.0.0.2 on Linux and Windows, where all of 127/8 is
// loopback; ::1 on macOS, which configures 127.0.0.1 alone). They are never
// 127.0.0.1 or localhost, the web UI's hosts: a browser sends a host's
// cookies to every port of it (cookies are scoped by host, not port), so a
// page served through a tunnel on the UI's host would receive the UI's
// secret. `labpool web` refuses to listen on them (IsTunnelHost).
var tunnelHosts = []string{"127.0.0.2", "::1"}

// IsTunnelHost reports whether host (an address or name, without port) is
// one tunnels may listen on.
func IsTunnelHost(host string) bool {
	host = strings.Trim(host, "[]")
	ip := net.ParseIP(host)
	for _, h := range tunnelHosts {
		if ip != nil && ip.Equal(net.ParseIP(h)) {
			return true
		}
	}
	return false
}

// listenTunnel listens on a free port of the first tunnel host that can be
// bound.
func listenTunnel() (net.Listener, error) {
	var errs []error
	for _, h := range tunnelHosts {
		l, err := net.Listen("tcp", net.JoinHostPort(h, "0"))
		if err == nil {
			return l, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("listen for tunnel on %s: %w", strings.Join(tunnelHosts, " or "), errors.Join(errs...))
}
