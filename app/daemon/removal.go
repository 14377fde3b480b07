package daemon

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/transport"
)

// evictTimeout bounds the work of ending one removed device's jobs here.
const evictTimeout = 30 * time.Second

// removed is the pool's hook for a device removed from the pool (by this
// machine or learned from a member): its connections close at once, so its
// streams, tunnels and copies stop; its jobs here end in runEvictions. It
// does not block.
func (d *Daemon) removed(id peer.ID) {
	if id == d.id.ID {
		r, _ := d.pool.RemovalOf(id.String())
		d.log.Warn("this machine was removed from the pool: the members refuse it from now on, and it calls none of them",
			"by", d.nameOf(r.By), "at", r.At.UTC().Format(time.RFC3339))
		return // its own jobs and copies here are its own
	}
	d.ep.Disconnect(id)
	d.cancelCopiesOf(id.String())
	d.evictions.add(id)
}

// tellRemoved answers a removed device's stream request with the proof
// that it was removed (replica.Told), so that it stops calling; its other
// requests, and everyone else's, go to h. The answer is a refusal charged to
// the device's address like the others, and it is given while the
// address's budget lasts.
func (d *Daemon) tellRemoved(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := transport.PeerID(r)
		if !ok || r.URL.Path != replica.StreamPath || d.isMember(id) {
			h.ServeHTTP(w, r)
			return
		}
		rm, removed := d.pool.RemovalOf(id.String())
		src := netip.Addr{}
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			src = ap.Addr().Unmap()
		}
		l := d.ep.Refusals()
		if !removed || l.Exhausted(src) {
			h.ServeHTTP(w, r)
			return
		}
		l.Charge(src)
		recs, _ := d.pool.Records()
		replica.WriteRemoved(w, fmt.Sprintf("this device was removed from the pool by %s at %s",
			d.nameOf(rm.By), rm.At.UTC().Format(time.RFC3339)), recs)
	})
}

// nameOf is a member's name in the pool's log, or its short ID.
func (d *Daemon) nameOf(id string) string {
	if name := d.memberName(id); name != "" {
		return name
	}
	if pid, err := peer.ParseID(id); err == nil {
		return pid.Short()
	}
	return id
}

// runEvictions ends the jobs of removed devices: queued ones are cancelled
// and running ones stopped, their records kept. At start it re-checks every
// device the pool log holds as removed, so a removal stored while this
// agent was down, or whose eviction was cut short, still ends its jobs.
func (d *Daemon) runEvictions(ctx context.Context) error {
	if st, ok := d.pool.Snapshot(); ok {
		for _, m := range st.Members {
			if id, err := peer.ParseID(m.ID); err == nil && m.Removed && id != d.id.ID {
				d.evictions.add(id)
			}
		}
	}
	d.evictions.run(ctx, d.evict)
	return nil
}

// evict ends the jobs here of id, a removed device.
func (d *Daemon) evict(ctx context.Context, id peer.ID) {
	ctx, cancel := context.WithTimeout(ctx, evictTimeout)
	defer cancel()
	cancelled, stopped, err := d.jobs.Evict(ctx, id.String())
	if err != nil {
		d.log.Warn("end the jobs of a removed device", "peer", id, "err", err)
	} else if cancelled+stopped > 0 {
		d.log.Info("ended the jobs of a removed device", "peer", id, "cancelled", cancelled, "stopped", stopped)
	}
}

// evictionQueue holds the removed devices whose jobs are yet to end, each
// once, in the order removed, with no bound: a removal is never dropped (a
// device ID is 32 bytes; a pool removes at most its members). Its zero
// value is ready.
type evictionQueue struct {
	mu      sync.Mutex // guards pending and wake
	pending []peer.ID
	wake    chan struct{} // signalled (capacity 1) when pending grows
}

// add queues id unless it is pending already. It never blocks.
func (q *evictionQueue) add(id peer.ID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if slices.Contains(q.pending, id) {
		return
	}
	q.pending = append(q.pending, id)
	select {
	case q.signal() <- struct{}{}:
	default:
	}
}

// signal is the wake channel; q.mu is held.
func (q *evictionQueue) signal() chan struct{} {
	if q.wake == nil {
		q.wake = make(chan struct{}, 1)
	}
	return q.wake
}

// next takes the first pending device; ok is false when none is.
func (q *evictionQueue) next() (id peer.ID, wake <-chan struct{}, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return peer.ID{}, q.signal(), false
	}
	id, q.pending = q.pending[0], q.pending[1:]
	return id, nil, true
}

// run calls evict for each queued device in turn until ctx is cancelled.
func (q *evictionQueue) run(ctx context.Context, evict func(context.Context, peer.ID)) {
	for ctx.Err() == nil {
		id, wake, ok := q.next()
		if ok {
			evict(ctx, id)
			continue
		}
		select {
		case <-ctx.Done():
		case <-wake:
		}
	}
}
