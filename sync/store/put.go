package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/labpool/labpool/sync/schema"
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

// Put is Receive, for a caller that has no use for the records refused.
func (db *DB) Put(ctx context.Context, recs []Record) error {
	_, err := db.Receive(ctx, recs)
	return err
}

// Receive stores records replicated from other origins, all in one
// transaction. It is idempotent and safe out of order: a record older than
// (or as old as) the version held for its (origin, kind, key) is skipped.
// The cursor of each origin rises to the highest seq in recs. It fails,
// storing nothing, when a record is invalid (ErrInvalidRecord).
//
// It refuses, and returns, each record the schema does not allow (an
// unknown kind, over its kind's caps, control characters in its text) or
// that would take its origin past its quotas (Options.OriginQuota and
// ControlQuota) or its kind's count cap; the others are stored, and the
// cursor passes the refused ones, so they are not asked for again.
//
// While history is paused by a full disk (HistoryPaused), Receive skips the
// history records in recs and keeps the cursor of their origin below the
// first one skipped, so that they are fetched again once history resumes.
func (db *DB) Receive(ctx context.Context, recs []Record) ([]Refused, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	for i := range recs {
		if err := recs[i].check(); err != nil {
			return nil, fmt.Errorf("put records: %w", err)
		}
	}
	var refused []Refused
	err := db.write(ctx, classReplica, func(tx *sql.Tx) (bool, error) {
		refused = refused[:0]
		return db.putTx(ctx, tx, recs, db.paused.Load(), &refused)
	})
	if err != nil {
		db.wmu.Lock()
		db.quota.inexact() // it counted records it did not store
		db.wmu.Unlock()
		return nil, fmt.Errorf("put %d records: %w", len(recs), err)
	}
	return refused, nil
}

// putTx writes recs, or only their control records when skipHistory is
// set, and raises the cursor of each origin to the highest seq written
// below the first record skipped. It appends the records it refuses to
// refused, and reports whether a record was written.
func (db *DB) putTx(ctx context.Context, tx *sql.Tx, recs []Record, skipHistory bool, refused *[]Refused) (bool, error) {
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
		a, err := db.admit(ctx, tx, &r)
		if err != nil {
			if _, ok := err.(*schema.Refusal); !ok {
				return false, err
			}
			*refused = append(*refused, Refused{Origin: r.Origin, Kind: r.Kind, Key: r.Key, Seq: r.Seq, Err: err})
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
		if k > 0 {
			a.stored(r.Kind)
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
