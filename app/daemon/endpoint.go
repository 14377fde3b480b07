package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// openEndpoint listens for peers on cfg.Listen; member says who may pass
// its door.
func openEndpoint(id *peer.Identity, cfg Config, member func(peer.ID) bool, log *slog.Logger) (*transport.Endpoint, error) {
	tcfg := transport.DefaultConfig()
	tcfg.Listen = cfg.Listen
	tcfg.QUICOnly = cfg.QUICOnly
	// Keepalives every second, not 0.4 s: the replica streams carry a frame
	// at least every second (records or a heartbeat) and notice a silent
	// peer themselves (replica.Config.Silence); pings between them were the
	// agent's largest cost per member. A ping is due a keepalive after the
	// last packet received: at 1.5 s, never while the frames and their
	// acknowledgements arrive every second on the beat (at 1 s it raced
	// them). The idle timeout leaves room for a lost ping's retransmission
	// on an otherwise quiet connection (quic-go pings at most every half of it).
	tcfg.KeepAlive, tcfg.IdleTimeout = 1500*time.Millisecond, 3*time.Second
	tcfg.Member = member // the others pass through the door (transport/door.go)
	// At the door only the join exchange, and the replica's stream, where a
	// removed device reads that it was removed (tellRemoved); the door
	// answers every other path 403 itself.
	tcfg.Door.Paths = []string{pool.JoinPath, replica.StreamPath}
	ep, err := transport.New(id, tcfg, log)
	if err != nil {
		return nil, fmt.Errorf("listen for peers on %s: %w", cfg.Listen, err)
	}
	return ep, nil
}

// replicaPart is the replica's followers of the pool's members. At start it
// gives them the addresses each member last published, so a restarted
// node reconnects without waiting for mDNS.
type replicaPart struct {
	*replica.Peers
	db   *store.DB
	self string
}

func newReplica(db *store.DB, self peer.ID, ep *transport.Endpoint, log *slog.Logger) *replicaPart {
	p := replica.NewPeers(replica.DefaultConfig(), db, self, ep, log)
	p.Published = app.PublishedAddrs
	return &replicaPart{Peers: p, db: db, self: self.String()}
}

// Run hints the members' last known addresses, then follows them until
// ctx is cancelled.
func (r *replicaPart) Run(ctx context.Context) error {
	r.hintKnownAddresses(ctx)
	return r.Peers.Run(ctx)
}

func (r *replicaPart) hintKnownAddresses(ctx context.Context) {
	known, _ := app.KnownAddresses(ctx, r.db, r.self)
	for id, addrs := range known {
		r.Hint(id, addrs...)
		r.Publish(id, addrs) // relayed to the others at once
	}
}
