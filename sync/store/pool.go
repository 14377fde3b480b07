package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
)

// PoolRecord is one signed change to the pool's membership, kept as the
// bytes it was signed and sent as (sync/pool reads and checks it).
type PoolRecord struct {
	Hash    string // hex SHA-256 of the record: its identity
	Version uint64 // its clock, for ordering
	Data    []byte
}

// PoolRecords returns every membership record held, in version order.
func (db *DB) PoolRecords(ctx context.Context) ([]PoolRecord, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT hash, version, data FROM pool_records ORDER BY version, hash`)
	if err != nil {
		return nil, fmt.Errorf("read pool records: %w", err)
	}
	defer rows.Close()
	var out []PoolRecord
	for rows.Next() {
		var (
			r PoolRecord
			v int64
		)
		if err := rows.Scan(&r.Hash, &v, &r.Data); err != nil {
			return nil, fmt.Errorf("read pool records: %w", err)
		}
		r.Version = uint64(v)
		out = append(out, r)
	}
	return out, rows.Err()
}

// SavePool replaces the membership records with recs and the member table
// with members, in one transaction: the table always says what the records
// say.
func (db *DB) SavePool(ctx context.Context, recs []PoolRecord, members []MemberRow) error {
	err := db.write(ctx, classControl, func(tx *sql.Tx) (bool, error) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM pool_records`); err != nil {
			return false, err
		}
		for _, r := range recs {
			if r.Hash == "" || r.Version > math.MaxInt64 {
				return false, fmt.Errorf("pool record %q: invalid hash or version %d", r.Hash, r.Version)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO pool_records (hash, version, data) VALUES (?, ?, ?)
				ON CONFLICT (hash) DO NOTHING`, r.Hash, int64(r.Version), r.Data); err != nil {
				return false, err
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM members`); err != nil {
			return false, err
		}
		for _, m := range members {
			if _, err := tx.ExecContext(ctx, upsertMember, m.ID, m.Name, int64(min(m.Version, math.MaxInt64)),
				m.Removed, toMS(m.AddedAt), m.AddedBy, m.Role, m.Person, m.PersonName); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("save pool: %w", err)
	}
	db.membersChanged()
	return nil
}

// ClearPool forgets the pool: its records and its members.
func (db *DB) ClearPool(ctx context.Context) error {
	err := db.write(ctx, classControl, func(tx *sql.Tx) (bool, error) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM pool_records`); err != nil {
			return false, err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM members`)
		return true, err
	})
	if err != nil {
		return fmt.Errorf("clear pool: %w", err)
	}
	db.membersChanged()
	return nil
}

// ForgetOthers deletes the records and cursors of every origin but keep
// (this device's own): what it held of the machines of a pool it is no
// longer in. It returns how many records it deleted. This device's own
// records (its history, its jobs) stay.
func (db *DB) ForgetOthers(ctx context.Context, keep string) (int64, error) {
	var n int64
	err := db.write(ctx, classControl, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, `DELETE FROM records WHERE origin <> ?`, keep)
		if err != nil {
			return false, err
		}
		if n, err = res.RowsAffected(); err != nil {
			return false, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM cursors WHERE origin <> ?`, keep); err != nil {
			return false, err
		}
		for o := range db.quota.held { // guarded by wmu, which write holds
			if o != keep {
				delete(db.quota.held, o)
			}
		}
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("forget the records of other machines: %w", err)
	}
	return n, nil
}
