package jobs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labpool/labpool/node/gpu"
)

// Submit validates spec and starts it for caller: on free GPUs of this
// machine, or queued when spec.Queue is set and they are busy; where the
// executor schedules itself (a Slurm cluster), it is handed over at once,
// with no GPU ledger entry and no local queue. Refusals (*RefusedError: who
// asks, the machine's policy, the executor's and the safety rules) and busy
// GPUs (*BusyError) come before any backend call; a launch that fails
// leaves no task and no GPU granted. A job without a memory limit gets the
// policy's default.
//
// Submit carries no owner proof: it is for Go code of this machine that has
// decided who asks (no request reaches it), and the record reads as
// unverified everywhere. A request goes through SubmitProven.
func (m *Manager) Submit(ctx context.Context, caller Caller, spec Spec) (Job, error) {
	if err := m.mayLaunch(caller); err != nil {
		return Job{}, err
	}
	return m.submitAs(ctx, caller, spec, "", "")
}

// SubmitProven is Submit for a request, with the owner's proof (Proof's
// wire form). The proof must be the caller's signature on spec for this
// node; the job is named after it (Proof.JobID), so a launch sent twice
// returns the job the first one made, and the record keeps the proof. A
// launch without one is refused (RuleProofMissing) but from this machine's
// own user, whose record then reads as unverified.
func (m *Manager) SubmitProven(ctx context.Context, caller Caller, spec Spec, proof string) (Job, error) {
	if err := m.mayLaunch(caller); err != nil {
		return Job{}, err
	}
	id, err := m.proofID(caller, spec, proof)
	if err != nil {
		return Job{}, err
	}
	return m.submitAs(ctx, caller, spec, id, proof)
}

// submitAs launches spec for caller as job id ("": a new random ID), whose
// proof, checked by the caller, is proof.
func (m *Manager) submitAs(ctx context.Context, caller Caller, spec Spec, id, proof string) (Job, error) {
	if proof != "" {
		done, err := m.claim(id)
		if err != nil {
			return Job{}, err
		}
		defer done()
		if j, err := m.Get(id); err == nil {
			return j, nil // sent again: the job the proof already launched
		}
	}
	if m.ex == nil {
		return Job{}, ErrNoRuntime
	}
	m.ops.RLock()
	defer m.ops.RUnlock()
	caps := m.ex.Capabilities()
	gpus := m.gpus.GPUs()
	v, _ := m.ex.(Validator)
	if err := Validate(spec, caps, v, len(gpus)); err != nil {
		return Job{}, err
	}
	if err := ValidateShareMem(spec, gpus); err != nil && !caps.Schedules {
		return Job{}, err
	}
	if err := m.resourcePolicy(caller, &spec); err != nil {
		return Job{}, err
	}
	mounts, err := m.mounts(spec, caller.ID)
	if err != nil {
		return Job{}, err
	}
	if _, _, err := m.runAs(spec, mounts, caps); err != nil {
		return Job{}, err
	}
	owner := caller.ID
	j := newJob(m.cfg.Node, owner, id, spec)
	j.Executor, j.OwnerProof = caps.Name, proof
	j.ShareMode = shareMode(spec, caps)
	if err := m.store.SavePrivate(j.ID, Private{Env: spec.Env, Cmd: spec.Cmd, Salt: spec.PrivateSalt}); err != nil {
		return Job{}, fmt.Errorf("keep the job's environment and command line: %w", err)
	}
	if caps.Schedules {
		return m.submitScheduled(ctx, j, mounts)
	}
	external := m.external(gpus)
	m.keepStarving(gpus, external)
	uuids, err := m.ledger.Grant(j.ID, j.request(), gpus, external)
	if err != nil {
		err = m.explainBusy(err)
		var refused *RefusedError
		if !spec.Queue || errors.As(err, &refused) { // a quarantined GPU asked by index: waiting would not help
			m.store.SavePrivate(j.ID, Private{})
			return Job{}, err
		}
		j.State, j.Error = Queued, "waiting for GPUs: "+err.Error()
		m.insert(j)
		m.log.Info("job queued", "job", j.ID, "owner", owner, "why", err)
		m.wake()
		return j, nil
	}
	j.GPUs, j.GPUIndexes = uuids, m.ledger.Indexes(uuids, gpus)
	j.GPUShare, j.GPUMemBytes = m.ledger.share(j.ID)
	t, err := m.launch(ctx, j, mounts)
	if err != nil {
		m.ledger.Release(j.ID)
		m.store.SavePrivate(j.ID, Private{})
		m.wake()
		return Job{}, err
	}
	setRunning(&j, t)
	m.mu.Lock()
	m.served[m.person(owner)] = *j.Started
	m.setLocked(j)
	m.saveLocked(j)
	m.log.Info("job started", "job", j.ID, "name", j.Name, "owner", owner, "gpus", j.GPUIndexes, "task", shortContainer(t.Handle))
	return m.afterStart(ctx, j.ID)
}

// submitScheduled hands j to an executor that queues and places it itself:
// the job is queued (with the backend's reason) or running as the backend
// says.
func (m *Manager) submitScheduled(ctx context.Context, j Job, mounts []TaskMount) (Job, error) {
	t, err := m.launch(ctx, j, mounts)
	if err != nil {
		m.store.SavePrivate(j.ID, Private{})
		return Job{}, err
	}
	j.Container = t.Handle
	apply(&j, t, true)
	m.insert(j)
	m.log.Info("job submitted", "job", j.ID, "name", j.Name, "owner", j.Owner, "executor", j.Executor, "task", t.Handle, "state", j.State)
	return m.afterStart(ctx, j.ID)
}

// newJob is the record of a new launch of spec; id "" makes a random ID.
func newJob(node, owner, id string, spec Spec) Job {
	if id == "" {
		id = newID()
	}
	return Job{ID: id, Name: jobName(spec, id), Node: node, Owner: owner, Image: spec.Image, Spec: spec,
		State: Starting, Created: time.Now().UTC(), SpecHash: specHash(spec), GPUs: []string{}, GPUIndexes: []int{}}
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// specHash identifies a spec; it is replicated, so it covers the names of
// the environment's variables, not their values.
func specHash(s Spec) string {
	s.PrivateSalt = ""
	for i, e := range s.Env {
		if i == 0 {
			s.Env = slices.Clone(s.Env)
		}
		s.Env[i], _, _ = strings.Cut(e, "=")
	}
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// jobName is the spec's name, or one made from the image (or the command
// of a command job).
func jobName(s Spec, id string) string {
	if s.Name != "" {
		return s.Name
	}
	from := s.Image
	if from == "" && len(s.Cmd) > 0 {
		from = s.Cmd[0]
	}
	base := path.Base(strings.SplitN(from, "@", 2)[0])
	base, _, _ = strings.Cut(base, ":")
	return base + "-" + id[:4]
}

// external returns the GPUs busy with processes outside labpool: a
// process on a GPU granted to no job. (A granted GPU is visible only to its
// job's container, so its processes are the job's.)
func (m *Manager) external(gpus []gpu.Stats) map[string]bool {
	granted := m.ledger.Granted()
	out := map[string]bool{}
	for _, g := range gpus {
		if len(g.Processes) > 0 && granted[g.UUID] == "" {
			out[g.UUID] = true
		}
	}
	return out
}

// explainBusy completes a *BusyError: the owner and name of each job
// holding a GPU or keeping it as a starving queued job.
func (m *Manager) explainBusy(err error) error {
	var be *BusyError
	if !errors.As(err, &be) {
		return err
	}
	m.mu.Lock()
	for i, b := range be.Busy {
		if j := m.jobs[b.Job]; j != nil {
			be.Busy[i].Owner, be.Busy[i].JobName = j.Owner, j.Name
		}
	}
	m.mu.Unlock()
	if m.cfg.MemberName != nil {
		for i, b := range be.Busy {
			if b.Owner != "" {
				be.Busy[i].OwnerName = m.cfg.MemberName(b.Owner)
			}
		}
	}
	return be
}

func indexesOf(uuids []string, gpus []gpu.Stats) []int {
	out := []int{}
	for _, g := range gpus {
		if slices.Contains(uuids, g.UUID) {
			out = append(out, g.Index)
		}
	}
	return out
}

// mounts resolves the spec's shared folders to host directories.
func (m *Manager) mounts(s Spec, owner string) ([]TaskMount, error) {
	var out []TaskMount
	for _, mt := range s.Mounts {
		if m.folders == nil {
			return nil, refuse("shared-folders-only", "folder %q: this machine shares no folders", mt.Folder)
		}
		dir, err := m.folders.ResolveFor(mt.Folder, owner, mt.ReadWrite)
		if err != nil {
			return nil, refuse("shared-folders-only", "folder %q: %v", mt.Folder, err)
		}
		out = append(out, TaskMount{HostPath: dir, Target: path.Clean(mt.Target), ReadOnly: !mt.ReadWrite})
	}
	return out, nil
}

// task is what the executor is asked to run for j.
func (m *Manager) task(j Job, mounts []TaskMount) (Task, error) {
	caps := m.ex.Capabilities()
	user, allowRoot, err := m.runAs(j.Spec, mounts, caps)
	if err != nil {
		return Task{}, err
	}
	p := m.Policy()
	s := j.Spec
	return Task{
		ID: j.ID, Name: j.Name, Owner: j.Owner, Image: s.Image, Cmd: slices.Clone(s.Cmd), Env: slices.Clone(s.Env),
		GPUs: slices.Clone(j.GPUs), GPUShare: s.GPUShare, GPUMemBytes: s.GPUMemBytes, Mounts: mounts, Ports: specPorts(s),
		Resources: Resources{CPUs: s.CPUs, MemoryBytes: s.MemoryBytes, GPUs: s.GPUs, Nodes: s.Nodes,
			GPUsPerNode: s.GPUsPerNode, TimeLimit: time.Duration(s.TimeLimitSeconds) * time.Second, Partition: s.Partition},
		Labels: map[string]string{
			LabelJob: j.ID, LabelOwner: j.Owner, LabelNode: m.cfg.Node,
			LabelGPUs: strings.Join(j.GPUs, ","), LabelSpecHash: j.SpecHash, LabelName: j.Name,
			LabelProof: j.OwnerProof, LabelSpec: specLabel(j.Spec),
		},
		Container: ContainerOptions{User: user, AllowRoot: allowRoot, ShmBytes: s.ShmBytes, Restart: s.Restart,
			Network: p.JobNetwork, LogMaxBytes: p.LogMaxBytes},
	}, nil
}

// specPorts is the spec's ports and those of its loopback port binds (the
// executor's validator checked their form: "127.0.0.1:[HOST]:PORT[/tcp]"),
// each once.
func specPorts(s Spec) []int {
	out := slices.Clone(s.Ports)
	for _, b := range s.PortBinds {
		_, port, _ := strings.Cut(strings.TrimSuffix(b, "/tcp"), "::")
		if i := strings.LastIndexByte(b, ':'); port == "" && i >= 0 {
			port = strings.TrimSuffix(b[i+1:], "/tcp")
		}
		if p, err := strconv.Atoi(port); err == nil && p > 0 && p <= 65535 && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// launch starts j's task; a start that fails leaves nothing behind (the
// executor's promise).
func (m *Manager) launch(ctx context.Context, j Job, mounts []TaskMount) (TaskStatus, error) {
	t, err := m.task(j, mounts)
	if err != nil {
		return TaskStatus{}, err
	}
	ts, err := m.ex.Start(ctx, t)
	if err != nil {
		return TaskStatus{}, fmt.Errorf("launch %s: %w", j.Name, err)
	}
	return ts, nil
}

// discard removes a task this manager started, even when ctx is over.
func (m *Manager) discard(ctx context.Context, handle string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := m.ex.Stop(rctx, handle, 0); err != nil && !isGone(err) {
		m.log.Warn("stop a task that must not run", "task", shortContainer(handle), "err", err)
	}
	if err := m.ex.Remove(rctx, handle); err != nil && !isGone(err) {
		m.log.Error("remove a task that must not run", "task", shortContainer(handle), "err", err)
	}
}

// setRunning records that j runs as task t.
func setRunning(j *Job, t TaskStatus) {
	now := time.Now().UTC()
	j.State, j.Container, j.Ports, j.Started, j.Error = Running, t.Handle, t.Ports, &now, ""
	j.ImageLoadedBy = t.ImageLoadedBy
}

// afterStart reads a new job's task once: a quick job may have ended
// before it was recorded, its die event finding no job.
func (m *Manager) afterStart(ctx context.Context, id string) (Job, error) {
	if err := m.refresh(ctx, id, ""); err != nil {
		m.log.Debug("read a new job's task", "job", id, "err", err)
	}
	return m.Get(id)
}
