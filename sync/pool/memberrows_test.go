package pool_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// TestMemberTableNamesPerson: the member table the manager writes names
// each device's person, so that the app names people: alice's second
// device is a device of alice (her first device's ID), and bob's first
// device is a person of his own.
func TestMemberTableNamesPerson(t *testing.T) {
	station, laptop, bob := newDevice(t, "dgx", nil), newDevice(t, "alice-laptop", nil), newDevice(t, "bob-laptop", nil)
	if _, _, err := station.m.Create(ctxT(t), "alice"); err != nil {
		t.Fatal(err)
	}
	_, code, err := station.m.AddDevice(ctxT(t), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := laptop.m.Join(ctxT(t), code, station.addr(), ""); err != nil {
		t.Fatal(err)
	}
	_, bobCode, err := station.m.Invite(ctxT(t), "member", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := bob.m.Join(ctxT(t), bobCode, station.addr(), "bob"); err != nil {
		t.Fatal(err)
	}
	rows, err := station.db.Members(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	alice := station.id.ID.String()
	want := map[string][2]string{
		alice:                 {alice, "alice"},
		laptop.id.ID.String(): {alice, "alice"},
		bob.id.ID.String():    {bob.id.ID.String(), "bob"},
	}
	if len(rows) != len(want) {
		t.Fatalf("member table holds %d rows; want %d", len(rows), len(want))
	}
	for _, r := range rows {
		if got := [2]string{r.Person, r.PersonName}; got != want[r.ID] {
			t.Errorf("member %s: person %q; want %q", r.Name, got, want[r.ID])
		}
	}
}

// TestMigratedTableMatchesLog: the member table of a replica written
// before people (testdata/linked), as the store's migration leaves it,
// names the same person for every device as the membership log does when
// it is read again: the app's names are right before the table's next
// rewrite.
func TestMigratedTableMatchesLog(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/linked")); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Members(ctx) // read before the manager could rewrite them
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.LoadOrCreate(filepath.Join(dir, "dgx"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := pool.NewManager(ctx, pool.ManagerConfig{Identity: id, DB: db, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	st, ok := m.Snapshot()
	if !ok || len(st.Members) != len(rows) || len(rows) < 5 {
		t.Fatalf("the log holds %d members (in a pool: %v), the table %d; want the fixture's 5", len(st.Members), ok, len(rows))
	}
	for i, ms := range st.Members {
		r := rows[i]
		if r.ID != ms.ID || r.Person != ms.Person || r.PersonName != ms.PersonName {
			t.Errorf("member %s: the migrated table names person %q %q; the log %s, %q %q",
				r.Name, r.Person, r.PersonName, ms.ID, ms.Person, ms.PersonName)
		}
	}
}
