package replica

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

// TestToldRemoved: a member refuses this device as removed, with the
// pool's records; the follower hands them to OnPool (which checks them:
// here it stores the removal, as sync/pool would once the signatures
// check out), and once the member set says this device was removed it
// follows nobody: the member gets no further request.
func TestToldRemoved(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	a, self := testID("a"), testID("self")
	db := openDB(t, "r")
	for _, id := range []string{a.String(), self.String()} {
		if _, err := db.PutMember(context.Background(), store.MemberRow{ID: id, Name: "m", Version: 1, AddedBy: a.String()}); err != nil {
			t.Fatal(err)
		}
	}
	var calls atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		WriteRemoved(w, "this device was removed from the pool by a", []json.RawMessage{json.RawMessage(`{"kind":"remove"}`)})
	}))
	defer hs.Close()
	p := NewPeers(DefaultConfig(), db, self, httpDialer{hs}, log)
	var got atomic.Value
	p.OnPool = func(ctx context.Context, from peer.ID, recs []json.RawMessage) error {
		got.Store(string(recs[0]))
		// What the pool's manager does once the removal checks out.
		_, err := db.PutMember(ctx, store.MemberRow{ID: self.String(), Name: "m", Version: 2, AddedBy: a.String(), Removed: true})
		return err
	}
	p.Hint(a.String(), "10.0.0.1:7420")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitUntil(t, 10*time.Second, "the follower of a stopped", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		f := p.peers[a.String()]
		return got.Load() != nil && f != nil && f.cancel == nil
	})
	if rec := got.Load(); rec != `{"kind":"remove"}` {
		t.Errorf("OnPool got %v; want the records of the refusal", rec)
	}
	n := calls.Load()
	// The member set changes no more: a reconcile (every Reconcile) must
	// start no follower again.
	var wg sync.WaitGroup
	err := p.reconcile(ctx, &wg)
	p.mu.Lock()
	started := p.peers[a.String()].cancel != nil
	p.mu.Unlock()
	if started {
		cancel()
	}
	wg.Wait()
	if err != nil || started {
		t.Errorf("reconcile after the removal: %v, follower started again %v", err, started)
	}
	if m := calls.Load(); m != n {
		t.Errorf("%d more requests after the removal was known", m-n)
	}
}
