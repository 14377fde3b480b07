package jobs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/labpool/labpool/node/alloc"
	reservation "github.com/labpool/labpool/node/reserve"
)

// reservedSuffix ends the Error of a job stopped at the start of a
// reservation of its GPUs: a stop on purpose, no failure.
const reservedSuffix = "(reservation)"

// limitPrefix starts the Error of a container job stopped at its time
// limit: it ends failed, timed out, as a cluster's job does (ended).
const limitPrefix = "reached its time limit of "

// deadlineStep stops, at now, the running jobs of this machine's own
// executor (not one that schedules: a cluster keeps its own time limits)
// that reached their time limit, and those on GPUs whose reservation for
// another member starts; it warns the latter ahead (Job.StopAt and
// StopWhy, which their owners see), as the machine's policy says.
func (m *Manager) deadlineStep(ctx context.Context, now time.Time) {
	if m.ex == nil || m.schedules() {
		return
	}
	warn := m.Policy().Reserve.Warn()
	requeue := m.Policy().Reserve.Effective().AtStart == reservation.AtStartRequeue
	reservations := m.ledger.Held()["reservations"]
	for _, j := range m.List() {
		if j.State != Running || j.Started == nil {
			continue
		}
		if limit := timeLimit(j); limit != nil && !now.Before(*limit) {
			m.stopAtLimit(ctx, j)
			continue
		}
		g, ok := nextReservation(j, reservations, now, m.person)
		switch {
		case !ok:
			if j.StopAt != nil {
				m.setStopAt(j.ID, nil, "") // the reservation was cancelled
			}
		case !now.Before(g.From) && requeue && j.Spec.Restart == "on-failure":
			m.requeueFor(ctx, j, reservedWhy(j, g, m.cfg.MemberName))
		case !now.Before(g.From):
			m.stopFor(ctx, j, reservedWhy(j, g, m.cfg.MemberName)+" "+reservedSuffix)
		case !now.Before(g.From.Add(-warn)) && (j.StopAt == nil || !j.StopAt.Equal(g.From)):
			at := g.From.UTC()
			why := reservedWhy(j, g, m.cfg.MemberName)
			if requeue && j.Spec.Restart == "on-failure" {
				why = requeuedPrefix + strings.TrimPrefix(why, "stopped: ")
			}
			m.setStopAt(j.ID, &at, why)
			m.log.Info("job on reserved GPUs: it will be stopped at the reservation's start", "job", j.ID, "owner", j.Owner, "reservation", g.Holder.ID, "stop_at", at)
		}
	}
}

// timeLimit is when j reaches its time limit (nil: it has none).
func timeLimit(j Job) *time.Time {
	if j.Spec.TimeLimitSeconds <= 0 || j.Started == nil {
		return nil
	}
	t := j.Started.Add(time.Duration(j.Spec.TimeLimitSeconds) * time.Second)
	return &t
}

// nextReservation is the earliest reservation for another member than j's
// owner, on one of j's GPUs, that is in force now or starts before j's
// time limit ends it.
func nextReservation(j Job, gs []alloc.Grant, now time.Time, person func(string) string) (alloc.Grant, bool) {
	var best alloc.Grant
	found := false
	limit := timeLimit(j)
	for _, g := range gs {
		switch {
		case g.Holder.Kind != alloc.Reservation || person(g.Holder.Member) == person(j.Owner):
		case !g.Until.IsZero() && !g.Until.After(now):
		case limit != nil && !limit.After(g.From):
		case !slices.ContainsFunc(j.GPUs, func(u string) bool { return slices.Contains(g.Units, u) }):
		case !found || g.From.Before(best.From):
			best, found = g, true
		}
	}
	return best, found
}

// reservedWhy says which reservation takes j's GPUs, and when.
func reservedWhy(j Job, g alloc.Grant, name func(string) string) string {
	who := ""
	if name != nil {
		who = name(g.Holder.Member)
	}
	if who == "" {
		who = shortID(g.Holder.Member, 9)
	}
	return fmt.Sprintf("stopped: its GPUs are reserved for %s from %s (%s)", who, g.From.UTC().Format("Mon 2 Jan 15:04 MST"), g.Holder.ID)
}

// setStopAt sets (or, nil, clears) a running job's notice of its stop.
func (m *Manager) setStopAt(id string, at *time.Time, why string) {
	_, err := m.update(id, func(j *Job) error {
		if j.State != Running {
			return ErrConflict
		}
		j.StopAt, j.StopWhy = at, why
		return nil
	})
	if err != nil {
		m.log.Debug("set a job's stop notice", "job", id, "err", err)
	}
}

// stopFor stops j on purpose for the reason why (a stop that is no
// failure: see stoppedOnPurpose).
func (m *Manager) stopFor(ctx context.Context, j Job, why string) {
	j, err := m.update(j.ID, func(j *Job) error {
		if j.State != Running {
			return ErrConflict
		}
		j.Error, j.ReclaimAt, j.StopAt, j.StopWhy = why, nil, nil, ""
		return nil
	})
	if err != nil {
		return
	}
	m.log.Info("stopping a job", "job", j.ID, "owner", j.Owner, "why", why)
	if err := m.ex.Stop(ctx, j.Container, m.cfg.StopTimeout); err != nil && !isGone(err) {
		m.log.Error("stop a job", "job", j.ID, "err", err)
		return
	}
	if err := m.refresh(ctx, j.ID, why); err != nil {
		m.log.Warn("read the stopped job", "job", j.ID, "err", err)
	}
}

// requeuedPrefix starts the Error of a job put back into the queue at the
// start of a reservation of its GPUs.
const requeuedPrefix = "requeued: "

// requeueFor puts the running job j back into this machine's queue (a
// job with a restart policy, at the start of a reservation of its GPUs,
// the policy saying requeue): its record is queued again with no task
// and no GPUs, its GPUs are released, and its task is stopped and
// removed. The queue grants it again by alloc.Fit, which passes over the
// reservation's GPUs until it ends. The queue does not run meanwhile
// (m.ops): it never sees the job queued while it still holds its GPUs.
func (m *Manager) requeueFor(ctx context.Context, j Job, why string) {
	m.ops.Lock()
	var handle string
	_, err := m.update(j.ID, func(cur *Job) error {
		if cur.State != Running || cur.Container != j.Container {
			return ErrConflict
		}
		handle = cur.Container
		cur.State, cur.Container, cur.Ports, cur.Started, cur.Finished = Queued, "", nil, nil, nil
		cur.GPUs, cur.GPUIndexes, cur.GPUShare, cur.GPUMemBytes = nil, nil, 0, 0
		cur.StopAt, cur.StopWhy, cur.ReclaimAt = nil, "", nil
		cur.Error = requeuedPrefix + strings.TrimPrefix(why, "stopped: ")
		return nil
	})
	if err == nil {
		m.ledger.Release(j.ID)
	}
	m.ops.Unlock()
	if err != nil {
		return
	}
	m.log.Info("job on reserved GPUs put back into the queue", "job", j.ID, "owner", j.Owner, "why", why)
	m.discard(ctx, handle)
	m.wake()
}

// stopAtLimit stops j at its time limit.
func (m *Manager) stopAtLimit(ctx context.Context, j Job) {
	m.stopFor(ctx, j, limitPrefix+shortDuration(int(j.Spec.TimeLimitSeconds)))
}
