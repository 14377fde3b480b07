package app

import (
	"context"
	"time"

	"github.com/labpool/labpool/sync/store"
)

// latestRecord writes one record of its origin (key "") whenever the
// record's bytes change: how the node, grants and lend publishers keep a
// machine's record current without writing the same record again.
type latestRecord struct {
	db           *store.DB
	origin, kind string
	last         []byte // the data last written
}

// write appends data at now unless it is what was written last; it
// reports whether it wrote. A failed write is tried again at the next.
func (r *latestRecord) write(ctx context.Context, now time.Time, data []byte) (bool, error) {
	if r.last != nil && string(data) == string(r.last) {
		return false, nil
	}
	if _, err := r.db.Append(ctx, r.origin, r.kind, "", now, data); err != nil {
		return false, err
	}
	r.last = data
	return true, nil
}

// unchanged reports whether data is what was written last.
func (r *latestRecord) unchanged(data []byte) bool {
	return r.last != nil && string(data) == string(r.last)
}
