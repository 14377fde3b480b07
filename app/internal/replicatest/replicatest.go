// Package replicatest writes test replicas: it opens a fresh one, puts
// records into it as if replicated from a peer, and makes samples whose
// figures derive from one value. It imports no app package, so the tests
// of app and of app/history can both use it.
package replicatest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/sync/store"
)

// T0 is a fixed time for test records: 12:13:30 UTC, inside a minute and
// inside the quarter hour 12:00-12:15.
var T0 = time.Date(2026, 3, 1, 12, 13, 30, 0, time.UTC)

// Open opens a fresh replica in t's temporary directory and closes it
// when t ends.
func Open(t testing.TB) *store.DB {
	t.Helper()
	return OpenAt(t, filepath.Join(t.TempDir(), "replica.db"))
}

// OpenAt opens (creating it) the replica at path and closes it when t
// ends.
func OpenAt(t testing.TB, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatalf("open replica: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// MustJSON encodes v or fails t.
func MustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return b
}

// Put stores a record of origin as replicated from it (store.DB.Put), with
// the next seq of origin.
func Put(t testing.TB, db *store.DB, origin, kind, key string, tm time.Time, data []byte) {
	t.Helper()
	ctx := context.Background()
	seq, err := db.Cursor(ctx, origin)
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Record{Origin: origin, Seq: seq + 1, Kind: kind, Key: key, Time: tm, Data: data}
	if err := db.Put(ctx, []store.Record{rec}); err != nil {
		t.Fatalf("put %s/%s of %s: %v", kind, key, origin, err)
	}
}

// Sample is a sample at tm whose figures are v (CPU percent, GPU
// utilization) and multiples of it, with n GPUs.
func Sample(tm time.Time, v float64, n int) agent.Sample {
	s := agent.Sample{Time: tm, Host: host.Stats{CPUPercent: v, Load1: v / 10, MemUsedBytes: uint64(v * 1000),
		MemTotalBytes: 100_000, NetRxBps: 2 * v, NetTxBps: 3 * v}}
	for i := range n {
		s.GPUs = append(s.GPUs, gpu.Stats{Index: i, UUID: "GPU-" + string(rune('a'+i)),
			UtilPercent: v + float64(i), MemUtilPercent: v / 2, MemUsedBytes: uint64(v * 100),
			MemTotalBytes: 10_000, TempC: 40 + v, PowerW: 100 + v})
	}
	return s
}
