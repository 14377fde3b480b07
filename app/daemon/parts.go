package daemon

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/membership"
	"github.com/labpool/labpool/sync/peer"
	"golang.org/x/sync/errgroup"
)

// A part is one piece of the daemon, built by its own constructor from the
// parts before it in the list (open). A part that runs has Run(ctx) error;
// one that holds something to release has Close, called after every Run
// has returned, in the reverse of the list's order.
type part = any

type runner interface {
	Run(ctx context.Context) error
}

// runFunc is a part that is only a loop (the part names it).
type runFunc func(ctx context.Context) error

func (f runFunc) Run(ctx context.Context) error { return f(ctx) }

// serviceViews pushes the pool view to the UIs every interval until ctx is
// cancelled.
type serviceViews struct {
	svc      *app.Service
	interval time.Duration
}

func (v serviceViews) Run(ctx context.Context) error { return v.svc.Run(ctx, v.interval) }

// runAll runs each of fns until ctx is cancelled or one fails, which
// ends the others; it returns the first error once all have returned.
func runAll(ctx context.Context, fns ...func(context.Context) error) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, f := range fns {
		g.Go(func() error { return f(ctx) })
	}
	return g.Wait()
}

// late is a part the list binds after the parts that reach it are built:
// the list's way of naming a real cycle (one part calls another built on
// it). The list binds each before any part runs; get says whether it is
// bound, and each user says what it does before (a peer's handshake may
// come while the list is still being built).
type late[T any] struct{ p atomic.Pointer[T] }

func (l *late[T]) set(v T) { l.p.Store(&v) }

// get returns the part, and false before the list bound it.
func (l *late[T]) get() (T, bool) {
	if p := l.p.Load(); p != nil {
		return *p, true
	}
	var zero T
	return zero, false
}

// add puts p at the end of the list.
func (d *Daemon) add(p part) { d.parts = append(d.parts, p) }

// close closes the parts in the reverse of the list's order.
func (d *Daemon) close() {
	for i := len(d.parts) - 1; i >= 0; i-- {
		if c, ok := d.parts[i].(interface{ Close() error }); ok {
			c.Close()
		}
	}
	d.parts = nil
}

// removedLate is the pool's Removed hook, bound to the evictions once they
// are built (the pool is built before the copies and jobs they end). A
// removal heard before that is found again by Run's first look at the pool.
type removedLate struct{ late[*membership.Evictions] }

func (r *removedLate) call(id peer.ID) {
	if e, ok := r.get(); ok {
		e.Removed(id)
	}
}
