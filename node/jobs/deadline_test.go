package jobs

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/alloc"
	reservation "github.com/labpool/labpool/node/reserve"
)

// deadlineRig is a manager running its once-a-second loop over two fake
// GPUs, with one running job of alice.
type deadlineRig struct {
	m   *Manager
	rt  *fakeRuntime
	job string
}

func newDeadlineRig(t *testing.T, spec Spec) *deadlineRig {
	t.Helper()
	r := &deadlineRig{rt: newFakeRuntime()}
	r.m = startManager(t, r.rt, &fakeGPUState{gpus: fakeGPUs(2)}, &memStore{}, nil)
	j, err := r.m.Submit(context.Background(), member("alice"), spec)
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

func (r *deadlineRig) get(t *testing.T) Job {
	t.Helper()
	synctest.Wait()
	j, err := r.m.Get(r.job)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestContainerTimeLimit: `run --time 2h` on a Docker machine: the node
// stops the container at its limit, and the job ends timed out, as a
// cluster's does.
func TestContainerTimeLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newDeadlineRig(t, Spec{Image: "img", GPUs: 1, TimeLimitSeconds: 2 * 3600})
		time.Sleep(2*time.Hour - 2*time.Second)
		if j := r.get(t); j.State != Running || r.rt.count("Stop") != 0 {
			t.Fatalf("before its limit: %s, %d stops", j.State, r.rt.count("Stop"))
		}
		time.Sleep(4 * time.Second)
		j := r.get(t)
		if j.State != Failed || j.Outcome != "timed_out" || j.Error != "reached its time limit of 2h" {
			t.Fatalf("after its limit: %s %q %q; want failed, timed_out", j.State, j.Outcome, j.Error)
		}
		if r.rt.count("Stop") != 1 || len(r.m.Ledger().Granted()) != 0 {
			t.Errorf("%d stops, GPUs granted %v", r.rt.count("Stop"), r.m.Ledger().Granted())
		}
	})
}

// TestReservationStopsOthersJobs: a reservation for bob of alice's job's
// GPU: alice's job is told 15 min ahead (StopAt, StopWhy) and stopped at
// the start, on purpose (no failure); bob's own job on the GPU, and a job
// whose time limit ends before the start, are left alone.
func TestReservationStopsOthersJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newDeadlineRig(t, Spec{Image: "img", GPUIDs: []int{0}})
		start := time.Now().Add(time.Hour)
		r.m.Ledger().SetHeld("reservations", []alloc.Grant{{
			Holder: alloc.Holder{Kind: alloc.Reservation, ID: "rsv-1", Member: "bob"},
			Units:  []string{"GPU-0000"}, From: start, Until: start.Add(3 * time.Hour)}})
		time.Sleep(44 * time.Minute)
		if j := r.get(t); j.StopAt != nil {
			t.Fatalf("told 16 min ahead; the policy says 15")
		}
		time.Sleep(2 * time.Minute)
		j := r.get(t)
		if j.State != Running || j.StopAt == nil || !j.StopAt.Equal(start.UTC()) || !strings.Contains(j.StopWhy, "rsv-1") {
			t.Fatalf("14 min ahead: %s, stop at %v (%q); want told of rsv-1 at %v", j.State, j.StopAt, j.StopWhy, start)
		}
		time.Sleep(time.Until(start) + 2*time.Second)
		j = r.get(t)
		if j.State != Exited || !strings.HasSuffix(j.Error, reservedSuffix) || j.StopAt != nil {
			t.Fatalf("at the start: %s %q, stop at %v; want exited on purpose", j.State, j.Error, j.StopAt)
		}
	})
}

func TestReservationSparesOwnAndEndingJobs(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		member string
	}{
		{"the reservation's own member", Spec{Image: "img", GPUIDs: []int{0}}, "alice"},
		{"ends before the start", Spec{Image: "img", GPUIDs: []int{0}, TimeLimitSeconds: 3000}, "bob"},
		{"other GPUs", Spec{Image: "img", GPUIDs: []int{1}}, "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newDeadlineRig(t, tt.spec)
				start := time.Now().Add(time.Hour)
				r.m.Ledger().SetHeld("reservations", []alloc.Grant{{
					Holder: alloc.Holder{Kind: alloc.Reservation, ID: "rsv-1", Member: tt.member},
					Units:  []string{"GPU-0000"}, From: start, Until: start.Add(3 * time.Hour)}})
				time.Sleep(50 * time.Minute)
				if j := r.get(t); j.StopAt != nil {
					t.Errorf("told %q; want no notice", j.StopWhy)
				}
				time.Sleep(15 * time.Minute)
				if j := r.get(t); strings.HasSuffix(j.Error, reservedSuffix) {
					t.Errorf("stopped for the reservation: %s %q", j.State, j.Error)
				}
			})
		})
	}
}

// A reservation cancelled after the notice: the notice goes away.
func TestReservationNoticeWithdrawn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newDeadlineRig(t, Spec{Image: "img", GPUIDs: []int{0}})
		start := time.Now().Add(10 * time.Minute)
		r.m.Ledger().SetHeld("reservations", []alloc.Grant{{
			Holder: alloc.Holder{Kind: alloc.Reservation, ID: "rsv-1", Member: "bob"},
			Units:  []string{"GPU-0000"}, From: start, Until: start.Add(time.Hour)}})
		time.Sleep(2 * time.Second)
		if j := r.get(t); j.StopAt == nil {
			t.Fatal("no notice 10 min ahead")
		}
		r.m.Ledger().SetHeld("reservations", nil)
		time.Sleep(time.Hour)
		if j := r.get(t); j.StopAt != nil || j.State != Running {
			t.Fatalf("after the cancel: %s, stop at %v", j.State, j.StopAt)
		}
	})
}

// TestReservationRequeues: with the policy's "requeue", a job with a
// restart policy on a reserved GPU goes back to the queue at the
// reservation's start instead of being stopped; the queue grants it no
// GPU of the reservation while it lasts: by index it waits until the
// reservation ends, by count it restarts on another GPU. A job with no
// restart policy is stopped as before.
func TestReservationRequeues(t *testing.T) {
	tests := []struct {
		name  string
		spec  Spec
		other bool // restarts on GPU 1 at once; else waits for the end
		stop  bool // no restart policy: stopped
	}{
		{"by index: waits for the end", Spec{Image: "img", GPUIDs: []int{0}, ContainerSpec: ContainerSpec{Restart: "on-failure"}}, false, false},
		{"by count: another GPU", Spec{Image: "img", GPUs: 1, ContainerSpec: ContainerSpec{Restart: "on-failure"}}, true, false},
		{"no restart policy: stopped", Spec{Image: "img", GPUIDs: []int{0}}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newDeadlineRig(t, tt.spec)
				p := r.m.Policy()
				p.Reserve.AtStart = reservation.AtStartRequeue
				if err := r.m.SetPolicy(p); err != nil {
					t.Fatal(err)
				}
				held := r.get(t).GPUs
				start := time.Now().Add(time.Hour)
				r.m.Ledger().SetHeld("reservations", []alloc.Grant{{
					Holder: alloc.Holder{Kind: alloc.Reservation, ID: "rsv-1", Member: "bob"},
					Units:  held, From: start, Until: start.Add(3 * time.Hour)}})
				old := r.get(t).Container
				time.Sleep(50 * time.Minute)
				if j, want := r.get(t), map[bool]string{true: "stopped: ", false: requeuedPrefix}[tt.stop]; !strings.HasPrefix(j.StopWhy, want) {
					t.Errorf("told ahead %q; want it to start %q", j.StopWhy, want)
				}
				time.Sleep(time.Until(start) + 2*time.Second)
				j := r.get(t)
				switch {
				case tt.stop:
					if j.State != Exited || !strings.HasSuffix(j.Error, reservedSuffix) {
						t.Fatalf("at the start: %s %q; want stopped", j.State, j.Error)
					}
					return
				case tt.other:
					if j.State != Running || j.Container == old || slices.Equal(j.GPUs, held) {
						t.Fatalf("at the start: %s on %v (task %s); want running again on another GPU than %v", j.State, j.GPUs, j.Container, held)
					}
					return
				}
				if j.State != Queued || j.Container != "" || len(j.GPUs) != 0 || !strings.HasPrefix(j.Error, requeuedPrefix+"its GPUs are reserved for bob") {
					t.Fatalf("at the start: %s %q on %v; want queued again, saying why", j.State, j.Error, j.GPUs)
				}
				if r.rt.count("Remove") == 0 || r.m.Ledger().Granted()[held[0]] != "" {
					t.Errorf("the old task was not removed, or the GPU is still granted: %v", r.m.Ledger().Granted())
				}
				time.Sleep(2*time.Hour + 50*time.Minute)
				if j := r.get(t); j.State != Queued {
					t.Fatalf("inside the reservation: %s on %v; want still queued", j.State, j.GPUs)
				}
				time.Sleep(20 * time.Minute)
				if j := r.get(t); j.State != Running || !slices.Equal(j.GPUs, held) {
					t.Errorf("after the reservation: %s on %v; want running on %v", j.State, j.GPUs, held)
				}
			})
		})
	}
}
