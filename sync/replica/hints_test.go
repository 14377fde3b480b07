package replica

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// The endpoint the daemon dials with tells where a session was proven.
var _ provenAddrer = (*transport.Endpoint)(nil)

// provenDialer is httpDialer that says every session was made at addr, as
// transport.Endpoint says where its handshake proved the device.
type provenDialer struct {
	httpDialer
	addr string
}

func (d provenDialer) ProvenAddr(peer.ID) (string, bool) { return d.addr, true }

// TestHintStrangersMakeNoFollowers: spoofed mDNS answers for thousands of
// device IDs start no follower and keep a bounded table.
func TestHintStrangersMakeNoFollowers(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	member, self := testID("member"), testID("self")
	db := openDB(t, "r")
	if _, err := db.PutMember(context.Background(), store.MemberRow{ID: member.String(), Name: "m", Version: 1, AddedBy: member.String()}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(openDB(t, "w"), member.String(), log))
	defer srv.Close()
	p := NewPeers(DefaultConfig(), db, self, httpDialer{srv}, log)
	for i := range 10000 {
		p.Hint(testID(fmt.Sprint("stranger", i)).String(), fmt.Sprintf("10.9.%d.%d:7420", i/250, i%250))
	}
	p.Hint("not a device id", "10.9.9.9:7420")
	p.Hint(member.String(), "10.0.0.1:7420") // before the first reconcile
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if err := p.reconcile(ctx, &wg); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	followers, pending := len(p.peers), len(p.pending)
	p.mu.Unlock()
	cancel()
	wg.Wait()
	if followers != 1 {
		t.Errorf("%d followers after 10,000 strangers' hints; want 1 (the member)", followers)
	}
	if pending > maxPending {
		t.Errorf("%d hints held for strangers; want at most %d", pending, maxPending)
	}
	if got := p.Addrs(member.String()); !slices.Equal(got, []string{"10.0.0.1:7420"}) {
		t.Errorf("member's addresses = %v; want the hint given before reconcile", got)
	}
}

// TestHintSpoofedKeepsPinned: once a session with the member succeeded at
// an address, spoofed announcements go after it and never push it out.
func TestHintSpoofedKeepsPinned(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	member, self := testID("member"), testID("self")
	w, r := openDB(t, "w"), openDB(t, "r")
	if _, err := r.PutMember(context.Background(), store.MemberRow{ID: member.String(), Name: "m", Version: 1, AddedBy: member.String()}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(w, member.String(), log))
	defer srv.Close()
	const real = "10.0.0.1:7420"
	p := NewPeers(DefaultConfig(), r, self, provenDialer{httpDialer{srv}, real}, log)
	p.Hint(member.String(), real)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitUntil(t, 10*time.Second, "member online", func() bool { return p.Online(member.String()) })
	for i := range 100 {
		p.Hint(member.String(), fmt.Sprintf("10.6.6.%d:7420", i))
	}
	got := p.Addrs(member.String())
	if len(got) == 0 || got[0] != real {
		t.Errorf("addresses after spoofed hints = %v; want %s first", got, real)
	}
	if len(got) > maxAddrs {
		t.Errorf("%d addresses kept; want at most %d", len(got), maxAddrs)
	}
}

func TestAddrBook(t *testing.T) {
	var b addrBook
	b.hint([]string{"a", "b"})
	if got := b.list(); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("hints = %v; want newest first", got)
	}
	b.pin("a")
	b.hint([]string{"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "a"})
	if got := b.list(); got[0] != "a" || len(got) != maxAddrs {
		t.Errorf("after spoofed hints = %v; want a first, %d in all", got, maxAddrs)
	}
	b.pin("c") // a session succeeded elsewhere: the old address stays a hint
	if got := b.list(); got[0] != "c" || got[1] != "a" || len(got) != maxAddrs {
		t.Errorf("after pinning c = %v; want c, a, ...", got)
	}
}
