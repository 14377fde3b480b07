package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

func TestOpenMigratesAndReopens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "replica.db")
	want, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // from empty, then again on the migrated file
		db, err := Open(path)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		v, err := db.SchemaVersion(ctx)
		if err != nil || v != len(want) {
			t.Errorf("open %d: SchemaVersion() = %d, %v; want %d", i, v, err, len(want))
		}
		var rows int
		if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != len(want) {
			t.Errorf("open %d: %d schema_migrations rows, %v; want %d", i, rows, err, len(want))
		}
		var mode string
		if err := db.r.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("open %d: journal_mode = %q, %v; want wal", i, mode, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("second Close() = %v; want nil", err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "replica.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.w.Exec(`INSERT INTO schema_migrations (version, name, applied_ms) VALUES (999, '0999_future', 0)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "999") {
		t.Fatalf("Open(newer schema) = %v; want ErrSchemaTooNew naming version 999", err)
	}
}

func TestOpenConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "replica.db")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			db, err := Open(path)
			if err == nil {
				_, err = db.Append(context.Background(), "A", "node", "", t0(), []byte(`{}`))
				db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", i, err)
		}
	}
}

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fs      fstest.MapFS
		want    []int
		wantErr bool
	}{
		{"ordered", fstest.MapFS{"migrations/0002_b.sql": file("B"), "migrations/0001_a.sql": file("A")}, []int{1, 2}, false},
		{"gap", fstest.MapFS{"migrations/0001_a.sql": file("A"), "migrations/0003_c.sql": file("C")}, nil, true},
		{"starts at 2", fstest.MapFS{"migrations/0002_b.sql": file("B")}, nil, true},
		{"bad name", fstest.MapFS{"migrations/init.sql": file("A")}, nil, true},
		{"short number", fstest.MapFS{"migrations/1_a.sql": file("A")}, nil, true},
		{"none", fstest.MapFS{}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := loadMigrations(tt.fs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("loadMigrations() error = %v; want error %v", err, tt.wantErr)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.version)
			}
			if len(got) != len(tt.want) || (len(got) > 0 && got[len(got)-1] != tt.want[len(tt.want)-1]) {
				t.Errorf("versions = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestEmbeddedMigrationsLoad(t *testing.T) {
	ms, err := loadMigrations(migrationFiles)
	if err != nil || len(ms) == 0 {
		t.Fatalf("loadMigrations(embedded) = %d migrations, %v", len(ms), err)
	}
}

// TestHotQueriesUseIndexes fails when a hot query would scan the records
// table instead of seeking an index.
func TestHotQueriesUseIndexes(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	queries := map[string]struct {
		q    string
		args []any
	}{
		"since":        {`SELECT ` + recordCols + ` FROM records WHERE origin = ? AND seq > ? ORDER BY seq LIMIT ?`, []any{"A", 0, 10}},
		"range":        {`SELECT ` + recordCols + ` FROM records WHERE origin = ? AND kind = ? AND time_ms >= ? AND time_ms < ? ORDER BY time_ms, seq`, []any{"A", "k", 0, 1}},
		"latest":       {`SELECT ` + recordCols + ` FROM records WHERE origin = ? AND kind = ? AND key = ?`, []any{"A", "k", ""}},
		"latestByKind": {latestByKind, []any{"k"}},
		"prune":        {pruneKind, []any{"k", 0}},
		"upsert":       {upsertRecord, []any{"A", "k", "", 1, 0, []byte{}}},
		"heldByKind":   {heldByKind, []any{"A"}},
		"jobsInState":  {`SELECT ` + recordCols + ` FROM records WHERE kind = 'job' AND ` + jobState + ` IN (?, ?)`, []any{"running", "queued"}},
	}
	for name, tc := range queries {
		t.Run(name, func(t *testing.T) {
			plan := queryPlan(t, db.w, tc.q, tc.args...)
			t.Log(strings.Join(plan, "; "))
			for _, line := range plan {
				if strings.HasPrefix(line, "SCAN records") || strings.HasPrefix(line, "SCAN r ") || line == "SCAN r" {
					t.Errorf("plan scans records:\n%s", strings.Join(plan, "\n"))
				}
			}
		})
	}
}

func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(`EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return plan
}

func TestOpenPaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, p := range []string{"relative.db", filepath.Join(dir, "odd name?#%.db")} {
		db, err := Open(p)
		if err != nil {
			t.Fatalf("Open(%q): %v", p, err)
		}
		db.Close()
		abs, _ := filepath.Abs(p)
		if _, err := os.Stat(abs); err != nil {
			t.Errorf("Open(%q) made no file there: %v", p, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing", "replica.db")); err == nil {
		t.Errorf("Open in a missing directory succeeded")
	}
}
