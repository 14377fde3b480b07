package app

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"errors"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/sync/store"
)

// Reader answers the read calls from the local replica alone: what the CLI
// shows when no daemon runs, and the reads of a Service. Without a daemon
// no member is live, and the replica may be stale.
type Reader struct {
	db      *store.DB
	self    Self
	live    Liveness
	now     func() time.Time
	history *history.Store
	owners  ownerChecks // job records' owner proofs checked (jobowner.go)
	// reservations gives the reservation grants the report counts held
	// but unused (report_reserve.go); nil: none.
	reservations ReservationSource
}

// NewReader returns a reader of the replica in db, seen from self, with no
// member online. See LoadSelf.
func NewReader(db *store.DB, self Self) *Reader {
	return &Reader{db: db, self: self, live: offline{}, now: time.Now, history: history.NewStore(db)}
}

// offline is the Liveness of a replica read without a daemon.
type offline struct{}

func (offline) Online(string) bool { return false }

// Settings that let the replica be read without a daemon.
const (
	SettingSelfID   = schema.SettingSelfID
	SettingSelfName = schema.SettingSelfName
)

// LoadSelf reads this machine's identity as the daemon last recorded it.
func LoadSelf(ctx context.Context, db *store.DB) (Self, error) {
	id, ok, err := db.Setting(ctx, SettingSelfID)
	if err != nil {
		return Self{}, err
	}
	if !ok {
		return Self{}, errors.New("the replica has no identity yet: start `labpool agent` once")
	}
	name, _, err := db.Setting(ctx, SettingSelfName)
	if err != nil {
		return Self{}, err
	}
	return Self{ID: id, ShortID: shortID(id), Name: name, APIVersion: APIVersion}, nil
}
