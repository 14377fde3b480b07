package jobs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/labpool/labpool/node/containers"
)

// Run re-adopts the containers left running by an earlier agent, then
// follows the engine's events to record exits and start queued jobs, until
// ctx is cancelled. A broken event stream (dockerd restarting) is retried;
// what changed meanwhile is found by re-adopting again.
func (m *Manager) Run(ctx context.Context) error {
	if m.rt == nil {
		<-ctx.Done()
		return nil
	}
	if err := m.load(); err != nil {
		m.log.Error("load job records", "err", err)
	}
	backoff := 200 * time.Millisecond
	lost := ""
	for ctx.Err() == nil {
		err := m.follow(ctx, lost)
		if ctx.Err() != nil {
			return nil
		}
		m.log.Warn("docker engine stream broke: reconnecting", "err", err)
		lost = "ended while the Docker engine was unreachable or restarting (" + err.Error() + ")"
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return nil
}

// load reads the job records this node wrote before.
func (m *Manager) load() error {
	jobs, err := m.store.LoadJobs()
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range jobs {
		j := jobs[i]
		m.jobs[j.ID] = &j
	}
	return nil
}

// follow adopts, then handles events until the stream breaks. After a
// break, lost says why jobs that stopped running meanwhile ended.
func (m *Manager) follow(ctx context.Context, lost string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, errs := m.rt.Events(ctx)
	if err := m.adopt(ctx, lost); err != nil {
		return err
	}
	m.wake()
	resync := time.NewTicker(m.cfg.Resync)
	defer resync.Stop()
	queue := time.NewTicker(2 * time.Second)
	defer queue.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			return err
		case ev, ok := <-evs:
			if !ok {
				return errors.New("event stream closed")
			}
			m.onEvent(ctx, ev)
		case <-m.kick:
			m.startQueued(ctx)
		case <-queue.C:
			m.startQueued(ctx)
		case <-resync.C:
			m.resync(ctx)
		}
	}
}

func (m *Manager) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Adopt rebuilds the job table and the GPU ledger from the labelled
// containers: running ones are kept running, records whose container
// vanished are marked failed, and labelled containers with no record get
// one. Bad labels or missing records never stop the agent.
func (m *Manager) Adopt(ctx context.Context) error { return m.adopt(ctx, "") }

// adopt is Adopt; a running job found ended gets reason as its error.
func (m *Manager) adopt(ctx context.Context, reason string) error {
	m.ops.Lock()
	defer m.ops.Unlock()
	cs, err := m.rt.List(ctx)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	seen := map[string]bool{}
	for _, c := range cs {
		id := c.Labels[containers.LabelJob]
		if id == "" {
			continue
		}
		seen[id] = true
		m.adoptOne(c, reason)
	}
	m.mu.Lock()
	var lost []*Job
	for id, j := range m.jobs {
		if !seen[id] && (j.State == Running || j.State == Starting) {
			cp := *j
			lost = append(lost, &cp)
		}
	}
	m.mu.Unlock()
	for _, j := range lost {
		now := time.Now().UTC()
		m.ledger.Release(j.ID)
		j.State, j.Finished, j.Error = Failed, &now, "its container is gone (removed while the agent was down, or the engine lost it)"
		m.put(j)
		m.log.Warn("job lost its container", "job", j.ID)
	}
	m.log.Info("adopted running containers", "containers", len(cs), "lost", len(lost))
	return nil
}

func (m *Manager) adoptOne(c containers.Container, reason string) {
	id := c.Labels[containers.LabelJob]
	m.mu.Lock()
	var j *Job
	if cur, ok := m.jobs[id]; ok {
		cp := *cur
		j = &cp
	} else {
		j = &Job{ID: id, Name: c.Labels["labpool.name"], Node: m.cfg.Node, Owner: c.Labels[containers.LabelOwner],
			Image: c.Image, Spec: Spec{Image: c.Image}, Created: c.Started, SpecHash: c.Labels[containers.LabelSpecHash]}
		if j.Name == "" {
			j.Name = strings.TrimPrefix(c.Name, "labpool-")
		}
	}
	m.mu.Unlock()
	j.Container, j.Ports = c.ID, c.Ports
	j.GPUs = splitList(c.Labels[containers.LabelGPUs])
	j.GPUIndexes = indexesOf(j.GPUs, m.gpus.GPUs())
	was := j.State
	m.apply(j, c)
	if c.Running {
		m.ledger.Restore(j.ID, j.Owner, j.GPUs)
	} else {
		m.ledger.Release(j.ID)
	}
	if was == Running && j.State != Running && reason != "" {
		j.Error = reason
		m.log.Warn("job lost while the engine was away", "job", j.ID, "state", j.State)
	}
	m.put(j)
}

func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// apply sets j's state from its container.
func (m *Manager) apply(j *Job, c containers.Container) {
	if !c.Started.IsZero() {
		t := c.Started.UTC()
		j.Started = &t
	}
	switch {
	case c.Running:
		j.State, j.Finished, j.ExitCode = Running, nil, nil
	case c.State == "created":
		j.State = Starting
	default:
		code := c.ExitCode
		j.ExitCode = &code
		fin := c.Finished.UTC()
		if c.Finished.IsZero() {
			fin = time.Now().UTC()
		}
		j.Finished = &fin
		j.State = Exited
		if code != 0 && j.Error != "stopped" {
			j.State = Failed
			if c.OOMKilled {
				j.Error = "killed: out of memory"
			} else if c.Error != "" {
				j.Error = c.Error
			}
		}
	}
	j.GPUSeconds = gpuSeconds(*j, time.Now())
}

// gpuSeconds is the GPU-time a job has held: GPUs × run time.
func gpuSeconds(j Job, now time.Time) float64 {
	if j.Started == nil {
		return 0
	}
	end := now
	if j.Finished != nil {
		end = *j.Finished
	}
	return float64(len(j.GPUs)) * max(0, end.Sub(*j.Started).Seconds())
}

// onEvent records what happened to a job's container.
func (m *Manager) onEvent(ctx context.Context, ev containers.Event) {
	switch ev.Action {
	case "die", "start", "oom", "destroy":
	default:
		return
	}
	id := ev.Labels[containers.LabelJob]
	if id == "" {
		return
	}
	if err := m.refresh(ctx, id, false); err != nil {
		m.log.Debug("refresh job after event", "job", id, "event", ev.Action, "err", err)
	}
}

// refresh re-reads a job's container; stopped marks a stop by a user, whose
// non-zero exit (SIGTERM) is not a failure.
func (m *Manager) refresh(ctx context.Context, id string, stopped bool) error {
	j, err := m.Get(id)
	if err != nil || j.Container == "" {
		return err
	}
	c, err := m.rt.Inspect(ctx, j.Container)
	if err != nil {
		if strings.Contains(err.Error(), "No such container") {
			now := time.Now().UTC()
			j.State, j.Finished = Failed, &now
			j.Error = "its container was removed"
			m.ledger.Release(id)
			m.put(&j)
			m.wake()
			return nil
		}
		return err
	}
	was := j.State
	if stopped {
		j.Error = "stopped"
	}
	m.apply(&j, c)
	if stopped && j.State == Failed {
		j.State = Exited
	}
	if j.State != Running {
		m.ledger.Release(id)
		m.wake()
	}
	m.put(&j)
	if was != j.State {
		m.log.Info("job changed", "job", id, "from", was, "to", j.State)
	}
	return nil
}

// resync re-reads running jobs (their GPU-time grows) and catches changes
// an event stream may have missed.
func (m *Manager) resync(ctx context.Context) {
	for _, j := range m.List() {
		if j.State == Running {
			m.refresh(ctx, j.ID, false)
		}
	}
}

// startQueued starts queued jobs whose GPUs are free, fairly: owners take
// turns (the owner with fewest running jobs here goes first, then the one
// served longest ago, then the oldest job), so one member's long queue
// cannot starve the others. A job
// that does not fit yet does not block a smaller one behind it, unless it
// has waited more than starveAfter: then nothing behind it starts, so the
// GPUs drain for it.
func (m *Manager) startQueued(ctx context.Context) {
	m.ops.RLock()
	defer m.ops.RUnlock()
	for {
		j, ok := m.nextQueued()
		if !ok {
			return
		}
		binds, err := m.binds(j.Spec)
		if err == nil {
			_, err = m.start(ctx, j, binds)
		}
		if err != nil {
			m.log.Warn("start queued job", "job", j.ID, "err", err)
		}
	}
}

const starveAfter = 10 * time.Minute

// nextQueued picks the next queued job that can be granted GPUs now, and
// grants them.
func (m *Manager) nextQueued() (*Job, bool) {
	m.mu.Lock()
	var queued []*Job
	running := map[string]int{}
	served := make(map[string]time.Time, len(m.lastStart))
	for o, t := range m.lastStart {
		served[o] = t
	}
	for _, j := range m.jobs {
		switch j.State {
		case Queued:
			cp := *j
			queued = append(queued, &cp)
		case Running, Starting:
			running[j.Owner]++
		}
	}
	m.mu.Unlock()
	sort.Slice(queued, func(a, b int) bool {
		qa, qb := queued[a], queued[b]
		if running[qa.Owner] != running[qb.Owner] {
			return running[qa.Owner] < running[qb.Owner]
		}
		if sa, sb := served[qa.Owner], served[qb.Owner]; !sa.Equal(sb) {
			return sa.Before(sb)
		}
		return qa.Created.Before(qb.Created)
	})
	gpus := m.gpus.GPUs()
	for _, j := range queued {
		if err := m.grant(j, gpus); err == nil {
			return j, true
		}
		if time.Since(j.Created) > starveAfter {
			return nil, false // let the GPUs drain for the oldest waiter
		}
	}
	return nil, false
}
