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
// asks the member again only after RemovedRetry (a minute): a reconcile
// starts no other follower, and the member gets no further request
// meanwhile.
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
	waitUntil(t, 10*time.Second, "the removal learned", func() bool { return got.Load() != nil && p.isRemoved() })
	if rec := got.Load(); rec != `{"kind":"remove"}` {
		t.Errorf("OnPool got %v; want the records of the refusal", rec)
	}
	n := calls.Load()
	if n != 1 {
		t.Errorf("%d requests before it waited; want 1: told once, it asks again only after RemovedRetry", n)
	}
	// The member set changes no more: a reconcile (every Reconcile) must
	// start no other follower.
	p.mu.Lock()
	f := p.peers[a.String()]
	p.mu.Unlock()
	var wg sync.WaitGroup
	err := p.reconcile(ctx, &wg)
	p.mu.Lock()
	same := p.peers[a.String()] == f && len(p.peers) == 1
	p.mu.Unlock()
	if !same {
		cancel()
	}
	wg.Wait()
	if err != nil || !same {
		t.Errorf("reconcile after the removal: %v, another follower %v", err, !same)
	}
	if m := calls.Load(); m != n {
		t.Errorf("%d more requests after the removal was known", m-n)
	}
}

// TestReadmittedLearns: a device that knows it was removed still asks
// its old pool's members, once every RemovedRetry (refused, as removed,
// each time), so that when an owner readmits it the next ask is answered
// with the stream and its records: the device learns of its readmission
// with nobody touching it, and follows the member again.
func TestReadmittedLearns(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	a, self := testID("a"), testID("self")
	db := openDB(t, "r")
	for _, m := range []store.MemberRow{{ID: a.String(), Name: "a", Version: 1, AddedBy: a.String()},
		{ID: self.String(), Name: "self", Version: 2, AddedBy: a.String(), Removed: true}} {
		if _, err := db.PutMember(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	var calls atomic.Int32
	var readmitted atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if !readmitted.Load() {
			WriteRemoved(w, "this device was removed from the pool by a", []json.RawMessage{json.RawMessage(`{"kind":"remove"}`)})
			return
		}
		w.Write([]byte(`{"p":[{"kind":"readmit"}]}` + "\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer hs.Close()
	cfg := DefaultConfig()
	cfg.RemovedRetry = 50 * time.Millisecond
	p := NewPeers(cfg, db, self, httpDialer{hs}, log)
	p.OnPool = func(ctx context.Context, from peer.ID, recs []json.RawMessage) error {
		if string(recs[0]) != `{"kind":"readmit"}` {
			return nil
		}
		// What the pool's manager does once the readmission checks out.
		_, err := db.PutMember(ctx, store.MemberRow{ID: self.String(), Name: "self", Version: 3, AddedBy: a.String()})
		return err
	}
	p.Hint(a.String(), "10.0.0.1:7420")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitUntil(t, 10*time.Second, "the removed device to ask its old member twice", func() bool { return calls.Load() >= 2 })
	readmitted.Store(true)
	waitUntil(t, 10*time.Second, "the readmission learned", func() bool {
		ms, err := db.Members(ctx)
		return err == nil && !selfRemoved(ms, self.String())
	})
	waitUntil(t, 10*time.Second, "the member followed again", func() bool { return p.Online(a.String()) })
}
