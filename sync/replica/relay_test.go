package replica

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/store"
)

// TestRelayAddrs: a member relays where the members it follows said they
// are; a follower learns B's address from A's stream (B never announced to
// it), keeps only well-formed addresses, and ignores what A says about the
// follower itself.
func TestRelayAddrs(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	a, b, self := testID("a"), testID("b"), testID("self")
	r := openDB(t, "r")
	for _, id := range []string{a.String(), b.String()} {
		if _, err := r.PutMember(context.Background(), store.MemberRow{ID: id, Name: "m", Version: 1, AddedBy: a.String()}); err != nil {
			t.Fatal(err)
		}
	}
	srv := NewServer(openDB(t, "w"), a.String(), log)
	srv.Addrs = func() (map[string][]string, uint64) {
		return map[string][]string{
			b.String():    {"10.0.0.2:7420", "bad", "10.0.0.2:0", "host.example:7420"},
			self.String(): {"10.6.6.6:7420"},
		}, 1
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	p := NewPeers(DefaultConfig(), r, self, httpDialer{hs}, log)
	p.Hint(a.String(), "10.0.0.1:7420")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if got := p.WaitAddrs(wctx, b.String()); !slices.Contains(got, "10.0.0.2:7420") {
		t.Fatalf("B's addresses = %v; want the one A relayed", got)
	}
	if got := p.Addrs(b.String()); slices.ContainsFunc(got, func(s string) bool { return s != "10.0.0.2:7420" }) {
		t.Errorf("B's addresses = %v; want only the well-formed one", got)
	}
}

// TestPublishRelay: what a member published is relayed while it is a
// member this node follows, and a change changes the fingerprint.
func TestPublishRelay(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	b, stranger, self := testID("b"), testID("stranger"), testID("self")
	r := openDB(t, "r")
	if _, err := r.PutMember(context.Background(), store.MemberRow{ID: b.String(), Name: "b", Version: 1, AddedBy: b.String()}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(nil)
	defer hs.Close()
	p := NewPeers(DefaultConfig(), r, self, httpDialer{hs}, log)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	if err := p.reconcile(ctx, &wg); err != nil {
		t.Fatal(err)
	}
	p.Publish(stranger.String(), []string{"10.0.0.9:7420"})
	_, before := p.Relay()
	p.Publish(b.String(), []string{"10.0.0.2:7420", "10.0.0.2:7420", "junk"})
	got, after := p.Relay()
	if want := map[string][]string{b.String(): {"10.0.0.2:7420"}}; len(got) != 1 || !slices.Equal(got[b.String()], want[b.String()]) {
		t.Errorf("relay = %v; want %v (members only, well-formed, once)", got, want)
	}
	if before == after {
		t.Error("the fingerprint did not change with B's addresses")
	}
	if _, again := p.Relay(); again != after {
		t.Error("the fingerprint changed with nothing published")
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if got := p.WaitAddrs(wctx, b.String()); !slices.Equal(got, []string{"10.0.0.2:7420"}) {
		t.Errorf("B's addresses = %v; want what it published", got)
	}
}
