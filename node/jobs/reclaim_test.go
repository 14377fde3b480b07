package jobs

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/gpu"
)

// reclaimRig is a manager running the reclaim loop over two GPUs whose
// utilization the test sets, with one job of alice holding GPU 0.
type reclaimRig struct {
	m    *Manager
	rt   *fakeRuntime
	gpus *fakeGPUState
	job  string
}

func newReclaimRig(t *testing.T, p Policy) *reclaimRig {
	t.Helper()
	r := &reclaimRig{rt: newFakeRuntime(), gpus: &fakeGPUState{gpus: fakeGPUs(2)}}
	r.m = startManager(t, r.rt, r.gpus, &memStore{}, nil)
	if err := r.m.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	j, err := r.m.Submit(context.Background(), member("alice"), Spec{Image: "img", GPUIDs: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, r.m, j.ID, Running)
	r.job = j.ID
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.m.RunReclaim(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunReclaim: %v", err)
		}
	})
	return r
}

// util sets GPU 0's utilization (GPU 1 stays at 0).
func (r *reclaimRig) util(v float64) {
	gs := fakeGPUs(2)
	gs[0].UtilPercent = v
	r.gpus.set(gs)
}

func (r *reclaimRig) get(t *testing.T) Job {
	t.Helper()
	synctest.Wait()
	j, err := r.m.Get(r.job)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func reclaimPolicy(secs int) Policy {
	p := DefaultPolicy()
	p.IdleReclaimSeconds, p.IdleBelowPercent = secs, 5
	return p
}

func TestReclaimOffByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReclaimRig(t, DefaultPolicy())
		r.util(0)
		time.Sleep(24 * time.Hour)
		if j := r.get(t); j.State != Running || j.ReclaimAt != nil {
			t.Fatalf("with no reclaim policy an idle job is %s, reclaim at %v", j.State, j.ReclaimAt)
		}
	})
}

func TestReclaimWarnsThenStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReclaimRig(t, reclaimPolicy(2*3600))
		r.util(1)
		start := time.Now()
		time.Sleep(89 * time.Minute)
		if j := r.get(t); j.ReclaimAt != nil {
			t.Fatalf("warned after 89 min idle; the warning comes 30 min before the 2 h")
		}
		time.Sleep(2 * time.Minute)
		j := r.get(t)
		if j.State != Running || j.ReclaimAt == nil {
			t.Fatalf("after 91 min idle: %s, reclaim at %v; want running with a countdown", j.State, j.ReclaimAt)
		}
		if want := start.Add(2 * time.Hour); j.ReclaimAt.Sub(want).Abs() > 2*time.Second {
			t.Errorf("reclaim at %v, want about %v (2 h after the GPUs went idle)", j.ReclaimAt, want)
		}
		time.Sleep(j.ReclaimAt.Sub(time.Now()) + 2*time.Second)
		j = r.get(t)
		if j.State != Exited || j.Error != "stopped: GPUs idle under 5% for 2h (idle reclaim policy)" {
			t.Fatalf("after the countdown: %s %q; want exited, saying why", j.State, j.Error)
		}
		if j.ReclaimAt != nil || r.rt.count("Stop") != 1 {
			t.Errorf("reclaim at %v, %d stops", j.ReclaimAt, r.rt.count("Stop"))
		}
		if len(r.m.Ledger().Granted()) != 0 {
			t.Errorf("the reclaimed job's GPUs are still granted: %v", r.m.Ledger().Granted())
		}
	})
}

func TestReclaimCountdownEndsWhenBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReclaimRig(t, reclaimPolicy(3600))
		r.util(0)
		time.Sleep(50 * time.Minute)
		if j := r.get(t); j.ReclaimAt == nil {
			t.Fatalf("no countdown after 50 min idle of 1 h (grace 15 min)")
		}
		r.util(80)
		time.Sleep(3 * time.Second)
		if j := r.get(t); j.ReclaimAt != nil || j.State != Running {
			t.Fatalf("GPUs busy again: reclaim at %v, %s; want the countdown gone", j.ReclaimAt, j.State)
		}
		// Idle again: a full hour from now.
		r.util(0)
		time.Sleep(59 * time.Minute)
		if j := r.get(t); j.State != Running {
			t.Fatalf("stopped %v after idling again; the policy's hour starts over", time.Minute*59)
		}
		time.Sleep(2 * time.Minute)
		if j := r.get(t); j.State != Exited || !reclaimed(j.Error) {
			t.Fatalf("after a full idle hour: %s %q", j.State, j.Error)
		}
	})
}

func TestReclaimSparesBusyAndUnknownGPUs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReclaimRig(t, reclaimPolicy(600))
		r.util(50)
		time.Sleep(time.Hour)
		if j := r.get(t); j.State != Running || j.ReclaimAt != nil {
			t.Fatalf("a busy job: %s, reclaim at %v", j.State, j.ReclaimAt)
		}
		r.gpus.set([]gpu.Stats{}) // the GPU vanished from the sample: nothing is known
		time.Sleep(time.Hour)
		if j := r.get(t); j.State != Running {
			t.Fatalf("a job whose GPU reads nothing was reclaimed")
		}
	})
}

func TestReclaimPolicyCheck(t *testing.T) {
	for _, tt := range []struct {
		secs  int
		below float64
		ok    bool
	}{{0, 5, true}, {7200, 5, true}, {5, 5, false}, {-1, 5, false}, {3600, 0, false}, {3600, 101, false}, {31 * 24 * 3600, 5, false}} {
		p := DefaultPolicy()
		p.IdleReclaimSeconds, p.IdleBelowPercent = tt.secs, tt.below
		if err := p.Check(); (err == nil) != tt.ok {
			t.Errorf("idle reclaim %ds below %g%%: Check = %v, want ok %v", tt.secs, tt.below, err, tt.ok)
		}
	}
	if got := reclaimWhy(Policy{IdleReclaimSeconds: 5400, IdleBelowPercent: 2.5}); got != "stopped: GPUs idle under 2.5% for 1h30m (idle reclaim policy)" {
		t.Errorf("reclaimWhy = %q", got)
	}
}
