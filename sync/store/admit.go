package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/labpool/labpool/sync/schema"
)

// Refused is a record Receive did not keep, and the rule it broke.
type Refused struct {
	Origin, Kind, Key string
	Seq               uint64
	Err               error // a *schema.Refusal
}

// heldByKind counts and sizes (keys and data) the records held of an
// origin, kind by kind, through the primary key.
const heldByKind = `SELECT kind, COUNT(*), COALESCE(SUM(length(key) + length(data)), 0)
	FROM records WHERE origin = ? GROUP BY kind`

// heldActiveJobs sizes the job records of an origin in an active state
// (schema.ActiveJobStates), through records_job_state.
var heldActiveJobs = `SELECT COALESCE(SUM(length(key) + length(data)), 0) FROM records INDEXED BY records_job_state
	WHERE kind = '` + schema.KindJob + `' AND ` + jobState + ` IN (` + placeholders(len(schema.ActiveJobStates)) + `) AND origin = ?`

// heldRecord is the size of the version held of one record, and its job
// state (NULL but for a job record that names one).
const heldRecord = `SELECT length(key) + length(data), ` + jobState + ` FROM records WHERE origin = ? AND kind = ? AND key = ?`

// stateOf reads the job state of data as the index reads it: the same
// expression, so that what counts as control is what `ps` lists.
const stateOf = `SELECT ` + jobStateOfParam

// quota keeps, per origin, what the replica holds of it: its bytes, the
// bytes of its control records and its records of each kind. Each figure
// is an estimate never below the truth: the sums read once, plus every
// record stored since (a record that replaces another counts whole). Only
// when an estimate passes its cap is the truth read again; it stays exact
// while what is stored is counted exactly. Guarded by db.wmu.
type quota struct {
	limit, control int64 // OriginQuota and ControlQuota
	held           map[string]*holding
}

// holding is what the replica holds of one origin.
type holding struct {
	bytes, control int64
	count          map[string]int64 // by kind
	exact          bool             // the figures are the truth
}

// admitted is how storing an admitted record changes its origin's holding.
type admitted struct {
	h                    *holding
	bytes, control, recs int64 // what the record adds: bytes, control bytes, and records of its kind
	exact                bool  // known exactly: the version it replaces was read
}

// admit refuses r when the schema does not allow it (its kind, its caps,
// its text) or when it would take its origin past a quota or its kind's
// count cap; tx is the write's transaction.
func (db *DB) admit(ctx context.Context, tx *sql.Tx, r *Record) (admitted, error) {
	if err := schema.Check(r.Kind, r.Key, len(r.Data)); err != nil {
		return admitted{}, err
	}
	if err := schema.CheckText(r.Kind, r.Key, r.Data); err != nil {
		return admitted{}, err
	}
	k, _ := schema.Lookup(r.Kind)
	q := &db.quota
	size := int64(len(r.Key) + len(r.Data))
	control, err := db.isControl(ctx, tx, r)
	if err != nil {
		return admitted{}, err
	}
	var csize int64 // what the record adds to the control bytes
	if control {
		csize = size
	}
	h := q.held[r.Origin]
	if h != nil && h.bytes+size <= q.limit && h.control+csize <= q.control && h.count[r.Kind] < int64(k.MaxRecords) {
		return admitted{h: h, bytes: size, control: csize, recs: 1}, nil
	}
	if h == nil || !h.exact {
		var err error
		if h, err = readHolding(ctx, tx, r.Origin); err != nil {
			return admitted{}, err
		}
		if q.held == nil {
			q.held = map[string]*holding{}
		}
		q.held[r.Origin] = h
	}
	var old, oldControl, replaced int64 // a record replaced frees its bytes and its place
	var oldState sql.NullString
	err = tx.QueryRowContext(ctx, heldRecord, r.Origin, r.Kind, r.Key).Scan(&old, &oldState)
	switch {
	case err == nil:
		replaced = 1
		if schema.IsControl(r.Kind, oldState.String) {
			oldControl = old
		}
	case !errors.Is(err, sql.ErrNoRows):
		return admitted{}, fmt.Errorf("read the bytes held of %s: %w", r.Origin, err)
	}
	if err := schema.Quota(r.Origin, h.bytes-old, size, q.limit); err != nil {
		return admitted{}, err
	}
	if control {
		if err := schema.Control(r.Origin, h.control-oldControl, size, q.control); err != nil {
			return admitted{}, err
		}
	}
	if replaced == 0 { // a new version of a record held takes no new place
		if err := schema.Count(r.Origin, r.Kind, h.count[r.Kind]); err != nil {
			return admitted{}, err
		}
	}
	return admitted{h: h, bytes: size - old, control: csize - oldControl, recs: 1 - replaced, exact: true}, nil
}

// isControl reports whether r counts against the control quota: a job
// record's state is read as records_job_state reads it (a record whose
// data SQLite reads differently from Go's JSON cannot be listed by `ps`
// while counted as history).
func (db *DB) isControl(ctx context.Context, tx *sql.Tx, r *Record) (bool, error) {
	if r.Kind != schema.KindJob {
		return schema.IsControl(r.Kind, ""), nil
	}
	var state sql.NullString
	if err := tx.QueryRowContext(ctx, stateOf, r.Data, r.Data).Scan(&state); err != nil {
		return false, fmt.Errorf("read the state of job record %.64q of %s: %w", r.Key, r.Origin, err)
	}
	return schema.IsControl(r.Kind, state.String), nil
}

// readHolding reads what the replica holds of origin.
func readHolding(ctx context.Context, tx *sql.Tx, origin string) (*holding, error) {
	rows, err := tx.QueryContext(ctx, heldByKind, origin)
	if err != nil {
		return nil, fmt.Errorf("read the records held of %s: %w", origin, err)
	}
	defer rows.Close()
	h := &holding{count: map[string]int64{}, exact: true}
	for rows.Next() {
		var (
			kind     string
			n, bytes int64
		)
		if err := rows.Scan(&kind, &n, &bytes); err != nil {
			return nil, fmt.Errorf("read the records held of %s: %w", origin, err)
		}
		h.count[kind] = n
		h.bytes += bytes
		if kind != schema.KindJob && schema.IsControl(kind, "") {
			h.control += bytes
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the records held of %s: %w", origin, err)
	}
	args := make([]any, 0, len(schema.ActiveJobStates)+1)
	for _, st := range schema.ActiveJobStates {
		args = append(args, st)
	}
	var jobs int64
	if err := tx.QueryRowContext(ctx, heldActiveJobs, append(args, origin)...).Scan(&jobs); err != nil {
		return nil, fmt.Errorf("read the active job records held of %s: %w", origin, err)
	}
	h.control += jobs
	return h, nil
}

// stored counts an admitted record of kind once written.
func (a admitted) stored(kind string) {
	h := a.h
	h.bytes += a.bytes
	h.control += a.control
	h.count[kind] += a.recs
	h.exact = h.exact && a.exact
}

// inexact marks every origin's figures as estimates: after records were
// deleted, or a write that counted its records failed. db.wmu is held.
func (q *quota) inexact() {
	for _, h := range q.held {
		h.exact = false
	}
}
