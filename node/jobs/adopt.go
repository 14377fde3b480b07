package jobs

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/labpool/labpool/node/containers"
)

// jobIDLabel is what a job label must look like to be adopted.
var jobIDLabel = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Adopt rebuilds the job table and the GPU ledger from the labelled
// containers: running ones are kept running (never restarted), records
// whose container vanished are marked failed, and labelled containers with
// no record get one. Bad labels or missing records never stop the agent.
func (m *Manager) Adopt(ctx context.Context) error { return m.adopt(ctx, "") }

// adopt is Adopt; a job found ended that was running gets lost as its
// error, when lost is set.
func (m *Manager) adopt(ctx context.Context, lost string) error {
	m.ops.Lock()
	defer m.ops.Unlock()
	cs, err := m.rt.List(ctx)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	byJob := m.pickContainers(cs)
	running := map[string]bool{}
	ended := 0
	for id, c := range byJob {
		j := m.adoptOne(ctx, id, c, lost)
		if j.State == Running {
			running[id] = true
		} else if j.State != Starting {
			ended++
		}
	}
	for _, id := range m.ledgerJobs() {
		if !running[id] {
			m.ledger.Release(id)
		}
	}
	vanished := m.markVanished(byJob, lost)
	if err := m.rt.PruneNetworks(ctx); err != nil {
		m.log.Warn("remove the networks of jobs gone while the agent was away", "err", err)
	}
	m.log.Info("adopted containers", "running", len(running), "ended", ended, "vanished", vanished)
	return nil
}

// pickContainers maps job IDs to their container, skipping containers with
// a corrupt job label; of two containers claiming one job, a running one
// wins.
func (m *Manager) pickContainers(cs []containers.Container) map[string]containers.Container {
	out := map[string]containers.Container{}
	for _, c := range cs {
		id := c.Labels[containers.LabelJob]
		if !jobIDLabel.MatchString(id) {
			m.log.Warn("skip a labpool container with a bad job label", "container", shortContainer(c.ID), "label", id)
			continue
		}
		if prev, ok := out[id]; ok {
			m.log.Warn("two containers claim one job", "job", id, "containers", []string{shortContainer(prev.ID), shortContainer(c.ID)})
			if prev.Running && !c.Running {
				continue
			}
		}
		out[id] = c
	}
	return out
}

func (m *Manager) ledgerJobs() []string {
	var out []string
	for _, j := range m.ledger.Granted() {
		out = append(out, j)
	}
	return out
}

// adoptOne brings job id's record in line with its container c.
func (m *Manager) adoptOne(ctx context.Context, id string, c containers.Container, lost string) Job {
	m.mu.Lock()
	cur, ok := m.jobs[id]
	var j Job
	if ok {
		j = *cur
	} else {
		j = recordFromLabels(m.cfg.Node, id, c)
	}
	m.mu.Unlock()
	was := j.State
	j.Container, j.Ports = c.ID, c.Ports
	if gs := splitList(c.Labels[containers.LabelGPUs]); len(gs) > 0 || !ok {
		j.GPUs = gs // the label is what Docker was asked for
	}
	j.GPUIndexes = m.ledger.Indexes(j.GPUs, m.gpus.GPUs())
	apply(&j, c)
	if c.State == "created" && !c.Running {
		// The agent stopped between create and start: the job never ran.
		m.discard(ctx, c.ID)
		now := time.Now().UTC()
		j.State, j.Finished, j.Error, j.Container = Failed, &now, "the agent stopped before the job started", ""
	}
	if was == Running && j.State != Running && lost != "" {
		j.Error = lost
		m.log.Warn("job ended while the engine was away", "job", id, "state", j.State)
	}
	if j.State == Running {
		if conflicts := m.ledger.Restore(id, j.GPUs); len(conflicts) > 0 {
			m.log.Error("two running jobs hold the same GPUs", "job", id, "gpus", conflicts)
		}
	}
	m.mu.Lock()
	m.setLocked(j)
	m.saveLocked(j)
	return j
}

// recordFromLabels rebuilds the record of a container that has none (its
// record was lost, or the agent died before saving it).
func recordFromLabels(node, id string, c containers.Container) Job {
	j := Job{ID: id, Name: c.Labels[LabelName], Node: node, Owner: c.Labels[containers.LabelOwner],
		Image: c.Image, Spec: Spec{Image: c.Image}, SpecHash: c.Labels[containers.LabelSpecHash],
		Created: c.Started.UTC(), GPUs: []string{}, GPUIndexes: []int{},
		Error: "rebuilt from its container's labels: the job record was lost"}
	if j.Name == "" {
		j.Name = strings.TrimPrefix(c.Name, "labpool-")
	}
	if j.Created.IsZero() {
		j.Created = time.Now().UTC()
	}
	return j
}

// markVanished fails the running or starting jobs whose container is not
// in byJob, and returns how many.
func (m *Manager) markVanished(byJob map[string]containers.Container, lost string) int {
	why := "its container is gone (removed while the agent was down, or the engine lost it)"
	if lost != "" {
		why = "its container is gone: " + lost
	}
	var ids []string
	m.mu.Lock()
	for id, j := range m.jobs {
		if _, ok := byJob[id]; !ok && (j.State == Running || j.State == Starting) {
			ids = append(ids, id)
		}
	}
	m.mu.Unlock()
	for _, id := range ids {
		now := time.Now().UTC()
		m.update(id, func(j *Job) error {
			j.State, j.Finished, j.Error, j.Container = Failed, &now, why, ""
			return nil
		})
		m.ledger.Release(id)
		m.log.Warn("job lost its container", "job", id)
	}
	return len(ids)
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
func apply(j *Job, c containers.Container) {
	if !c.Started.IsZero() {
		t := c.Started.UTC()
		j.Started = &t
	}
	switch {
	case c.Running || c.State == "restarting":
		j.State, j.Finished, j.ExitCode = Running, nil, nil
		if !stoppedOnPurpose(j.Error) {
			j.Error = ""
		}
	case c.State == "created":
		j.State = Starting
	default:
		ended(j, c)
	}
	j.GPUSeconds = gpuSeconds(*j, time.Now())
}

// ended records the end of j's container c.
func ended(j *Job, c containers.Container) {
	code := c.ExitCode
	j.ExitCode = &code
	fin := c.Finished.UTC()
	if c.Finished.IsZero() {
		fin = time.Now().UTC()
	}
	j.Finished = &fin
	j.State = Exited
	if code == 0 || stoppedOnPurpose(j.Error) {
		return
	}
	j.State = Failed
	switch {
	case c.OOMKilled:
		j.Error = "killed: out of memory"
	case c.Error != "":
		j.Error = c.Error
	default:
		j.Error = fmt.Sprintf("exited with code %d", code)
	}
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
