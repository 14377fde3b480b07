package daemon

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// evictTimeout bounds the work of ending one removed device's jobs here.
const evictTimeout = 30 * time.Second

// removed is the pool's hook for a device removed from the pool (by this
// machine or learned from a member): its connections close at once, so its
// streams, tunnels and copies stop; its jobs here end in runEvictions. It
// does not block.
func (d *Daemon) removed(id peer.ID) {
	if id == d.id.ID {
		d.log.Warn("this machine was removed from the pool: the members refuse it from now on")
		return // its own jobs and copies here are its own
	}
	d.ep.Disconnect(id)
	d.cancelCopiesOf(id.String())
	d.evictions.add(id)
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
