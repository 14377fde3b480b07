package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/labpool/labpool/sync/schema"
)

// nextSeq takes the next seq of origin from its cursor.
const nextSeq = `INSERT INTO cursors (origin, seq) VALUES (?, 1)
	ON CONFLICT (origin) DO UPDATE SET seq = seq + 1
	RETURNING seq`

// replaceRecord writes our own record, replacing any older version.
const replaceRecord = `INSERT INTO records (` + recordCols + `) VALUES (?, ?, ?, ?, ?, ?)
	ON CONFLICT (origin, kind, key) DO UPDATE
	SET seq = excluded.seq, time_ms = excluded.time_ms, data = excluded.data`

// Append writes one of our own records (origin is this device) and assigns
// it the next seq of origin. A record with the same (origin, kind, key) is
// replaced. t is stored to the millisecond; data must be JSON or empty. A
// record the schema refuses is refused here too, before any follower
// would (schema.ErrRefused): of a kind it does not know, over its kind's
// caps, with control characters in its text, or past origin's quotas or
// its kind's count cap.
func (db *DB) Append(ctx context.Context, origin, kind, key string, t time.Time, data []byte) (Record, error) {
	recs, err := db.AppendBatch(ctx, origin, []Record{{Kind: kind, Key: key, Time: t, Data: data}})
	if err != nil {
		return Record{}, err
	}
	return recs[0], nil
}

// AppendBatch writes many of our own records in one transaction, in order,
// and returns them with their seqs. The Origin of each must be empty or
// origin, and its Seq is ignored.
func (db *DB) AppendBatch(ctx context.Context, origin string, recs []Record) ([]Record, error) {
	out := make([]Record, len(recs))
	for i, r := range recs {
		if r.Origin != "" && r.Origin != origin {
			return nil, fmt.Errorf("append %s/%s: %w: origin %q, want %q", r.Kind, r.Key, ErrInvalidRecord, r.Origin, origin)
		}
		if err := checkEntry(origin, r.Kind, r.Data); err != nil {
			return nil, fmt.Errorf("append %s/%s: %w", r.Kind, r.Key, err)
		}
		if err := schema.Check(r.Kind, r.Key, len(r.Data)); err != nil {
			return nil, fmt.Errorf("append a record: %w", err)
		}
		if err := schema.CheckText(r.Kind, r.Key, r.Data); err != nil {
			return nil, fmt.Errorf("append a record: %w", err)
		}
		out[i] = Record{Origin: origin, Kind: r.Kind, Key: r.Key, Time: fromMS(toMS(r.Time)), Data: slices.Clone(r.Data)}
	}
	err := db.write(ctx, classOf(out), func(tx *sql.Tx) (bool, error) {
		if len(out) == 0 {
			return false, nil
		}
		if err := db.appendTx(ctx, tx, out); err != nil {
			return false, err
		}
		// Before subscribers are told (db.wmu orders the stores).
		db.appended.Store(origin, out[len(out)-1].Seq)
		return true, nil
	})
	if err != nil {
		db.wmu.Lock()
		db.quota.inexact() // it counted records it did not store
		db.wmu.Unlock()
		return nil, fmt.Errorf("append records of %s: %w", origin, err)
	}
	return out, nil
}

// appendTx assigns seqs to recs and writes them.
func (db *DB) appendTx(ctx context.Context, tx *sql.Tx, recs []Record) error {
	seqStmt := tx.StmtContext(ctx, db.wstmts.nextSeq)
	defer seqStmt.Close()
	putStmt := tx.StmtContext(ctx, db.wstmts.replace)
	defer putStmt.Close()
	for i := range recs {
		r := &recs[i]
		var seq int64
		if err := seqStmt.QueryRowContext(ctx, r.Origin).Scan(&seq); err != nil {
			return fmt.Errorf("next seq: %w", err)
		}
		a, err := db.admit(ctx, tx, r)
		if err != nil {
			return fmt.Errorf("append a record: %w", err)
		}
		r.Seq = uint64(seq)
		if _, err := putStmt.ExecContext(ctx, r.Origin, r.Kind, r.Key, seq, toMS(r.Time), dataArg(r.Data)); err != nil {
			return fmt.Errorf("write %s/%s: %w", r.Kind, r.Key, err)
		}
		a.stored(r.Kind)
	}
	return nil
}

// dataArg is the data column's value: never NULL.
func dataArg(d []byte) []byte {
	if d == nil {
		return []byte{}
	}
	return d
}
