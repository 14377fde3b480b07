package discovery

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestRememberFlood: spoofed answers under 10,000 instance names keep the
// table at MaxCandidates, and the newest answers are the ones kept.
func TestRememberFlood(t *testing.T) {
	m := map[string]Candidate{}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10000 {
		Remember(m, Candidate{Instance: fmt.Sprint("spoof", i), Seen: t0.Add(time.Duration(i) * time.Millisecond),
			Addrs: []netip.AddrPort{netip.MustParseAddrPort("10.6.6.6:7420")}})
	}
	if len(m) != MaxCandidates {
		t.Errorf("%d candidates after 10,000 answers; want %d", len(m), MaxCandidates)
	}
	if _, ok := m["spoof9999"]; !ok {
		t.Error("the newest answer was dropped")
	}
	if _, ok := m["spoof0"]; ok {
		t.Error("the oldest answer was kept")
	}
}

// TestRememberExpiry: a candidate not heard for CandidateTTL is stale, and
// is forgotten before a fresh one is evicted.
func TestRememberExpiry(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	m := map[string]Candidate{}
	Remember(m, Candidate{Instance: "old", Seen: t0})
	for i := range MaxCandidates - 1 {
		Remember(m, Candidate{Instance: fmt.Sprint("live", i), Seen: t0.Add(CandidateTTL)})
	}
	if m["old"].Fresh(t0.Add(CandidateTTL)) {
		t.Error("a candidate not heard for CandidateTTL is still fresh")
	}
	if !m["live0"].Fresh(t0.Add(CandidateTTL + time.Minute)) {
		t.Error("a candidate heard a minute ago is stale")
	}
	Remember(m, Candidate{Instance: "new", Seen: t0.Add(CandidateTTL + time.Second)})
	if _, ok := m["old"]; ok {
		t.Error("the stale candidate was kept when the table was full")
	}
	if len(m) != MaxCandidates {
		t.Errorf("%d candidates; want %d (the stale one replaced, no fresh one evicted)", len(m), MaxCandidates)
	}
}
