package agent

import (
	"context"
	"sync"
	"time"

	"github.com/labpool/labpool/internal/beat"
)

// Consume calls each for every sample from samples, and tick every period
// (never when period is 0), until ctx is cancelled or samples is closed. It
// runs on the caller's goroutine and starts none.
func Consume(ctx context.Context, samples <-chan Sample, period time.Duration, each func(Sample), tick func(now time.Time)) {
	var ticks <-chan time.Time
	if period > 0 {
		t := beat.NewTicker(period)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case s, ok := <-samples:
			if !ok {
				return
			}
			each(s)
		case now := <-ticks:
			tick(now)
		}
	}
}

// Subscribe returns a channel of samples and a func that ends the
// subscription and closes the channel. A subscriber that has not received
// Config.Buffer samples yet misses the next ones. Subscribing after Run
// returned gives a closed channel.
func (t *Telemetry) Subscribe() (<-chan Sample, func()) {
	ch := make(chan Sample, t.cfg.Buffer)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == stopped {
		close(ch)
		return ch, func() {}
	}
	t.subs[ch] = struct{}{}
	return ch, sync.OnceFunc(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if _, ok := t.subs[ch]; ok {
			delete(t.subs, ch)
			close(ch)
		}
	})
}

// publish makes s the latest sample and offers it to every subscriber.
func (t *Telemetry) publish(s Sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.latest, t.sampled = s, true
	for ch := range t.subs {
		select {
		case ch <- s:
		default: // full: this subscriber misses s
		}
	}
}

// stop closes every subscriber's channel; Run has returned.
func (t *Telemetry) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state = stopped
	for ch := range t.subs {
		close(ch)
		delete(t.subs, ch)
	}
}
