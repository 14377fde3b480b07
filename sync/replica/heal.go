package replica

import (
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// A healed network would otherwise be noticed by each follower on its own,
// at its next dial or at the next retransmission of a dial under way (QUIC
// backs those off to seconds apart): the last of a pool's followers could
// come back seconds after the path did. Two signs that a path is back cut
// those waits short instead:
//   - a member opened a stream to us (Heard): our follower of it dials now;
//   - a follower's session came up after its machine was offline: the other
//     offline followers dial now, since the change that ended their
//     sessions (a split, a cable, a roaming laptop) may have ended too.
//
// A dial under way for longer than restartDial is abandoned and made again
// (through the Dialer's Drop, when it has one): its next retransmission may
// be seconds away. A younger one sent its first packet after the change.
// For the same reason a session whose dial the silence watchdog ended
// drops that dial (session, in peers.go): the transport shares it among
// requests, so it outlives the request and the next session would join it.

// restartDial is the age past which a dial under way is made again when a
// path may be back; the first retransmission of a QUIC Initial comes after
// about 300 ms.
const restartDial = 250 * time.Millisecond

// dropper is the Dialer's optional way to abandon a dial under way:
// sync/transport's Endpoint.Drop closes the peer's connection, pending or
// made, and the next request dials again.
type dropper interface {
	Drop(id peer.ID)
}

// Heard tells p that member id opened a stream to this machine: the path
// from id works, so the follower of id, if offline, dials at once.
func (p *Peers) Heard(id string) {
	p.mu.Lock()
	f := p.peers[id]
	var drop []peer.ID
	if f != nil && f.cancel != nil && !f.online {
		drop = p.kick(f, time.Now(), drop)
	}
	p.mu.Unlock()
	p.drop(drop)
}

// backOnline wakes every offline follower but f, whose session has just
// come up after f's machine was offline.
func (p *Peers) backOnline(f *follower) {
	now := time.Now()
	var drop []peer.ID
	p.mu.Lock()
	for _, o := range p.peers {
		if o != f && o.cancel != nil && !o.online {
			drop = p.kick(o, now, drop)
		}
	}
	p.mu.Unlock()
	p.drop(drop)
}

// kick wakes f's follow loop: a wait between dials ends, and a dial under
// way for longer than restartDial is added to drop, to be abandoned. p.mu
// is held.
func (p *Peers) kick(f *follower, now time.Time, drop []peer.ID) []peer.ID {
	select {
	case f.wake <- struct{}{}:
	default:
	}
	if !f.dialing.IsZero() && now.Sub(f.dialing) >= restartDial {
		f.dialing = time.Time{}
		drop = append(drop, f.id)
	}
	return drop
}

// drop abandons the dials to ids, with p.mu not held.
func (p *Peers) drop(ids []peer.ID) {
	d, ok := p.dial.(dropper)
	if !ok {
		return
	}
	for _, id := range ids {
		d.Drop(id)
	}
}

// setDialing records when f's dial began (now), or that it ended (zero).
func (p *Peers) setDialing(f *follower, now time.Time) {
	p.mu.Lock()
	f.dialing = now
	p.mu.Unlock()
}
