package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// pruneKind deletes old records of a kind, origin by origin, through
// records_origin_kind_time rather than a scan of the table.
const pruneKind = `DELETE FROM records
	WHERE origin IN (SELECT origin FROM cursors) AND kind = ? AND time_ms < ?`

// Prune deletes the records of kind, from every origin, whose time is before
// before, and returns how many it deleted. Cursors stay where they are, so
// seqs never go backwards and followers do not fetch the records again.
func (db *DB) Prune(ctx context.Context, kind string, before time.Time) (int64, error) {
	var n int64
	err := db.write(ctx, classUpkeep, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, pruneKind, kind, toMS(before))
		if err != nil {
			return false, err
		}
		db.quota.inexact() // db.wmu is held
		n, err = res.RowsAffected()
		return false, err
	})
	if err != nil {
		return 0, fmt.Errorf("prune %s records before %s: %w", kind, before.UTC().Format(time.RFC3339), err)
	}
	return n, nil
}
