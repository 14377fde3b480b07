package store_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/sync/store"
)

func TestPutIdempotentAndOutOfOrder(t *testing.T) {
	ctx := context.Background()
	writer, _ := openTest(t)
	appendN(t, writer, "A", "sample.1s", 20)
	// Rewrite five records: they move to seqs 21..25.
	for i := range 5 {
		if _, err := writer.Append(ctx, "A", "sample.1s", keyOf(i), t0, []byte(`{"v":2}`)); err != nil {
			t.Fatal(err)
		}
	}
	latest, err := writer.Since(ctx, "A", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Every version the writer ever produced, as a reader may see them on
	// the wire: the newest ones, and the first versions of k0..k4.
	history := slices.Clone(latest)
	for i := range 5 {
		history = append(history, store.Record{Origin: "A", Seq: uint64(i + 1), Kind: "sample.1s", Key: keyOf(i), Time: t0, Data: []byte(`{"v":1}`)})
	}

	reader, _ := openTest(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 3 { // shuffled, in odd batches, three times over
		batch := slices.Clone(history)
		rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		for len(batch) > 0 {
			n := min(len(batch), 1+rng.IntN(7))
			if err := reader.Put(ctx, batch[:n]); err != nil {
				t.Fatalf("round %d: Put: %v", round, err)
			}
			batch = batch[n:]
		}
	}
	got, err := reader.Since(ctx, "A", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(latest, got); diff != "" {
		t.Errorf("reader records (-writer +reader):\n%s", diff)
	}
	if c, err := reader.Cursor(ctx, "A"); err != nil || c != 25 {
		t.Errorf("Cursor(A) = %d, %v; want 25", c, err)
	}
}

func TestPutLowerSeqNeverReplaces(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	newer := store.Record{Origin: "A", Seq: 9, Kind: "node", Time: t0, Data: []byte(`"new"`)}
	older := store.Record{Origin: "A", Seq: 3, Kind: "node", Time: t0, Data: []byte(`"old"`)}
	same := store.Record{Origin: "A", Seq: 9, Kind: "node", Time: t0, Data: []byte(`"other"`)}
	for _, r := range []store.Record{newer, older, same} {
		if err := db.Put(ctx, []store.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := db.Latest(ctx, "A", "node", "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(newer, got); diff != "" {
		t.Errorf("Latest() (-want +got):\n%s", diff)
	}
	if c, _ := db.Cursor(ctx, "A"); c != 9 {
		t.Errorf("Cursor(A) = %d; want 9 (never lowered)", c)
	}
}

func TestPutInvalidStoresNothing(t *testing.T) {
	ctx := context.Background()
	good := store.Record{Origin: "A", Seq: 1, Kind: "node", Time: t0}
	tests := []struct {
		name string
		bad  store.Record
	}{
		{"seq 0", store.Record{Origin: "A", Kind: "node"}},
		{"seq over int64", store.Record{Origin: "A", Seq: math.MaxInt64 + 1, Kind: "node"}},
		{"no origin", store.Record{Seq: 2, Kind: "node"}},
		{"no kind", store.Record{Origin: "A", Seq: 2}},
		{"bad data", store.Record{Origin: "A", Seq: 2, Kind: "x", Data: []byte(`nope`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openTest(t)
			err := db.Put(ctx, []store.Record{good, tt.bad})
			if !errors.Is(err, store.ErrInvalidRecord) {
				t.Errorf("Put() = %v; want ErrInvalidRecord", err)
			}
			if recs, _ := db.Since(ctx, "A", 0, 0); len(recs) != 0 {
				t.Errorf("Put stored %d records of a rejected batch", len(recs))
			}
		})
	}
}

// TestCatchUp replays a writer into a reader page by page, as the
// replication stream does, until both hold the same records.
func TestCatchUp(t *testing.T) {
	ctx := context.Background()
	writer, _ := openTest(t)
	reader, _ := openTest(t)
	appendN(t, writer, "W", "sample.1s", 1000)
	if _, err := writer.Append(ctx, "W", "node", "", t0, []byte(`{"name":"w"}`)); err != nil {
		t.Fatal(err)
	}
	pages := 0
	for ; pages < 100; pages++ {
		since, err := reader.Cursor(ctx, "W")
		if err != nil {
			t.Fatal(err)
		}
		page, err := writer.Since(ctx, "W", since, 128)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if err := reader.Put(ctx, page); err != nil {
			t.Fatal(err)
		}
	}
	if pages != 8 { // ceil(1001 / 128)
		t.Errorf("caught up in %d pages; want 8", pages)
	}
	want, _ := writer.Since(ctx, "W", 0, 0)
	got, _ := reader.Since(ctx, "W", 0, 0)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reader differs from writer (-writer +reader):\n%s", diff)
	}
	if len(got) != 1001 {
		t.Errorf("reader holds %d records; want 1001", len(got))
	}
}
