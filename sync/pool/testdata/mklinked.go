//go:build ignore

// mklinked writes linked/, a data directory of each of five devices and the
// replica of the first (replica.db), as labpool wrote them before a member
// was a person (commit e67cc67): every record linked, every device a member
// of its own. Run it in a work tree of that commit:
//
//	git worktree add /tmp/linked e67cc67 && cd /tmp/linked
//	go run ./sync/pool/testdata/mklinked.go -out /path/to/sync/pool/testdata/linked
//
// The pool: alice's dgx creates it; alice-laptop joins as a member and is
// made an owner; bob-laptop and bob-ws join as members, bob-ws is made an
// admin, removed and readmitted; carol joins as a viewer and is removed; a
// member invite of two uses stays active.
package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"flag"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func main() {
	out := flag.String("out", "linked", "directory to write")
	flag.Parse()
	ctx := context.Background()
	check(os.RemoveAll(*out))
	names := []string{"dgx", "alice-laptop", "bob-laptop", "bob-ws", "carol"}
	ids := make([]*peer.Identity, len(names))
	for i, n := range names {
		var err error
		ids[i], err = peer.LoadOrCreate(filepath.Join(*out, n))
		check(err)
	}
	db, err := store.Open(filepath.Join(*out, "replica.db"))
	check(err)
	defer db.Close()
	clock := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	tick := func() { clock = clock.Add(time.Second) }
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := pool.NewManager(ctx, pool.ManagerConfig{Identity: ids[0], Name: func() string { return names[0] }, DB: db, Now: now, Log: logger})
	check(err)
	_, _, err = m.Create(ctx, "")
	check(err)
	key := ids[0].Cert.PrivateKey.(ed25519.PrivateKey)
	join := func(i int, role pool.Role) {
		tick()
		_, code, err := m.Invite(ctx, role, 1, 24*time.Hour)
		check(err)
		tick()
		pub := ids[i].Cert.PrivateKey.(ed25519.PrivateKey).Public().(ed25519.PublicKey)
		req, err := pool.NewJoinRequest(code, pub, names[i])
		check(err)
		raws, _ := m.Records()
		recs := make([]pool.Record, len(raws))
		for j, b := range raws {
			recs[j], err = pool.DecodeRecord(b)
			check(err)
		}
		st, _ := m.Snapshot()
		l, err := pool.Verify(st.Pool, recs, clock)
		check(err)
		adm, err := l.Admit(key, req, pub, clock)
		check(err)
		raw, err := json.Marshal(adm)
		check(err)
		check(m.Receive(ctx, ids[i].ID, []json.RawMessage{raw}))
	}
	join(1, pool.RoleMember)
	tick()
	check(m.SetRole(ctx, "alice-laptop", pool.RoleOwner))
	join(2, pool.RoleMember)
	join(3, pool.RoleMember)
	tick()
	check(m.SetRole(ctx, "bob-ws", pool.RoleAdmin))
	tick()
	check(m.Remove(ctx, "bob-ws"))
	tick()
	check(m.Readmit(ctx, "bob-ws"))
	join(4, pool.RoleViewer)
	tick()
	check(m.Remove(ctx, "carol"))
	tick()
	_, _, err = m.Invite(ctx, pool.RoleMember, 2, 365*24*time.Hour)
	check(err)
}
