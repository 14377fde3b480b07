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
//
// While history is paused by a full disk (HistoryPaused), Put skips the
// history records in recs and keeps the cursor of their origin below the
// first one skipped, so that they are fetched again once history resumes.
func (db *DB) Put(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	for i := range recs {
		if err := recs[i].check(); err != nil {
			return fmt.Errorf("put records: %w", err)
		}
	}
	err := db.write(ctx, classReplica, func(tx *sql.Tx) (bool, error) {
		return db.putTx(ctx, tx, recs, db.paused.Load())
	})
	if err != nil {
		return fmt.Errorf("put %d records: %w", len(recs), err)
	}
	return nil
}

// putTx writes recs, or only their control records when skipHistory is
// set, and raises the cursor of each origin to the highest seq written
// below the first record skipped. It reports whether a record was written.
func (db *DB) putTx(ctx context.Context, tx *sql.Tx, recs []Record, skipHistory bool) (bool, error) {
	stmt := tx.StmtContext(ctx, db.wstmts.upsert)
	defer stmt.Close()
	advance := tx.StmtContext(ctx, db.wstmts.advance)
	defer advance.Close()
	top := make(map[string]uint64)     // highest seq per origin
	skipped := make(map[string]uint64) // lowest seq skipped per origin
	var n int64
	for _, r := range recs {
		top[r.Origin] = max(top[r.Origin], r.Seq)
		if skipHistory && IsHistoryKind(r.Kind) {
			if s, ok := skipped[r.Origin]; !ok || r.Seq < s {
				skipped[r.Origin] = r.Seq
			}
			continue
		}
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
	if len(skipped) > 0 && db.skipFloor == nil {
		db.skipFloor = map[string]uint64{}
	}
	for origin, s := range skipped {
		if f, ok := db.skipFloor[origin]; !ok || s < f {
			db.skipFloor[origin] = s
		}
	}
	for origin, seq := range top {
		// Below the first record skipped since history paused, in this
		// frame or an earlier one (db.wmu is held).
		if s, ok := db.skipFloor[origin]; ok {
			seq = min(seq, s-1) // 0 still records the origin, for Prune
		}
		if _, err := advance.ExecContext(ctx, origin, int64(seq)); err != nil {
			return false, fmt.Errorf("advance cursor of %s: %w", origin, err)
		}
	}
	return n > 0, nil
}
