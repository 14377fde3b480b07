package jobs

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestQueueOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(id, owner string, min int) Job {
		return Job{ID: id, Owner: owner, Created: t0.Add(time.Duration(min) * time.Minute)}
	}
	tests := []struct {
		name   string
		queued []Job
		served map[string]time.Time
		usage  map[string]float64
		want   string
	}{
		{"fifo one owner", []Job{job("a2", "a", 2), job("a1", "a", 1), job("a3", "a", 3)}, nil, nil, "a1 a2 a3"},
		{"round robin", []Job{job("a1", "a", 1), job("a2", "a", 2), job("a3", "a", 3), job("b1", "b", 4), job("c1", "c", 5), job("b2", "b", 6)},
			nil, nil, "a1 b1 c1 a2 b2 a3"},
		{"served last goes last", []Job{job("a1", "a", 1), job("b1", "b", 2)},
			map[string]time.Time{"a": t0.Add(time.Hour)}, nil, "b1 a1"},
		{"never served first", []Job{job("a1", "a", 1), job("b1", "b", 2), job("c1", "c", 3)},
			map[string]time.Time{"a": t0, "b": t0.Add(time.Minute)}, nil, "c1 a1 b1"},
		// Pool-wide: b used more GPU-hours across the pool, so a goes
		// first, though a was served here last.
		{"less pool-wide use first", []Job{job("a1", "a", 1), job("b1", "b", 2), job("a2", "a", 3)},
			map[string]time.Time{"a": t0.Add(time.Hour)}, map[string]float64{"b": 3.5, "a": 0.5}, "a1 b1 a2"},
		{"usage before served", []Job{job("a1", "a", 1), job("b1", "b", 2)},
			map[string]time.Time{"b": t0.Add(time.Hour)}, map[string]float64{"a": 10}, "b1 a1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ids []string
			for _, j := range queueOrder(tt.queued, tt.usage, tt.served, func(id string) string { return id }) {
				ids = append(ids, j.ID)
			}
			if got := strings.Join(ids, " "); got != tt.want {
				t.Errorf("order %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDecayedUsage: GPU-hours fade with a half-life from when a job ended;
// a running job counts in full; a record with no proven owner counts for
// nobody.
func TestDecayedUsage(t *testing.T) {
	now := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	ended := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	js := []Job{
		{Owner: "a", GPUSeconds: 4 * 3600},                                 // running: 4
		{Owner: "a", GPUSeconds: 8 * 3600, Finished: ended(UsageHalfLife)}, // a week ago: 4
		{Owner: "b", GPUSeconds: 16 * 3600, Finished: ended(2 * UsageHalfLife)},
		{Owner: "", GPUSeconds: 1000 * 3600}, // unverified: nobody's
		{Owner: "c", GPUSeconds: -5},         // nonsense from a peer: nothing
	}
	got := DecayedUsage(js, now, UsageHalfLife, nil)
	want := map[string]float64{"a": 8, "b": 4}
	if len(got) != len(want) {
		t.Fatalf("usage %v, want %v", got, want)
	}
	for o, w := range want {
		if d := got[o] - w; d > 1e-9 || d < -1e-9 {
			t.Errorf("usage of %s = %v, want %v", o, got[o], w)
		}
	}
}

// TestFairQueue: with one owner's long queue ahead, another owner's job
// starts first once a GPU frees up, then the owners alternate.
func TestFairQueue(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 1, &memStore{})
	ctx := context.Background()
	run, err := m.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	var alice []Job
	for range 3 {
		j, _ := m.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 1, Queue: true})
		alice = append(alice, j)
	}
	bob, _ := m.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1, Queue: true})
	rt.exit(run.Container, 0)
	b := waitState(t, m, bob.ID, Running)
	if j, _ := m.Get(alice[0].ID); j.State != Queued {
		t.Errorf("alice's first queued job is %s, want bob's to start first", j.State)
	}
	rt.exit(b.Container, 0)
	a := waitState(t, m, alice[0].ID, Running)
	rt.exit(a.Container, 0)
	waitState(t, m, alice[1].ID, Running)
	if j, _ := m.Get(alice[2].ID); j.State != Queued {
		t.Errorf("alice's third job is %s, want queued", j.State)
	}
}

// TestQueueBackfillAndStarvation: a big job that does not fit does not
// block a smaller one behind it; once it has waited past StarveAfter, the
// GPUs that free up are kept for it.
func TestQueueBackfillAndStarvation(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 2, &memStore{})
	ctx := context.Background()
	hold, _ := m.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 1})
	big, _ := m.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 2, Queue: true})
	small, err := m.Submit(ctx, member("carol"), Spec{Image: "img", GPUs: 1, Queue: true})
	if err != nil || small.State != Running {
		t.Fatalf("a small job behind a big one: %+v %v", small, err)
	}
	if j, _ := m.Get(big.ID); j.State != Queued || !strings.Contains(j.Error, "waiting for GPUs") {
		t.Fatalf("big job: %s %q", j.State, j.Error)
	}
	// The big job has now waited too long: what frees up is kept for it.
	m.mu.Lock()
	m.jobs[big.ID].Created = time.Now().Add(-time.Hour)
	m.mu.Unlock()
	rt.exit(hold.Container, 0)
	waitState(t, m, hold.ID, Exited)
	late, err := m.Submit(ctx, member("dave"), Spec{Image: "img", GPUs: 1, Queue: true})
	if err != nil || late.State != Queued {
		t.Fatalf("a new job took a GPU reserved for a starving one: %+v %v", late, err)
	}
	if _, err := m.Submit(ctx, member("dave"), Spec{Image: "img", GPUs: 1}); err == nil {
		t.Fatalf("a new unqueued job took a GPU reserved for a starving one")
	}
	s, _ := m.Get(small.ID)
	rt.exit(s.Container, 0)
	waitState(t, m, big.ID, Running)
	if j, _ := m.Get(late.ID); j.State != Queued {
		t.Errorf("the late job is %s while the big one holds every GPU", j.State)
	}
}

// TestStopQueued: a stopped queued job never starts, and a removed one
// neither.
func TestStopQueued(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 1, &memStore{})
	ctx := context.Background()
	run, _ := m.Submit(ctx, member("a"), Spec{Image: "img", GPUs: 1})
	q1, _ := m.Submit(ctx, member("a"), Spec{Image: "img", GPUs: 1, Queue: true})
	q2, _ := m.Submit(ctx, member("a"), Spec{Image: "img", GPUs: 1, Queue: true})
	if j, err := m.Stop(ctx, q1.ID); err != nil || j.State != Exited {
		t.Fatalf("stop queued: %+v %v", j, err)
	}
	if err := m.Remove(ctx, q2.ID, false); err != nil {
		t.Fatal(err)
	}
	rt.exit(run.Container, 0)
	waitState(t, m, run.ID, Exited)
	m.startQueued(ctx)
	if n := rt.count("Start"); n != 1 {
		t.Errorf("%d tasks started, want only the first job's", n)
	}
	if j, _ := m.Get(q2.ID); j.State != Exited || !j.Removed {
		t.Errorf("removed queued job: %s removed=%v", j.State, j.Removed)
	}
}

// TestPoolWideFairness: the member who used fewer GPU-hours across the pool
// starts first, though the other queued first and neither was served here.
func TestPoolWideFairness(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	cfg := DefaultConfig()
	cfg.Node = "NODE"
	cfg.Usage = func() map[string]float64 { return map[string]float64{"alice": 120, "bob": 3} }
	m := NewManager(cfg, rt, fixedGPUs(fakeGPUs(1)), nil, st, testLog())
	ctx := context.Background()
	run, err := m.Submit(ctx, Caller{ID: "NODE"}, Spec{Image: "img", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := m.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 1, Queue: true})
	bob, _ := m.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1, Queue: true})
	rt.exit(run.Container, 0)
	m.refresh(ctx, run.ID, "")
	m.startQueued(ctx)
	if b, _ := m.Get(bob.ID); b.State != Running {
		t.Errorf("bob's job is %s, want running: he used fewer GPU-hours across the pool", b.State)
	}
	if a, _ := m.Get(alice.ID); a.State != Queued {
		t.Errorf("alice's job is %s, want queued", a.State)
	}
}
