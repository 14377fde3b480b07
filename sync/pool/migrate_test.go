package pool_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// TestMigrateLandedPool opens the replica of a pool that the landed labpool
// wrote in the legacy format (testdata/landed, made by mklanded.go): the
// membership is the same, new records link onto the legacy ones, a device
// joins by admission, and a join of the legacy format is refused from then on.
func TestMigrateLandedPool(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)
	ids, open := openCopy(t, "testdata/landed", []string{"gpu-box", "ada", "bea", "cy"}, func() time.Time { return clock })
	m, db := open()
	roles := func(m *pool.Manager) map[string]string {
		st, ok := m.Snapshot()
		if !ok {
			t.Fatal("not in a pool after the migration")
		}
		out := map[string]string{}
		for _, ms := range st.Members {
			r := string(ms.Role)
			if ms.Removed {
				r += " removed"
			}
			out[ms.Name] = r
		}
		return out
	}
	want := map[string]string{"gpu-box": "owner", "ada": "admin", "bea": "member", "cy": "member removed"}
	if got := roles(m); !equalMaps(got, want) {
		t.Fatalf("members after the migration = %v; want %v", got, want)
	}
	st, _ := m.Snapshot()
	states := map[string]string{}
	for _, inv := range st.Invites {
		states[string(inv.Role)+"/"+string(rune('0'+inv.Uses))] = inv.State(clock)
	}
	if states["admin/1"] != "used up" || states["member/3"] != "revoked" || states["viewer/0"] != "active" || states["member/0"] != "active" {
		t.Fatalf("invites after the migration: %v", states)
	}

	// New records link onto the legacy ones.
	if err := m.SetRole(ctx, "bea", pool.RoleViewer); err != nil {
		t.Fatalf("SetRole after the migration: %v", err)
	}
	_, code, err := m.Invite(ctx, pool.RoleMember, 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	raws, _ := m.Records()
	recs := decodeAll(t, raws)
	l, err := pool.Verify(st.Pool, recs, clock)
	if err != nil {
		t.Fatalf("a joiner cannot verify the migrated log: %v", err)
	}
	_, dan, _ := ed25519.GenerateKey(nil)
	req, err := pool.NewJoinRequest(code, dan.Public().(ed25519.PublicKey), "dan", "")
	if err != nil {
		t.Fatal(err)
	}
	adm, err := l.Admit(ids["gpu-box"].Cert.PrivateKey.(ed25519.PrivateKey), req, dan.Public().(ed25519.PublicKey), clock)
	if err != nil {
		t.Fatalf("Admit on the migrated log: %v", err)
	}
	b, _ := json.Marshal(adm)
	if err := m.Receive(ctx, ids["ada"].ID, []json.RawMessage{b}); err != nil {
		t.Fatal(err)
	}
	// A legacy join is refused now: only an admission lets a device in.
	_, eve, _ := ed25519.GenerateKey(nil)
	legacy, err := pool.NewLegacyJoin(code, eve.Public().(ed25519.PublicKey), "eve", pool.RoleMember, clock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Apply(legacy, clock); !errors.Is(err, pool.ErrReplayed) {
		t.Errorf("Apply(legacy join after the migration) = %v; want ErrReplayed", err)
	}
	b, _ = json.Marshal(legacy)
	if err := m.Receive(ctx, ids["ada"].ID, []json.RawMessage{b}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	m, db = open()
	defer db.Close()
	want = map[string]string{"gpu-box": "owner", "ada": "admin", "bea": "viewer", "cy": "member removed", "dan": "member"}
	if got := roles(m); !equalMaps(got, want) {
		t.Errorf("members after a restart = %v; want %v", got, want)
	}
}

// openCopy copies the data directories and replica of src (a pool as an
// earlier labpool wrote it) and returns the devices' identities, by name,
// and a function that opens the replica with the first device's manager.
func openCopy(t *testing.T, src string, names []string, now func() time.Time) (map[string]*peer.Identity, func() (*pool.Manager, *store.DB)) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	ids := map[string]*peer.Identity{}
	for _, n := range names {
		id, err := peer.LoadOrCreate(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = id
	}
	return ids, func() (*pool.Manager, *store.DB) {
		db, err := store.Open(filepath.Join(dir, "replica.db"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := pool.NewManager(context.Background(), pool.ManagerConfig{Identity: ids[names[0]], DB: db, Now: now,
			Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return m, db
	}
}

func decodeAll(t *testing.T, raws []json.RawMessage) []pool.Record {
	t.Helper()
	recs := make([]pool.Record, len(raws))
	for i, b := range raws {
		r, err := pool.DecodeRecord(b)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = r
	}
	return recs
}

func equalMaps[V comparable](a, b map[string]V) bool { return maps.Equal(a, b) }
