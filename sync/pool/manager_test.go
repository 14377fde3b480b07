package pool_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// device is one machine of a test: its identity, replica, endpoint and
// pool manager, serving the join endpoint and a members-only path the way
// the daemon does.
type device struct {
	name string
	id   *peer.Identity
	db   *store.DB
	ep   *transport.Endpoint
	m    *pool.Manager

	mu      sync.Mutex // guards removed
	removed []peer.ID
	logs    *logBuffer
}

type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newDevice(t testing.TB, name string, candidates func(string) []string, opts ...func(*pool.ManagerConfig)) *device {
	t.Helper()
	dir := t.TempDir()
	id, err := peer.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := transport.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	ep, err := transport.New(id, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	d := &device{name: name, id: id, db: db, ep: ep, logs: &logBuffer{}}
	mcfg := pool.ManagerConfig{
		Identity: id, Name: func() string { return name }, DB: db, Dial: ep.DialAny,
		Candidates: candidates, FindWait: time.Second,
		Removed: func(id peer.ID) {
			d.mu.Lock()
			d.removed = append(d.removed, id)
			d.mu.Unlock()
		},
		Log: slog.New(slog.NewTextHandler(d.logs, nil)),
	}
	for _, o := range opts {
		o(&mcfg)
	}
	d.m, err = pool.NewManager(context.Background(), mcfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(pool.JoinPath, d.m.JoinHandler())
	mux.HandleFunc("/v1/nodes", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "[]") })
	allowed := func(p peer.ID) bool { _, ok := d.m.Role(p); return ok }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ep.Serve(ctx, transport.Authorize(allowed, []string{pool.JoinPath}, mux)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return d
}

func (d *device) addr() string { return d.ep.Addr().String() }

func (d *device) wasRemoved(id peer.ID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.removed {
		if r == id {
			return true
		}
	}
	return false
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// reach reports the status a GET of a members-only path gets from to.
func reach(t *testing.T, from, to *device) int {
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, "https://peer/v1/nodes", nil)
	resp, err := from.ep.Client(to.id.ID, []string{to.addr()}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func create(t *testing.T, d *device) pool.Code {
	t.Helper()
	_, code, err := d.m.Create(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func invite(t *testing.T, d *device, role pool.Role, uses int, ttl time.Duration) pool.Code {
	t.Helper()
	_, code, err := d.m.Invite(ctxT(t), role, uses, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func roleOf(d *device, of *device) pool.Role {
	r, _ := d.m.Role(of.id.ID)
	return r
}

func TestJoinWithInvite(t *testing.T) {
	owner, laptop := newDevice(t, "lab1", nil), newDevice(t, "laptop", nil)
	code := create(t, owner)
	if got := reach(t, laptop, owner); got != http.StatusForbidden {
		t.Fatalf("a stranger got %d on a members-only path; want 403", got)
	}
	if err := laptop.m.Join(ctxT(t), code, owner.addr(), ""); err != nil {
		t.Fatalf("Join: %v", err)
	}
	if got := reach(t, laptop, owner); got != http.StatusOK {
		t.Errorf("a member got %d; want 200", got)
	}
	if err := laptop.m.Join(ctxT(t), invite(t, owner, pool.RoleViewer, 0, time.Hour), owner.addr(), ""); err != nil {
		t.Errorf("a member joining again: %v; want nil (it is in)", err)
	}
	if r := roleOf(owner, laptop); r != pool.RoleMember {
		t.Errorf("a member joining again with a viewer's code became %q; want member still", r)
	}
	if r := roleOf(owner, laptop); r != pool.RoleMember {
		t.Errorf("the owner sees the laptop as %q; want member", r)
	}
	if r := roleOf(laptop, owner); r != pool.RoleOwner {
		t.Errorf("the laptop sees the creator as %q; want owner", r)
	}
	// Both hold the same records, stored: a restart keeps the pool.
	a, _ := owner.m.Records()
	b, _ := laptop.m.Records()
	if len(a) != len(b) || len(a) != 5 {
		t.Errorf("owner holds %d records, laptop %d; want 5 each (genesis, rules, two invites, join)", len(a), len(b))
	}
	rows, _ := laptop.db.Members(context.Background())
	if len(rows) != 2 || rows[0].Role == "" {
		t.Errorf("laptop's member table = %+v; want 2 rows with roles", rows)
	}
	again, err := pool.NewManager(context.Background(), pool.ManagerConfig{Identity: laptop.id, DB: laptop.db, Dial: laptop.ep.DialAny})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := again.Role(owner.id.ID); !ok || r != pool.RoleOwner {
		t.Errorf("after a restart the laptop sees the creator as %q, %v", r, ok)
	}
}

func TestJoinRefusals(t *testing.T) {
	owner := newDevice(t, "lab1", nil)
	create(t, owner)
	other := newDevice(t, "lab9", nil)
	otherCode := create(t, other)
	wrong := pool.Code{Pool: mustPool(t, owner), Secret: otherCode.Secret}

	t.Run("wrong code", func(t *testing.T) {
		j := newDevice(t, "j", nil)
		if err := j.m.Join(ctxT(t), wrong, owner.addr(), ""); !errors.Is(err, pool.ErrWrongCode) {
			t.Errorf("Join with a wrong code = %v; want ErrWrongCode", err)
		}
	})
	t.Run("used up", func(t *testing.T) {
		code := invite(t, owner, pool.RoleMember, 1, time.Hour)
		if err := newDevice(t, "j1", nil).m.Join(ctxT(t), code, owner.addr(), ""); err != nil {
			t.Fatal(err)
		}
		err := newDevice(t, "j2", nil).m.Join(ctxT(t), code, owner.addr(), "")
		if !errors.Is(err, pool.ErrInvite) || !strings.Contains(err.Error(), "used up") {
			t.Errorf("a second join with a one-use code = %v; want it refused as used up", err)
		}
	})
	t.Run("revoked", func(t *testing.T) {
		inv, code, err := owner.m.Invite(ctxT(t), pool.RoleMember, 0, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := owner.m.Revoke(ctxT(t), inv.ID); err != nil {
			t.Fatal(err)
		}
		err = newDevice(t, "j3", nil).m.Join(ctxT(t), code, owner.addr(), "")
		if !errors.Is(err, pool.ErrInvite) || !strings.Contains(err.Error(), "revoked") {
			t.Errorf("a join with a revoked code = %v; want it refused as revoked", err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		code := invite(t, owner, pool.RoleMember, 0, time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		err := newDevice(t, "j4", nil).m.Join(ctxT(t), code, owner.addr(), "")
		if !errors.Is(err, pool.ErrInvite) || !strings.Contains(err.Error(), "expired") {
			t.Errorf("a join with an expired code = %v; want it refused as expired", err)
		}
	})
}

func mustPool(t *testing.T, d *device) pool.ID {
	id, ok := d.m.PoolID()
	if !ok {
		t.Fatal("not in a pool")
	}
	return id
}

// TestJoinTriesEveryAddress: a stranger that answers first with a refusal
// does not abort the join.
func TestJoinTriesEveryAddress(t *testing.T) {
	owner := newDevice(t, "lab1", nil)
	code := create(t, owner)
	liar := newDevice(t, "liar", nil)
	create(t, liar) // in another pool: it refuses the code
	j := newDevice(t, "laptop", func(string) []string { return []string{liar.addr(), owner.addr()} })
	if err := j.m.Join(ctxT(t), code, "", ""); err != nil {
		t.Fatalf("Join through a stranger then the member: %v", err)
	}
	if _, ok := j.m.Role(owner.id.ID); !ok {
		t.Error("not joined")
	}
	// A stranger that claims the invite ended, and a member that answers
	// mDNS only after the stranger, do not end the join either.
	claims := newLiar(t, http.StatusForbidden, `{"code":"invite_ended","message":"invite x was revoked"}`)
	var calls atomic.Int32
	late := newDevice(t, "late", func(string) []string {
		if calls.Add(1) < 3 {
			return []string{claims}
		}
		return []string{claims, owner.addr()}
	})
	if err := late.m.Join(ctxT(t), code, "", ""); err != nil {
		t.Fatalf("Join past a stranger claiming the invite ended, the member found later: %v", err)
	}
	// Where every address refuses, the answer is a wrong code.
	k := newDevice(t, "k", func(string) []string { return []string{liar.addr()} })
	if err := k.m.Join(ctxT(t), code, "", ""); err == nil {
		t.Error("a join through a stranger alone succeeded")
	}
}

// newLiar serves a join endpoint that answers every join with status and
// body, as a stranger on the network may; it returns its address.
func newLiar(t *testing.T, status int, body string) string {
	d := newDevice(t, "liar", nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// A second endpoint of the same identity, serving the lie.
	cfg := transport.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	ep, err := transport.New(d.id, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	lie := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	})
	go ep.Serve(ctx, lie)
	return ep.Addr().String()
}

// TestRemovedCannotRejoin: removal revokes the invite the device joined
// with, so neither it nor a new identity joins with that code again.
func TestRemovedCannotRejoin(t *testing.T) {
	owner := newDevice(t, "lab1", nil)
	create(t, owner)
	code := invite(t, owner, pool.RoleMember, 0, time.Hour)
	student := newDevice(t, "student", nil)
	if err := student.m.Join(ctxT(t), code, owner.addr(), ""); err != nil {
		t.Fatal(err)
	}
	if err := owner.m.Remove(ctxT(t), student.id.ID.String()); err != nil {
		t.Fatal(err)
	}
	if !owner.wasRemoved(student.id.ID) {
		t.Error("the Removed hook was not called")
	}
	if got := reach(t, student, owner); got != http.StatusForbidden {
		t.Errorf("a removed member got %d; want 403", got)
	}
	if err := newDevice(t, "student-again", nil).m.Join(ctxT(t), code, owner.addr(), ""); !errors.Is(err, pool.ErrInvite) {
		t.Errorf("a new identity joining with the removed member's code = %v; want it refused (revoked)", err)
	}
	// The same device with its own data directory, with a fresh code.
	if err := student.m.Join(ctxT(t), invite(t, owner, pool.RoleMember, 0, time.Hour), owner.addr(), ""); !errors.Is(err, pool.ErrRemoved) {
		waitRemoved(t, student)
	}
	// The same device, from a fresh data directory holding its key, with a fresh code.
	db, err := store.Open(filepath.Join(t.TempDir(), "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	same, err := pool.NewManager(context.Background(), pool.ManagerConfig{Identity: student.id, DB: db, Dial: student.ep.DialAny})
	if err != nil {
		t.Fatal(err)
	}
	fresh := invite(t, owner, pool.RoleMember, 0, time.Hour)
	if err := same.Join(ctxT(t), fresh, owner.addr(), ""); !errors.Is(err, pool.ErrRemoved) {
		t.Errorf("a removed device joining again with a fresh code = %v; want ErrRemoved", err)
	}
}

// TestRelayedForgeryDropped: a member that writes a record into its own
// replica and relays it gets it dropped by the others, logged once.
func TestRelayedForgeryDropped(t *testing.T) {
	owner, admin, mallory := newDevice(t, "lab1", nil), newDevice(t, "admin", nil), newDevice(t, "mallory", nil)
	create(t, owner)
	if err := admin.m.Join(ctxT(t), invite(t, owner, pool.RoleAdmin, 1, time.Hour), owner.addr(), ""); err != nil {
		t.Fatal(err)
	}
	if err := mallory.m.Join(ctxT(t), invite(t, owner, pool.RoleMember, 1, time.Hour), owner.addr(), ""); err != nil {
		t.Fatal(err)
	}
	// Mallory signs a removal of the admin with its own key, bypassing its
	// Manager (which would refuse): what a hostile replica would relay.
	forged := pool.Record{Pool: mustPool(t, owner), Kind: pool.KindRemove, Subject: admin.id.ID.String(),
		Version: uint64(time.Now().UnixMilli()), Signer: mallory.id.ID.String()}
	forged.Sig = ed25519.Sign(mallory.id.Cert.PrivateKey.(ed25519.PrivateKey), forged.SigningBytes())
	raw, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	// And a version pushed to the maximum.
	maxed := forged
	maxed.Kind, maxed.Subject, maxed.Role, maxed.Version = pool.KindRole, mallory.id.ID.String(), pool.RoleOwner, math.MaxUint64
	maxed.Sig = ed25519.Sign(mallory.id.Cert.PrivateKey.(ed25519.PrivateKey), maxed.SigningBytes())
	rawMax, _ := json.Marshal(maxed)
	for range 3 {
		if err := owner.m.Receive(ctxT(t), mallory.id.ID, []json.RawMessage{raw, rawMax}); err != nil {
			t.Fatal(err)
		}
	}
	if r := roleOf(owner, admin); r != pool.RoleAdmin {
		t.Errorf("after a forged removal the admin is %q; want admin", r)
	}
	if r := roleOf(owner, mallory); r != pool.RoleMember {
		t.Errorf("after a forged promotion mallory is %q; want member", r)
	}
	if n := strings.Count(owner.logs.String(), "dropped a pool record"); n != 2 {
		t.Errorf("logged %d drops for 2 bad records relayed 3 times; want 2:\n%s", n, owner.logs.String())
	}
	// A valid record relayed by anyone is taken: the owner's own removal of
	// mallory, relayed by the admin, reaches a third member.
}

// waitRemoved waits until d has learned its own removal; it cannot, from
// a member that has cut it off, so a join must not claim success.
func waitRemoved(t *testing.T, d *device) {
	t.Helper()
	if err := d.m.Join(ctxT(t), pool.Code{Pool: mustPool(t, d)}, "", ""); errors.Is(err, pool.ErrRemoved) {
		return
	}
	if _, ok := d.m.Role(d.id.ID); ok {
		t.Error("a removed device that never learned its removal reports itself a member; its join must ask a member")
	}
}

// replicated writes a node record of origin into d's replica, as
// replication from a member of d's pool would bring it.
func replicated(t *testing.T, d *device, origin peer.ID, seq uint64) {
	t.Helper()
	if err := d.db.Put(ctxT(t), []store.Record{{Origin: origin.String(), Seq: seq, Kind: "node", Time: time.Now(), Data: []byte(`{"name":"x"}`)}}); err != nil {
		t.Fatal(err)
	}
}

// tell gives to the pool's log, as a member's stream (or its refusal)
// carries it to a removed device.
func tell(t *testing.T, from, to *device) {
	t.Helper()
	recs, _ := from.m.Records()
	if err := to.m.Receive(ctxT(t), from.id.ID, recs); err != nil {
		t.Fatal(err)
	}
}

// origins are the origins of the records d holds.
func origins(t *testing.T, d *device) map[string]bool {
	t.Helper()
	os, err := d.db.Origins(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, o := range os {
		out[o] = true
	}
	return out
}

// TestLeavingForgetsThePoolsRecords: what a device held of the machines of
// a pool it is no longer in is forgotten, its own records kept: once it
// learns its removal, and again when it joins another pool or creates one
// (a record that reached it in between).
func TestLeavingForgetsThePoolsRecords(t *testing.T) {
	owner := newDevice(t, "lab1", nil)
	create(t, owner)
	laptop := newDevice(t, "laptop", nil)
	if err := laptop.m.Join(ctxT(t), invite(t, owner, pool.RoleMember, 0, time.Hour), owner.addr(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := laptop.db.Append(ctxT(t), laptop.id.ID.String(), "node", "", time.Now(), []byte(`{"name":"laptop"}`)); err != nil {
		t.Fatal(err)
	}
	replicated(t, laptop, owner.id.ID, 1)
	if !origins(t, laptop)[owner.id.ID.String()] {
		t.Fatal("the owner's record was not stored")
	}
	if err := owner.m.Remove(ctxT(t), laptop.id.ID.String()); err != nil {
		t.Fatal(err)
	}
	tell(t, owner, laptop)
	if _, ok := laptop.m.Role(laptop.id.ID); ok {
		t.Fatal("the laptop did not learn its removal")
	}
	got := origins(t, laptop)
	if got[owner.id.ID.String()] || !got[laptop.id.ID.String()] {
		t.Errorf("after leaving, the laptop holds records of %v; want its own only", got)
	}
	if c, _ := laptop.db.Cursor(ctxT(t), owner.id.ID.String()); c != 0 {
		t.Errorf("after leaving, its cursor of the owner is %d; want none", c)
	}

	replicated(t, laptop, owner.id.ID, 2) // in flight as it left
	other := newDevice(t, "lab2", nil)
	if err := laptop.m.Join(ctxT(t), create(t, other), other.addr(), ""); err != nil {
		t.Fatalf("join another pool after leaving: %v", err)
	}
	if got := origins(t, laptop); got[owner.id.ID.String()] || !got[laptop.id.ID.String()] {
		t.Errorf("in another pool, the laptop holds records of %v; want none of the old pool's machines", got)
	}

	// Removed from that one too, it creates its own pool.
	replicated(t, laptop, other.id.ID, 1)
	if err := other.m.Remove(ctxT(t), laptop.id.ID.String()); err != nil {
		t.Fatal(err)
	}
	tell(t, other, laptop)
	replicated(t, laptop, other.id.ID, 2)
	if _, _, err := laptop.m.Create(ctxT(t), ""); err != nil {
		t.Fatalf("create a pool after being removed: %v", err)
	}
	if got := origins(t, laptop); got[other.id.ID.String()] || !got[laptop.id.ID.String()] {
		t.Errorf("in its own pool, the laptop holds records of %v; want its own only", got)
	}
}

// TestForgedRemovalForgetsNothing: a member that signs a removal of
// another device and relays it to that device (what a hostile replica
// would do) neither removes it nor makes it forget the pool's records.
func TestForgedRemovalForgetsNothing(t *testing.T) {
	owner, laptop, mallory := newDevice(t, "lab1", nil), newDevice(t, "laptop", nil), newDevice(t, "mallory", nil)
	create(t, owner)
	for _, d := range []*device{laptop, mallory} {
		if err := d.m.Join(ctxT(t), invite(t, owner, pool.RoleMember, 1, time.Hour), owner.addr(), ""); err != nil {
			t.Fatal(err)
		}
	}
	tell(t, owner, laptop)
	replicated(t, laptop, owner.id.ID, 1)
	forged := pool.Record{Pool: mustPool(t, owner), Kind: pool.KindRemove, Subject: laptop.id.ID.String(),
		Version: uint64(time.Now().UnixMilli()), Signer: mallory.id.ID.String()}
	forged.Sig = ed25519.Sign(mallory.id.Cert.PrivateKey.(ed25519.PrivateKey), forged.SigningBytes())
	raw, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	if err := laptop.m.Receive(ctxT(t), mallory.id.ID, []json.RawMessage{raw}); err != nil {
		t.Fatal(err)
	}
	if _, ok := laptop.m.Role(laptop.id.ID); !ok {
		t.Error("a member's forged removal removed the laptop")
	}
	if !origins(t, laptop)[owner.id.ID.String()] {
		t.Error("a member's forged removal made the laptop forget the owner's records")
	}
}

// TestReadmitBringsBack: an owner removes the student's device and
// readmits it; told the pool's records (as a member's stream brings them
// once it answers the device again), the device is a member again under
// its name and role, its own records kept, and it reaches the owner.
// Removed again, the hook is called again and the device told who removed
// it this time. A member's readmission is refused naming the rule.
func TestReadmitBringsBack(t *testing.T) {
	owner := newDevice(t, "lab1", nil)
	create(t, owner)
	student := newDevice(t, "student", nil)
	if err := student.m.Join(ctxT(t), invite(t, owner, pool.RoleMember, 0, time.Hour), owner.addr(), ""); err != nil {
		t.Fatal(err)
	}
	peerDev := newDevice(t, "peer", nil)
	if err := peerDev.m.Join(ctxT(t), invite(t, owner, pool.RoleMember, 0, time.Hour), owner.addr(), ""); err != nil {
		t.Fatal(err)
	}
	tell(t, owner, peerDev)
	if _, err := student.db.Append(ctxT(t), student.id.ID.String(), "node", "", time.Now(), []byte(`{"name":"student"}`)); err != nil {
		t.Fatal(err)
	}
	if err := owner.m.Remove(ctxT(t), "student"); err != nil {
		t.Fatal(err)
	}
	tell(t, owner, student)
	tell(t, owner, peerDev)
	if _, ok := student.m.Role(student.id.ID); ok {
		t.Fatal("the student's device does not know it was removed")
	}
	if err := peerDev.m.Readmit(ctxT(t), "student"); !errors.Is(err, pool.ErrOutOfRole) || !strings.Contains(err.Error(), "only admins and owners readmit") {
		t.Errorf("a member's readmission = %v; want it refused naming the rule", err)
	}
	if err := owner.m.Readmit(ctxT(t), "student"); err != nil {
		t.Fatalf("readmit: %v", err)
	}
	if got := reach(t, student, owner); got != http.StatusOK {
		t.Errorf("the readmitted device got %d from the owner; want 200", got)
	}
	tell(t, owner, student)
	role, ok := student.m.Role(student.id.ID)
	ms, _ := student.m.Member(student.id.ID.String())
	if !ok || role != pool.RoleMember || ms.Name != "student" {
		t.Errorf("after the readmission: role %q (member %v), name %q; want a member named student", role, ok, ms.Name)
	}
	if !origins(t, student)[student.id.ID.String()] {
		t.Error("the readmitted device lost its own records")
	}
	rows, err := student.db.Members(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.ID == student.id.ID.String() && r.Removed {
			t.Error("its replica's member table still says it was removed")
		}
	}
	// Removed again: the hook is called again, and the removal told is
	// the new one.
	first, _ := owner.m.RemovalOf(student.id.ID.String())
	owner.mu.Lock()
	owner.removed = nil
	owner.mu.Unlock()
	if err := owner.m.Remove(ctxT(t), "student"); err != nil {
		t.Fatal(err)
	}
	if !owner.wasRemoved(student.id.ID) {
		t.Error("the Removed hook was not called for the second removal")
	}
	if again, ok := owner.m.RemovalOf(student.id.ID.String()); !ok || !again.At.After(first.At) {
		t.Errorf("the removal told after a readmission: %+v (%v); want the second, after %v", again, ok, first.At)
	}
}
