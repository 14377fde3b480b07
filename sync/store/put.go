package store

import (
	"context"
	"database/sql"
	"fmt"
)

// upsertRecord stores a replicated record unless we hold the same or a newer
// version of it.
const upsertRecord = `INSERT INTO records (` + recordCols + `) VALUES (?, ?, ?, ?, ?, ?)
	ON CONFLICT (origin, kind, key) DO UPDATE
	SET seq = excluded.seq, time_ms = excluded.time_ms, data = excluded.data
	WHERE excluded.seq > records.seq`

// advanceCursor raises the cursor of an origin; it never lowers it.
const advanceCursor = `INSERT INTO cursors (origin, seq) VALUES (?, ?)
	ON CONFLICT (origin) DO UPDATE SET seq = MAX(seq, excluded.seq)`

// Put stores records replicated from other origins, all in one transaction.
// It is idempotent and safe out of order: a record older than (or as old as)
// the version held for its (origin, kind, key) is skipped. The cursor of
// each origin rises to the highest seq in recs. It fails, storing nothing,
// when a record is invalid (ErrInvalidRecord).
func (db *DB) Put(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	top := make(map[string]uint64) // highest seq per origin
	for i := range recs {
		if err := recs[i].check(); err != nil {
			return fmt.Errorf("put records: %w", err)
		}
		top[recs[i].Origin] = max(top[recs[i].Origin], recs[i].Seq)
	}
	err := db.write(ctx, func(tx *sql.Tx) (bool, error) {
		return putTx(ctx, tx, recs, top)
	})
	if err != nil {
		return fmt.Errorf("put %d records: %w", len(recs), err)
	}
	return nil
}

// putTx writes recs and raises the cursors to top. It reports whether a
// record was written.
func putTx(ctx context.Context, tx *sql.Tx, recs []Record, top map[string]uint64) (bool, error) {
	stmt, err := tx.PrepareContext(ctx, upsertRecord)
	if err != nil {
		return false, err
	}
	defer stmt.Close()
	var n int64
	for _, r := range recs {
		res, err := stmt.ExecContext(ctx, r.Origin, r.Kind, r.Key, int64(r.Seq), toMS(r.Time), dataArg(r.Data))
		if err != nil {
			return false, fmt.Errorf("write %s/%s of %s: %w", r.Kind, r.Key, r.Origin, err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return false, err
		}
		n += k
	}
	for origin, seq := range top {
		if _, err := tx.ExecContext(ctx, advanceCursor, origin, int64(seq)); err != nil {
			return false, fmt.Errorf("advance cursor of %s: %w", origin, err)
		}
	}
	return n > 0, nil
}
