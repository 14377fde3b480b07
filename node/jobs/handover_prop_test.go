package jobs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// fakeNet carries offers between the agents of a test pool. It cuts and
// heals links, and loses answers (the offer is handled, its answer never
// comes back), as its seeded random source says.
type fakeNet struct {
	rng   *rand.Rand
	ms    []*machine
	cut   map[[2]int]bool // a pair of machines that cannot reach each other
	drop  float64         // the chance an answer is lost
	stale float64         // the chance a machine that does not fit looks as if it does (the replica lags)
	roles map[string]string
	// What happened, so that a run cannot pass without the faults it is
	// about: answers lost, restarts, offers delivered.
	lost, restarts, delivered int
}

func (n *fakeNet) index(id string) int {
	return slices.IndexFunc(n.ms, func(mc *machine) bool { return mc.id == id })
}

func (n *fakeNet) cutBetween(a, b int) bool {
	return n.cut[[2]int{min(a, b), max(a, b)}]
}

// wire gives the agent of machine i its view of the pool and its way to
// send offers (again after each restart).
func (n *fakeNet) wire(i int) {
	home := n.ms[i]
	home.m.cfg.Targets = func(spec Spec) []Target {
		var out []Target
		for k, x := range n.ms {
			if k == i {
				continue
			}
			free := x.gpus - len(x.m.Ledger().Granted())
			fits := free >= spec.GPUs || n.rng.Float64() < n.stale
			out = append(out, Target{Node: x.id, Name: x.id, Fits: fits, Why: fmt.Sprintf("has %d free", free)})
		}
		n.rng.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
		return out
	}
	home.m.cfg.Offer = func(ctx context.Context, node string, o Offer) (OfferAnswer, error) {
		k := n.index(node)
		if k < 0 || n.cutBetween(i, k) {
			return OfferAnswer{}, errors.New("no route to " + node)
		}
		ans, err := offerOver(ctx, n.ms[k].m, home.id, o)
		n.delivered++
		if err == nil && n.rng.Float64() < n.drop {
			n.lost++
			return OfferAnswer{}, errors.New("answer lost")
		}
		return ans, err
	}
}

// restart replaces machine i's agent by a new one over the same backend
// and store, as a crash and a start do.
func (n *fakeNet) restart(i int) {
	n.restarts++
	mc := n.ms[i]
	mc.rt = mc.rt.again()
	mc.m = mc.open(n.roles)
	n.wire(i)
}

// endOne ends a random running task of machine i.
func (n *fakeNet) endOne(ctx context.Context, i int) {
	mc := n.ms[i]
	var running []Job
	for _, j := range mc.m.List() {
		if j.State == Running {
			running = append(running, j)
		}
	}
	if len(running) == 0 {
		return
	}
	j := running[n.rng.IntN(len(running))]
	mc.rt.exit(j.Container, 0)
	for len(mc.rt.events) > 0 { // no Run loop reads them
		<-mc.rt.events
	}
	mc.m.refresh(ctx, j.ID, "")
}

// pass runs machine i's queue and hand-over once.
func (n *fakeNet) pass(ctx context.Context, i int) {
	n.ms[i].m.startQueued(ctx)
	n.ms[i].m.handOver(ctx)
}

// starts counts the starts of each job across the pool's backends.
func (n *fakeNet) starts() map[string]int {
	out := map[string]int{}
	for _, mc := range n.ms {
		mc.rt.mu.Lock()
		for _, t := range mc.rt.launches {
			out[t.Labels[LabelJob]]++
		}
		mc.rt.mu.Unlock()
	}
	return out
}

// TestHandOverProperty: six machines run the real hand-over over a network
// that partitions, heals, loses answers and restarts agents at random, while
// members queue jobs pool-wide and jobs end. Whatever the seed: no job ever
// starts twice, none is lost, and once the network heals every queued job
// starts.
func TestHandOverProperty(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 20
	}
	var lost, restarts, moved int
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			n := handOverRun(t, uint64(seed))
			lost, restarts = lost+n.lost, restarts+n.restarts
			for _, mc := range n.ms {
				for _, j := range mc.m.List() {
					if j.State == Moved {
						moved++
					}
				}
			}
		})
	}
	t.Logf("%d seeds: %d jobs handed over, %d answers lost, %d agent restarts", seeds, moved, lost, restarts)
	if moved == 0 || lost == 0 || restarts == 0 {
		t.Errorf("the runs handed over %d jobs, lost %d answers, restarted %d agents: want some of each", moved, lost, restarts)
	}
}

func handOverRun(t *testing.T, seed uint64) *fakeNet {
	ctx := context.Background()
	type owner struct {
		s  LaunchSigner
		id string
	}
	var owners []owner
	roles := map[string]string{}
	for k := range 3 {
		s, id := testSigner(byte(10 + k))
		owners = append(owners, owner{s, id})
		roles[id] = RoleMember
	}
	n := &fakeNet{rng: rand.New(rand.NewPCG(seed, 0x9e3779b9)), cut: map[[2]int]bool{}, drop: 0.3, stale: 0.2, roles: roles}
	for i := range 6 {
		id := fmt.Sprintf("M%d", i)
		roles[id] = RoleMember
		n.ms = append(n.ms, newMachine(t, id, 1+i%3, roles))
	}
	for i, mc := range n.ms {
		n.wire(i)
		if _, err := mc.m.Submit(ctx, Caller{ID: mc.id}, Spec{Image: "own", GPUs: mc.gpus}); err != nil { // every machine starts full
			t.Fatal(err)
		}
	}
	homes := map[string]string{} // job -> its home
	for range 400 {
		i := n.rng.IntN(len(n.ms))
		switch r := n.rng.IntN(100); {
		case r < 10:
			n.cut[[2]int{min(i, (i+1+n.rng.IntN(5))%6), max(i, (i+1+n.rng.IntN(5))%6)}] = true
		case r < 20:
			for _, k := range slices.SortedFunc(maps.Keys(n.cut), func(a, b [2]int) int { return a[0]*6 + a[1] - b[0]*6 - b[1] }) {
				if n.rng.IntN(2) == 0 { // in a fixed order: the seed decides
					delete(n.cut, k)
				}
			}
		case r < 27:
			n.restart(i)
		case r < 40:
			n.endOne(ctx, i)
		case r < 55:
			o := owners[n.rng.IntN(len(owners))]
			spec := anywhereSpec(1 + n.rng.IntN(n.ms[i].gpus)) // the planner picks a home that has that many
			spec.Name = fmt.Sprintf("j%d", len(homes))
			proof, err := o.s.Prove(n.ms[i].id, spec)
			if err != nil {
				t.Fatal(err)
			}
			j, err := n.ms[i].m.SubmitProven(ctx, member(o.id), spec, proof)
			if err != nil {
				t.Fatalf("queue on %s: %v", n.ms[i].id, err)
			}
			homes[j.ID] = n.ms[i].id
		default:
			n.pass(ctx, i)
		}
		for id, c := range n.starts() {
			if c > 1 {
				t.Fatalf("job %s started %d times", id, c)
			}
		}
	}
	// The network heals and stays up: every queued job starts, once.
	clear(n.cut)
	n.drop, n.stale = 0, 0
	for round := 0; round < 200 && !settled(n, homes); round++ {
		i := round % len(n.ms)
		n.endOne(ctx, i)
		n.pass(ctx, i)
	}
	starts := n.starts()
	for id, home := range homes {
		if starts[id] != 1 {
			h := n.ms[n.index(home)].m
			j, err := h.Get(id)
			t.Errorf("job %s of %s started %d times after the heal; at home: %s offered to %q moved to %q fence %d (%v)",
				id, home, starts[id], j.State, j.OfferedTo, j.MovedTo, j.Fence, err)
		}
		if !located(n, id, home) {
			t.Errorf("job %s of %s is lost: no machine's record runs it", id, home)
		}
	}
	return n
}

// settled says whether every job in homes started somewhere and its home
// knows where (no offer outstanding).
func settled(n *fakeNet, homes map[string]string) bool {
	s := n.starts()
	for id, home := range homes {
		if s[id] == 0 || !located(n, id, home) {
			return false
		}
	}
	return true
}

// located says whether job id is recorded where it runs: at home, or moved
// to a machine whose record of it came from home.
func located(n *fakeNet, id, home string) bool {
	j, err := n.ms[n.index(home)].m.Get(id)
	if err != nil {
		return false
	}
	if j.State != Moved {
		return j.State != Queued
	}
	x, err := n.ms[n.index(j.MovedTo)].m.Get(id)
	return err == nil && x.Home == home
}
