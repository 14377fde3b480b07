package jobs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/lend"
)

// pausingRuntime is the fake executor with docker pause: a task that
// ignores its pause stays unpaused and the pause fails, as the container
// executor's does (containers.ErrNotPaused).
type pausingRuntime struct {
	*fakeRuntime
	mu      sync.Mutex
	paused  map[string]bool
	ignores bool
}

func (p *pausingRuntime) Pause(_ context.Context, id string) error {
	p.call("Pause")
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ignores {
		return errors.New("the container runs on after its pause")
	}
	p.paused[id] = true
	return nil
}

func (p *pausingRuntime) Unpause(_ context.Context, id string) error {
	p.call("Unpause")
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.paused, id)
	return nil
}

// lendRig is a manager over a pausing runtime and two GPUs.
type lendRig struct {
	m    *Manager
	rt   *pausingRuntime
	gpus *fakeGPUState
}

func newLendRig(t *testing.T) *lendRig {
	t.Helper()
	r := &lendRig{rt: &pausingRuntime{fakeRuntime: newFakeRuntime(), paused: map[string]bool{}}, gpus: &fakeGPUState{gpus: fakeGPUs(2)}}
	cfg := DefaultConfig()
	cfg.Node = "NODE"
	r.m = NewManager(cfg, r.rt, r.gpus, nil, &memStore{}, testLog())
	listed := r.rt.count("List")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	eventually(t, "the first adoption", func() bool { return r.rt.count("List") > listed })
	return r
}

func (r *lendRig) submit(t *testing.T, c Caller, spec Spec) Job {
	t.Helper()
	j, err := r.m.Submit(context.Background(), c, spec)
	if err != nil {
		t.Fatal(err)
	}
	return waitState(t, r.m, j.ID, Running)
}

// TestLendGuests: the guests are others' running jobs, never the
// machine's own user's; a warning, a pause and a resume each show in the
// job's record, which the guest's owner reads.
func TestLendGuests(t *testing.T) {
	r := newLendRig(t)
	ctx := context.Background()
	own := r.submit(t, Caller{ID: "NODE"}, Spec{Image: "img", GPUIDs: []int{1}})
	guest := r.submit(t, member("alice"), Spec{Image: "img", GPUIDs: []int{0}})
	gs := r.m.LendGuests()
	if len(gs) != 1 || gs[0].ID != guest.ID || gs[0].Owner != "alice" {
		t.Fatalf("guests %+v; want alice's job alone (not %s, the machine's own)", gs, own.ID)
	}
	at := time.Now().Add(10 * time.Minute)
	if err := r.m.LendWarn(ctx, guest.ID, at, "owner present: I'm using it"); err != nil {
		t.Fatal(err)
	}
	if j, _ := r.m.Get(guest.ID); j.Lend == nil || !j.Lend.At.Equal(at.UTC()) || j.Lend.Paused {
		t.Errorf("warned job's lend note %+v; want its deadline", j.Lend)
	}
	if err := r.m.LendPause(ctx, guest.ID, "the machine's owner took it back: owner present: I'm using it"); err != nil {
		t.Fatal(err)
	}
	if gs := r.m.LendGuests(); len(gs) != 1 || !gs[0].Paused || !r.rt.paused[guest.Container] {
		t.Errorf("after the pause: guests %+v, task paused %v", gs, r.rt.paused[guest.Container])
	}
	if err := r.m.LendResume(ctx, guest.ID); err != nil {
		t.Fatal(err)
	}
	if j, _ := r.m.Get(guest.ID); j.Lend != nil || r.rt.paused[guest.Container] || j.State != Running {
		t.Errorf("resumed: state %s, lend %+v, task paused %v", j.State, j.Lend, r.rt.paused[guest.Container])
	}
	// Warned, then lent again before the grace ended: the warning goes,
	// and no unpause is asked of a container that runs.
	unpauses := r.rt.count("Unpause")
	if err := r.m.LendWarn(ctx, guest.ID, at, "owner present: I'm using it"); err != nil {
		t.Fatal(err)
	}
	if err := r.m.LendResume(ctx, guest.ID); err != nil {
		t.Fatal(err)
	}
	if j, _ := r.m.Get(guest.ID); j.Lend != nil || r.rt.count("Unpause") != unpauses {
		t.Errorf("warning taken back: lend %+v, unpauses %d -> %d; want no note and no unpause", j.Lend, unpauses, r.rt.count("Unpause"))
	}
	if err := r.m.LendWarn(ctx, own.ID, at, "x"); err == nil {
		t.Error("the machine's own job was warned as a guest")
	}
}

// TestLendGuestIgnoresPause is the attack at the executor's edge: a
// container that runs on after its pause makes LendPause fail, so the
// lender stops it; it is stopped at once, and not restarted.
func TestLendGuestIgnoresPause(t *testing.T) {
	r := newLendRig(t)
	r.rt.ignores = true
	ctx := context.Background()
	guest := r.submit(t, member("alice"), Spec{Image: "img", GPUIDs: []int{0}})
	if err := r.m.LendPause(ctx, guest.ID, "owner present"); err == nil {
		t.Fatal("a guest that ignored its pause is said paused")
	}
	if err := r.m.LendVacate(ctx, guest.ID, "the machine's owner took it back: owner present"); err != nil {
		t.Fatal(err)
	}
	j := waitState(t, r.m, guest.ID, Exited)
	if !strings.HasSuffix(j.Error, lendSuffix) || len(r.m.ledger.Granted()) != 0 {
		t.Errorf("stopped guest: error %q, GPUs still granted %v", j.Error, r.m.ledger.Granted())
	}
}

// TestLendVacateRequeues: a guest with a restart policy goes back to the
// queue when it is stopped, and waits there while the GPU is busy with
// the owner's own process.
func TestLendVacateRequeues(t *testing.T) {
	r := newLendRig(t)
	guest := r.submit(t, member("alice"), Spec{Image: "img", GPUIDs: []int{0}, ContainerSpec: ContainerSpec{Restart: "on-failure"}})
	gs := fakeGPUs(2)
	gs[0].Processes = []gpu.Process{{PID: 4242, Compute: true}} // the owner's, once the guest is gone
	gs[1].Processes = []gpu.Process{{PID: 1200}}                // the desktop's display server: graphics only
	r.gpus.set(gs)
	if err := r.m.LendVacate(context.Background(), guest.ID, "the machine's owner took it back: owner present"); err != nil {
		t.Fatal(err)
	}
	j, _ := r.m.Get(guest.ID)
	if j.State != Queued || j.Container != "" || !strings.HasPrefix(j.Error, "queued again: ") {
		t.Errorf("vacated guest with a restart policy: state %s, container %q, error %q; want queued again", j.State, j.Container, j.Error)
	}
	if present, _ := r.m.OwnerGPUProcesses(context.Background()); !present {
		t.Error("a compute process outside labpool on a GPU is not the owner present")
	}
	gs[0].Processes = nil
	r.gpus.set(gs)
	if present, _ := r.m.OwnerGPUProcesses(context.Background()); present {
		t.Error("the desktop's display server on a GPU (graphics only) is the owner present: an idle desktop would never be lent")
	}
}

var _ lend.Guests = LendGuests{}

// TestLendHoldKeepsGuestsOut: while the machine's own user holds its GPUs
// back (the lender's grant), a guest's new job is refused as busy, or
// queued, and the owner's own job runs; when the grant goes, the queued
// guest starts.
func TestLendHoldKeepsGuestsOut(t *testing.T) {
	r := newLendRig(t)
	ctx := context.Background()
	r.m.Ledger().SetHeld(lend.HeldSource, []alloc.Grant{{Holder: alloc.Holder{Kind: alloc.Owner, ID: lend.HeldSource, Member: "NODE"},
		Units: []string{"GPU-0000", "GPU-0001"}}})
	var busy *BusyError
	if _, err := r.m.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 1}); !errors.As(err, &busy) {
		t.Fatalf("a guest's job on GPUs its owner holds back: %v; want refused as busy", err)
	}
	queued, err := r.m.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 1, Queue: true})
	if err != nil || queued.State != Queued {
		t.Fatalf("a guest's queued job: %+v, %v; want it queued", queued.State, err)
	}
	r.submit(t, Caller{ID: "NODE"}, Spec{Image: "img", GPUs: 1})
	r.m.Ledger().SetHeld(lend.HeldSource, nil)
	r.m.wake()
	waitState(t, r.m, queued.ID, Running)
}
