package replica

import (
	"slices"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// Address hints come from the network (mDNS answers anyone can send), from
// a join, and from members' own node records. None of them is proof: only a
// session whose handshake proved the member's device ID pins an address.
const (
	// maxAddrs bounds the addresses kept for one member, the pinned one
	// included.
	maxAddrs = 8
	// maxPending bounds the hints kept for devices that have no follower
	// (not members, or members the next reconcile has not reached yet).
	maxPending = 256
	// pendingTTL is how long such a hint waits for its follower.
	pendingTTL = 10 * time.Minute
)

// addrBook is where one member may be reached: the address where a session
// with its pinned device ID last succeeded, then unverified hints, newest
// first. A hint never displaces the pinned address; only a session that
// succeeds elsewhere moves it.
type addrBook struct {
	pinned string   // "" until a session succeeded
	hints  []string // unverified, newest first, never pinned
}

// list returns the addresses to dial, pinned first, at most maxAddrs.
func (b *addrBook) list() []string {
	if b.pinned == "" {
		return slices.Clone(b.hints)
	}
	return append([]string{b.pinned}, b.hints...)
}

// hint adds unverified addresses, newest first, dropping the oldest beyond
// the bound.
func (b *addrBook) hint(addrs []string) {
	for _, a := range addrs {
		if a == "" || a == b.pinned {
			continue
		}
		if i := slices.Index(b.hints, a); i >= 0 {
			b.hints = slices.Delete(b.hints, i, i+1)
		}
		b.hints = append([]string{a}, b.hints...)
	}
	room := maxAddrs
	if b.pinned != "" {
		room--
	}
	if len(b.hints) > room {
		b.hints = slices.Clip(b.hints[:room])
	}
}

// pin records that a session with the member succeeded at addr.
func (b *addrBook) pin(addr string) {
	if addr == "" || addr == b.pinned {
		return
	}
	if i := slices.Index(b.hints, addr); i >= 0 {
		b.hints = slices.Delete(b.hints, i, i+1)
	}
	old := b.pinned
	b.pinned = addr
	b.hint([]string{old}) // the old pinned address is worth a try still
}

// pendingHint holds hints for a device without a follower.
type pendingHint struct {
	book addrBook
	at   time.Time // of the last hint
}

// holdHint keeps addrs for id until a follower for id starts (which adopts
// them) or pendingTTL passes; the table keeps maxPending devices, dropping
// the one hinted longest ago. p.mu must be held.
func (p *Peers) holdHint(id string, addrs []string, now time.Time) {
	if p.pending == nil {
		p.pending = map[string]*pendingHint{}
	}
	h := p.pending[id]
	if h == nil {
		if _, err := peer.ParseID(id); err != nil || id == p.self.String() {
			return
		}
		p.prunePending(now)
		h = &pendingHint{}
		p.pending[id] = h
	}
	h.book.hint(addrs)
	h.at = now
}

// prunePending forgets expired hints and, when the table is full, the
// oldest. p.mu must be held.
func (p *Peers) prunePending(now time.Time) {
	var oldest string
	for id, h := range p.pending {
		if now.Sub(h.at) >= pendingTTL {
			delete(p.pending, id)
		} else if oldest == "" || h.at.Before(p.pending[oldest].at) {
			oldest = id
		}
	}
	if len(p.pending) >= maxPending {
		delete(p.pending, oldest)
	}
}

// adoptHints hands f the hints held for id. p.mu must be held.
func (p *Peers) adoptHints(id string, f *follower, now time.Time) {
	h := p.pending[id]
	if h == nil {
		return
	}
	delete(p.pending, id)
	if now.Sub(h.at) < pendingTTL {
		oldestFirst := slices.Clone(h.book.hints)
		slices.Reverse(oldestFirst)
		f.book.hint(oldestFirst)
	}
}

// provenAddrer is a Dialer that knows where its last handshake that proved
// a device's ID was made (transport.Endpoint).
type provenAddrer interface {
	ProvenAddr(id peer.ID) (string, bool)
}

// pinSession pins the address where the session with f's device was just
// made, if the dialer can tell.
func (p *Peers) pinSession(f *follower) {
	pa, ok := p.dial.(provenAddrer)
	if !ok {
		return
	}
	addr, ok := pa.ProvenAddr(f.id)
	if !ok {
		return
	}
	p.mu.Lock()
	f.book.pin(addr)
	p.mu.Unlock()
}
