package jobs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/labpool/labpool/internal/beat"
)

// Bounds of Policy.IdleReclaimSeconds (when on).
const (
	minIdleReclaim = 10
	maxIdleReclaim = 30 * 24 * 3600
)

// reclaimSuffix ends the Error of a job the idle reclaim policy stopped.
const reclaimSuffix = "(idle reclaim policy)"

// reclaimed says whether a job's Error records a stop by the idle reclaim
// policy: its non-zero exit is no failure.
func reclaimed(why string) bool { return strings.HasSuffix(why, reclaimSuffix) }

// reclaimWhy is the Error of a job stopped under p.
func reclaimWhy(p Policy) string {
	return fmt.Sprintf("stopped: GPUs idle under %g%% for %s %s", p.IdleBelowPercent, shortDuration(p.IdleReclaimSeconds), reclaimSuffix)
}

// shortDuration writes whole seconds as 2h, 90m, 1h30m, 45s.
func shortDuration(secs int) string {
	s := (time.Duration(secs) * time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// reclaimGrace is how long before its stop a job is warned: a quarter of
// the policy's time, at most 30 minutes.
func reclaimGrace(p Policy) time.Duration {
	return min(time.Duration(p.IdleReclaimSeconds)*time.Second/4, 30*time.Minute)
}

// RunReclaim applies the idle reclaim policy, the time limits of jobs and
// the reservations of their GPUs (deadline.go) once a second until ctx is
// cancelled: a running job whose GPUs all stayed under the policy's
// utilization for its time is stopped, its record saying why; a grace
// before, its record gets ReclaimAt, the countdown its owner sees, which
// goes away if the GPUs get busy again.
func (m *Manager) RunReclaim(ctx context.Context) error {
	t := beat.NewTicker(time.Second)
	defer t.Stop()
	idle := map[string]time.Time{} // job ID -> since when its GPUs are idle
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			now := time.Now()
			m.reclaimStep(ctx, now, idle)
			m.deadlineStep(ctx, now)
		}
	}
}

// reclaimStep looks at every running job once.
func (m *Manager) reclaimStep(ctx context.Context, now time.Time, idle map[string]time.Time) {
	p := m.Policy()
	util := map[string]float64{}
	for _, g := range m.gpus.GPUs() {
		util[g.UUID] = g.UtilPercent
	}
	list := m.List()
	elsewhere := m.idleElsewhere(now, p, list)
	running := map[string]bool{}
	for _, j := range list {
		if j.State != Running || (len(j.GPUs) == 0 && elsewhere == nil) || (j.Lend != nil && j.Lend.Paused) { // paused by its lender: idle, not its fault
			continue
		}
		running[j.ID] = true
		idleNow := elsewhere[j.ID]
		if len(j.GPUs) > 0 {
			idleNow = allIdle(j, util, p.IdleBelowPercent)
		}
		if p.IdleReclaimSeconds <= 0 || !idleNow {
			delete(idle, j.ID)
			if j.ReclaimAt != nil {
				m.setReclaimAt(j.ID, nil)
			}
			continue
		}
		limit := time.Duration(p.IdleReclaimSeconds) * time.Second
		since, ok := idle[j.ID]
		if !ok {
			since = now
			if j.ReclaimAt != nil { // warned by an earlier run of the agent
				since = j.ReclaimAt.Add(-limit)
			}
			idle[j.ID] = since
		}
		at := since.Add(limit)
		switch {
		case !now.Before(at):
			m.reclaim(ctx, j, reclaimWhy(p))
			delete(idle, j.ID)
		case j.ReclaimAt == nil && !now.Before(at.Add(-reclaimGrace(p))):
			at := at.UTC()
			m.setReclaimAt(j.ID, &at)
			m.log.Info("job's GPUs idle: it will be stopped unless they get busy", "job", j.ID, "owner", j.Owner, "reclaim_at", at)
		}
	}
	for id := range idle {
		if !running[id] {
			delete(idle, id)
		}
	}
}

// idleElsewhere is Config.RemoteIdle's word on the running jobs of list
// that hold none of this machine's GPUs, with an executor that places them
// elsewhere (a Slurm job on its compute nodes): nil where there is none
// to ask (no such executor or judge), none idle with the policy off.
func (m *Manager) idleElsewhere(now time.Time, p Policy, list []Job) map[string]bool {
	if m.cfg.RemoteIdle == nil || !m.caps().Schedules {
		return nil
	}
	if p.IdleReclaimSeconds <= 0 {
		return map[string]bool{}
	}
	var js []Job
	for _, j := range list {
		if j.State == Running && len(j.GPUs) == 0 {
			js = append(js, j)
		}
	}
	idle := m.cfg.RemoteIdle(now, js, p.IdleBelowPercent)
	if idle == nil {
		idle = map[string]bool{}
	}
	return idle
}

// allIdle says whether every GPU of j is under below percent; a GPU the
// sample does not show counts as busy (nothing is known of it).
func allIdle(j Job, util map[string]float64, below float64) bool {
	for _, u := range j.GPUs {
		v, ok := util[u]
		if !ok || v >= below {
			return false
		}
	}
	return true
}

// setReclaimAt sets (or, nil, clears) a running job's countdown.
func (m *Manager) setReclaimAt(id string, at *time.Time) {
	_, err := m.update(id, func(j *Job) error {
		if j.State != Running {
			return ErrConflict
		}
		j.ReclaimAt = at
		return nil
	})
	if err != nil {
		m.log.Debug("set a job's reclaim time", "job", id, "err", err)
	}
}

// reclaim stops j for the reason why.
func (m *Manager) reclaim(ctx context.Context, j Job, why string) {
	j, err := m.update(j.ID, func(j *Job) error {
		if j.State != Running {
			return ErrConflict
		}
		j.Error, j.ReclaimAt = why, nil
		return nil
	})
	if err != nil {
		return
	}
	m.log.Info("idle reclaim: stopping a job", "job", j.ID, "owner", j.Owner, "why", why)
	if err := m.ex.Stop(ctx, j.Container, m.cfg.StopTimeout); err != nil && !isGone(err) {
		m.log.Error("idle reclaim: stop a job", "job", j.ID, "err", err)
		return
	}
	if err := m.refresh(ctx, j.ID, why); err != nil {
		m.log.Warn("idle reclaim: read the stopped job", "job", j.ID, "err", err)
	}
}
