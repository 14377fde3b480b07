package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidRecord means a record breaks the rules of the log: no origin or
// kind, a seq of 0 or over math.MaxInt64, or data that is not JSON.
var ErrInvalidRecord = errors.New("invalid record")

// Record is one entry of the replicated log.
type Record struct {
	Origin string          `json:"o"`   // device ID of the writer
	Seq    uint64          `json:"s"`   // the writer's sequence number: > 0, strictly increasing
	Kind   string          `json:"k"`   // e.g. "node", "sample.1s"
	Key    string          `json:"key"` // unique within (Origin, Kind); "" for singletons
	Time   time.Time       `json:"t"`   // the record's time, millisecond precision, UTC
	Data   json.RawMessage `json:"d"`   // opaque JSON payload; nil when empty
}

// recordCols lists the columns scanRecord reads, in order.
const recordCols = `origin, kind, key, seq, time_ms, data`

// check reports whether r can be stored.
func (r *Record) check() error {
	switch {
	case r.Origin == "":
		return fmt.Errorf("%w: no origin", ErrInvalidRecord)
	case r.Kind == "":
		return fmt.Errorf("%w: no kind", ErrInvalidRecord)
	case r.Seq == 0 || r.Seq > math.MaxInt64:
		return fmt.Errorf("%w: seq %d out of range", ErrInvalidRecord, r.Seq)
	case len(r.Data) > 0 && !json.Valid(r.Data):
		return fmt.Errorf("%w: data of %s/%s is not JSON", ErrInvalidRecord, r.Kind, r.Key)
	}
	return nil
}

// checkEntry checks what Append can: everything but the seq it assigns.
func checkEntry(origin, kind string, data []byte) error {
	r := Record{Origin: origin, Kind: kind, Seq: 1, Data: data}
	return r.check()
}

// toMS converts t to the stored Unix milliseconds.
func toMS(t time.Time) int64 { return t.UnixMilli() }

// fromMS converts stored Unix milliseconds to a UTC time.
func fromMS(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanRecord reads the recordCols of one row.
func scanRecord(s scanner) (Record, error) {
	var (
		r    Record
		seq  int64
		ms   int64
		data []byte
	)
	if err := s.Scan(&r.Origin, &r.Kind, &r.Key, &seq, &ms, &data); err != nil {
		return Record{}, err
	}
	r.Seq = uint64(seq)
	r.Time = fromMS(ms)
	if len(data) > 0 {
		r.Data = data
	}
	return r, nil
}

// collect reads every row of rows as a record.
func collect(rows *sql.Rows, err error) ([]Record, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, rows.Err()
}
