package discovery

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSelectInterfaces(t *testing.T) {
	const up, mc, lo = net.FlagUp, net.FlagMulticast, net.FlagLoopback
	all := []net.Interface{
		{Index: 1, Name: "lo", Flags: up | lo},
		{Index: 2, Name: "eth0", Flags: up | mc},
		{Index: 3, Name: "wlan0", Flags: mc}, // down
		{Index: 4, Name: "docker0", Flags: up | mc},
		{Index: 5, Name: "veth1a2b", Flags: up | mc},
		{Index: 6, Name: "tun0", Flags: up},
		{Index: 7, Name: "enp5s0", Flags: up | mc},
	}
	tests := []struct {
		name    string
		names   []string
		want    []string
		wantErr error
	}{
		{"auto", nil, []string{"eth0", "enp5s0"}, nil},
		{"named", []string{"enp5s0"}, []string{"enp5s0"}, nil},
		{"named down is kept", []string{"wlan0", "eth0"}, []string{"wlan0", "eth0"}, nil},
		{"named bridge is kept", []string{"docker0"}, []string{"docker0"}, nil},
		{"repeat", []string{"eth0", "eth0"}, []string{"eth0"}, nil},
		{"unknown", []string{"eth0", "eth9"}, nil, ErrUnknownInterface},
		{"no multicast", []string{"tun0"}, nil, ErrNoMulticast},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := selectInterfaces(all, tt.names)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("selectInterfaces(%q) error = %v; want %v", tt.names, err, tt.wantErr)
			}
			var names []string
			for _, ifi := range got {
				names = append(names, ifi.Name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("selectInterfaces(%q) (-want +got):\n%s", tt.names, diff)
			}
		})
	}
}

func TestSelectInterfacesUnknownMessage(t *testing.T) {
	_, err := SelectInterfaces([]string{"no-such-if0"})
	if !errors.Is(err, ErrUnknownInterface) {
		t.Fatalf("SelectInterfaces = %v; want %v", err, ErrUnknownInterface)
	}
	const want = `select interface "no-such-if0": unknown network interface (have `
	if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("error = %q; want it to start with %q", got, want)
	}
}

func TestSortAddrs(t *testing.T) {
	in := []netip.Addr{
		netip.MustParseAddr("fe80::1"),
		netip.MustParseAddr("10.0.0.1"),
		netip.MustParseAddr("2001:db8::1"),
		netip.MustParseAddr("10.0.0.2"),
		netip.MustParseAddr("10.0.0.1"),
	}
	want := []netip.Addr{
		netip.MustParseAddr("10.0.0.1"),
		netip.MustParseAddr("10.0.0.2"),
		netip.MustParseAddr("fe80::1"),
		netip.MustParseAddr("2001:db8::1"),
	}
	if diff := cmp.Diff(want, sortAddrs(in), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("sortAddrs (-want +got):\n%s", diff)
	}
}

func TestLANInterface(t *testing.T) {
	const up, mc, lo = net.FlagUp, net.FlagMulticast, net.FlagLoopback
	tests := []struct {
		goos, name string
		flags      net.Flags
		want       bool
	}{
		{"linux", "eth0", up | mc, true},
		{"linux", "wlp2s0", up | mc, true},
		{"linux", "lo", up | mc | lo, false},
		{"linux", "eth1", mc, false}, // down
		{"linux", "tun0", up, false}, // no multicast
		{"linux", "docker0", up | mc, false},
		{"linux", "br-3f2a9c", up | mc, false},
		{"linux", "veth1a2b", up | mc, false},
		{"linux", "virbr0", up | mc, false},
		{"linux", "awdl0", up | mc, true}, // only macOS names it so
		{"darwin", "en0", up | mc, true},
		{"darwin", "bridge0", up | mc, true},
		{"darwin", "awdl0", up | mc, false},
		{"darwin", "llw0", up | mc, false},
		{"darwin", "p2p0", up | mc, false},
		{"darwin", "utun0", up | mc, false},
		{"darwin", "utun4", up | mc, false},
		{"darwin", "docker0", up | mc, false},
		{"windows", "Ethernet", up | mc, true},
		{"windows", "Wi-Fi", up | mc, true},
		{"windows", "vEthernet (Default Switch)", up | mc, false},
		{"windows", "vEthernet (WSL)", up | mc, false},
		{"windows", "vEthernet (WSL (Hyper-V firewall))", up | mc, false},
		{"windows", "vEthernet (External LAN)", up | mc, true}, // an external switch is the LAN
		{"windows", "Loopback Pseudo-Interface 1", up | mc | lo, false},
		{"linux", "vEthernet (WSL)", up | mc, true},
	}
	for _, tt := range tests {
		if got := lanInterface(tt.goos, tt.name, tt.flags); got != tt.want {
			t.Errorf("lanInterface(%q, %q, %v) = %v; want %v", tt.goos, tt.name, tt.flags, got, tt.want)
		}
	}
}
