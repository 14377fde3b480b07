package transport

import (
	"net/netip"
	"time"
)

// The door's slots. A connection enters when its handshake is done and
// stays until it closes, its device becomes a member, or it is closed to
// make room. Three bounds hold at once, each with its rule: PerSource from
// one address, PerNetwork from one network (an IPv4 /24, an IPv6 /64: what
// one host on a LAN can take addresses from) and Conns in all. A newcomer
// over a bound takes the slot of the oldest attempt within that bound that
// has finished: one whose request has been answered (the join exchange is
// one request: after its answer the device has joined, and left the door,
// or it has failed), or that opened no request within Quiet, or that has
// not delivered one whole request (headers and body, the join proof)
// within Proof of opening its first, or whose first request has outlived
// its deadline. So a stranger that holds every slot with requests, as fast
// as it likes, or with requests it keeps open without sending them whole,
// holds none against a real joiner, whose one request is delivered at once
// and open from then to its answer; and only when no attempt within the
// bound has finished is the newcomer refused.

// networkOf is the network ip is counted in: its /24 (IPv4) or /64 (IPv6).
func networkOf(ip netip.Addr) netip.Prefix {
	bits := 64
	if ip.Is4() {
		bits = 24
	}
	p, err := ip.Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return p
}

// doorRule is one bound on the slots: how many of those that match.
type doorRule struct {
	max     int
	match   func(*doorConn) bool
	refusal string
}

func (d *door) rules(c *doorConn) []doorRule {
	return []doorRule{
		{d.cfg.PerSource, func(o *doorConn) bool { return o.src == c.src }, d.cfg.fullSource()},
		{d.cfg.PerNetwork, func(o *doorConn) bool { return o.network == c.network }, d.cfg.fullNetwork()},
		{d.cfg.Conns, func(*doorConn) bool { return true }, d.cfg.full()},
	}
}

// enter lets c in, starting its idle timer, and returns the attempts
// closed to make room for it (their caller closes them); or it returns the
// refusal of the first bound c is over, closing nothing.
func (d *door) enter(c *doorConn) (evicted []*doorConn, refusal string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	out := map[*doorConn]bool{}
	for _, r := range d.rules(c) {
		for d.count(r.match, out) >= r.max {
			v := d.oldestFinished(r.match, out, now)
			if v == nil {
				return nil, r.refusal
			}
			out[v] = true
			evicted = append(evicted, v)
		}
	}
	for _, v := range evicted {
		d.remove(v)
	}
	c.in, c.since = true, now
	c.idle = time.AfterFunc(d.cfg.Idle, c.idleOut)
	d.slots = append(d.slots, c)
	return evicted, ""
}

// count is how many slots match, leaving out those in out. d.mu must be
// held.
func (d *door) count(match func(*doorConn) bool, out map[*doorConn]bool) int {
	n := 0
	for _, o := range d.slots {
		if match(o) && !out[o] {
			n++
		}
	}
	return n
}

// oldestFinished is the oldest slot that matches, is not in out and has
// finished; nil if none. d.mu must be held.
func (d *door) oldestFinished(match func(*doorConn) bool, out map[*doorConn]bool, now time.Time) *doorConn {
	for _, o := range d.slots { // oldest first
		if match(o) && !out[o] && o.finished(d.cfg, now) {
			return o
		}
	}
	return nil
}

// finished reports whether c's attempt has ended: a request of it has
// been answered, or it opened none within Quiet, or none of its requests
// was delivered whole within Proof of its first opening, or its first
// request has outlived its deadline. d.mu must be held.
func (c *doorConn) finished(cfg DoorConfig, now time.Time) bool {
	age := now.Sub(c.since)
	unproved := c.asked > 0 && !c.proved && now.Sub(c.askedAt) >= cfg.Proof
	return c.answered > 0 || (c.open == 0 && age >= cfg.Quiet) || unproved || age >= cfg.Quiet+cfg.Request
}

// remove takes c out of the slots, once. d.mu must be held.
func (d *door) remove(c *doorConn) {
	if !c.in {
		return
	}
	c.in = false
	if c.idle != nil {
		c.idle.Stop()
	}
	for i, o := range d.slots {
		if o == c {
			d.slots = append(d.slots[:i], d.slots[i+1:]...)
			break
		}
	}
}
