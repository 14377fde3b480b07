package procs

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestYield measures, on the bubble's clock, how long one Yield waits
// after the urgent work each case sets up.
func TestYield(t *testing.T) {
	cases := []struct {
		name string
		set  func(g *gate, ctx context.Context) // before the Yield, at time 0
		want time.Duration
	}{
		{"nothing urgent", func(*gate, context.Context) {}, 0},
		{"urgent for 20ms", func(g *gate, _ context.Context) { g.extend(&g.until, g.now()+int64(20*time.Millisecond)) }, 20 * time.Millisecond},
		{"urgent for longer than MaxYield", func(g *gate, _ context.Context) { g.extend(&g.until, g.now()+int64(time.Second)) }, MaxYield},
		{"a claim released before the first recheck", func(g *gate, _ context.Context) {
			done := g.claim()
			time.AfterFunc(time.Millisecond, done)
		}, recheck},
		{"a claim released after 5ms", func(g *gate, _ context.Context) {
			done := g.claim()
			time.AfterFunc(5*time.Millisecond, done)
		}, 6 * time.Millisecond}, // the first recheck after the release
		{"a claim never released counts ClaimLimit", func(g *gate, _ context.Context) { g.claim() }, min(ClaimLimit, MaxYield)},
		{"a claim released twice", func(g *gate, _ context.Context) {
			done := g.claim()
			done()
			done()
		}, 0},
		{"a claim past ClaimLimit", func(g *gate, _ context.Context) {
			g.claim()
			time.Sleep(ClaimLimit)
		}, 0},
		{"one of two claims released", func(g *gate, _ context.Context) {
			g.claim()()
			done := g.claim()
			time.AfterFunc(7*time.Millisecond, done)
		}, 8 * time.Millisecond},
		{"a claim released, urgent for 20ms", func(g *gate, _ context.Context) {
			done := g.claim()
			g.extend(&g.until, g.now()+int64(20*time.Millisecond))
			time.AfterFunc(time.Millisecond, done)
		}, 20 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGate()
				c.set(g, t.Context())
				start := time.Now()
				g.yield(t.Context(), MaxYield)
				if got := time.Since(start); got != c.want {
					t.Fatalf("Yield waited %v, want %v", got, c.want)
				}
				if got := time.Duration(g.total.Load()); got != c.want {
					t.Fatalf("Yielded counts %v, want %v", got, c.want)
				}
			})
		})
	}
}

// TestYieldEndsWithContext: bulk work that is cancelled does not wait out
// the urgent work.
func TestYieldEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		g.claim()
		g.extend(&g.until, g.now()+int64(time.Second))
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(3*time.Millisecond, cancel)
		start := time.Now()
		g.yield(ctx, MaxYield)
		if got := time.Since(start); got != 3*time.Millisecond {
			t.Fatalf("Yield waited %v after its context ended at 3ms", got)
		}
	})
}

// TestPendingNeverGoesBack: a shorter UrgentFor does not cut a longer one.
func TestPendingNeverGoesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		g.extend(&g.until, g.now()+int64(30*time.Millisecond))
		g.extend(&g.until, g.now()+int64(10*time.Millisecond))
		if wait, _ := g.pending(); wait != 30*time.Millisecond {
			t.Fatalf("pending %v, want 30ms", wait)
		}
	})
}

// BenchmarkYieldNothingUrgent is what a copy pays per TLS record (16 KiB)
// read or written on the data path while nothing is urgent.
func BenchmarkYieldNothingUrgent(b *testing.B) {
	g := newGate()
	ctx := context.Background()
	for b.Loop() {
		g.yield(ctx, MaxYield)
	}
}

// TestYieldBudget is the attack of a member who keeps urgent work going
// (bytes on a control stream every few milliseconds; here claims, each
// counting 50 ms):
// bulk work must still get all but Budget of every second, or a copy
// would crawl at one TLS record per MaxYield.
func TestYieldBudget(t *testing.T) {
	claims := func(g *gate) { g.claim() } // never released
	marks := func(g *gate) { g.extend(&g.until, g.now()+int64(20*time.Millisecond)) }
	cases := []struct {
		name    string
		urgent  func(g *gate) // every 10 ms
		workers int           // bulk goroutines yielding at once
	}{
		{"claims, one copy stream", claims, 1},
		{"claims, four copy streams", claims, 4},
		{"UrgentFor, four copy streams", marks, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGate()
				ctx, stop := context.WithTimeout(t.Context(), 2*time.Second)
				defer stop()
				var attacker sync.WaitGroup
				defer attacker.Wait()
				attacker.Go(func() {
					for ctx.Err() == nil {
						c.urgent(g)
						time.Sleep(10 * time.Millisecond)
					}
				})
				waited := make(chan time.Duration, c.workers)
				for range c.workers {
					go func() { // bulk work: a record every 100 µs, a Yield before each
						var w time.Duration
						for ctx.Err() == nil {
							start := time.Now()
							g.yield(ctx, MaxYield)
							w += time.Since(start)
							time.Sleep(100 * time.Microsecond)
						}
						waited <- w
					}()
				}
				for range c.workers {
					if w := <-waited; w > 2*Budget {
						t.Errorf("a worker waited %v in 2 s; want at most %v", w, 2*Budget)
					}
				}
			})
		})
	}
}
