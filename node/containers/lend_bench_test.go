//go:build linux

package containers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/containers/dockertest"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/lend"
)

// BenchmarkOwnerWaitDocker is BenchmarkOwnerWait (node/jobs) over a real
// Docker engine: a lender steps on its own schedule in fake time over a
// job manager whose two guests are busybox containers, paused and
// resumed with docker pause. Reported: the owner's wait past the grace in
// the lender's time (mean and worst; the promise is at most 2000 ms), and
// the real time of the step that paused both guests (the engine's
// share of the owner's wait).
func BenchmarkOwnerWaitDocker(b *testing.B) {
	if testing.Short() {
		b.Skip("needs a docker engine: skipped in -short mode")
	}
	cfg := DefaultConfig()
	cfg.Host = dockertest.Engine(b)
	cfg.Node = fmt.Sprintf("LEND-%d", time.Now().UnixNano())
	rt, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ex := NewExecutor(rt, ExecutorConfig{SimulatedGPUs: true})
	gs := noGPUs{{Index: 0, UUID: "GPU-0", MemTotalBytes: 80 << 30}, {Index: 1, UUID: "GPU-1", MemTotalBytes: 80 << 30}}
	m := jobs.NewManager(jobs.Config{Node: cfg.Node}, ex, gs, nil, &jobStore{}, discardLog())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	var guests []string
	for i := range 2 {
		j, err := m.Submit(ctx, jobs.Caller{ID: "alice", Role: jobs.RoleMember}, jobs.Spec{Image: dockertest.Image, Cmd: []string{"sleep", "3600"}, GPUIDs: []int{i}})
		if err != nil {
			b.Fatal(err)
		}
		guests = append(guests, j.ID)
	}
	defer func() {
		for _, id := range guests {
			m.Remove(context.Background(), id, true)
		}
	}()
	p := lend.Policy{Mode: lend.Idle, AfterSeconds: 60, Yield: lend.Pause, GraceSeconds: 600}
	clock := &benchClock{now: time.Date(2026, 3, 4, 20, 0, 0, 0, time.UTC)}
	var present bool
	lcfg := lend.DefaultConfig()
	lcfg.Node, lcfg.Now = cfg.Node, clock.Now
	l := lend.New(lcfg, p, jobs.LendGuests{M: m}, m.Ledger(), func(context.Context) (bool, string) { return present, "I'm using it" })
	rng := rand.New(rand.NewPCG(1, 2))
	var last time.Time
	var stepReal time.Duration
	step := func() {
		last = clock.Now()
		start := time.Now()
		l.Step(ctx)
		stepReal = time.Since(start)
		clock.set(last.Add(l.Next()))
	}
	runningGuests := func() int {
		n := 0
		for _, g := range m.LendGuests() {
			if !g.Paused {
				n++
			}
		}
		return n
	}
	var worst, total, real time.Duration
	b.ResetTimer()
	for b.Loop() {
		present = false
		for start := clock.Now(); clock.Now().Sub(start) < p.After()+2*time.Second; {
			step()
		}
		if n := runningGuests(); n != 2 {
			b.Fatalf("%d guests run on the lent machine; want 2", n)
		}
		sat := clock.Now().Add(time.Duration(rng.Int64N(int64(time.Second))))
		for clock.Now().Before(sat) {
			step()
		}
		present = true
		for runningGuests() > 0 {
			step()
		}
		over := last.Sub(sat) - p.Grace()
		worst, total, real = max(worst, over), total+over, real+stepReal
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-past-grace/op")
	b.ReportMetric(float64(worst.Milliseconds()), "ms-past-grace-worst")
	b.ReportMetric(float64(real.Microseconds())/1000/float64(b.N), "ms-pause-both-real/op")
}

// benchClock is a clock a benchmark moves.
type benchClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *benchClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *benchClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
