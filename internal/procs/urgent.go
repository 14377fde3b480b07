package procs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Urgent work and bulk work. Go has no goroutine priorities, and on a
// machine short of processors a copy's goroutines (TLS, hashing, writes)
// take turns with telemetry's: a sample or a control request then waits
// behind the copy's bytes. Latency-sensitive work marks itself urgent
// (Urgent, UrgentFor); bulk work calls Yield between its pieces and steps
// aside while any is under way, so that the process's share of the
// processors goes to the urgent work first.
//
// A claim counts for ClaimLimit at most (a long stream that claims does
// not stop a copy), Yield waits MaxYield at most, and all Yields together
// Budget a second at most, so bulk work always goes on. Each step aside
// also costs bulk work its place in the kernel's run queue on a busy
// machine, so urgency is for rare moments (a sample a second), not for
// every request.

// ClaimLimit is how long an Urgent claim counts at most.
const ClaimLimit = 50 * time.Millisecond

// MaxYield is the longest one Yield waits.
const MaxYield = 50 * time.Millisecond

// Budget is the most that bulk work yields in a second, all its
// goroutines together: urgent work kept going (a member streaming to this
// machine without end) slows a copy here by a twentieth at most (a copy
// between two machines yields at both ends).
const Budget = 50 * time.Millisecond

// gate is the process's one record of urgent work.
type gate struct {
	base   time.Time    // origin of the nanosecond figures below
	until  atomic.Int64 // UrgentFor: urgent until then
	held   atomic.Int32 // Urgent claims not yet released
	claimT atomic.Int64 // the latest end of a held claim's ClaimLimit
	budget budget
	total  atomic.Int64 // nanoseconds of waits granted, ever
}

var urgency = newGate()

func newGate() *gate { return &gate{base: time.Now()} }

// Budget keeping: the wall time granted to Yields in the current second.
type budget struct {
	mu      sync.Mutex
	second  int64 // which second since base spent counts
	spent   int64 // nanoseconds of it granted
	granted int64 // the end of the latest wait granted
}

// recheck is how often a Yield looks again while claims are held: one
// released early ends the wait within it. (No channel is kept across
// calls: the gate holds nothing a synctest bubble could own.)
const recheck = 2 * time.Millisecond

// Urgent marks latency-sensitive work under way until done is called (or
// for ClaimLimit, whichever comes first); done may be called more than once.
func Urgent() (done func()) { return urgency.claim() }

// UrgentFor marks the next d as urgent.
func UrgentFor(d time.Duration) { urgency.extend(&urgency.until, urgency.now()+int64(d)) }

// Yield waits while urgent work is under way, MaxYield at most, or until
// ctx ends. Bulk work calls it between its pieces; when nothing is urgent
// it returns at once.
func Yield(ctx context.Context) { urgency.yield(ctx, MaxYield) }

// Yielded is the wall time bulk work has spent stepping aside in Yield
// since the process started, its goroutines' waits at once counted once.
func Yielded() time.Duration { return time.Duration(urgency.total.Load()) }

// Pending reports whether urgent work is under way now (Yield would wait).
func Pending() bool {
	wait, _ := urgency.pending()
	return wait > 0
}

func (g *gate) now() int64 { return int64(time.Since(g.base)) }

// extend moves *at forward to t (never back).
func (g *gate) extend(at *atomic.Int64, t int64) {
	for {
		cur := at.Load()
		if cur >= t || at.CompareAndSwap(cur, t) {
			return
		}
	}
}

func (g *gate) claim() (done func()) {
	g.held.Add(1)
	g.extend(&g.claimT, g.now()+int64(ClaimLimit))
	var once sync.Once
	return func() { once.Do(func() { g.held.Add(-1) }) }
}

// pending is how long urgent work still counts from now (0: none), and
// whether claims count in it (their release may end it sooner).
func (g *gate) pending() (time.Duration, bool) {
	now := g.now()
	wait := g.until.Load() - now
	claimed := false
	if g.held.Load() > 0 {
		if c := g.claimT.Load() - now; c > wait {
			wait, claimed = c, true
		}
	}
	return time.Duration(max(wait, 0)), claimed
}

func (g *gate) yield(ctx context.Context, most time.Duration) {
	if g.held.Load() == 0 && g.until.Load() <= g.now() {
		return // the common case: one clock reading
	}
	end := g.now() + int64(most)
	for {
		wait, claimed := g.pending()
		wait = min(wait, time.Duration(end-g.now()))
		if wait <= 0 {
			return
		}
		if claimed {
			wait = min(wait, recheck)
		}
		if wait = g.grant(wait); wait <= 0 {
			return // this second's Budget is spent
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// grant shortens a wait of wait from now to what is left of this second's
// Budget. Waits of several goroutines at once count once: the budget is
// charged the wall time past the waits already granted.
func (g *gate) grant(wait time.Duration) time.Duration {
	b := &g.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	now := g.now()
	if s := now / int64(time.Second); s != b.second {
		b.second, b.spent = s, 0
	}
	end := now + int64(wait)
	from := max(now, b.granted)
	if end <= from {
		return wait // within a wait already granted
	}
	end = min(end, from+max(int64(Budget)-b.spent, 0))
	if end > from {
		b.spent += end - from
		b.granted = end
		g.total.Add(end - from)
	}
	return time.Duration(max(end, b.granted) - now)
}
