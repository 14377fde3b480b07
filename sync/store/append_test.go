package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/sync/store"
)

func TestAppendSeqMonotonicAcrossReopenAndPrune(t *testing.T) {
	ctx := context.Background()
	db, path := openTest(t)
	first := appendN(t, db, "A", "sample.1s", 10)
	if diff := cmp.Diff([]uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, seqs(first)); diff != "" {
		t.Fatalf("first seqs (-want +got):\n%s", diff)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reopen(t, path)
	r, err := db.Append(ctx, "A", "sample.1s", "after-reopen", t0, []byte(`{}`))
	if err != nil || r.Seq != 11 {
		t.Fatalf("Append after reopen = seq %d, %v; want 11", r.Seq, err)
	}
	n, err := db.Prune(ctx, "sample.1s", t0.Add(time.Hour))
	if err != nil || n != 11 {
		t.Fatalf("Prune() = %d, %v; want 11", n, err)
	}
	r, err = db.Append(ctx, "A", "sample.1s", "after-prune", t0, []byte(`{}`))
	if err != nil || r.Seq != 12 {
		t.Fatalf("Append after prune = seq %d, %v; want 12", r.Seq, err)
	}
	if c, err := db.Cursor(ctx, "A"); err != nil || c != 12 {
		t.Errorf("Cursor(A) = %d, %v; want 12", c, err)
	}
	// Another origin has its own sequence.
	if r, err := db.Append(ctx, "B", "node", "", t0, nil); err != nil || r.Seq != 1 {
		t.Errorf("Append(B) = seq %d, %v; want 1", r.Seq, err)
	}
}

func TestAppendReplacesRecord(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	if _, err := db.Append(ctx, "A", "node", "", t0, []byte(`{"name":"old"}`)); err != nil {
		t.Fatal(err)
	}
	appendN(t, db, "A", "sample.1s", 3) // seqs 2..4
	got, err := db.Append(ctx, "A", "node", "", t0.Add(time.Minute), []byte(`{"name":"new"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := store.Record{Origin: "A", Seq: 5, Kind: "node", Time: t0.Add(time.Minute), Data: []byte(`{"name":"new"}`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Append() (-want +got):\n%s", diff)
	}
	latest, ok, err := db.Latest(ctx, "A", "node", "")
	if err != nil || !ok {
		t.Fatalf("Latest() = %v, %v", ok, err)
	}
	if diff := cmp.Diff(want, latest); diff != "" {
		t.Errorf("Latest() (-want +got):\n%s", diff)
	}
	// Since(0) holds each record once, at its newest seq.
	all, err := db.Since(ctx, "A", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{2, 3, 4, 5}, seqs(all)); diff != "" {
		t.Errorf("Since(0) seqs (-want +got):\n%s", diff)
	}
	if since, _ := db.Since(ctx, "A", 4, 0); len(since) != 1 || since[0].Kind != "node" {
		t.Errorf("Since(4) = %v; want only the replaced node record", since)
	}
}

func TestAppendTimeAndData(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	local := time.Date(2026, 3, 1, 13, 0, 0, 123_456_789, time.FixedZone("CET", 3600))
	r, err := db.Append(ctx, "A", "node", "", local, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC)
	if !r.Time.Equal(want) || r.Time.Location() != time.UTC {
		t.Errorf("Append().Time = %v; want %v", r.Time, want)
	}
	got, _, err := db.Latest(ctx, "A", "node", "")
	if err != nil || got.Time != want || got.Data != nil {
		t.Errorf("Latest() = %+v, %v; want time %v and nil data", got, err, want)
	}
}

func TestAppendRejectsInvalid(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	tests := []struct {
		name, origin, kind string
		data               []byte
	}{
		{"no origin", "", "node", nil},
		{"no kind", "A", "", nil},
		{"not json", "A", "node", []byte(`{"a":`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.Append(ctx, tt.origin, tt.kind, "", t0, tt.data)
			if !errors.Is(err, store.ErrInvalidRecord) {
				t.Errorf("Append() = %v; want ErrInvalidRecord", err)
			}
		})
	}
	_, err := db.AppendBatch(ctx, "A", []store.Record{{Origin: "B", Kind: "node"}})
	if !errors.Is(err, store.ErrInvalidRecord) {
		t.Errorf("AppendBatch(foreign origin) = %v; want ErrInvalidRecord", err)
	}
	if c, _ := db.Cursor(ctx, "A"); c != 0 {
		t.Errorf("Cursor(A) = %d after rejected appends; want 0", c)
	}
}

func TestAppendConcurrentNeverDuplicatesSeq(t *testing.T) {
	ctx := context.Background()
	db, path := openTest(t)
	other := reopen(t, path) // a second handle on the same file, as another process would
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		h := db
		if w%2 == 1 {
			h = other
		}
		wg.Go(func() {
			for i := range each {
				if _, err := h.Append(ctx, "A", "sample.1s", fmt.Sprintf("w%d-%d", w, i), t0, []byte(`{}`)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, err := db.Since(ctx, "A", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := seqs(all)
	want := make([]uint64, workers*each)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("seqs after concurrent appends (-want +got):\n%s", diff)
	}
	if !slices.IsSorted(got) {
		t.Errorf("Since() not ordered by seq")
	}
}
