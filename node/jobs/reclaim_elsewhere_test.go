package jobs

import (
	"context"
	"sync"
	"testing"
	"time"
)

// remoteJudge is a Config.RemoteIdle whose answer the test sets, and which
// keeps the jobs it was asked about.
type remoteJudge struct {
	mu    sync.Mutex // guards the fields below
	idle  bool
	asked [][]string
	below float64
}

func (r *remoteJudge) judge(_ time.Time, js []Job, below float64) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	out := map[string]bool{}
	for _, j := range js {
		ids = append(ids, j.ID)
		out[j.ID] = r.idle
	}
	r.asked, r.below = append(r.asked, ids), below
	return out
}

func (r *remoteJudge) set(idle bool) {
	r.mu.Lock()
	r.idle = idle
	r.mu.Unlock()
}

// TestReclaimElsewhere: on a cluster's agent the idle reclaim policy
// counts down and stops a running Slurm job (no GPU of this machine) by
// RemoteIdle's word, with the reason a Docker job's reclaim gives; the
// countdown goes away when the word is "busy".
func TestReclaimElsewhere(t *testing.T) {
	m, rt, _ := clusterManager(t)
	judge := &remoteJudge{}
	m.cfg.RemoteIdle = judge.judge // before any step reads it
	if err := m.SetPolicy(reclaimPolicy(3600)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	j, err := m.Submit(ctx, member("alice"), Spec{Cmd: []string{"train"}, GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	rt.set(j.Container, TaskRunning, 0, "node1")
	waitState(t, m, j.ID, Running)
	idle := map[string]time.Time{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	get := func() Job {
		t.Helper()
		got, err := m.Get(j.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	judge.set(true)
	m.reclaimStep(ctx, t0, idle)
	m.reclaimStep(ctx, t0.Add(44*time.Minute), idle)
	if got := get(); got.ReclaimAt != nil {
		t.Fatalf("countdown after 44 min idle of 1 h (grace 15 min): %v", got.ReclaimAt)
	}
	m.reclaimStep(ctx, t0.Add(46*time.Minute), idle)
	got := get()
	if got.ReclaimAt == nil || !got.ReclaimAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after 46 min idle: reclaim at %v; want %v", got.ReclaimAt, t0.Add(time.Hour))
	}
	judge.set(false)
	m.reclaimStep(ctx, t0.Add(47*time.Minute), idle)
	if got := get(); got.ReclaimAt != nil || got.State != Running {
		t.Fatalf("busy again: %s, reclaim at %v; want running without a countdown", got.State, got.ReclaimAt)
	}

	judge.set(true)
	t1 := t0.Add(48 * time.Minute)
	m.reclaimStep(ctx, t1, idle)
	m.reclaimStep(ctx, t1.Add(46*time.Minute), idle)
	if got := get(); got.ReclaimAt == nil || !got.ReclaimAt.Equal(t1.Add(time.Hour)) {
		t.Fatalf("idle again: reclaim at %v; want %v (the idle stretch starts over)", got.ReclaimAt, t1.Add(time.Hour))
	}
	m.reclaimStep(ctx, t1.Add(time.Hour), idle)
	got = waitState(t, m, j.ID, Exited)
	if got.Error != "stopped: GPUs idle under 5% for 1h (idle reclaim policy)" || got.ReclaimAt != nil {
		t.Errorf("reclaimed job: %q, reclaim at %v; want the idle reclaim reason", got.Error, got.ReclaimAt)
	}
	if n := rt.count("Stop"); n != 1 {
		t.Errorf("%d stops (scancel), want 1", n)
	}
	judge.mu.Lock()
	defer judge.mu.Unlock()
	if len(judge.asked) == 0 || len(judge.asked[0]) != 1 || judge.asked[0][0] != j.ID || judge.below != 5 {
		t.Errorf("RemoteIdle asked about %v under %g%%; want the running job under 5%%", judge.asked, judge.below)
	}
}

// TestReclaimElsewhereOff: with the policy off RemoteIdle is not asked, and
// a countdown left from before goes away.
func TestReclaimElsewhereOff(t *testing.T) {
	m, rt, _ := clusterManager(t)
	judge := &remoteJudge{idle: true}
	m.cfg.RemoteIdle = judge.judge
	if err := m.SetPolicy(reclaimPolicy(3600)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	j, err := m.Submit(ctx, member("alice"), Spec{Cmd: []string{"train"}, GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	rt.set(j.Container, TaskRunning, 0, "node1")
	waitState(t, m, j.ID, Running)
	idle := map[string]time.Time{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.reclaimStep(ctx, t0, idle)
	m.reclaimStep(ctx, t0.Add(50*time.Minute), idle)
	if got, _ := m.Get(j.ID); got.ReclaimAt == nil {
		t.Fatal("no countdown after 50 min idle of 1 h")
	}
	if err := m.SetPolicy(DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	judge.mu.Lock()
	asked := len(judge.asked)
	judge.mu.Unlock()
	m.reclaimStep(ctx, t0.Add(51*time.Minute), idle)
	if got, _ := m.Get(j.ID); got.ReclaimAt != nil || got.State != Running {
		t.Errorf("policy off: %s, reclaim at %v; want running without a countdown", got.State, got.ReclaimAt)
	}
	judge.mu.Lock()
	defer judge.mu.Unlock()
	if len(judge.asked) != asked {
		t.Errorf("RemoteIdle asked with the policy off")
	}
}
