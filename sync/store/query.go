package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Cursor returns the highest seq of origin this replica has held, or 0: what
// to ask a peer "since". Pruning does not lower it.
func (db *DB) Cursor(ctx context.Context, origin string) (uint64, error) {
	var seq int64
	err := db.r.QueryRowContext(ctx, `SELECT seq FROM cursors WHERE origin = ?`, origin).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read cursor of %s: %w", origin, err)
	}
	return uint64(seq), nil
}

// Since returns the records of origin whose seq is above seq, in seq order,
// at most limit of them (no limit when limit <= 0). Each is the newest
// version of its (kind, key).
func (db *DB) Since(ctx context.Context, origin string, seq uint64, limit int) ([]Record, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	recs, err := collect(db.since.QueryContext(ctx, origin, clampSeq(seq), limit))
	if err != nil {
		return nil, fmt.Errorf("read records of %s since %d: %w", origin, seq, err)
	}
	return recs, nil
}

// SinceBytes is Since that stops reading before the record that would
// take the keys and data read past maxBytes (it reads one record at
// least): a frame of a catch-up reads what it sends, not its limit's
// worth of large records. full says that it stopped there, with records
// left to read.
func (db *DB) SinceBytes(ctx context.Context, origin string, seq uint64, limit, maxBytes int) (recs []Record, full bool, err error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := db.since.QueryContext(ctx, origin, clampSeq(seq), limit)
	if err != nil {
		return nil, false, fmt.Errorf("read records of %s since %d: %w", origin, seq, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, false, fmt.Errorf("read records of %s since %d: %w", origin, seq, err)
		}
		n += len(r.Key) + len(r.Data)
		if n > maxBytes && len(recs) > 0 {
			full = true
			break
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read records of %s since %d: %w", origin, seq, err)
	}
	return recs, full, nil
}

// sinceQuery is Since's statement.
const sinceQuery = `SELECT ` + recordCols + ` FROM records
	WHERE origin = ? AND seq > ? ORDER BY seq LIMIT ?`

// Appended returns the highest seq Append gave origin's records in this
// process, and false when it gave none: a stream of origin's records that
// has sent up to that seq has nothing new to read.
func (db *DB) Appended(origin string) (uint64, bool) {
	v, ok := db.appended.Load(origin)
	if !ok {
		return 0, false
	}
	return v.(uint64), true
}

// clampSeq converts seq to SQLite's signed integer; no stored seq is larger.
func clampSeq(seq uint64) int64 {
	return int64(min(seq, 1<<63-1))
}

// Latest returns the record (origin, kind, key), and false when there is
// none.
func (db *DB) Latest(ctx context.Context, origin, kind, key string) (Record, bool, error) {
	const q = `SELECT ` + recordCols + ` FROM records WHERE origin = ? AND kind = ? AND key = ?`
	r, err := scanRecord(db.r.QueryRowContext(ctx, q, origin, kind, key))
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("read %s/%s of %s: %w", kind, key, origin, err)
	}
	return r, true, nil
}

// Range returns the records of kind from origin whose time is in [from, to),
// oldest first.
func (db *DB) Range(ctx context.Context, origin, kind string, from, to time.Time) ([]Record, error) {
	const q = `SELECT ` + recordCols + ` FROM records
		WHERE origin = ? AND kind = ? AND time_ms >= ? AND time_ms < ?
		ORDER BY time_ms, seq`
	recs, err := collect(db.r.QueryContext(ctx, q, origin, kind, toMS(from), toMS(to)))
	if err != nil {
		return nil, fmt.Errorf("read %s of %s in range: %w", kind, origin, err)
	}
	return recs, nil
}

// Origins returns every origin this replica has held records of, sorted.
func (db *DB) Origins(ctx context.Context) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT origin FROM cursors ORDER BY origin`)
	if err != nil {
		return nil, fmt.Errorf("read origins: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, fmt.Errorf("read origins: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// latestByKind finds, per origin, the row of kind with the highest time
// through one seek of records_origin_kind_time each, never a scan.
const latestByKind = `SELECT ` + recordCols + ` FROM records
	WHERE rowid IN (
		SELECT (SELECT r.rowid FROM records AS r INDEXED BY records_origin_kind_time
			WHERE r.origin = c.origin AND r.kind = ?1
			ORDER BY r.time_ms DESC LIMIT 1)
		FROM cursors AS c)
	ORDER BY origin`

// LatestByKind returns the newest record (by time) of kind from every origin
// that has one, sorted by origin: for example the latest sample of every
// node.
func (db *DB) LatestByKind(ctx context.Context, kind string) ([]Record, error) {
	recs, err := collect(db.r.QueryContext(ctx, latestByKind, kind))
	if err != nil {
		return nil, fmt.Errorf("read latest %s records: %w", kind, err)
	}
	return recs, nil
}
