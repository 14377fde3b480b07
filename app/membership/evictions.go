package membership

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// evictTimeout bounds the work of ending one removed device's jobs here.
const evictTimeout = 30 * time.Second

// Evictions is the daemon's part that ends a removed device's work here:
// its connections close at once, so its streams, tunnels and copies stop;
// its jobs here end in Run.
type Evictions struct {
	members *Membership
	ep      Disconnector
	copies  CopyCanceller
	jobs    Evictor
	log     *slog.Logger
	q       evictionQueue
}

// Disconnector closes a device's connections (*transport.Endpoint).
type Disconnector interface{ Disconnect(id peer.ID) }

// CopyCanceller ends a device's copies (*copies.Receiver).
type CopyCanceller interface{ CancelOf(device string) }

// Evictor ends a device's jobs: queued ones cancelled, running ones
// stopped (*jobs.Manager).
type Evictor interface {
	Evict(ctx context.Context, owner string) (cancelled, stopped int, err error)
}

// NewEvictions returns the evictions of the devices removed from m's pool.
func NewEvictions(m *Membership, ep Disconnector, cps CopyCanceller, jobs Evictor, log *slog.Logger) *Evictions {
	return &Evictions{members: m, ep: ep, copies: cps, jobs: jobs, log: log}
}

// Removed is the pool's hook for a device removed from the pool (by this
// machine or learned from a member). It does not block.
func (e *Evictions) Removed(id peer.ID) {
	if id == e.members.self {
		r, _ := e.members.pm.RemovalOf(id.String())
		e.log.Warn("this machine was removed from the pool: the members refuse it from now on, and it asks them again only once a minute, until an owner or admin readmits it",
			"by", e.members.NameOf(r.By), "at", r.At.UTC().Format(time.RFC3339))
		return // its own jobs and copies here are its own
	}
	e.ep.Disconnect(id)
	e.copies.CancelOf(id.String())
	e.q.add(id)
}

// Run ends the jobs of removed devices: queued ones are cancelled and
// running ones stopped, their records kept. At start it re-checks every
// device the pool log holds as removed, so a removal stored while this
// agent was down, or whose eviction was cut short, still ends its jobs.
func (e *Evictions) Run(ctx context.Context) error {
	if st, ok := e.members.pm.Snapshot(); ok {
		for _, m := range st.Members {
			if id, err := peer.ParseID(m.ID); err == nil && m.Removed && id != e.members.self {
				e.q.add(id)
			}
		}
	}
	e.q.run(ctx, e.evict)
	return nil
}

// evict ends the jobs here of id, a removed device.
func (e *Evictions) evict(ctx context.Context, id peer.ID) {
	ctx, cancel := context.WithTimeout(ctx, evictTimeout)
	defer cancel()
	cancelled, stopped, err := e.jobs.Evict(ctx, id.String())
	if err != nil {
		e.log.Warn("end the jobs of a removed device", "peer", id, "err", err)
	} else if cancelled+stopped > 0 {
		e.log.Info("ended the jobs of a removed device", "peer", id, "cancelled", cancelled, "stopped", stopped)
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
