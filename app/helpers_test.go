package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
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
	mikeID  = "MIKE-CCCC-CCCC-CCCC"
	goneID  = "GONE-DDDD-DDDD-DDDD"
	badID   = "BADS-EEEE-EEEE-EEEE"
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

// fakeLive is a Liveness of a fixed set of online IDs.
type fakeLive map[string]bool

func (f fakeLive) Online(id string) bool { return f[id] }

// mustJSON encodes v or fails t.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return b
}

// testSample is a sample at tm with figures derived from v and n GPUs.
func testSample(tm time.Time, v float64, n int) agent.Sample {
	s := agent.Sample{
		Time: tm,
		Host: host.Stats{
			CPUPercent: v, Load1: v / 10, MemUsedBytes: uint64(v * 1000), MemTotalBytes: 100_000,
			NetRxBps: 2 * v, NetTxBps: 3 * v,
			Disks: []host.Disk{{Mount: "/", UsedBytes: 10, TotalBytes: 100}},
		},
	}
	for i := range n {
		s.GPUs = append(s.GPUs, gpu.Stats{
			Index: i, UUID: "GPU-" + string(rune('a'+i)), Name: "NVIDIA Test",
			UtilPercent: v + float64(i), MemUtilPercent: v / 2, MemUsedBytes: uint64(v * 100),
			MemTotalBytes: 10_000, TempC: 40 + v, PowerW: 100 + v, PowerLimitW: 300,
			SMClockMHz: 1500, MemClockMHz: 5000, FanPercent: -1,
			Processes: []gpu.Process{{PID: 42}},
		})
	}
	return s
}

// putRecord stores a record of origin as replicated from it (Put), with the
// next seq of origin.
func putRecord(t testing.TB, db *store.DB, origin, kind, key string, tm time.Time, data []byte) {
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

// putSample stores s as a record of kind from origin.
func putSample(t testing.TB, db *store.DB, origin, kind string, s agent.Sample) {
	t.Helper()
	putRecord(t, db, origin, kind, history.Key(s.Time), s.Time, mustJSON(t, s))
}

// putNode stores origin's node record.
func putNode(t testing.TB, db *store.DB, origin string, nr NodeRecord) {
	t.Helper()
	putRecord(t, db, origin, KindNode, "", t0, mustJSON(t, nr))
}

// putMember admits id to the pool (or removes it).
func putMember(t testing.TB, db *store.DB, id, name string, removed bool) {
	t.Helper()
	m := store.MemberRow{ID: id, Name: name, Version: 1, Removed: removed, AddedAt: t0, AddedBy: selfID}
	if _, err := db.PutMember(context.Background(), m); err != nil {
		t.Fatalf("put member %s: %v", id, err)
	}
}

// newService builds a service over db with live (nil: nobody online) and
// pool (nil: the replica's pool); its other parts fail every call.
func newService(t testing.TB, db *store.DB, self Self, live Liveness, pool PoolManager) *Service {
	t.Helper()
	if live == nil {
		live = fakeLive{}
	}
	stub := stubDaemon{NewReader(db, self)}
	if pool == nil {
		pool = stub
	}
	s, err := New(Deps{DB: db, Self: self, Live: live, Pool: pool, Nodes: stub, Folders: stub, Copier: stub, Policy: stub})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// errStub is the answer of the parts a test does not use.
var errStub = errors.New("not part of this test")

// stubDaemon reads the pool from the replica and fails everything else.
type stubDaemon struct{ r *Reader }

func (d stubDaemon) Status(ctx context.Context) (PoolStatus, error) { return d.r.Pool(ctx) }
func (stubDaemon) Create(context.Context) (JoinCode, error)         { return JoinCode{}, errStub }
func (stubDaemon) Join(context.Context, JoinRequest) (PoolStatus, error) {
	return PoolStatus{}, errStub
}
func (stubDaemon) Remove(context.Context, string) error                     { return errStub }
func (stubDaemon) Probe(context.Context, string) (ProbeResult, error)       { return ProbeResult{}, errStub }
func (stubDaemon) RevokeInvite(context.Context, string) error               { return errStub }
func (stubDaemon) SetRole(context.Context, string, string) error            { return errStub }
func (stubDaemon) NodeClient(context.Context, string) (*http.Client, error) { return nil, errStub }
func (stubDaemon) Share(context.Context, ShareRequest) (Folder, error)      { return Folder{}, errStub }
func (stubDaemon) Unshare(context.Context, string) error                    { return errStub }
func (stubDaemon) Copy(context.Context, CopyRequest) (Transfer, error)      { return Transfer{}, errStub }
func (stubDaemon) Transfers(context.Context) ([]Transfer, error)            { return nil, errStub }
func (stubDaemon) Policy(context.Context) (Policy, error)                   { return Policy{}, errStub }
func (stubDaemon) CreateInvite(context.Context, InviteRequest) (NewInvite, error) {
	return NewInvite{}, errStub
}
func (stubDaemon) Transfer(context.Context, string, string, time.Duration) (Transfer, error) {
	return Transfer{}, errStub
}
func (stubDaemon) SetPolicy(context.Context, PolicyUpdate) (Policy, error) { return Policy{}, errStub }
