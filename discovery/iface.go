package discovery

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
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
// leaves out, by GOOS ("" for every OS): links that never reach the LAN.
//   - everywhere: container and VM bridges and their veth ends, whose
//     addresses mean nothing to another machine (labpool itself starts
//     containers);
//   - macOS: Apple Wireless Direct Link (awdl0) and its low-latency twin
//     (llw0), Wi-Fi peer-to-peer (p2p0), and VPN tunnels (utun*);
//   - Windows: the NAT switches of Hyper-V ("vEthernet (Default Switch)")
//     and WSL ("vEthernet (WSL)", "vEthernet (WSL (Hyper-V firewall))").
//     Other vEthernet adapters are kept: an external Hyper-V switch is the
//     host's own LAN connection.
var autoSkip = map[string][]string{
	"":        {"docker", "br-", "veth", "virbr", "cni", "flannel"},
	"darwin":  {"awdl", "llw", "p2p", "utun"},
	"windows": {"vEthernet (Default Switch)", "vEthernet (WSL"},
}

// lanInterface reports whether the automatic selection on goos keeps an
// interface named name with flags: up, multicast-capable, not loopback,
// and not one of autoSkip's.
func lanInterface(goos, name string, flags net.Flags) bool {
	if flags&net.FlagUp == 0 || flags&net.FlagMulticast == 0 || flags&net.FlagLoopback != 0 {
		return false
	}
	skip := func(p string) bool { return strings.HasPrefix(name, p) }
	return !slices.ContainsFunc(autoSkip[""], skip) && !slices.ContainsFunc(autoSkip[goos], skip)
}

// SelectInterfaces turns interface names ("eth0") into the list that zeroconf
// takes. No names means every interface that is up and multicast-capable,
// except loopback, container bridges and the links of this OS that never
// reach the LAN (lanInterface); the list may then be empty. A name
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
		if lanInterface(runtime.GOOS, ifi.Name, ifi.Flags) {
			out = append(out, ifi)
		}
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
