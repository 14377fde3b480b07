package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/store"
)

// sampleSize is a typical 1 Hz sample of a node: a few GPUs and the host.
const sampleSize = 1536

// BenchmarkAppend is the 1 Hz sample path: one record per transaction.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	db, _ := openTest(b)
	data := sample(0, sampleSize)
	b.SetBytes(int64(len(data)))
	i := 0
	for b.Loop() {
		t := t0.Add(time.Duration(i) * time.Second)
		if _, err := db.Append(ctx, "A", "sample.1s", t.Format(time.RFC3339), t, data); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPutBatch stores 1000 replicated records per transaction, as a
// follower catching up does.
func BenchmarkPutBatch(b *testing.B) {
	ctx := context.Background()
	db, _ := openTest(b)
	const batch = 1000
	recs := make([]store.Record, batch)
	b.SetBytes(batch * sampleSize)
	seq := uint64(0)
	for b.Loop() {
		for j := range recs {
			seq++
			t := t0.Add(time.Duration(seq) * time.Second)
			recs[j] = store.Record{Origin: "W", Seq: seq, Kind: "sample.1s", Key: t.Format(time.RFC3339), Time: t, Data: sample(j, sampleSize)}
		}
		if err := db.Put(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(seq)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkLatestByKind is the dashboard start: the newest sample of each of
// 50 nodes holding an hour of 1 s samples each.
func BenchmarkLatestByKind(b *testing.B) {
	ctx := context.Background()
	const origins, perOrigin = 50, 3600
	db, _ := openTest(b)
	start := time.Now()
	for o := range origins {
		fillSamples(b, db, fmt.Sprintf("node-%02d", o), perOrigin)
	}
	b.Logf("setup: %d records in %v", origins*perOrigin, time.Since(start).Round(time.Millisecond))
	for b.Loop() {
		recs, err := db.LatestByKind(ctx, "sample.1s")
		if err != nil || len(recs) != origins {
			b.Fatalf("LatestByKind() = %d records, %v; want %d", len(recs), err, origins)
		}
	}
}

// fillSamples puts n one-second samples of origin, in batches of 1000.
func fillSamples(b *testing.B, db *store.DB, origin string, n int) {
	b.Helper()
	recs := make([]store.Record, 0, 1000)
	for i := range n {
		t := t0.Add(time.Duration(i) * time.Second)
		recs = append(recs, store.Record{Origin: origin, Seq: uint64(i + 1), Kind: "sample.1s", Key: t.Format(time.RFC3339), Time: t, Data: sample(i, sampleSize)})
		if len(recs) == cap(recs) || i == n-1 {
			if err := db.Put(context.Background(), recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
}
