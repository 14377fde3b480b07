package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/lend"
)

// fakeClock is a clock a benchmark moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// BenchmarkOwnerWait measures, in the lender's (fake) time, how long the
// owner of a lent machine waits beyond the grace before no guest runs
// there: a lender steps on its own schedule (Lender.Next: every second,
// and at the deadline) over a real job manager, whose guests (two jobs of
// other members) are warned, paused and resumed through its executor
// calls (the fake executor with docker pause). The owner sits down at a random instant within a
// tick. Reported: the mean and the worst wait past the grace, in ms of
// fake time (the promise: at most 2000), and each round's real cost.
func BenchmarkOwnerWait(b *testing.B) {
	rt := &pausingRuntime{fakeRuntime: newFakeRuntime(), paused: map[string]bool{}}
	cfg := DefaultConfig()
	cfg.Node = "NODE"
	m := NewManager(cfg, rt, fixedGPUs(fakeGPUs(2)), nil, &memStore{}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	for rt.count("List") == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := range 2 {
		j, err := m.Submit(ctx, member("alice"), Spec{Image: "img", GPUIDs: []int{i}})
		if err != nil {
			b.Fatal(err)
		}
		for j, _ = m.Get(j.ID); j.State != Running; j, _ = m.Get(j.ID) {
			time.Sleep(time.Millisecond)
		}
	}
	p := lend.Policy{Mode: lend.Idle, AfterSeconds: 60, Yield: lend.Pause, GraceSeconds: 600}
	clock := &fakeClock{now: time.Date(2026, 3, 4, 20, 0, 0, 0, time.UTC)}
	var present bool
	lcfg := lend.DefaultConfig()
	lcfg.Node, lcfg.Now = "NODE", clock.Now
	l := lend.New(lcfg, p, LendGuests{M: m}, m.Ledger(), func(context.Context) (bool, string) { return present, "I'm using it" })
	rng := rand.New(rand.NewPCG(1, 2))
	var last time.Time // when the last step ran
	step := func() {
		last = clock.Now()
		l.Step(ctx)
		clock.set(last.Add(l.Next()))
	}
	var worst, total time.Duration
	b.ResetTimer()
	for b.Loop() {
		// Away lend-after and more: lent, the guests running.
		present = false
		for start := clock.Now(); clock.Now().Sub(start) < p.After()+2*time.Second; {
			step()
		}
		if len(running(m)) != 2 {
			b.Fatalf("guests running on the lent machine: %v", running(m))
		}
		// Sits down somewhere within the next tick.
		sat := clock.Now().Add(time.Duration(rng.Int64N(int64(time.Second))))
		for clock.Now().Before(sat) {
			step()
		}
		present = true
		for len(running(m)) > 0 {
			step()
		}
		over := last.Sub(sat) - p.Grace()
		worst, total = max(worst, over), total+over
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-past-grace/op")
	b.ReportMetric(float64(worst.Milliseconds()), "ms-past-grace-worst")
}

// running lists the guests that run, not paused.
func running(m *Manager) []string {
	var out []string
	for _, g := range m.LendGuests() {
		if !g.Paused {
			out = append(out, g.ID)
		}
	}
	return out
}

// BenchmarkLendGuests is the lender's read of the guests each second on a
// machine that keeps 100,000 ended jobs and runs 8 guests, beside the
// first way of reading them.
func BenchmarkLendGuests(b *testing.B) {
	m := NewManager(Config{Node: "NODE"}, newFakeRuntime(), fixedGPUs(nil), nil, &memStore{}, slog.New(slog.DiscardHandler))
	for i := range 100_000 {
		m.setLocked(Job{ID: fmt.Sprintf("ended-%06d", i), Owner: "alice", State: Exited, Container: "c"})
	}
	for i := range 8 {
		m.setLocked(Job{ID: fmt.Sprintf("guest-%d", i), Owner: "alice", State: Running, Container: "c"})
	}
	b.Run("active index", func(b *testing.B) {
		for b.Loop() {
			if len(m.LendGuests()) != 8 {
				b.Fatal("not 8 guests")
			}
		}
	})
	// The first way, side by side: every record copied (List), then
	// filtered.
	b.Run("every record", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, j := range m.List() {
				if m.guest(j) {
					n++
				}
			}
			if n != 8 {
				b.Fatal("not 8 guests")
			}
		}
	})
}
