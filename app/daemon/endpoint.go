package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
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
	p.Published = publishedAddrs
	return &replicaPart{Peers: p, db: db, self: self.String()}
}

// Run hints the members' last known addresses, then follows them until
// ctx is cancelled.
func (r *replicaPart) Run(ctx context.Context) error {
	r.hintKnownAddresses(ctx)
	return r.Peers.Run(ctx)
}

func (r *replicaPart) hintKnownAddresses(ctx context.Context) {
	ms, err := r.db.Members(ctx)
	if err != nil {
		return
	}
	for _, m := range ms {
		rec, ok, err := r.db.Latest(ctx, m.ID, app.KindNode, "")
		if err != nil || !ok || m.ID == r.self {
			continue
		}
		addrs := publishedAddrs(rec.Data)
		r.Hint(m.ID, addrs...)
		r.Publish(m.ID, addrs) // relayed to the others at once
	}
}

// publishedAddrs returns the addresses a node record says its node may be
// reached at (replica.Peers.Published).
func publishedAddrs(data []byte) []string {
	var nr app.NodeRecord
	if json.Unmarshal(data, &nr) != nil {
		return nil
	}
	return nr.Addresses
}

// nodeDialer implements app.NodeCaller and copies.Dialer: a client pinned
// to a node, over the pool's transport; this machine is reached through
// its own endpoint.
type nodeDialer struct {
	self  peer.ID
	ep    *transport.Endpoint
	peers *replica.Peers
}

// NodeClient implements app.NodeCaller.
func (n *nodeDialer) NodeClient(ctx context.Context, id string) (*http.Client, error) {
	return n.client(ctx, id, n.ep.Client)
}

// NodeDataClient is NodeClient for bulk bytes: it rides the TCP data path
// (see transport.Endpoint.DataClient), so copies neither crawl through
// QUIC nor hold up control and telemetry.
func (n *nodeDialer) NodeDataClient(id string) (*http.Client, error) {
	return n.client(context.Background(), id, n.ep.DataClient)
}

// addrWait bounds how long a call waits to learn where a member is (right
// after a join, the member it joined through is hinted at once; the others
// are learnt from its stream within a second or so).
const addrWait = 5 * time.Second

func (n *nodeDialer) client(ctx context.Context, id string, client func(peer.ID, []string) *http.Client) (*http.Client, error) {
	pid, err := peer.ParseID(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	if pid == n.self {
		return client(pid, []string{n.selfAddr()}), nil
	}
	wctx, cancel := context.WithTimeout(ctx, addrWait)
	defer cancel()
	addrs := n.peers.WaitAddrs(wctx, id)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no address known for %s: is it on the network?", pid.Short())
	}
	return client(pid, addrs), nil
}

// selfAddr is where this daemon reaches its own endpoint.
func (n *nodeDialer) selfAddr() string {
	a := n.ep.Addr()
	ip := a.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(a.Port))
}
