package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrSchemaTooNew means the replica was written by a newer labpool, whose
// schema this binary does not know.
var ErrSchemaTooNew = errors.New("replica schema is newer than this labpool")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one schema step, read from migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the migrations of fsys in version order and checks
// that they number 1, 2, 3, ... without gaps.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var ms []migration
	for _, name := range names { // Glob sorts, and versions are zero-padded
		m, err := readMigration(fsys, name)
		if err != nil {
			return nil, err
		}
		if m.version != len(ms)+1 {
			return nil, fmt.Errorf("read migration %s: version %d, want %d", name, m.version, len(ms)+1)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

func readMigration(fsys fs.FS, name string) (migration, error) {
	base := strings.TrimSuffix(path.Base(name), ".sql")
	num, _, _ := strings.Cut(base, "_")
	v, err := strconv.Atoi(num)
	if err != nil || len(num) != 4 {
		return migration{}, fmt.Errorf("read migration %s: name is not NNNN_name.sql", name)
	}
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return migration{}, fmt.Errorf("read migration %s: %w", name, err)
	}
	return migration{version: v, name: base, sql: string(b)}, nil
}

// migrate applies the migrations db lacks, each in its own transaction, and
// records them in schema_migrations. Several processes may migrate at once:
// each step re-reads the version under the write lock.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	for {
		done, err := migrateStep(ctx, db, ms)
		if err != nil && isBusy(err) && time.Now().Before(deadline) {
			// Another process holds the file while it switches to WAL or
			// migrates; SQLite answers that without waiting on the busy
			// timeout, so wait here and read the version again.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if err != nil || done {
			return err
		}
	}
}

// isBusy reports whether err is SQLite's "database is locked" (SQLITE_BUSY,
// or one of its extended codes).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// migrateStep applies the next missing migration, or reports that none is
// missing.
func migrateStep(ctx context.Context, db *sql.DB, ms []migration) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate schema: %w", err)
	}
	defer tx.Rollback()
	cur, err := schemaVersion(ctx, tx)
	if err != nil {
		return false, err
	}
	switch {
	case cur > len(ms):
		return false, fmt.Errorf("%w: replica has schema %d, this labpool knows up to %d", ErrSchemaTooNew, cur, len(ms))
	case cur == len(ms):
		return true, tx.Commit()
	}
	m := ms[cur]
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, fmt.Errorf("apply migration %s: %w", m.name, err)
	}
	const rec = `INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)`
	if _, err := tx.ExecContext(ctx, rec, m.version, m.name, time.Now().UnixMilli()); err != nil {
		return false, fmt.Errorf("record migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit migration %s: %w", m.name, err)
	}
	return false, nil
}

// schemaVersion returns the highest migration applied, creating the table
// that records them if it is missing.
func schemaVersion(ctx context.Context, tx *sql.Tx) (int, error) {
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_ms INTEGER NOT NULL
	)`
	if _, err := tx.ExecContext(ctx, create); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	var v int
	err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// SchemaVersion returns the schema version of the replica.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := db.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
