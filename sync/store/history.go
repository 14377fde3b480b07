package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Queries of the history tiers (app/history): the newest record of one
// origin's kind, and a range read without building Records.

// Newest returns origin's record of kind with the highest time, and false
// when there is none.
func (db *DB) Newest(ctx context.Context, origin, kind string) (Record, bool, error) {
	const q = `SELECT ` + recordCols + ` FROM records INDEXED BY records_origin_kind_time
		WHERE origin = ? AND kind = ? ORDER BY time_ms DESC LIMIT 1`
	r, err := scanRecord(db.r.QueryRowContext(ctx, q, origin, kind))
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("read newest %s of %s: %w", kind, origin, err)
	}
	return r, true, nil
}

// Each calls fn with the time and data of every record of kind from origin
// whose time is in [from, to), oldest first; data is valid only during the
// call. It stops at fn's first error and returns it.
func (db *DB) Each(ctx context.Context, origin, kind string, from, to time.Time, fn func(t time.Time, data []byte) error) error {
	const q = `SELECT time_ms, data FROM records INDEXED BY records_origin_kind_time
		WHERE origin = ? AND kind = ? AND time_ms >= ? AND time_ms < ? ORDER BY time_ms`
	rows, err := db.r.QueryContext(ctx, q, origin, kind, toMS(from), toMS(to))
	if err != nil {
		return fmt.Errorf("read %s of %s in range: %w", kind, origin, err)
	}
	defer rows.Close()
	var (
		ms   int64
		data sql.RawBytes
	)
	for rows.Next() {
		if err := rows.Scan(&ms, &data); err != nil {
			return fmt.Errorf("read %s of %s in range: %w", kind, origin, err)
		}
		if err := fn(fromMS(ms), data); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s of %s in range: %w", kind, origin, err)
	}
	return nil
}
