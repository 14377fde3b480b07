package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/store"
)

// t0 is a fixed start time for test records.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// openTest opens a fresh replica in t's temporary directory.
func openTest(t testing.TB) (*store.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "replica.db")
	db := reopen(t, path)
	return db, path
}

// reopen opens the replica at path and closes it when t ends.
func reopen(t testing.TB, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sample is a JSON payload of about n bytes.
func sample(i, n int) []byte {
	b := fmt.Appendf(nil, `{"i":%d,"pad":"`, i)
	for len(b) < n-2 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

// appendN appends n records of kind with keys k0, k1, ... one second apart.
func appendN(t testing.TB, db *store.DB, origin, kind string, n int) []store.Record {
	t.Helper()
	recs := make([]store.Record, n)
	for i := range recs {
		recs[i] = store.Record{Kind: kind, Key: keyOf(i), Time: t0.Add(time.Duration(i) * time.Second), Data: sample(i, 64)}
	}
	out, err := db.AppendBatch(context.Background(), origin, recs)
	if err != nil {
		t.Fatalf("AppendBatch(%s, %d records): %v", origin, n, err)
	}
	return out
}

// seqs returns the seqs of recs.
func seqs(recs []store.Record) []uint64 {
	out := make([]uint64, len(recs))
	for i, r := range recs {
		out[i] = r.Seq
	}
	return out
}

// keyOf is the key appendN gives its i-th record.
func keyOf(i int) string { return fmt.Sprintf("k%d", i) }
