package lend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/labpool/labpool/node/alloc"
)

// fakeGuest is one guest job of fakeJobs.
type fakeGuest struct {
	owner          string
	paused, gone   bool
	ignoresPause   bool      // its pause "succeeds" and it runs on
	failsPause     bool      // its pause fails
	warnedAt       time.Time // the deadline it was told
	yieldedAt      time.Time // when it stopped running (paused or gone)
	requeue, stops int
}

// fakeJobs is the job manager and its ledger as the lender sees them:
// a guest is placed only while the owner holds nothing (as Fit honours
// the owner's grant).
type fakeJobs struct {
	now func() time.Time

	mu     sync.Mutex
	guests map[string]*fakeGuest
	held   []alloc.Grant
	holds  int // SetHeld calls
}

func newFakeJobs(now func() time.Time) *fakeJobs {
	return &fakeJobs{now: now, guests: map[string]*fakeGuest{}}
}

// place starts a guest unless the owner holds the GPUs.
func (f *fakeJobs) place(id string, g fakeGuest) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.held) > 0 {
		return false
	}
	f.guests[id] = &g
	return true
}

// running lists the guests running (not paused, not gone).
func (f *fakeJobs) running() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id, g := range f.guests {
		if !g.paused && !g.gone {
			out = append(out, id)
		}
	}
	return out
}

func (f *fakeJobs) Guests() []Guest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Guest
	for id, g := range f.guests {
		if !g.gone {
			out = append(out, Guest{ID: id, Owner: g.owner, Paused: g.paused})
		}
	}
	return out
}

func (f *fakeJobs) get(id string) (*fakeGuest, error) {
	g, ok := f.guests[id]
	if !ok || g.gone {
		return nil, fmt.Errorf("job %s: gone", id)
	}
	return g, nil
}

func (f *fakeJobs) Warn(_ context.Context, id string, at time.Time, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.get(id)
	if err == nil {
		g.warnedAt = at
	}
	return err
}

func (f *fakeJobs) Pause(_ context.Context, id, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.get(id)
	switch {
	case err != nil:
		return err
	case g.failsPause:
		return errors.New("pause: cgroup freezer not available")
	case g.ignoresPause:
		return nil
	}
	g.paused, g.yieldedAt = true, f.now()
	return nil
}

func (f *fakeJobs) Resume(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.get(id)
	if err == nil {
		g.paused, g.yieldedAt, g.warnedAt = false, time.Time{}, time.Time{}
	}
	return err
}

func (f *fakeJobs) Vacate(_ context.Context, id, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.get(id)
	if err == nil {
		g.gone, g.yieldedAt = true, f.now()
		g.stops++
	}
	return err
}

func (f *fakeJobs) SetHeld(source string, gs []alloc.Grant) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if source == HeldSource {
		f.held = gs
		f.holds++
	}
}

func (f *fakeJobs) heldBy() []alloc.Grant {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

// presence is an owner-present signal a test flips.
type presence struct {
	mu sync.Mutex
	on bool
}

func (p *presence) set(on bool) {
	p.mu.Lock()
	p.on = on
	p.mu.Unlock()
}

func (p *presence) signal(context.Context) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.on, "your GPU processes"
}
