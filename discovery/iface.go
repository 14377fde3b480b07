package discovery

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

var (
	// ErrUnknownInterface means a network interface named in Config.Ifaces
	// does not exist on this machine.
	ErrUnknownInterface = errors.New("unknown network interface")
	// ErrNoMulticast means a named network interface cannot carry multicast.
	ErrNoMulticast = errors.New("network interface not multicast-capable")
)

// autoSkip lists name prefixes of interfaces that the automatic selection
// leaves out: container and VM bridges and their veth ends, whose addresses
// mean nothing to another machine (labpool itself starts containers).
var autoSkip = []string{"docker", "br-", "veth", "virbr", "cni", "flannel"}

// SelectInterfaces turns interface names ("eth0") into the list that zeroconf
// takes. No names means every interface that is up and multicast-capable,
// except loopback and container bridges; the list may then be empty. A name
// that does not exist is an error wrapping ErrUnknownInterface, one without
// multicast an error wrapping ErrNoMulticast.
func SelectInterfaces(names []string) ([]net.Interface, error) {
	all, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list network interfaces: %w", err)
	}
	return selectInterfaces(all, names)
}

func selectInterfaces(all []net.Interface, names []string) ([]net.Interface, error) {
	if len(names) == 0 {
		return autoInterfaces(all), nil
	}
	var out []net.Interface
	for _, name := range names {
		i := slices.IndexFunc(all, func(ifi net.Interface) bool { return ifi.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("select interface %q: %w (have %s)", name, ErrUnknownInterface, interfaceNames(all))
		}
		if all[i].Flags&net.FlagMulticast == 0 {
			return nil, fmt.Errorf("select interface %q: %w", name, ErrNoMulticast)
		}
		if !slices.ContainsFunc(out, func(ifi net.Interface) bool { return ifi.Index == all[i].Index }) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

func autoInterfaces(all []net.Interface) []net.Interface {
	var out []net.Interface
	for _, ifi := range all {
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagMulticast == 0 || ifi.Flags&net.FlagLoopback != 0 {
			continue
		}
		if slices.ContainsFunc(autoSkip, func(p string) bool { return strings.HasPrefix(ifi.Name, p) }) {
			continue
		}
		out = append(out, ifi)
	}
	return out
}

func interfaceNames(ifaces []net.Interface) string {
	names := make([]string, len(ifaces))
	for i, ifi := range ifaces {
		names[i] = ifi.Name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// interfaceAddrs returns the unicast addresses of the ifaces that are up,
// those worth announcing,
// IPv4 first. Link-local IPv6 addresses come without their zone: the
// receiver knows on which link it heard them.
func interfaceAddrs(ifaces []net.Interface) []netip.Addr {
	var out []netip.Addr
	for _, ifi := range ifaces {
		if ifi.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipnet, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipnet.IP)
			if ok && usableAddr(ip.Unmap()) {
				out = append(out, ip.Unmap())
			}
		}
	}
	return sortAddrs(out)
}

// usableAddr reports whether a peer could reach us at a.
func usableAddr(a netip.Addr) bool {
	return a.IsValid() && !a.IsUnspecified() && !a.IsLoopback() && !a.IsMulticast() &&
		a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// sortAddrs orders addresses IPv4 first, keeping their order otherwise, and
// drops repeats.
func sortAddrs(addrs []netip.Addr) []netip.Addr {
	seen := make(map[netip.Addr]bool, len(addrs))
	out := addrs[:0]
	for _, a := range addrs {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b netip.Addr) int {
		return boolInt(b.Is4()) - boolInt(a.Is4())
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
