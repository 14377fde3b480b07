package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/lend"
)

// LendNote is what lending did to a guest job (Job.Lend).
type LendNote struct {
	// At is when the job yields (warned) or yielded (paused).
	At     time.Time `json:"at"`
	Paused bool      `json:"paused,omitempty"`
	Yield  string    `json:"yield"` // "pause" | "stop"
	// Why says why the machine's owner takes it back ("owner present:
	// I'm using it", "outside the lend hours (mon-fri 19:00-08:00)").
	Why string `json:"why"`
}

// Pauser is an executor that pauses a task (docker pause): its processes
// stop, its memory stays. Pause returns an error unless the task is then
// paused.
type Pauser interface {
	Pause(ctx context.Context, handle string) error
	Unpause(ctx context.Context, handle string) error
}

// lendSuffix ends the Error of a job the lend policy stopped.
const lendSuffix = "(lend policy)"

// lentOut says whether a job's Error records a stop by the lend policy:
// its non-zero exit is no failure.
func lentOut(why string) bool { return strings.HasSuffix(why, lendSuffix) }

// lendStopTimeout is how long a vacated guest has between SIGTERM and
// SIGKILL: it was warned a whole grace before.
const lendStopTimeout = time.Second

// guest says whether j is a guest's job running on this machine's own
// GPUs: not the machine's own user's, not a cluster's.
func (m *Manager) guest(j Job) bool { return m.runsGuest(&j) && !m.schedules() }

// runsGuest says whether j is a guest's job running (or starting) here.
func (m *Manager) runsGuest(j *Job) bool {
	return j.Owner != m.cfg.Node && j.Container != "" && (j.State == Running || j.State == Starting)
}

// LendGuests implements lend.Guests. It runs every second: it looks at
// the starting and running jobs alone (a machine keeps every job it ran).
func (m *Manager) LendGuests() []lend.Guest {
	if m.schedules() {
		return nil
	}
	var out []lend.Guest
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.active {
		if j := m.jobs[id]; m.runsGuest(j) {
			out = append(out, lend.Guest{ID: j.ID, Name: j.Name, Owner: j.Owner, Paused: j.Lend != nil && j.Lend.Paused})
		}
	}
	slices.SortFunc(out, func(a, b lend.Guest) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// LendWarn implements lend.Guests: the job's record, which its owner
// reads everywhere in the pool, says when it yields and why.
func (m *Manager) LendWarn(_ context.Context, id string, at time.Time, why string) error {
	yield := m.Policy().Lend.Yield
	j, err := m.update(id, func(j *Job) error {
		if !m.guest(*j) {
			return ErrConflict
		}
		j.Lend = &LendNote{At: at.UTC(), Yield: yield, Why: why}
		return nil
	})
	if err == nil {
		m.log.Info("lend: guest warned", "job", id, "owner", j.Owner, "yields_at", at, "why", why)
	}
	return err
}

// LendPause implements lend.Guests.
func (m *Manager) LendPause(ctx context.Context, id, why string) error {
	j, err := m.Get(id)
	if err != nil {
		return err
	}
	p, ok := m.ex.(Pauser)
	if !ok {
		return errors.New("this machine's executor pauses nothing")
	}
	if err := p.Pause(ctx, j.Container); err != nil {
		return fmt.Errorf("pause %s: %w", j.Name, err)
	}
	now := time.Now().UTC()
	_, err = m.update(id, func(j *Job) error {
		j.Lend = &LendNote{At: now, Paused: true, Yield: lend.Pause, Why: why}
		return nil
	})
	return err
}

// LendResume implements lend.Guests: a paused guest resumes, a warned
// one loses its warning; one that lending never touched stays as it is.
func (m *Manager) LendResume(ctx context.Context, id string) error {
	j, err := m.Get(id)
	if err != nil || j.Lend == nil {
		return err
	}
	if p, ok := m.ex.(Pauser); ok && j.Lend.Paused {
		if err := p.Unpause(ctx, j.Container); err != nil && !isGone(err) {
			return fmt.Errorf("resume %s: %w", j.Name, err)
		}
	}
	_, err = m.update(id, func(j *Job) error {
		j.Lend = nil
		return nil
	})
	return err
}

// LendVacate implements lend.Guests: the job is stopped at once, its
// record saying why; a job with a restart policy goes back to the queue
// here, and starts again once the machine is lent.
func (m *Manager) LendVacate(ctx context.Context, id, why string) error {
	why = why + " " + lendSuffix
	j, err := m.update(id, func(j *Job) error {
		if !m.guest(*j) {
			return ErrConflict
		}
		j.Error, j.ReclaimAt = why, nil
		return nil
	})
	if err != nil {
		return err
	}
	if err := m.ex.Stop(ctx, j.Container, lendStopTimeout); err != nil && !isGone(err) {
		return fmt.Errorf("stop %s: %w", j.Name, err)
	}
	if err := m.refresh(ctx, id, why); err != nil {
		m.log.Warn("lend: read the stopped job", "job", id, "err", err)
	}
	if j.Spec.Restart == "on-failure" {
		return m.requeue(ctx, id, why)
	}
	return nil
}

// requeue puts a job the lend policy stopped back into this machine's
// queue: its task is removed, its GPUs released.
func (m *Manager) requeue(ctx context.Context, id, why string) error {
	j, err := m.Get(id)
	if err != nil {
		return err
	}
	if j.Container != "" {
		if err := m.ex.Remove(ctx, j.Container); err != nil && !isGone(err) {
			return fmt.Errorf("requeue %s: %w", j.Name, err)
		}
	}
	m.ledger.Release(id)
	_, err = m.update(id, func(j *Job) error {
		j.State, j.Container, j.GPUs, j.GPUIndexes = Queued, "", nil, nil
		j.Started, j.Finished, j.ExitCode, j.Outcome, j.Lend = nil, nil, nil, "", nil
		j.Error = "queued again: " + why
		return nil
	})
	if err != nil {
		return fmt.Errorf("requeue %s: %w", j.Name, err)
	}
	m.log.Info("lend: guest queued again", "job", id, "owner", j.Owner)
	m.wake()
	return nil
}

// OwnerGPUProcesses says whether a compute process outside labpool runs
// on a GPU here: the machine's own user at work (lend.Signal). A process
// on a GPU granted to no job is outside labpool (as for external); one
// that only draws (the desktop's display server, a browser) is not work:
// the desktop's own signal is logind's.
func (m *Manager) OwnerGPUProcesses(context.Context) (bool, string) {
	granted := m.ledger.Granted()
	var candidates []gpu.Stats // compute processes on GPUs granted to no job
	for _, g := range m.gpus.GPUs() {
		if granted[g.UUID] != "" {
			continue
		}
		var compute []gpu.Process
		for _, p := range g.Processes {
			if p.Compute {
				compute = append(compute, p)
			}
		}
		if len(compute) > 0 {
			candidates = append(candidates, gpu.Stats{UUID: g.UUID, Processes: compute})
		}
	}
	if len(candidates) == 0 {
		return false, "" // no process's cgroup to read this second
	}
	var held alloc.Holding // those in labpool's containers
	m.mapProcesses(candidates, &held)
	for _, g := range candidates {
		for _, p := range g.Processes {
			if held.Proc(p.PID).ID == "" {
				return true, "your GPU processes"
			}
		}
	}
	return false, ""
}

// LendGuests adapts the manager to lend.Guests.
type LendGuests struct{ M *Manager }

var _ lend.Guests = LendGuests{}

func (g LendGuests) Guests() []lend.Guest { return g.M.LendGuests() }
func (g LendGuests) Warn(ctx context.Context, id string, at time.Time, why string) error {
	return g.M.LendWarn(ctx, id, at, why)
}
func (g LendGuests) Pause(ctx context.Context, id, why string) error {
	return g.M.LendPause(ctx, id, why)
}
func (g LendGuests) Resume(ctx context.Context, id string) error { return g.M.LendResume(ctx, id) }
func (g LendGuests) Vacate(ctx context.Context, id, why string) error {
	return g.M.LendVacate(ctx, id, why)
}
