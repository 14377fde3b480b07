package discovery

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// hints is a Hinter that keeps what it was told.
type hints map[string][]string

func (h hints) Hint(id string, addrs ...string) { h[id] = append(h[id], addrs...) }

// TestPresenceCandidates: what the browser hears becomes hints (never of
// this machine itself) and join candidates of the pool announced, the most
// recently heard first, each address once, the stale ones left out.
func TestPresenceCandidates(t *testing.T) {
	now := time.Now()
	heard := hints{}
	noPool := func(context.Context) (string, error) { return "", nil }
	p := NewPresence(DefaultConfig(), TXT{ID: "self"}, noPool, heard, slog.New(slog.DiscardHandler))
	ap := netip.MustParseAddrPort
	for _, c := range []Candidate{
		{Instance: "a", TXT: TXT{ID: "A", Pool: "p1"}, Addrs: []netip.AddrPort{ap("10.0.0.1:7420")}, Seen: now.Add(-2 * time.Second)},
		{Instance: "b", TXT: TXT{ID: "B", Pool: "p1"}, Addrs: []netip.AddrPort{ap("10.0.0.2:7420"), ap("10.0.0.1:7420")}, Seen: now.Add(-time.Second)},
		{Instance: "c", TXT: TXT{ID: "C", Pool: "p2"}, Addrs: []netip.AddrPort{ap("10.0.0.3:7420")}, Seen: now},
		{Instance: "old", TXT: TXT{ID: "D", Pool: "p1"}, Addrs: []netip.AddrPort{ap("10.0.0.4:7420")}, Seen: now.Add(-2 * CandidateTTL)},
		{Instance: "me", TXT: TXT{ID: "self", Pool: "p1"}, Addrs: []netip.AddrPort{ap("10.0.0.9:7420")}, Seen: now},
	} {
		p.found(c)
	}
	tests := []struct {
		pool string
		want []string
	}{
		{"p1", []string{"10.0.0.2:7420", "10.0.0.1:7420"}},
		{"p2", []string{"10.0.0.3:7420"}},
		{"p3", nil},
	}
	for _, tt := range tests {
		if got := p.PoolCandidates(tt.pool); !slices.Equal(got, tt.want) {
			t.Errorf("PoolCandidates(%q) = %v; want %v", tt.pool, got, tt.want)
		}
	}
	if _, ok := heard["self"]; ok || len(heard) != 4 || !slices.Equal(heard["B"], []string{"10.0.0.2:7420", "10.0.0.1:7420"}) {
		t.Errorf("hinted %v; want A, B, C and D, never this machine", heard)
	}
}
