package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// NodeDialer implements NodeCaller and copies.Dialer: a client pinned
// to a node, over the pool's transport; this machine is reached through
// its own endpoint.
type NodeDialer struct {
	self  peer.ID
	ep    *transport.Endpoint
	peers AddrWaiter
}

// AddrWaiter waits to learn where a member is (*replica.Peers).
type AddrWaiter interface {
	WaitAddrs(ctx context.Context, id string) []string
}

// NewNodeDialer returns the dialer of self's pool: members are reached
// through ep at the addresses peers learnt.
func NewNodeDialer(self peer.ID, ep *transport.Endpoint, peers AddrWaiter) *NodeDialer {
	return &NodeDialer{self: self, ep: ep, peers: peers}
}

// NodeClient implements NodeCaller.
func (n *NodeDialer) NodeClient(ctx context.Context, id string) (*http.Client, error) {
	return n.client(ctx, id, n.ep.Client)
}

// NodeDataClient is NodeClient for bulk bytes: it rides the TCP data path
// (see transport.Endpoint.DataClient), so copies neither crawl through
// QUIC nor hold up control and telemetry.
func (n *NodeDialer) NodeDataClient(id string) (*http.Client, error) {
	return n.client(context.Background(), id, n.ep.DataClient)
}

// addrWait bounds how long a call waits to learn where a member is (right
// after a join, the member it joined through is hinted at once; the others
// are learnt from its stream within a second or so).
const addrWait = 5 * time.Second

func (n *NodeDialer) client(ctx context.Context, id string, client func(peer.ID, []string) *http.Client) (*http.Client, error) {
	pid, err := peer.ParseID(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
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
func (n *NodeDialer) selfAddr() string {
	a := n.ep.Addr()
	ip := a.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(a.Port))
}
