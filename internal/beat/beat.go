// Package beat is a ticker that fires on the wall clock's multiples of its
// period (every whole second, for a period of a second) instead of at
// multiples of the time it was made.
//
// An idle agent's cost is mostly its wake-ups, not its work: each wake-up
// of a Go process costs the scheduler and its monitor thread (which polls
// every 20 µs for the first millisecond of activity after a sleep) more
// than the sampling or the write it serves. When every periodic task of a
// process ticks on the same beat, they run in one wake-up; when every
// machine of a lab does (their clocks agree to a few milliseconds through
// NTP), the replica frames of the pool's members arrive together too, and
// one wake-up receives them all.
package beat

import (
	"sync"
	"time"
)

// Ticker delivers the time on C at every multiple of its period on the wall
// clock. Like time.Ticker, it drops ticks for a slow receiver.
type Ticker struct {
	C <-chan time.Time

	c       chan time.Time
	period  time.Duration
	mu      sync.Mutex // guards t and stopped
	t       *time.Timer
	stopped bool
}

// NewTicker returns a ticker of period d (d > 0) whose first tick is at the
// next multiple of d.
func NewTicker(d time.Duration) *Ticker {
	if d <= 0 {
		panic("beat: non-positive period")
	}
	c := make(chan time.Time, 1)
	tk := &Ticker{C: c, c: c, period: d}
	tk.mu.Lock()
	tk.t = time.AfterFunc(Next(time.Now(), d), tk.fire)
	tk.mu.Unlock()
	return tk
}

// Next is how long after now the next multiple of d comes (never zero: a
// tick exactly on a multiple waits for the next one).
func Next(now time.Time, d time.Duration) time.Duration {
	return now.Truncate(d).Add(d).Sub(now)
}

func (tk *Ticker) fire() {
	now := time.Now()
	select {
	case tk.c <- now:
	default: // the receiver is behind: this tick is dropped
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if !tk.stopped {
		tk.t.Reset(Next(now, tk.period))
	}
}

// Stop turns the ticker off; no tick is sent after it returns, but one may
// be waiting on C.
func (tk *Ticker) Stop() {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.stopped = true
	tk.t.Stop()
}
