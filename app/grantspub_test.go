package app

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/alloc"
)

// TestGrantsPublisher: the record is written when the ledger's view
// changes, and only then.
func TestGrantsPublisher(t *testing.T) {
	db := openDB(t)
	view := Allocation{Units: []alloc.Unit{{ID: "g0", Kind: alloc.GPU, Node: selfID}}}
	p := NewGrantsPublisher(db, selfID, func() ([]alloc.Unit, []alloc.Grant) { return view.Units, view.Grants }, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	latest := func() ([]byte, uint64) {
		rec, ok, err := db.Latest(ctx, selfID, KindGrants, "")
		if err != nil || !ok {
			t.Fatalf("no grants record: %v", err)
		}
		return rec.Data, rec.Seq
	}
	seq := func() uint64 { _, s := latest(); return s }
	for i, step := range []struct {
		change  func()
		written bool
	}{
		{func() {}, true},
		{func() {}, false},
		{func() {
			view.Grants = []alloc.Grant{{Holder: alloc.Holder{Kind: alloc.Job, ID: "j"}, Units: []string{"g0"}}}
		}, true},
		{func() {}, false},
	} {
		var before uint64
		if i > 0 {
			before = seq()
		}
		step.change()
		if err := p.publish(ctx, t0); err != nil {
			t.Fatal(err)
		}
		if got := seq() != before; got != step.written {
			t.Errorf("step %d: written %v, want %v", i, got, step.written)
		}
	}
	data, _ := latest()
	a, err := decodeAllocation(selfID, data)
	if err != nil || len(a.Grants) != 1 {
		t.Errorf("the record reads back as %+v, %v", a, err)
	}
}

// TestGrantsPublishedOnChange: told of a change, the publisher writes the
// record at once, not at its next tick (Every an hour here): a planner
// reading a GPU freed a moment ago as held refuses a launch that fits.
func TestGrantsPublishedOnChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openDB(t)
		var mu sync.Mutex
		view := Allocation{Units: []alloc.Unit{{ID: "g0", Kind: alloc.GPU, Node: selfID}}}
		p := NewGrantsPublisher(db, selfID, func() ([]alloc.Unit, []alloc.Grant) {
			mu.Lock()
			defer mu.Unlock()
			return view.Units, view.Grants
		}, slog.New(slog.DiscardHandler))
		p.Every = time.Hour
		changed := make(chan struct{}, 1)
		p.Changed = changed
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait()
		mu.Lock()
		view.Grants = []alloc.Grant{{Holder: alloc.Holder{Kind: alloc.Job, ID: "j"}, Units: []string{"g0"}}}
		mu.Unlock()
		changed <- struct{}{}
		synctest.Wait()
		rec, ok, err := db.Latest(t.Context(), selfID, KindGrants, "")
		if err != nil || !ok || !strings.Contains(string(rec.Data), `"id":"j"`) {
			t.Errorf("after a change: %s, %v, %v; want the job's grant written at once", rec.Data, ok, err)
		}
		cancel()
		<-done
	})
}
