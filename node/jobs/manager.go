package jobs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/gpu"
)

// ErrNotFound means no job has that ID on this node.
var ErrNotFound = errors.New("no such job")

// ErrNoRuntime means this node has no reachable Docker engine.
var ErrNoRuntime = errors.New("this machine cannot run containers: its Docker engine is not reachable")

// Runtime is the container engine as the manager uses it.
type Runtime interface {
	Run(ctx context.Context, l containers.Launch) (containers.Container, error)
	Stop(ctx context.Context, id string, timeout time.Duration) error
	Remove(ctx context.Context, id string) error
	Inspect(ctx context.Context, id string) (containers.Container, error)
	List(ctx context.Context) ([]containers.Container, error)
	Logs(ctx context.Context, id string, follow bool, tail int) (io.ReadCloser, error)
	Stats(ctx context.Context, id string) (containers.Usage, error)
	Events(ctx context.Context) (<-chan containers.Event, <-chan error)
	Images(ctx context.Context) ([]containers.Image, error)
	LoadImage(ctx context.Context, archive io.Reader, progress containers.Progress) ([]string, error)
	PullImage(ctx context.Context, ref string, progress containers.Progress) error
}

// GPUState gives the latest GPU figures of this node.
type GPUState interface {
	GPUs() []gpu.Stats
}

// FolderResolver maps a shared folder's name to its directory here.
type FolderResolver interface {
	Resolve(name string) (hostPath string, writable bool, err error)
}

// Store keeps job records (the daemon backs it with the replicated log).
type Store interface {
	SaveJob(Job) error
	LoadJobs() ([]Job, error)
}

// Config tunes the manager.
type Config struct {
	Node        string        // this node's device ID
	StopTimeout time.Duration // grace before a stop kills
	Resync      time.Duration // how often running jobs are re-read
	// SimulatedGPUs marks the GPUs as simulated (no NVIDIA runtime): grants
	// reach the container as NVIDIA_VISIBLE_DEVICES only, with no device
	// request, so demos and tests run on machines without a GPU.
	SimulatedGPUs bool
}

// DefaultConfig returns the settings the agent uses.
func DefaultConfig() Config {
	return Config{StopTimeout: 10 * time.Second, Resync: 10 * time.Second}
}

// Manager runs this node's jobs.
type Manager struct {
	cfg     Config
	rt      Runtime // nil: no Docker here
	gpus    GPUState
	folders FolderResolver
	store   Store
	log     *slog.Logger
	ledger  *Ledger
	kick    chan struct{} // wakes the queue

	// ops lets launches run side by side (read lock) but never while an
	// adoption rebuilds the table and the ledger (write lock): an adoption
	// must not see a container its job record does not list yet.
	ops sync.RWMutex

	mu        sync.Mutex // guards jobs, lastStart
	jobs      map[string]*Job
	lastStart map[string]time.Time // owner -> when a job of theirs last started
}

// NewManager returns a manager; rt may be nil on a machine without Docker.
func NewManager(cfg Config, rt Runtime, gpus GPUState, folders FolderResolver, store Store, log *slog.Logger) *Manager {
	return &Manager{cfg: cfg, rt: rt, gpus: gpus, folders: folders, store: store, log: log,
		ledger: NewLedger(), kick: make(chan struct{}, 1), jobs: map[string]*Job{}, lastStart: map[string]time.Time{}}
}

// Ledger returns the GPU ledger.
func (m *Manager) Ledger() *Ledger { return m.ledger }

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func specHash(s Spec) string {
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

// Submit validates spec and starts it on free GPUs, or queues it when
// spec.Queue is set and they are busy.
func (m *Manager) Submit(ctx context.Context, owner string, spec Spec) (Job, error) {
	if m.rt == nil {
		return Job{}, ErrNoRuntime
	}
	m.ops.RLock()
	defer m.ops.RUnlock()
	gpus := m.gpus.GPUs()
	if err := Validate(spec, len(gpus)); err != nil {
		return Job{}, err
	}
	binds, err := m.binds(spec)
	if err != nil {
		return Job{}, err
	}
	id := newID()
	j := &Job{ID: id, Name: jobName(spec, id), Node: m.cfg.Node, Owner: owner, Image: spec.Image, Spec: spec,
		State: Starting, Created: time.Now().UTC(), SpecHash: specHash(spec), GPUs: []string{}, GPUIndexes: []int{}}
	if err := m.grant(j, gpus); err != nil {
		var busy *BusyError
		if !errors.As(err, &busy) || !spec.Queue {
			return Job{}, err
		}
		j.State, j.Error = Queued, "waiting for GPUs: "+err.Error()
		m.put(j)
		m.log.Info("job queued", "job", j.ID, "owner", owner, "why", err)
		return *j, nil
	}
	return m.start(ctx, j, binds)
}

// grant takes the GPUs j asks for; a job asking none takes none.
func (m *Manager) grant(j *Job, gpus []gpu.Stats) error {
	req := Request{Count: j.Spec.GPUs, Indexes: j.Spec.GPUIDs, MinMemBytes: j.Spec.MinGPUMemBytes}
	if req.Count == 0 && len(req.Indexes) == 0 {
		return nil
	}
	uuids, err := m.ledger.Grant(j.ID, j.Owner, req, gpus)
	if err != nil {
		return err
	}
	j.GPUs, j.GPUIndexes = uuids, indexesOf(uuids, gpus)
	return nil
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
func (m *Manager) binds(s Spec) ([]containers.Bind, error) {
	var out []containers.Bind
	for _, mt := range s.Mounts {
		if m.folders == nil {
			return nil, refuse("shared-folders-only", "folder %q: this machine shares no folders", mt.Folder)
		}
		dir, writable, err := m.folders.Resolve(mt.Folder)
		if err != nil {
			return nil, refuse("shared-folders-only", "folder %q: %v", mt.Folder, err)
		}
		if mt.ReadWrite && !writable {
			return nil, refuse("read-only-folder", "folder %q is shared read-only", mt.Folder)
		}
		out = append(out, containers.Bind{HostPath: dir, Target: mt.Target, ReadOnly: !mt.ReadWrite})
	}
	return out, nil
}

// start creates and starts j's container; on failure nothing is left and
// the GPUs are free again.
func (m *Manager) start(ctx context.Context, j *Job, binds []containers.Bind) (Job, error) {
	l := containers.Launch{
		Name: "labpool-" + j.Name + "-" + j.ID[:6], Image: j.Spec.Image, Cmd: j.Spec.Cmd, Env: j.Spec.Env, GPUs: j.GPUs,
		CPUs: j.Spec.CPUs, MemoryBytes: j.Spec.MemoryBytes, ShmBytes: j.Spec.ShmBytes, Binds: binds,
		Ports: j.Spec.Ports, Restart: j.Spec.Restart,
		Labels: map[string]string{
			containers.LabelJob: j.ID, containers.LabelOwner: j.Owner, containers.LabelNode: m.cfg.Node,
			containers.LabelGPUs: strings.Join(j.GPUs, ","), containers.LabelSpecHash: j.SpecHash,
			"labpool.name": j.Name,
		},
	}
	if m.cfg.SimulatedGPUs && len(l.GPUs) > 0 {
		l.Env = append(slices.Clone(l.Env), "NVIDIA_VISIBLE_DEVICES="+strings.Join(l.GPUs, ","))
		l.GPUs = nil
	}
	c, err := m.rt.Run(ctx, l)
	if err != nil {
		m.ledger.Release(j.ID)
		if j.State == Queued {
			j.State, j.Error = Failed, err.Error()
			m.put(j)
		}
		return Job{}, fmt.Errorf("start %s: %w", j.Name, err)
	}
	now := time.Now().UTC()
	j.State, j.Container, j.Ports, j.Started, j.Error = Running, c.ID, c.Ports, &now, ""
	m.mu.Lock()
	m.lastStart[j.Owner] = now
	m.mu.Unlock()
	m.put(j)
	m.log.Info("job started", "job", j.ID, "name", j.Name, "owner", j.Owner, "gpus", j.GPUIndexes, "container", shortContainer(c.ID))
	// A quick job may have ended before it was recorded, its die event
	// finding no job: read its state once now.
	if err := m.refresh(ctx, j.ID, false); err != nil {
		m.log.Debug("read a new job's container", "job", j.ID, "err", err)
	}
	return m.Get(j.ID)
}

// put stores j in memory and in the Store.
func (m *Manager) put(j *Job) {
	cp := *j // the table never shares a pointer with a caller
	m.mu.Lock()
	m.jobs[j.ID] = &cp
	m.mu.Unlock()
	if err := m.store.SaveJob(cp); err != nil {
		m.log.Error("save job record", "job", j.ID, "err", err)
	}
}

// Get returns one job.
func (m *Manager) Get(id string) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return Job{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return *j, nil
}

// List returns this node's jobs, newest first.
func (m *Manager) List() []Job {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		out = append(out, *j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Created.After(out[b].Created) })
	return out
}

// Stop stops a running job, or takes a queued one out of the queue.
func (m *Manager) Stop(ctx context.Context, id string) (Job, error) {
	j, err := m.Get(id)
	if err != nil {
		return Job{}, err
	}
	switch j.State {
	case Queued:
		now := time.Now().UTC()
		j.State, j.Finished, j.Error = Exited, &now, "stopped while queued"
		m.put(&j)
		return j, nil
	case Running, Starting:
		j.Error = "stopped" // so the exit the stop causes is not a failure
		m.mu.Lock()
		if cur := m.jobs[id]; cur != nil {
			cur.Error = j.Error
		}
		m.mu.Unlock()
		if err := m.rt.Stop(ctx, j.Container, m.cfg.StopTimeout); err != nil {
			return Job{}, fmt.Errorf("stop %s: %w", j.Name, err)
		}
		if err := m.refresh(ctx, j.ID, true); err != nil {
			return Job{}, err
		}
	}
	return m.Get(id)
}

// Remove deletes an ended job's container; a running job is stopped first.
func (m *Manager) Remove(ctx context.Context, id string) error {
	j, err := m.Get(id)
	if err != nil {
		return err
	}
	if j.State == Running || j.State == Starting {
		if _, err := m.Stop(ctx, id); err != nil {
			return err
		}
	}
	j, _ = m.Get(id)
	j.Removed = true // before the engine's destroy event can be handled
	m.put(&j)
	if j.Container != "" {
		if err := m.rt.Remove(ctx, j.Container); err != nil && !strings.Contains(err.Error(), "No such container") {
			j.Removed = false
			m.put(&j)
			return fmt.Errorf("remove %s: %w", j.Name, err)
		}
	}
	j, _ = m.Get(id)
	j.Container = ""
	m.put(&j)
	return nil
}

// Logs streams a job's output.
func (m *Manager) Logs(ctx context.Context, id string, follow bool, tail int) (io.ReadCloser, error) {
	j, err := m.Get(id)
	if err != nil {
		return nil, err
	}
	if j.Container == "" {
		return nil, fmt.Errorf("job %s has no container (it is %s)", j.Name, j.State)
	}
	return m.rt.Logs(ctx, j.Container, follow, tail)
}

// Stats returns what a job uses: its container's CPU and memory, and on
// each of its GPUs the memory of its own processes.
func (m *Manager) Stats(ctx context.Context, id string) (Stats, error) {
	j, err := m.Get(id)
	if err != nil {
		return Stats{}, err
	}
	if j.State != Running {
		return Stats{}, fmt.Errorf("job %s is %s, not running", j.Name, j.State)
	}
	u, err := m.rt.Stats(ctx, j.Container)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{CPUPercent: u.CPUPercent, MemUsedBytes: u.MemUsedBytes, MemLimitBytes: u.MemLimitBytes, GPUs: []GPUStats{}}
	for _, g := range m.gpus.GPUs() {
		if !slices.Contains(j.GPUs, g.UUID) {
			continue
		}
		gs := GPUStats{UUID: g.UUID, Index: g.Index, UtilPercent: g.UtilPercent}
		for _, p := range g.Processes {
			if slices.Contains(u.PIDs, int(p.PID)) {
				gs.MemUsedBytes += p.MemBytes
			}
		}
		st.GPUs = append(st.GPUs, gs)
	}
	return st, nil
}

// Images lists the engine's images.
func (m *Manager) Images(ctx context.Context) ([]Image, error) {
	if m.rt == nil {
		return nil, ErrNoRuntime
	}
	imgs, err := m.rt.Images(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Image, 0, len(imgs))
	for _, i := range imgs {
		out = append(out, Image{ID: i.ID, Tags: i.Tags, Size: i.Size, Created: i.Created})
	}
	return out, nil
}

func shortContainer(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
