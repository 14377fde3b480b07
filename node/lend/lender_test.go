package lend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/alloc"
)

// runLender runs a lender under p over jobs and the signal until the
// test's bubble ends; the bubble's end proves Run returned.
func runLender(t *testing.T, p Policy, jobs *fakeJobs, sig Signal) *Lender {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Node, cfg.GPUs = "self", func() []string { return []string{"GPU-0", "GPU-1"} }
	l := New(cfg, p, jobs, jobs, sig)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = l.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return l
}

func idlePolicy(grace time.Duration, yield string) Policy {
	return Policy{Mode: Idle, AfterSeconds: 60, Yield: yield, GraceSeconds: int(grace / time.Second)}
}

// TestLenderGradedResponse: the owner sits down at a machine lent to two
// guests: no new guest is placed at once, both are warned of the
// deadline, paused at it, and resumed once the owner has been away
// lend-after again.
func TestLenderGradedResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jobs := newFakeJobs(time.Now)
		var owner presence
		l := runLender(t, idlePolicy(2*time.Minute, Pause), jobs, owner.signal)
		synctest.Wait()
		if g := jobs.heldBy(); len(g) != 1 || g[0].Holder.Kind != alloc.Owner || len(g[0].Units) != 2 {
			t.Fatalf("at start the owner holds %+v; want the owner's grant on both GPUs until they are away 1m", g)
		}
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if !jobs.place("a", fakeGuest{owner: "m1"}) || !jobs.place("b", fakeGuest{owner: "m2"}) {
			t.Fatalf("guests not placed on a machine lent (%+v)", l.State())
		}
		time.Sleep(10 * time.Minute)
		owner.set(true)
		sat := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		if jobs.place("c", fakeGuest{owner: "m3"}) {
			t.Error("a new guest was placed a second after the owner sat down")
		}
		st := l.State()
		if st.Phase != Warned || !strings.Contains(holdName(st.Status), "guests pause at") {
			t.Errorf("state %+v (%q); want warned, saying when guests pause", st, holdName(st.Status))
		}
		for _, id := range []string{"a", "b"} {
			if w := jobs.guests[id].warnedAt; w.IsZero() || w.After(sat.Add(2*time.Minute+time.Second)) {
				t.Errorf("guest %s warned of %v; want a deadline within the grace", id, w)
			}
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if r := jobs.running(); len(r) != 0 {
			t.Errorf("guests %v still run %s after the owner sat down (grace 2m)", r, time.Since(sat))
		}
		owner.set(false)
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if r := jobs.running(); len(r) != 0 {
			t.Errorf("guests %v resumed before the owner was away lend-after", r)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if r := jobs.running(); len(r) != 2 || len(jobs.heldBy()) != 0 {
			t.Errorf("owner away 1m: running %v, held %+v; want both guests resumed and nothing held", r, jobs.heldBy())
		}
	})
}

// TestLenderUsingSwitch: the window's switch holds the machine at once,
// without waiting for a tick.
func TestLenderUsingSwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jobs := newFakeJobs(time.Now)
		l := runLender(t, idlePolicy(time.Minute, Stop), jobs, func(context.Context) (bool, string) { return false, "" })
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if len(jobs.heldBy()) != 0 {
			t.Fatal("not lent after the owner was away")
		}
		l.SetUsing(true)
		synctest.Wait() // no time passes
		if g := jobs.heldBy(); len(g) != 1 || !strings.Contains(g[0].Holder.Name, Using) {
			t.Errorf("switch on: held %+v; want the owner's grant at once, naming the switch", g)
		}
		if !l.State().Using {
			t.Error("the state does not show the switch on")
		}
	})
}

// TestLenderGuestKeepsGPUs is the attack: guests that try to keep their
// GPUs past the grace (a container that ignores its pause, one whose
// pause fails) are stopped, within the grace and 2 s.
func TestLenderGuestKeepsGPUs(t *testing.T) {
	for _, g := range []fakeGuest{{owner: "m1", ignoresPause: true}, {owner: "m1", failsPause: true}} {
		t.Run(fmt.Sprintf("ignores=%v fails=%v", g.ignoresPause, g.failsPause), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				jobs := newFakeJobs(time.Now)
				var owner presence
				runLender(t, idlePolicy(time.Minute, Pause), jobs, owner.signal)
				time.Sleep(2 * time.Minute)
				synctest.Wait()
				jobs.place("rogue", g)
				jobs.place("good", fakeGuest{owner: "m2"})
				time.Sleep(1500 * time.Millisecond)
				owner.set(true)
				sat := time.Now()
				time.Sleep(time.Minute + 2*time.Second)
				synctest.Wait()
				if r := jobs.running(); len(r) != 0 {
					t.Fatalf("guests %v still hold their GPUs %s after the owner sat down (grace 1m)", r, time.Since(sat))
				}
				rogue := jobs.guests["rogue"]
				if !rogue.gone || rogue.yieldedAt.Sub(sat) > time.Minute+2*time.Second {
					t.Errorf("rogue guest: gone %v at %s after the owner; want stopped within 1m2s", rogue.gone, rogue.yieldedAt.Sub(sat))
				}
				if good := jobs.guests["good"]; !good.paused || good.gone {
					t.Errorf("the guest that paused: paused %v gone %v; want paused, not stopped", good.paused, good.gone)
				}
			})
		})
	}
}

// TestOwnerNeverWaits drives the owner's presence and guests' launches
// at random times (seeded) and checks the promise each time the owner
// sits down: no guest runs grace + 2 s later, whatever the yield.
func TestOwnerNeverWaits(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { ownerNeverWaits(t, seed) })
		})
	}
}

func ownerNeverWaits(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	grace := time.Duration(1+rng.IntN(600)) * time.Second
	yield := []string{Pause, Stop}[rng.IntN(2)]
	p := Policy{Mode: Idle, AfterSeconds: 60 + rng.IntN(600), Yield: yield, GraceSeconds: int(grace / time.Second)}
	jobs := newFakeJobs(time.Now)
	var owner presence
	runLender(t, p, jobs, owner.signal)
	n := 0
	for range 12 {
		// Away a random while, guests launching now and then.
		for away := time.Duration(rng.Int64N(int64(40 * time.Minute))); away > 0; {
			step := min(away, time.Duration(rng.Int64N(int64(5*time.Minute))))
			time.Sleep(step)
			away -= step
			n++
			jobs.place(fmt.Sprint("g", n), fakeGuest{owner: "m", ignoresPause: rng.IntN(5) == 0})
		}
		// Sits down at a random instant, stays at least the grace and 2 s.
		time.Sleep(time.Duration(rng.Int64N(int64(time.Second))))
		owner.set(true)
		sat := time.Now()
		time.Sleep(grace + 2*time.Second)
		synctest.Wait()
		if r := jobs.running(); len(r) != 0 {
			t.Fatalf("seed %d (%+v): guests %v still run %s after the owner sat down", seed, p, r, time.Since(sat))
		}
		if jobs.place("late", fakeGuest{owner: "m"}) {
			t.Fatalf("seed %d: a guest was placed while the owner is here", seed)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(20 * time.Minute))))
		owner.set(false)
	}
}

// TestLenderReadsPolicy: a policy changed with `labpool policy` applies
// at the next step: lend never takes the machine back from its guests.
func TestLenderReadsPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jobs := newFakeJobs(time.Now)
		var mu sync.Mutex
		p := Policy{Mode: Always, AfterSeconds: 60, Yield: Stop, GraceSeconds: 30}
		cfg := DefaultConfig()
		cfg.Policy = func() Policy { mu.Lock(); defer mu.Unlock(); return p }
		l := New(cfg, p, jobs, jobs)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = l.Run(ctx) }()
		defer func() { cancel(); <-done }()
		time.Sleep(time.Second)
		synctest.Wait()
		jobs.place("a", fakeGuest{owner: "m1"})
		mu.Lock()
		p.Mode = Never
		mu.Unlock()
		time.Sleep(32 * time.Second)
		synctest.Wait()
		if r := jobs.running(); len(r) != 0 || l.State().Why != "lend never" {
			t.Errorf("lend never: running %v, state %+v; want the guest stopped after the grace", r, l.State())
		}
	})
}

// TestLenderWarningWithdrawn: on a machine lent always, the switch on
// warns the guests, and off within the grace lends it again at once: the
// warning is taken back, nobody paused, nothing held.
func TestLenderWarningWithdrawn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jobs := newFakeJobs(time.Now)
		p := Policy{Mode: Always, AfterSeconds: 60, Yield: Pause, GraceSeconds: 60}
		l := runLender(t, p, jobs, func(context.Context) (bool, string) { return false, "" })
		synctest.Wait()
		if !jobs.place("a", fakeGuest{owner: "m1"}) {
			t.Fatal("no guest placed on a machine lent always")
		}
		l.SetUsing(true)
		synctest.Wait()
		if jobs.guests["a"].warnedAt.IsZero() {
			t.Fatal("switch on: the guest was not warned")
		}
		time.Sleep(10 * time.Second)
		l.SetUsing(false)
		synctest.Wait()
		if g := jobs.guests["a"]; !g.warnedAt.IsZero() || g.paused || len(jobs.heldBy()) != 0 {
			t.Errorf("switch off within the grace: guest %+v, held %+v; want the warning gone, nothing paused or held", g, jobs.heldBy())
		}
	})
}
