package history

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

// t0 is a fixed time for test records: 12:13:30 UTC, inside a minute and
// inside the quarter hour 12:00-12:15.
var t0 = time.Date(2026, 3, 1, 12, 13, 30, 0, time.UTC)

// Device IDs of the test pool.
const (
	selfID  = "SELF-AAAA-AAAA-AAAA"
	alphaID = "ALFA-BBBB-BBBB-BBBB"
)

// openDB opens a fresh replica in t's temporary directory.
func openDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "replica.db"))
	if err != nil {
		t.Fatalf("open replica: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// testSample is a sample at tm whose figures are v (CPU percent, GPU
// utilization) and multiples of it, with n GPUs.
func testSample(tm time.Time, v float64, n int) agent.Sample {
	s := agent.Sample{Time: tm, Host: host.Stats{CPUPercent: v, Load1: v / 10, MemUsedBytes: uint64(v * 1000),
		MemTotalBytes: 100_000, NetRxBps: 2 * v, NetTxBps: 3 * v}}
	for i := range n {
		s.GPUs = append(s.GPUs, gpu.Stats{Index: i, UUID: "GPU-" + string(rune('a'+i)),
			UtilPercent: v + float64(i), MemUtilPercent: v / 2, MemUsedBytes: uint64(v * 100),
			MemTotalBytes: 10_000, TempC: 40 + v, PowerW: 100 + v})
	}
	return s
}

// mustJSON encodes v or fails t.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return b
}

// putSample stores s as a record of kind replicated from origin, with the
// next seq of origin.
func putSample(t testing.TB, db *store.DB, origin, kind string, s agent.Sample) {
	t.Helper()
	ctx := context.Background()
	seq, err := db.Cursor(ctx, origin)
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Record{Origin: origin, Seq: seq + 1, Kind: kind, Key: Key(s.Time), Time: s.Time, Data: mustJSON(t, s)}
	if err := db.Put(ctx, []store.Record{rec}); err != nil {
		t.Fatalf("put %s of %s: %v", kind, origin, err)
	}
}
