package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/labpool/labpool/internal/beat"
)

// Run loads the job records, re-adopts the tasks an earlier agent left
// running, then follows the executor's events to record exits and start
// queued jobs, until ctx is cancelled. A broken event stream (dockerd
// restarting) is retried with backoff; what changed meanwhile is found by
// adopting again, and jobs that ended while the backend was away say so.
func (m *Manager) Run(ctx context.Context) error {
	if m.ex == nil {
		<-ctx.Done()
		return nil
	}
	if err := m.load(); err != nil {
		m.log.Error("load job records", "err", err)
	}
	offers := make(chan struct{})
	go func() { defer close(offers); m.runOffers(ctx) }()
	defer func() { <-offers }()
	backoff := 100 * time.Millisecond
	lost := ""
	for ctx.Err() == nil {
		adopted, err := m.follow(ctx, lost)
		if ctx.Err() != nil {
			return nil
		}
		if adopted {
			backoff = 100 * time.Millisecond
		}
		m.log.Warn("executor unreachable: reconnecting", "executor", m.caps().Name, "err", err, "retry_in", backoff)
		lost = "ended while " + m.backendName() + " was unreachable or restarting (" + err.Error() + ")"
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, m.cfg.MaxBackoff)
	}
	return nil
}

// load reads the job records this node wrote before; it keeps the records
// already in memory.
func (m *Manager) load() error {
	jobs, err := m.store.LoadJobs()
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range jobs {
		if _, ok := m.jobs[j.ID]; !ok && j.ID != "" {
			if !j.Removed {
				p, err := m.store.LoadPrivate(j.ID)
				if err != nil {
					m.log.Warn("read a job's environment and command line", "job", j.ID, "err", err)
				}
				j.Spec.Env, j.Spec.Cmd, j.Spec.PrivateSalt, j.CmdWithheld = p.Env, p.Cmd, p.Salt, false
			}
			m.setLocked(j)
		}
	}
	return nil
}

// follow adopts, then handles events until the stream breaks; adopted says
// whether the adoption succeeded. lost is the reason given to jobs found
// ended.
func (m *Manager) follow(ctx context.Context, lost string) (adopted bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, errs := m.ex.Events(ctx) // before adopting: nothing is missed between
	if err := m.adopt(ctx, lost); err != nil {
		return false, err
	}
	m.wake()
	resync := beat.NewTicker(m.cfg.Resync)
	defer resync.Stop()
	poll := beat.NewTicker(m.cfg.QueuePoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case err := <-errs:
			return true, err
		case ev, ok := <-evs:
			if !ok {
				return true, errors.New("event stream closed")
			}
			m.onEvent(ctx, ev)
		case <-m.kick:
			m.startQueued(ctx)
		case <-poll.C:
			m.startQueued(ctx)
		case <-resync.C:
			m.resync(ctx)
		}
	}
}

// wake asks the Run loop to try the queue, and the hand-over to weigh the
// jobs queued pool-wide; it never blocks.
func (m *Manager) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
	select {
	case m.offers <- struct{}{}:
	default:
	}
}

// runOffers hands over the jobs queued here pool-wide (handover.go) on
// every wake and every OfferPoll, until ctx is cancelled.
func (m *Manager) runOffers(ctx context.Context) {
	if m.cfg.Offer == nil || m.cfg.Targets == nil {
		return
	}
	poll := beat.NewTicker(m.cfg.OfferPoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.offers:
		case <-m.cfg.PoolChanged:
		case <-poll.C:
		}
		m.handOver(ctx)
	}
}

// backendName names the executor's backend in messages.
func (m *Manager) backendName() string {
	if n := m.caps().Name; n != "" && n != "docker" {
		return "the " + n + " backend"
	}
	return "the Docker engine"
}

// onEvent records what happened to a job's task.
func (m *Manager) onEvent(ctx context.Context, ev TaskEvent) {
	switch ev.Action {
	case "die", "start", "oom", "destroy", "restart", "state":
	default:
		return
	}
	id := ev.JobID
	if id == "" {
		id = m.jobOfHandle(ev.Handle)
	}
	if id == "" {
		return
	}
	if err := m.refresh(ctx, id, ""); err != nil {
		m.log.Debug("refresh job after event", "job", id, "event", ev.Action, "err", err)
	}
}

// jobOfHandle is the job whose task is handle ("" when none).
func (m *Manager) jobOfHandle(handle string) string {
	if handle == "" {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, j := range m.jobs {
		if j.Container == handle {
			return id
		}
	}
	return ""
}

// refresh re-reads a job's task; stopped, when set, is why it was stopped
// on purpose (stoppedByUser, evicted). A job that ended frees its GPUs and
// wakes the queue.
func (m *Manager) refresh(ctx context.Context, id string, stopped string) error {
	j, err := m.Get(id)
	if err != nil || j.Container == "" {
		return err
	}
	ts, err := m.ex.Inspect(ctx, j.Container)
	if err != nil && !isGone(err) {
		return fmt.Errorf("inspect the task of %s: %w", j.Name, err)
	}
	gone := err != nil
	schedules := m.schedules()
	j, err = m.update(id, func(j *Job) error {
		switch {
		case j.Container != ts.Handle && !gone:
			return ErrConflict // removed or replaced meanwhile
		case gone && (j.State == Running || j.State == Starting || j.State == Queued):
			now := time.Now().UTC()
			j.State, j.Finished, j.Error = Failed, &now, "its "+m.taskWord()+" was removed"
		case gone:
			j.Container = ""
		default:
			if stopped != "" {
				j.Error = stopped
			}
			apply(j, ts, schedules)
		}
		return nil
	})
	if err != nil {
		return nil
	}
	m.settleGPUs(j)
	return nil
}

// taskWord is what a job runs as on this executor, in messages.
func (m *Manager) taskWord() string {
	if m.schedules() {
		return m.caps().Name + " job"
	}
	return "container"
}

// settleGPUs makes the ledger agree with j's state: a running job holds its
// GPUs (a container restarted by its on-failure policy takes them back),
// an ended one frees them.
func (m *Manager) settleGPUs(j Job) {
	switch j.State {
	case Running:
		if c := m.ledger.restoreJob(j); len(c) > 0 {
			m.log.Error("a restarted job shares GPUs with another job", "job", j.ID, "gpus", c)
		}
	case Exited, Failed:
		m.ledger.Release(j.ID)
		m.wake()
	}
}

// resync re-reads running jobs and catches changes an event stream may
// have missed. Where the executor schedules (a cluster's queue, maybe
// thousands of jobs), it reads the whole backend once, never once per job.
func (m *Manager) resync(ctx context.Context) {
	if m.schedules() {
		m.resyncListed(ctx)
		return
	}
	for _, j := range m.List() {
		if j.State == Running {
			if err := m.refresh(ctx, j.ID, ""); err != nil {
				m.log.Debug("resync job", "job", j.ID, "err", err)
			}
		}
	}
}

// resyncListed brings the queued and running jobs in line with one List of
// the executor's tasks; a job whose task is not listed is read alone (it
// may be gone).
func (m *Manager) resyncListed(ctx context.Context) {
	ts, err := m.ex.List(ctx)
	if err != nil {
		m.log.Debug("resync: list tasks", "err", err)
		return
	}
	byHandle := make(map[string]TaskStatus, len(ts))
	for _, t := range ts {
		byHandle[t.Handle] = t
	}
	for _, j := range m.List() {
		if j.Container == "" || (j.State != Running && j.State != Queued) {
			continue
		}
		t, ok := byHandle[j.Container]
		if !ok {
			if err := m.refresh(ctx, j.ID, ""); err != nil {
				m.log.Debug("resync job", "job", j.ID, "err", err)
			}
			continue
		}
		j, err := m.update(j.ID, func(cur *Job) error {
			if cur.Container != t.Handle {
				return ErrConflict
			}
			apply(cur, t, true)
			return nil
		})
		if err == nil {
			m.settleGPUs(j)
		}
	}
}
