package daemon

import (
	"path/filepath"
	"testing"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// TestPersonOfDevice: the folders' and the metrics' lookups of a device's
// person read this machine's membership log: the creator's device is the
// first device of person alice; a stranger's device, or any device
// outside a pool, has none.
func TestPersonOfDevice(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	id, err := peer.LoadOrCreate(filepath.Join(dir, "id"))
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := peer.LoadOrCreate(filepath.Join(dir, "stranger"))
	if err != nil {
		t.Fatal(err)
	}
	pm, err := pool.NewManager(ctx, pool.ManagerConfig{Identity: id, DB: db, Name: func() string { return "dgx" }})
	if err != nil {
		t.Fatal(err)
	}
	self := id.ID.String()
	if p, n := personOf(pm, self), personName(pm, self); p != "" || n != "" {
		t.Errorf("outside a pool: person %q, %q; want none", p, n)
	}
	if _, _, err := pm.Create(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if p, n := personOf(pm, self), personName(pm, self); p != self || n != "alice" {
		t.Errorf("the creator's device: person %q, %q; want %q, alice", p, n, self)
	}
	if p, n := personOf(pm, stranger.ID.String()), personName(pm, stranger.ID.String()); p != "" || n != "" {
		t.Errorf("a stranger's device: person %q, %q; want none", p, n)
	}
	if !isPerson(pm, self) || isPerson(pm, stranger.ID.String()) {
		t.Errorf("isPerson: alice %v, a stranger %v; want true, false", isPerson(pm, self), isPerson(pm, stranger.ID.String()))
	}
}
