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
	"strings"
	"time"

	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/gpu"
)

// LabelName carries the job's name, so a record rebuilt from a container
// keeps it.
const LabelName = "labpool.name"

// Submit validates spec and starts it for caller on free GPUs, or queues it
// when spec.Queue is set and they are busy. Refusals (*RefusedError: who
// asks, the machine's policy, the safety rules) and busy GPUs (*BusyError)
// come before any Docker call; a launch that fails leaves no container and
// no GPU granted. A job without a memory limit gets the policy's default.
func (m *Manager) Submit(ctx context.Context, caller Caller, spec Spec) (Job, error) {
	if err := m.mayLaunch(caller); err != nil {
		return Job{}, err
	}
	if m.rt == nil {
		return Job{}, ErrNoRuntime
	}
	m.ops.RLock()
	defer m.ops.RUnlock()
	gpus := m.gpus.GPUs()
	if err := Validate(spec, len(gpus)); err != nil {
		return Job{}, err
	}
	if err := m.resourcePolicy(caller, &spec); err != nil {
		return Job{}, err
	}
	binds, err := m.binds(spec, caller.ID)
	if err != nil {
		return Job{}, err
	}
	if _, _, err := m.runAs(spec, binds); err != nil {
		return Job{}, err
	}
	owner := caller.ID
	j := newJob(m.cfg.Node, owner, spec)
	if err := m.store.SavePrivate(j.ID, Private{Env: spec.Env, Cmd: spec.Cmd}); err != nil {
		return Job{}, fmt.Errorf("keep the job's environment and command line: %w", err)
	}
	blocked, reserved := m.blocked(gpus)
	uuids, err := m.ledger.Grant(j.ID, j.request(), gpus, blocked)
	if err != nil {
		err = m.explainBusy(err, reserved)
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
	c, err := m.launch(ctx, j, binds)
	if err != nil {
		m.ledger.Release(j.ID)
		m.store.SavePrivate(j.ID, Private{})
		m.wake()
		return Job{}, err
	}
	setRunning(&j, c)
	m.mu.Lock()
	m.served[owner] = *j.Started
	m.setLocked(j)
	m.saveLocked(j)
	m.log.Info("job started", "job", j.ID, "name", j.Name, "owner", owner, "gpus", j.GPUIndexes, "container", shortContainer(c.ID))
	return m.afterStart(ctx, j.ID)
}

func newJob(node, owner string, spec Spec) Job {
	id := newID()
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

// jobName is the spec's name, or one made from the image.
func jobName(s Spec, id string) string {
	if s.Name != "" {
		return s.Name
	}
	base := path.Base(strings.SplitN(s.Image, "@", 2)[0])
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

// blocked returns the GPUs a new job may not take now: those busy outside
// labpool, and those reserved (GPU -> job) for queued jobs that waited past
// StarveAfter (see queue.go).
func (m *Manager) blocked(gpus []gpu.Stats) (map[string]bool, map[string]string) {
	out := m.external(gpus)
	reserved := map[string]string{}
	granted := m.ledger.Granted()
	for _, j := range m.starving() {
		for _, u := range reserve(j, gpus, granted, out) {
			out[u], reserved[u] = true, j.ID
		}
	}
	return out, reserved
}

// explainBusy completes a *BusyError: the owner of each job holding a GPU,
// and the GPUs reserved for a queued job.
func (m *Manager) explainBusy(err error, reserved map[string]string) error {
	var be *BusyError
	if !errors.As(err, &be) {
		return err
	}
	m.mu.Lock()
	for i, b := range be.Busy {
		if r := reserved[b.UUID]; r != "" && b.External {
			be.Busy[i].External, be.Busy[i].Reserved, be.Busy[i].Job = false, true, r
			b.Job = r
		}
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

// binds resolves the spec's shared folders to host directories.
func (m *Manager) binds(s Spec, owner string) ([]containers.Bind, error) {
	var out []containers.Bind
	for _, mt := range s.Mounts {
		if m.folders == nil {
			return nil, refuse("shared-folders-only", "folder %q: this machine shares no folders", mt.Folder)
		}
		dir, err := m.folders.ResolveFor(mt.Folder, owner, mt.ReadWrite)
		if err != nil {
			return nil, refuse("shared-folders-only", "folder %q: %v", mt.Folder, err)
		}
		out = append(out, containers.Bind{HostPath: dir, Target: path.Clean(mt.Target), ReadOnly: !mt.ReadWrite})
	}
	return out, nil
}

// launchFor is the container j runs in.
func (m *Manager) launchFor(j Job, binds []containers.Bind) (containers.Launch, error) {
	user, allowRoot, err := m.runAs(j.Spec, binds)
	if err != nil {
		return containers.Launch{}, err
	}
	l := containers.Launch{
		User: user, AllowRoot: allowRoot, LogMaxBytes: m.Policy().LogMaxBytes,
		Name: "labpool-" + j.Name + "-" + j.ID[:6], Image: j.Spec.Image, Cmd: j.Spec.Cmd, GPUs: j.GPUs,
		CPUs: j.Spec.CPUs, MemoryBytes: j.Spec.MemoryBytes, ShmBytes: j.Spec.ShmBytes, Binds: binds,
		Ports: specPorts(j.Spec), Restart: j.Spec.Restart, Network: m.Policy().JobNetwork,
		Labels: map[string]string{
			containers.LabelJob: j.ID, containers.LabelOwner: j.Owner, containers.LabelNode: m.cfg.Node,
			containers.LabelGPUs: strings.Join(j.GPUs, ","), containers.LabelSpecHash: j.SpecHash, LabelName: j.Name,
		},
	}
	// The NVIDIA runtime (the default runtime on many GPU servers) reads
	// NVIDIA_VISIBLE_DEVICES, which CUDA images set to "all": pin it to the
	// grant, "void" when none.
	visible := "void"
	if len(j.GPUs) > 0 {
		visible = strings.Join(j.GPUs, ",")
	}
	l.Env = append(slices.Clone(j.Spec.Env), "NVIDIA_VISIBLE_DEVICES="+visible)
	if m.cfg.SimulatedGPUs {
		l.GPUs = nil
	}
	return l, nil
}

// specPorts is the spec's container ports and those of its loopback port
// binds, each once.
func specPorts(s Spec) []int {
	out := slices.Clone(s.Ports)
	for _, b := range s.PortBinds {
		if p, err := ParsePortBind(b); err == nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// launch creates and starts j's container; if either fails, no container
// is left.
func (m *Manager) launch(ctx context.Context, j Job, binds []containers.Bind) (containers.Container, error) {
	l, err := m.launchFor(j, binds)
	if err != nil {
		return containers.Container{}, err
	}
	c, err := m.rt.Create(ctx, l)
	if err != nil {
		return c, fmt.Errorf("launch %s: %w", j.Name, err)
	}
	started, err := m.rt.Start(ctx, c.ID)
	if err != nil {
		m.discard(ctx, c.ID)
		return started, fmt.Errorf("launch %s: %w", j.Name, err)
	}
	return started, nil
}

// discard removes a container this manager created, even when ctx is over.
func (m *Manager) discard(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := m.rt.Remove(rctx, id); err != nil && !isGone(err) {
		m.log.Error("remove a container that failed to start", "container", shortContainer(id), "err", err)
	}
}

// setRunning records that j runs in c.
func setRunning(j *Job, c containers.Container) {
	now := time.Now().UTC()
	j.State, j.Container, j.Ports, j.Started, j.Error = Running, c.ID, c.Ports, &now, ""
}

// afterStart reads a new job's container once: a quick job may have ended
// before it was recorded, its die event finding no job.
func (m *Manager) afterStart(ctx context.Context, id string) (Job, error) {
	if err := m.refresh(ctx, id, ""); err != nil {
		m.log.Debug("read a new job's container", "job", id, "err", err)
	}
	return m.Get(id)
}
