package history

import (
	"testing"
	"time"

	"github.com/labpool/labpool/app/internal/replicatest"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// t0 is a fixed time for test records (replicatest.T0).
var t0 = replicatest.T0

// Device IDs of the test pool.
const (
	selfID  = "SELF-AAAA-AAAA-AAAA"
	alphaID = "ALFA-BBBB-BBBB-BBBB"
)

// openDB opens a fresh replica in t's temporary directory.
func openDB(t testing.TB) *store.DB { t.Helper(); return replicatest.Open(t) }

// testSample is a sample at tm whose figures are v (CPU percent, GPU
// utilization) and multiples of it, with n GPUs.
func testSample(tm time.Time, v float64, n int) agent.Sample { return replicatest.Sample(tm, v, n) }

// mustJSON encodes v or fails t.
func mustJSON(t testing.TB, v any) []byte { t.Helper(); return replicatest.MustJSON(t, v) }

// putSample stores s as a record of kind replicated from origin, with the
// next seq of origin.
func putSample(t testing.TB, db *store.DB, origin, kind string, s agent.Sample) {
	t.Helper()
	replicatest.Put(t, db, origin, kind, Key(s.Time), s.Time, mustJSON(t, s))
}
