package daemon

import (
	"context"
	"log/slog"

	"github.com/labpool/labpool/discovery"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// openPool loads the pool manager: it dials through ep, joins through the
// candidates discovery heard, announces the pool it enters, hints the
// member it joined through to the followers, and tells removed of each
// device removed.
func openPool(ctx context.Context, id *peer.Identity, name string, db *store.DB, ep *transport.Endpoint,
	disc *discovery.Presence, peers *replica.Peers, removed func(peer.ID), log *slog.Logger) (*pool.Manager, error) {
	return pool.NewManager(ctx, pool.ManagerConfig{
		Identity:   id,
		Name:       func() string { return name },
		DB:         db,
		Dial:       ep.DialAny,
		Candidates: disc.PoolCandidates,
		Entered:    disc.SetPool,
		Hint:       func(id, addr string) { peers.Hint(id, addr) },
		Removed:    removed,
		Log:        log,
	})
}
