package app

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/app/internal/replicatest"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/sync/store"
)

// t0 is a fixed time for test records (replicatest.T0).
var t0 = replicatest.T0

// Device IDs of the test pool.
const (
	selfID  = "SELF-AAAA-AAAA-AAAA"
	alphaID = "ALFA-BBBB-BBBB-BBBB"
	mikeID  = "MIKE-CCCC-CCCC-CCCC"
	goneID  = "GONE-DDDD-DDDD-DDDD"
	badID   = "BADS-EEEE-EEEE-EEEE"
)

// openDB opens a fresh replica in t's temporary directory.
func openDB(t testing.TB) *store.DB { t.Helper(); return replicatest.Open(t) }

// fakeLive is a Liveness of a fixed set of online IDs.
type fakeLive map[string]bool

func (f fakeLive) Online(id string) bool { return f[id] }

// mustJSON encodes v or fails t.
func mustJSON(t testing.TB, v any) []byte { t.Helper(); return replicatest.MustJSON(t, v) }

// testSample is a sample at tm with figures derived from v and n GPUs:
// replicatest.Sample with a disk, and GPUs with a name, power limit,
// clocks, no fan and one process.
func testSample(tm time.Time, v float64, n int) agent.Sample {
	s := replicatest.Sample(tm, v, n)
	s.Host.Disks = []host.Disk{{Mount: "/", UsedBytes: 10, TotalBytes: 100}}
	for i := range s.GPUs {
		g := &s.GPUs[i]
		g.Name, g.PowerLimitW, g.SMClockMHz, g.MemClockMHz, g.FanPercent = "NVIDIA Test", 300, 1500, 5000, -1
		g.Processes = []gpu.Process{{PID: 42}}
	}
	return s
}

// putRecord stores a record of origin as replicated from it (Put), with the
// next seq of origin.
func putRecord(t testing.TB, db *store.DB, origin, kind, key string, tm time.Time, data []byte) {
	t.Helper()
	replicatest.Put(t, db, origin, kind, key, tm, data)
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
func (stubDaemon) Create(context.Context, CreateRequest) (JoinCode, error) {
	return JoinCode{}, errStub
}
func (stubDaemon) AddDevice(context.Context, AddDeviceRequest) (DeviceCode, error) {
	return DeviceCode{}, errStub
}
func (stubDaemon) Merge(context.Context, MergeRequest) error { return errStub }
func (stubDaemon) Join(context.Context, JoinRequest) (PoolStatus, error) {
	return PoolStatus{}, errStub
}
func (stubDaemon) Remove(context.Context, string) error                     { return errStub }
func (stubDaemon) Probe(context.Context, string) (ProbeResult, error)       { return ProbeResult{}, errStub }
func (stubDaemon) RevokeInvite(context.Context, string) error               { return errStub }
func (stubDaemon) Readmit(context.Context, string) error                    { return errStub }
func (stubDaemon) SetRole(context.Context, string, string) error            { return errStub }
func (stubDaemon) NodeClient(context.Context, string) (*http.Client, error) { return nil, errStub }
func (stubDaemon) Share(context.Context, ShareRequest) (Folder, error)      { return Folder{}, errStub }
func (stubDaemon) Unshare(context.Context, string) error                    { return errStub }
func (stubDaemon) SetMembers(context.Context, string, folders.MembersChange) (Folder, error) {
	return Folder{}, errStub
}
func (stubDaemon) Copy(context.Context, CopyRequest) (Transfer, error) { return Transfer{}, errStub }
func (stubDaemon) Transfers(context.Context) ([]Transfer, error)       { return nil, errStub }
func (stubDaemon) Policy(context.Context) (Policy, error)              { return Policy{}, errStub }
func (stubDaemon) CreateInvite(context.Context, InviteRequest) (NewInvite, error) {
	return NewInvite{}, errStub
}
func (stubDaemon) Transfer(context.Context, string, string, time.Duration) (Transfer, error) {
	return Transfer{}, errStub
}
func (stubDaemon) SetPolicy(context.Context, PolicyUpdate) (Policy, error) { return Policy{}, errStub }
