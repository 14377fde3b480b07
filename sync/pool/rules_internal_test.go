package pool

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

// TestOwnerSetsRulesOfAnOldPool: the machine of an owner of a pool made
// before the rules signs its rules record when it starts; a member's does
// not, and a restart signs no second one.
func TestOwnerSetsRulesOfAnOldPool(t *testing.T) {
	id, db := identityAndStore(t)
	memberID, memberDB := identityAndStore(t)
	key := id.Cert.PrivateKey.(ed25519.PrivateKey)
	now := time.Now()
	g, err := NewGenesis(key, "lab1", "", now)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLog(g.Pool)
	if _, err := l.Apply(g, now); err != nil {
		t.Fatal(err)
	}
	inv, code, err := l.NewInvite(key, RoleMember, 0, now.Add(time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Apply(inv, now); err != nil {
		t.Fatal(err)
	}
	memberPub := memberID.Cert.PrivateKey.(ed25519.PrivateKey).Public().(ed25519.PublicKey)
	req, err := NewJoinRequest(code, memberPub, "gpu2", "")
	if err != nil {
		t.Fatal(err)
	}
	adm, err := l.Admit(key, req, memberPub, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Apply(adm, now); err != nil {
		t.Fatal(err)
	}
	var rows []store.PoolRecord
	for _, r := range l.Records() {
		b, _ := json.Marshal(r)
		h := r.Hash()
		rows = append(rows, store.PoolRecord{Hash: hex.EncodeToString(h[:]), Version: r.Version, Data: b})
	}
	ctx := context.Background()
	start := func(id *peer.Identity, db *store.DB) *Manager {
		m, err := NewManager(ctx, ManagerConfig{Identity: id, DB: db, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, db := range []*store.DB{db, memberDB} {
		if err := db.SavePool(ctx, rows, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.SetSetting(ctx, settingPoolID, g.Pool.String()); err != nil {
			t.Fatal(err)
		}
	}
	if m := start(memberID, memberDB); m.log.AdminsAdmit() || len(m.log.Records()) != 3 {
		t.Errorf("after a member's start: rules %v, %d records; want no rules signed, 3 records", m.log.AdminsAdmit(), len(m.log.Records()))
	}
	m := start(id, db)
	if !m.log.AdminsAdmit() || len(m.log.Records()) != 4 {
		t.Fatalf("after the owner's start: rules %v, %d records; want the rules signed, 4 records", m.log.AdminsAdmit(), len(m.log.Records()))
	}
	if again := start(id, db); len(again.log.Records()) != 4 || !again.log.AdminsAdmit() {
		t.Errorf("after a restart: %d records; want 4, the rules kept and not signed twice", len(again.log.Records()))
	}
}

// identityAndStore returns a new device identity and a store, in a
// temporary directory.
func identityAndStore(t *testing.T) (*peer.Identity, *store.DB) {
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
	return id, db
}
