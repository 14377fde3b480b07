//go:build ignore

// mkv3 writes v3.db, a replica of schema 3 (migrations 0001 to 0003) as
// labpool wrote it before a member was a person, and v3.json, every member,
// pool record and setting it holds as that labpool read them back. v3.db
// is sync/pool/testdata/linked/replica.db, the dgx's replica made by
// mklinked.go at e67cc67: alice's dgx creates the pool; alice-laptop, an
// owner, bob-laptop, bob-ws (an admin, removed and readmitted) and carol (a
// viewer, removed) join, each device a member of its own. Run it in a work
// tree of commit 2cba23d:
//
//	git worktree add /tmp/v3 2cba23d && cd /tmp/v3
//	go run ./sync/store/testdata/mkv3.go -out /path/to/sync/store/testdata
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/labpool/labpool/sync/store"

	_ "modernc.org/sqlite"
)

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// Dump is what the old labpool's API reads of the replica's membership.
type Dump struct {
	Schema      int                `json:"schema"`
	Members     []store.MemberRow  `json:"members"`
	PoolRecords []store.PoolRecord `json:"pool_records"`
	Settings    map[string]string  `json:"settings"`
}

func main() {
	out := flag.String("out", ".", "directory for v3.db and v3.json")
	flag.Parse()
	ctx := context.Background()
	src, err := os.ReadFile("sync/pool/testdata/linked/replica.db")
	check(err)
	dbPath := filepath.Join(*out, "v3.db")
	check(os.WriteFile(dbPath, src, 0o644))
	db, err := store.Open(dbPath)
	check(err)
	var d Dump
	d.Schema, err = db.SchemaVersion(ctx)
	check(err)
	d.Members, err = db.Members(ctx)
	check(err)
	d.PoolRecords, err = db.PoolRecords(ctx)
	check(err)
	check(db.Close())
	raw, err := sql.Open("sqlite", "file:"+dbPath)
	check(err)
	defer raw.Close()
	_, err = raw.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	check(err)
	_, err = raw.ExecContext(ctx, `PRAGMA journal_mode=DELETE`)
	check(err)
	rows, err := raw.QueryContext(ctx, `SELECT key, value FROM settings ORDER BY key`)
	check(err)
	d.Settings = map[string]string{}
	for rows.Next() {
		var k, v string
		check(rows.Scan(&k, &v))
		d.Settings[k] = v
	}
	check(rows.Err())
	b, err := json.MarshalIndent(d, "", "\t")
	check(err)
	check(os.WriteFile(filepath.Join(*out, "v3.json"), append(b, '\n'), 0o644))
}
