package discovery

import (
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/grandcat/zeroconf"
)

func entry(instance string, port int, text []string, ips ...string) *zeroconf.ServiceEntry {
	e := zeroconf.NewServiceEntry(instance, Service, Domain)
	e.Port, e.Text = port, text
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip.To4() != nil {
			e.AddrIPv4 = append(e.AddrIPv4, ip)
		} else {
			e.AddrIPv6 = append(e.AddrIPv6, ip)
		}
	}
	return e
}

var goodText = []string{"id=" + testID, "v=1", "port=4242", "pool=lab"}

func TestToCandidate(t *testing.T) {
	seen := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	txt := TXT{ID: testID, APIVersion: 1, Port: 4242, Pool: "lab"}
	ap := netip.MustParseAddrPort
	tests := []struct {
		name    string
		e       *zeroconf.ServiceEntry
		zone    string
		want    []netip.AddrPort
		wantErr bool
	}{
		{"ipv4 first", entry("lab1-K7Q2", 4242, goodText, "2001:db8::7", "10.1.2.3"), "",
			[]netip.AddrPort{ap("10.1.2.3:4242"), ap("[2001:db8::7]:4242")}, false},
		{"link-local dropped without zone", entry("lab1", 4242, goodText, "fe80::1", "10.1.2.3"), "",
			[]netip.AddrPort{ap("10.1.2.3:4242")}, false},
		{"link-local kept with zone", entry("lab1", 4242, goodText, "fe80::1"), "eth0",
			[]netip.AddrPort{ap("[fe80::1%eth0]:4242")}, false},
		{"mapped ipv4 unmapped", entry("lab1", 4242, goodText, "::ffff:10.1.2.3"), "",
			[]netip.AddrPort{ap("10.1.2.3:4242")}, false},
		{"junk addresses dropped", entry("lab1", 4242, goodText, "0.0.0.0", "127.0.0.1", "224.0.0.251", "::1", "ff02::fb", "255.255.255.255", "10.1.2.3", "10.1.2.3"), "",
			[]netip.AddrPort{ap("10.1.2.3:4242")}, false},
		{"srv port used", entry("lab1", 5000, goodText, "10.1.2.3"), "",
			[]netip.AddrPort{ap("10.1.2.3:5000")}, false},
		{"no usable address", entry("lab1", 4242, goodText, "127.0.0.1", "fe80::1"), "", nil, true},
		{"bad txt", entry("lab1", 4242, []string{"id=x"}, "10.1.2.3"), "", nil, true},
		{"zero port", entry("lab1", 0, goodText, "10.1.2.3"), "", nil, true},
		{"empty instance", entry("", 4242, goodText, "10.1.2.3"), "", nil, true},
		{"control bytes in instance", entry("lab\x1b[2J", 4242, goodText, "10.1.2.3"), "", nil, true},
		{"invalid utf8 instance", entry("lab\xff", 4242, goodText, "10.1.2.3"), "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := toCandidate(tt.e, tt.zone, seen)
			if (err != nil) != tt.wantErr {
				t.Fatalf("toCandidate = %+v, %v; want error %v", got, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			want := Candidate{Instance: tt.e.Instance, TXT: txt, Addrs: tt.want, Seen: seen}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
				t.Errorf("toCandidate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToCandidateCapsAddresses(t *testing.T) {
	var ips []string
	for i := range 100 {
		ips = append(ips, netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}).String())
	}
	c, err := toCandidate(entry("lab1", 4242, goodText, ips...), "", time.Now())
	if err != nil || len(c.Addrs) != maxAddrs {
		t.Errorf("toCandidate with 100 addresses: %d addresses, %v; want %d", len(c.Addrs), err, maxAddrs)
	}
}

func TestDispatcher(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []string
	d := newDispatcher("self-1", time.Second, func(c Candidate) { got = append(got, c.Instance+"@"+c.Seen.Format("05.000")) },
		slog.New(slog.DiscardHandler), func() time.Time { return now })
	step := func(dt time.Duration, e *zeroconf.ServiceEntry) {
		now = now.Add(dt)
		d.deliver(e, "")
	}
	a := entry("peer-a", 4242, goodText, "10.0.0.1")
	step(0, a)
	step(10*time.Millisecond, a)                                     // repeat from the overlapping round: dropped
	step(0, entry("SELF-1", 4242, goodText, "10.0.0.9"))             // our own: dropped
	step(0, entry("peer-a", 4242, goodText, "10.0.0.2"))             // new address: passed
	step(0, entry("peer-b", 4242, []string{"junk"}, "10.0.0.3"))     // bad txt: dropped
	step(2*time.Second, entry("peer-a", 4242, goodText, "10.0.0.2")) // next round: passed
	want := []string{"peer-a@00.000", "peer-a@00.010", "peer-a@02.010"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("found calls (-want +got):\n%s", diff)
	}
}

func TestDispatcherBounded(t *testing.T) {
	now := time.Now()
	d := newDispatcher("", time.Second, func(Candidate) {}, slog.New(slog.DiscardHandler), func() time.Time { return now })
	for i := range 3 * maxRecent {
		d.deliver(entry("peer-"+netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String(), 4242, goodText, "10.0.0.1"), "")
	}
	if len(d.recent) > maxRecent {
		t.Errorf("dispatcher remembers %d instances; want at most %d", len(d.recent), maxRecent)
	}
}
