package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// v3Dump is testdata/v3.json: the membership of testdata/v3.db as the
// labpool that wrote it (schema 3, before a member was a person) read it
// back; see mkv3.go.
type v3Dump struct {
	Schema      int               `json:"schema"`
	Members     []MemberRow       `json:"members"`
	PoolRecords []PoolRecord      `json:"pool_records"`
	Settings    map[string]string `json:"settings"`
}

// TestMigrateFromV3 opens a replica of schema 3, written before a member
// was a person, with this labpool: the schema comes up to date, every
// member row, pool record and setting is still there, and each member is
// the first device of a person of its own, named after it (as sync/pool
// reads such a pool), removed members included.
func TestMigrateFromV3(t *testing.T) {
	ctx := context.Background()
	var want v3Dump
	b, err := os.ReadFile("testdata/v3.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if want.Schema != 3 || len(want.Members) < 2 || len(want.PoolRecords) == 0 {
		t.Fatalf("testdata/v3.json holds schema %d, %d members, %d pool records: not the v3 fixture",
			want.Schema, len(want.Members), len(want.PoolRecords))
	}
	path := filepath.Join(t.TempDir(), "replica.db")
	orig, err := os.ReadFile("testdata/v3.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open(v3 replica) = %v", err)
	}
	defer db.Close()
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := db.SchemaVersion(ctx); err != nil || v != len(ms) || v <= 3 {
		t.Fatalf("SchemaVersion() = %d, %v; want %d", v, err, len(ms))
	}
	if got := integrity(t, db); got != "ok" {
		t.Fatalf("integrity_check = %q", got)
	}
	checkSchemaCurrent(t, db)

	members, err := db.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for i := range want.Members {
		m := &want.Members[i]
		if m.Person != "" || m.PersonName != "" {
			t.Fatalf("fixture member %s names a person: not a schema 3 row", m.Name)
		}
		m.Person, m.PersonName = m.ID, m.Name // a person of its own, named after it
		if m.Removed {
			removed++
		}
	}
	if removed == 0 {
		t.Fatal("the fixture holds no removed member")
	}
	if !slices.EqualFunc(members, want.Members, func(a, b MemberRow) bool {
		return a.ID == b.ID && a.Name == b.Name && a.Version == b.Version && a.Removed == b.Removed &&
			a.AddedAt.Equal(b.AddedAt) && a.AddedBy == b.AddedBy && a.Role == b.Role &&
			a.Person == b.Person && a.PersonName == b.PersonName
	}) {
		t.Errorf("Members() = %+v;\nwant %+v", members, want.Members)
	}
	prs, err := db.PoolRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(prs, want.PoolRecords, func(a, b PoolRecord) bool {
		return a.Hash == b.Hash && a.Version == b.Version && string(a.Data) == string(b.Data)
	}) {
		t.Errorf("PoolRecords() = %d records; want the %d of the fixture, byte for byte", len(prs), len(want.PoolRecords))
	}
	for k, v := range want.Settings {
		if got, ok, err := db.Setting(ctx, k); err != nil || !ok || got != v {
			t.Errorf("Setting(%q) = %q, %v, %v; want %q", k, got, ok, err, v)
		}
	}

	// The next write of the member table (sync/pool's, from the log) keeps
	// the person it names.
	bob := want.Members[2]
	bob.Person, bob.PersonName, bob.Version = want.Members[3].ID, "bob", bob.Version+1
	bob.AddedAt = bob.AddedAt.Truncate(time.Millisecond)
	if err := db.SavePool(ctx, prs, []MemberRow{bob}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Members(ctx)
	if err != nil || len(got) != 1 || got[0].Person != bob.Person || got[0].PersonName != "bob" {
		t.Errorf("Members() after SavePool = %+v, %v; want bob-ws a device of person bob", got, err)
	}
}
