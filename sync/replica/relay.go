package replica

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// Members learn each other's addresses through the pool: each machine
// publishes its addresses in its own node record, and every member relays
// the addresses of the members it follows on its stream (Frame.Addrs). A
// member that joined through A thus learns where B is from A, also where
// mDNS cannot carry a word. A relayed address is a hint like any other:
// only a handshake that proves the member's device ID pins it.

// maxAddrLen bounds one relayed address ("[v6%zone]:port").
const maxAddrLen = 64

// Publish records the addresses member id published in its node record:
// they are hinted to its follower and relayed to the other members.
func (p *Peers) Publish(id string, addrs []string) {
	addrs = checkAddrs(addrs)
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Equal(p.published[id], addrs) {
		return
	}
	if p.published == nil {
		p.published = map[string][]string{}
	}
	p.published[id] = addrs
	p.relayGen++
	if f := p.peers[id]; f != nil {
		f.book.hint(addrs)
		p.wakeWaiters()
	}
}

// Relay returns the addresses the members this node follows published,
// and a fingerprint that changes with them: what this node's stream relays
// (Server.Addrs).
func (p *Peers) Relay() (map[string][]string, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]string, len(p.published))
	for id, addrs := range p.published {
		if f := p.peers[id]; f != nil && f.cancel != nil && len(addrs) > 0 {
			out[id] = addrs
		}
	}
	return out, p.relayGen<<16 ^ uint64(len(out))
}

// learnRecords takes the addresses from the node record among recs (the
// origin's own, checked by apply).
func (p *Peers) learnRecords(origin string, recs []store.Record) {
	if p.Published == nil {
		return
	}
	for _, r := range recs {
		if r.Kind == schema.KindNode && r.Key == "" {
			p.Publish(origin, p.Published(r.Data))
		}
	}
}

// learnRelayed hints the addresses a member relayed about the others.
func (p *Peers) learnRelayed(from string, relayed map[string][]string) {
	for _, id := range slices.Sorted(maps.Keys(relayed)) {
		if id == from || id == p.self.String() {
			continue
		}
		if addrs := checkAddrs(relayed[id]); len(addrs) > 0 {
			p.Hint(id, addrs...)
		}
	}
}

// checkAddrs keeps the well-formed IP:port addresses of addrs, at most
// maxAddrs of them (network input).
func checkAddrs(addrs []string) []string {
	var out []string
	for _, a := range addrs {
		if len(out) == maxAddrs {
			break
		}
		if len(a) > maxAddrLen {
			continue
		}
		if ap, err := netip.ParseAddrPort(a); err == nil && ap.Port() != 0 && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
