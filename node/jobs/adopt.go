package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// jobIDLabel is what a job label must look like to be adopted.
var jobIDLabel = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Adopt rebuilds the job table and the GPU ledger from the executor's
// labelled tasks: running ones are kept running (never started again),
// records whose task vanished are marked failed, and labelled tasks with no
// record get one. Bad labels or missing records never stop the agent.
func (m *Manager) Adopt(ctx context.Context) error { return m.adopt(ctx, "") }

// adopt is Adopt; a job found ended that was running gets lost as its
// error, when lost is set.
func (m *Manager) adopt(ctx context.Context, lost string) error {
	m.ops.Lock()
	defer m.ops.Unlock()
	ts, err := m.ex.List(ctx)
	if err != nil {
		return fmt.Errorf("list tasks: %w", err)
	}
	byJob := m.pickTasks(ts)
	running := map[string]bool{}
	ended := 0
	for id, t := range byJob {
		j := m.adoptOne(ctx, id, t, lost)
		if j.State == Running {
			running[id] = true
		} else if j.State != Starting && j.State != Queued {
			ended++
		}
	}
	for _, id := range m.ledgerJobs() {
		if !running[id] {
			m.ledger.Release(id)
		}
	}
	vanished := m.markVanished(byJob, lost)
	if p, ok := m.ex.(Pruner); ok {
		if err := p.Prune(ctx); err != nil {
			m.log.Warn("clean up after tasks gone while the agent was away", "err", err)
		}
	}
	m.log.Info("adopted tasks", "executor", m.caps().Name, "running", len(running), "ended", ended, "vanished", vanished)
	return nil
}

// pickTasks maps job IDs to their task, skipping tasks with a corrupt job
// label. Two tasks claiming one job are a conflict, reported as an error:
// the task the job's record names is the job's (the other may be forged:
// a cluster job's comment, a container's labels); with no record naming
// either, neither is adopted. Which task the executor lists last never
// decides.
func (m *Manager) pickTasks(ts []TaskStatus) map[string]TaskStatus {
	claims := map[string][]TaskStatus{}
	for _, t := range ts {
		id := t.JobID
		if id == "" {
			id = t.Labels[LabelJob]
		}
		if !jobIDLabel.MatchString(id) {
			m.log.Warn("skip a labpool task with a bad job label", "task", shortContainer(t.Handle), "label", id)
			continue
		}
		claims[id] = append(claims[id], t)
	}
	out := make(map[string]TaskStatus, len(claims))
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, c := range claims {
		if len(c) == 1 {
			out[id] = c[0]
			continue
		}
		handles := make([]string, len(c))
		for i, t := range c {
			handles[i] = shortContainer(t.Handle)
		}
		recorded := ""
		if j, ok := m.jobs[id]; ok {
			recorded = j.Container
		}
		i := slices.IndexFunc(c, func(t TaskStatus) bool { return recorded != "" && t.Handle == recorded })
		if i < 0 {
			m.log.Error("two tasks claim one job, and its record names neither: adopting none", "job", id, "tasks", handles)
			continue
		}
		m.log.Error("two tasks claim one job: keeping the one its record names", "job", id, "tasks", handles, "kept", shortContainer(recorded))
		out[id] = c[i]
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

// adoptOne brings job id's record in line with its task t.
func (m *Manager) adoptOne(ctx context.Context, id string, t TaskStatus, lost string) Job {
	schedules := m.schedules()
	m.mu.Lock()
	cur, ok := m.jobs[id]
	var j Job
	if ok {
		j = *cur
	} else {
		j = recordFromLabels(m.cfg.Node, id, t)
	}
	m.mu.Unlock()
	was := j.State
	j.Container, j.Ports = t.Handle, t.Ports
	if j.Executor == "" {
		j.Executor = m.caps().Name
	}
	if gs := splitList(t.Labels[LabelGPUs]); len(gs) > 0 || !ok {
		j.GPUs = gs // the label is what the executor was asked for
	}
	j.GPUIndexes = m.ledger.Indexes(j.GPUs, m.gpus.GPUs())
	if j.GPUShare == 0 && j.Spec.GPUShare > 0 && j.Spec.GPUShare < 1 {
		// A record rebuilt from labels: the owner's spec says the share.
		j.GPUShare, j.GPUMemBytes = j.Spec.GPUShare, j.Spec.GPUMemBytes
	}
	prev := j
	apply(&j, t, schedules)
	if ok && keepsEnd(prev, t) {
		// An ended job's history stays as recorded: the executor may no
		// longer know how its task ended (the Docker executor remembers
		// in memory which containers it stopped, so a stopped one reads
		// as exited 143 to a restarted agent).
		j.State, j.Outcome, j.ExitCode, j.Error, j.Finished, j.GPUSeconds =
			prev.State, prev.Outcome, prev.ExitCode, prev.Error, prev.Finished, prev.GPUSeconds
	}
	if t.State == TaskPending && !schedules {
		// The agent stopped between create and start: the job never ran.
		m.discard(ctx, t.Handle)
		now := time.Now().UTC()
		j.State, j.Finished, j.Error, j.Container = Failed, &now, "the agent stopped before the job started", ""
	}
	if was == Running && j.State != Running && lost != "" {
		j.Error = lost
		m.log.Warn("job ended while the backend was away", "job", id, "state", j.State)
	}
	if j.State == Running {
		if conflicts := m.ledger.restoreJob(j); len(conflicts) > 0 {
			m.log.Error("two running jobs hold the same GPUs", "job", id, "gpus", conflicts)
		}
	}
	m.mu.Lock()
	m.setLocked(j)
	m.saveLocked(j)
	return j
}

// keepsEnd says whether rec, a job's record, already holds the end of
// task t: the job ended and the task has not run since (a container that
// restarted and ended again has a later end).
func keepsEnd(rec Job, t TaskStatus) bool {
	if (rec.State != Exited && rec.State != Failed) || rec.Finished == nil || !t.State.Ended() {
		return false
	}
	return t.Finished.IsZero() || !t.Finished.UTC().After(*rec.Finished)
}

// recordFromLabels rebuilds the record of a task that has none (its record
// was lost, or the agent died before saving it): with the spec as the
// owner's proof signs it (LabelSpec), the record verifies as before.
func recordFromLabels(node, id string, t TaskStatus) Job {
	why := "rebuilt from its task's labels: the job record was lost"
	spec, ok := specFromLabel(t.Labels[LabelSpec])
	if !ok {
		spec = Spec{Image: t.Image}
		if t.Labels[LabelSpec] != "" {
			why += "; its spec label is malformed"
		}
	}
	j := Job{ID: id, Name: t.Labels[LabelName], Node: node, Owner: t.Labels[LabelOwner],
		Image: spec.Image, Spec: spec, SpecHash: t.Labels[LabelSpecHash], OwnerProof: t.Labels[LabelProof],
		Created: t.Started.UTC(), GPUs: []string{}, GPUIndexes: []int{}, Error: why}
	if j.Name == "" {
		j.Name = id
	}
	if j.Created.IsZero() {
		j.Created = time.Now().UTC()
	}
	return j
}

// specLabel is the LabelSpec of a job of spec s.
func specLabel(s Spec) string {
	b, _ := json.Marshal(SignedSpec(s))
	return string(b)
}

// specFromLabel reads a LabelSpec (a task's label: what a container's or
// a cluster job's labels say, bounded as a launch's spec); false when it
// is absent (a task of an older labpool) or malformed.
func specFromLabel(l string) (Spec, bool) {
	if l == "" || len(l) > maxSpec {
		return Spec{}, false
	}
	dec := json.NewDecoder(strings.NewReader(l))
	dec.DisallowUnknownFields()
	var s Spec
	if dec.Decode(&s) != nil || dec.More() {
		return Spec{}, false
	}
	return SignedSpec(s), true
}

// markVanished fails the running, starting (or, where the executor
// schedules, queued) jobs whose task is not in byJob, and returns how many.
func (m *Manager) markVanished(byJob map[string]TaskStatus, lost string) int {
	why := "its " + m.taskWord() + " is gone (removed while the agent was down, or the backend lost it)"
	if lost != "" {
		why = "its " + m.taskWord() + " is gone: " + lost
	}
	var ids []string
	m.mu.Lock()
	for id, j := range m.jobs {
		if _, ok := byJob[id]; !ok && (j.State == Running || j.State == Starting || (j.State == Queued && j.Container != "")) {
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
		m.log.Warn("job lost its task", "job", id)
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

// apply sets j's state from its task t; schedules says that the executor
// queues jobs itself (a pending task is a queued job, with the backend's
// reason).
func apply(j *Job, t TaskStatus, schedules bool) {
	if !t.Started.IsZero() {
		s := t.Started.UTC()
		j.Started = &s
	}
	if len(t.Hosts) > 0 {
		j.Hosts = t.Hosts
	}
	j.Restarts = max(j.Restarts, t.Restarts)
	switch {
	case t.State == TaskRunning:
		j.State, j.Finished, j.ExitCode, j.Outcome = Running, nil, nil, ""
		if len(t.Ports) > 0 {
			j.Ports = t.Ports
		}
		if !stoppedOnPurpose(j.Error) {
			j.Error = ""
		}
	case t.State == TaskPending && schedules:
		j.State = Queued
		if !stoppedOnPurpose(j.Error) {
			j.Error = pendingReason(t.Reason)
		}
	case t.State == TaskPending:
		j.State = Starting
	default:
		ended(j, t)
	}
	j.GPUSeconds = gpuSeconds(*j, time.Now())
}

// pendingReason is a queued job's Error from its backend's reason.
func pendingReason(r string) string {
	if r == "" {
		return "queued by the cluster's scheduler"
	}
	return "queued by the cluster's scheduler: " + r
}

// ended records the end of j's task t.
func ended(j *Job, t TaskStatus) {
	code := t.ExitCode
	j.ExitCode = &code
	fin := t.Finished.UTC()
	if t.Finished.IsZero() {
		fin = time.Now().UTC()
	}
	j.Finished = &fin
	j.Outcome = outcome(t)
	j.State = Exited
	if strings.HasPrefix(j.Error, limitPrefix) { // stopped here at its time limit (deadline.go)
		j.State, j.Outcome = Failed, "timed_out"
		return
	}
	if stoppedOnPurpose(j.Error) && j.Outcome == "" {
		// Stopped by labpool (a user, an eviction, a reclaim): cancelled,
		// whether or not the executor still knows it stopped the task.
		j.Outcome = "cancelled"
	}
	if (code == 0 && t.State == TaskExited && !t.OOM) || stoppedOnPurpose(j.Error) {
		return
	}
	j.State = Failed
	switch {
	case t.OOM:
		j.Error = "killed: out of memory"
	case t.State == TaskTimedOut:
		j.Error = "reached its time limit"
	case t.State == TaskCancelled:
		j.Error = "cancelled outside labpool"
		if t.Reason != "" {
			j.Error += ": " + t.Reason
		}
	case t.Reason != "":
		j.Error = t.Reason
	default:
		j.Error = fmt.Sprintf("exited with code %d", code)
	}
}

// outcome says how t ended when its exit code does not (Job.Outcome).
func outcome(t TaskStatus) string {
	switch {
	case t.OOM:
		return "oom"
	case t.State == TaskCancelled:
		return "cancelled"
	case t.State == TaskTimedOut:
		return "timed_out"
	}
	return ""
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
