package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// v2Dump is testdata/v2.json: every row of testdata/v2.db as the labpool
// that wrote it (commit 99c5a0e, schema 2) read it back; see mkv2.go.
type v2Dump struct {
	Schema  int `json:"schema"`
	Records []struct {
		Origin     string    `json:"o"`
		Seq        uint64    `json:"s"`
		Kind       string    `json:"k"`
		Key        string    `json:"key"`
		Time       time.Time `json:"t"`
		DataSHA256 string    `json:"d_sha256"`
	} `json:"records"`
	Cursors     map[string]uint64 `json:"cursors"`
	Members     []MemberRow       `json:"members"`
	PoolRecords []PoolRecord      `json:"pool_records"`
	Settings    map[string]string `json:"settings"`
}

// TestMigrateFromV2 opens a replica made by the labpool released before
// issue 11 (schema 2) with this one: the schema comes up to date, and every
// record, cursor, member, pool record and setting is still there, unchanged.
func TestMigrateFromV2(t *testing.T) {
	ctx := context.Background()
	var want v2Dump
	b, err := os.ReadFile("testdata/v2.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if want.Schema != 2 || len(want.Records) == 0 || len(want.Members) == 0 || len(want.PoolRecords) == 0 {
		t.Fatalf("testdata/v2.json holds schema %d, %d records, %d members, %d pool records: not the v2 fixture",
			want.Schema, len(want.Records), len(want.Members), len(want.PoolRecords))
	}
	path := filepath.Join(t.TempDir(), "replica.db")
	orig, err := os.ReadFile("testdata/v2.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}

	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open(v2 replica) = %v", err)
	}
	defer db.Close()
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := db.SchemaVersion(ctx); err != nil || v != len(ms) {
		t.Fatalf("SchemaVersion() = %d, %v; want %d", v, err, len(ms))
	}
	if got := integrity(t, db); got != "ok" {
		t.Fatalf("integrity_check = %q", got)
	}
	checkSchemaCurrent(t, db)

	// Records: the same set, each with its seq, time and data.
	var got []string
	origins, err := db.Origins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range origins {
		recs, err := db.Since(ctx, o, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got = append(got, fmt.Sprintf("%s %d %s/%s %s %x", r.Origin, r.Seq, r.Kind, r.Key,
				r.Time.Format(time.RFC3339Nano), sha256.Sum256(r.Data)))
		}
		c, err := db.Cursor(ctx, o)
		if err != nil || c != want.Cursors[o] {
			t.Errorf("Cursor(%s) = %d, %v; want %d", o, c, err, want.Cursors[o])
		}
	}
	var wantRecs []string
	for _, r := range want.Records {
		wantRecs = append(wantRecs, fmt.Sprintf("%s %d %s/%s %s %s", r.Origin, r.Seq, r.Kind, r.Key,
			r.Time.UTC().Format(time.RFC3339Nano), r.DataSHA256))
	}
	slices.Sort(got)
	slices.Sort(wantRecs)
	if !slices.Equal(got, wantRecs) {
		t.Errorf("records after migration differ:\n got %d: %q\nwant %d: %q", len(got), got, len(wantRecs), wantRecs)
	}
	if len(origins) != len(want.Cursors) {
		t.Errorf("Origins() = %v; want the %d of the fixture", origins, len(want.Cursors))
	}

	members, err := db.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(members, want.Members, func(a, b MemberRow) bool {
		return a.ID == b.ID && a.Name == b.Name && a.Version == b.Version && a.Removed == b.Removed &&
			a.AddedAt.Equal(b.AddedAt) && a.AddedBy == b.AddedBy && a.Role == b.Role
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

	// The log goes on where it stopped: our next seq follows the cursor.
	self := want.Settings["self.id"]
	r, err := db.Append(ctx, self, "job", "j-after", time.Now(), []byte(`{}`))
	if err != nil || r.Seq != want.Cursors[self]+1 {
		t.Errorf("Append after migration = seq %d, %v; want %d", r.Seq, err, want.Cursors[self]+1)
	}
}

// checkSchemaCurrent compares db's tables and indexes with those of a
// replica created by this labpool.
func checkSchemaCurrent(t *testing.T, db *DB) {
	t.Helper()
	fresh, err := Open(filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got, want := schemaSQL(t, db), schemaSQL(t, fresh); !slices.Equal(got, want) {
		t.Errorf("schema after migration:\n%s\nwant (a new replica's):\n%s", got, want)
	}
}

// schemaSQL lists the SQL of every table, index and trigger of db.
func schemaSQL(t *testing.T, db *DB) []string {
	t.Helper()
	rows, err := db.r.Query(`SELECT type || ' ' || name || ': ' || COALESCE(sql, '') FROM sqlite_master
		WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// integrity is PRAGMA integrity_check of db: "ok" when the file is sound.
func integrity(t *testing.T, db *DB) string {
	t.Helper()
	var s string
	if err := db.r.QueryRow(`PRAGMA integrity_check`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}
