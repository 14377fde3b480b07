//go:build ignore

// mklanded writes landed/, a data directory of each of four devices and the
// replica of the first (replica.db), as labpool wrote them before records
// were linked (commit b44ed4d): the pool's membership in the legacy format.
// Run it in a work tree of that commit:
//
//	git worktree add /tmp/landed b44ed4d && cd /tmp/landed
//	go run ./sync/pool/testdata/mklanded.go -out /path/to/sync/pool/testdata/landed
//
// The pool: gpu-box creates it, ada joins with a one-use admin invite, bea
// and cy with a member invite of three uses, cy is removed (which revokes
// the member invite), and a viewer invite of unlimited uses stays active.
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
	out := flag.String("out", "landed", "directory to write")
	flag.Parse()
	ctx := context.Background()
	check(os.RemoveAll(*out))
	names := []string{"gpu-box", "ada", "bea", "cy"}
	ids := make([]*peer.Identity, len(names))
	for i, n := range names {
		var err error
		ids[i], err = peer.LoadOrCreate(filepath.Join(*out, n))
		check(err)
	}
	db, err := store.Open(filepath.Join(*out, "replica.db"))
	check(err)
	defer db.Close()
	clock := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := pool.NewManager(ctx, pool.ManagerConfig{Identity: ids[0], Name: func() string { return names[0] }, DB: db, Now: now, Log: logger})
	check(err)
	_, _, err = m.Create(ctx, "")
	check(err)
	tick := func() { clock = clock.Add(time.Second) }
	tick()
	_, adminCode, err := m.Invite(ctx, pool.RoleAdmin, 1, 24*time.Hour)
	check(err)
	tick()
	memberInv, memberCode, err := m.Invite(ctx, pool.RoleMember, 3, 24*time.Hour)
	check(err)
	tick()
	_, _, err = m.Invite(ctx, pool.RoleViewer, 0, 365*24*time.Hour)
	check(err)
	join := func(i int, code pool.Code) {
		tick()
		pub := ids[i].Cert.PrivateKey.(ed25519.PrivateKey).Public().(ed25519.PublicKey)
		rec, err := pool.NewJoin(code, pub, names[i], clock)
		check(err)
		raw, err := json.Marshal(rec)
		check(err)
		check(m.Receive(ctx, ids[i].ID, []json.RawMessage{raw}))
	}
	join(1, adminCode)
	join(2, memberCode)
	join(3, memberCode)
	tick()
	check(m.Remove(ctx, ids[3].ID.String()))
	_ = memberInv // the removal revoked it: cy came in by it
}
