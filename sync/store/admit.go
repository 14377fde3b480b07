package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/labpool/labpool/sync/schema"
)

// Refused is a record Receive did not keep, and the rule it broke.
type Refused struct {
	Origin, Kind, Key string
	Seq               uint64
	Err               error // a *schema.Refusal
}

// heldBytes sums the keys and data held of an origin.
const heldBytes = `SELECT COALESCE(SUM(length(key) + length(data)), 0) FROM records WHERE origin = ?`

// heldRecord is the size of the version held of one record.
const heldRecord = `SELECT length(key) + length(data) FROM records WHERE origin = ? AND kind = ? AND key = ?`

// quota keeps, per origin, an estimate of the bytes held of it that is
// never below the truth: the sum read once, plus every record stored since
// (a record that replaces another counts whole). Only when the estimate
// passes the quota is the true sum read again. Guarded by db.wmu.
type quota struct {
	limit int64
	held  map[string]int64
}

// admit refuses r when the schema does not allow it or its origin would
// pass its quota; tx is Receive's transaction.
func (db *DB) admit(ctx context.Context, tx *sql.Tx, r *Record) error {
	if err := schema.Check(r.Kind, r.Key, len(r.Data)); err != nil {
		return err
	}
	q := &db.quota
	size := int64(len(r.Key) + len(r.Data))
	held, ok := q.held[r.Origin]
	if ok && held+size <= q.limit {
		return nil
	}
	if err := tx.QueryRowContext(ctx, heldBytes, r.Origin).Scan(&held); err != nil {
		return fmt.Errorf("read the bytes held of %s: %w", r.Origin, err)
	}
	if q.held == nil {
		q.held = map[string]int64{}
	}
	q.held[r.Origin] = held
	var old int64 // a record replaced frees its bytes
	if err := tx.QueryRowContext(ctx, heldRecord, r.Origin, r.Kind, r.Key).Scan(&old); err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("read the bytes held of %s: %w", r.Origin, err)
	}
	return schema.Quota(r.Origin, held-old, size, q.limit)
}

// stored counts r in its origin's estimate once written.
func (q *quota) stored(r *Record) {
	if _, ok := q.held[r.Origin]; ok {
		q.held[r.Origin] += int64(len(r.Key) + len(r.Data))
	}
}
