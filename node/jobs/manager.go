package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labpool/labpool/node/gpu"
)

// Errors callers branch on (the handler maps them to HTTP statuses).
var (
	// ErrNotFound means no job has that ID on this node.
	ErrNotFound = errors.New("no such job")
	// ErrNoRuntime means this node has no executor: no reachable Docker
	// engine (nor a cluster it stands for).
	ErrNoRuntime = errors.New("this machine cannot run containers: its Docker engine is not reachable")
	// ErrConflict means the job is not in a state that allows the operation
	// (logs of a job that never started, stats of an ended job).
	ErrConflict = errors.New("not possible in the job's state")
)

// GPUState gives the latest GPU figures of this node, each GPU with its
// processes (host PIDs and memory).
type GPUState interface {
	GPUs() []gpu.Stats
}

// FolderResolver maps a shared folder's name to its directory here, for
// a job of member: it refuses a member the share is not shared with, and a
// write (rw) to a read-only share, naming the rule.
type FolderResolver interface {
	ResolveFor(name, member string, rw bool) (hostPath string, err error)
}

// Store keeps job records. The daemon backs SaveJob and LoadJobs with the
// replicated log, so the manager hands them public records only (see
// Job.Public); a job's Env values and command line go to SavePrivate,
// which keeps them in this machine's local state.
type Store interface {
	SaveJob(Job) error
	LoadJobs() ([]Job, error)
	SavePrivate(id string, p Private) error // the zero Private drops it
	LoadPrivate(id string) (Private, error)
}

// Private is what of a job's spec stays on its machine: the values of its
// environment and its command line.
type Private struct {
	Env  []string `json:"env,omitempty"`
	Cmd  []string `json:"cmd,omitempty"`
	Salt string   `json:"salt,omitempty"` // Spec.PrivateSalt
}

// Config tunes the manager.
type Config struct {
	Node        string        // this node's device ID
	StopTimeout time.Duration // grace between SIGTERM and SIGKILL on stop
	Resync      time.Duration // how often running jobs are re-read (GPU-time, missed events)
	QueuePoll   time.Duration // how often the queue is retried besides on every release
	StarveAfter time.Duration // a queued job waiting longer reserves GPUs (see queue.go)
	MaxBackoff  time.Duration // the longest wait between reconnections to the engine
	// MemberName (may be nil) names a member's device ID for a person, ""
	// when unknown; messages fall back to the short ID. It must not block
	// for long (a read of the local replica).
	MemberName func(id string) string
	// PersonOf (may be nil: each device a person of its own) returns the
	// person whose device id is, "" when unknown: a person's devices act
	// on each other's jobs, share one GPU limit and one turn in the queue.
	// It must not block for long (a read of the local replica).
	PersonOf func(id string) string
	// Devices are this machine's GPUs as read at start: placement weighs
	// their NVLink and PCIe links (Place).
	Devices []gpu.Info
	// GrantEdge, when set, is told the GPUs a grant takes or a release
	// frees, as they change hands: the GPU sampler reads their energy
	// counters at the next sample (gpu.Sampler.ReadEnergy), so that a job's
	// energy is the counter's own at both ends. It must not block.
	GrantEdge func(uuids ...string)
	// RemoteIdle, when set, judges the idle reclaim policy's "idle" for
	// the running jobs of an executor that schedules (Capabilities), whose
	// GPUs are none of this machine's (a Slurm job's are on its compute
	// nodes): it returns those of js whose GPUs all stayed under below
	// percent lately, by what the machines holding them report; a job it
	// leaves out counts as busy. It must not block for long (reads of the
	// local replica). See reclaim.go.
	RemoteIdle func(now time.Time, js []Job, below float64) map[string]bool
	// RemoteGPUs, when set, returns for Stats the GPUs of a running job of
	// an executor that schedules (Capabilities), which are none of this
	// machine's: what the machines holding them report of them (a Slurm
	// job's compute nodes), nil where none is known. It must not block for
	// long (reads of the local replica).
	RemoteGPUs func(ctx context.Context, j Job) []GPUStats

	// The pool-wide queue (handover.go). Targets, when set with Offer,
	// returns the pool's other machines as the replica shows them for a
	// job queued pool-wide, in the order the job would rather go to them
	// (it must not block for long: reads of the local replica); Offer sends
	// an offer to a machine and returns its answer (an error: no answer).
	// Role names the role in the pool of a member (the owner of a job
	// offered here), "" for none; nil refuses every offer. Usage returns
	// each member's decayed GPU-hours across the pool (fairness.go); nil
	// orders owners by this machine's turns alone.
	Targets func(spec Spec) []Target
	Offer   func(ctx context.Context, node string, o Offer) (OfferAnswer, error)
	Role    func(id string) string
	Usage   func() map[string]float64
	// OfferPoll is how often the jobs queued pool-wide are weighed against
	// the pool besides on Wake; RefuseBackoff how long a machine that
	// refused a job is not offered it again.
	OfferPoll     time.Duration
	RefuseBackoff time.Duration
	// PoolChanged, when set, receives a value when the replica changed
	// (another machine's telemetry or jobs): the jobs queued pool-wide are
	// weighed again then, not at the next OfferPoll.
	PoolChanged <-chan struct{}
}

// DefaultConfig returns the settings the agent uses.
func DefaultConfig() Config {
	return Config{StopTimeout: 10 * time.Second, Resync: 10 * time.Second, QueuePoll: 2 * time.Second,
		StarveAfter: 10 * time.Minute, MaxBackoff: 5 * time.Second, OfferPoll: 500 * time.Millisecond, RefuseBackoff: 30 * time.Second}
}

// Manager runs this node's jobs: it validates, grants GPUs, queues,
// launches through its Executor, and keeps the records current from the
// executor's events. With an executor that schedules (Capabilities), it
// keeps no ledger entry and no queue of its own: the backend does both.
type Manager struct {
	cfg     Config
	ex      Executor // nil: nothing runs jobs here
	gpus    GPUState
	folders FolderResolver // nil: no shared folders
	store   Store
	log     *slog.Logger
	ledger  *Ledger
	health  gpuHealth     // quarantines kept and cleared (quarantine.go)
	kick    chan struct{} // wakes the queue
	offers  chan struct{} // wakes the hand-over of jobs queued pool-wide

	// ops lets launches run side by side (read lock) but never while an
	// adoption rebuilds the table and the ledger (write lock): an adoption
	// must not see a container its job record does not list yet.
	ops sync.RWMutex

	mu        sync.Mutex           // guards jobs, queue, served, policy, launching, refused, refusedAt, waitWhy
	jobs      map[string]*Job      // never shared with callers; Env included
	launching map[string]bool      // IDs of proven launches under way (proven.go)
	queue     map[string]bool      // IDs of the queued jobs
	active    map[string]bool      // IDs of the starting and running jobs (the lender reads them each second)
	served    map[string]time.Time // owner -> when a job of theirs last started
	policy    Policy
	refused   map[string]uint64               // job -> the highest fence of an offer of it refused here
	refusedAt map[string]map[string]time.Time // job -> machine -> until when it is not offered the job again (it refused it)
	waitWhy   map[string]string               // queued job -> what keeps it from this machine's GPUs

	saveMu sync.Mutex // taken before mu is released: saves reach the Store in the order of the changes

	evictLoaded atomic.Bool // an eviction has read the kept records (evict.go)
}

// NewManager returns a manager; ex may be nil on a machine without Docker,
// folders nil on one that shares no folder.
func NewManager(cfg Config, ex Executor, gpus GPUState, folders FolderResolver, store Store, log *slog.Logger) *Manager {
	def := DefaultConfig()
	cfg.StopTimeout = orDefault(cfg.StopTimeout, def.StopTimeout)
	cfg.Resync = orDefault(cfg.Resync, def.Resync)
	cfg.QueuePoll = orDefault(cfg.QueuePoll, def.QueuePoll)
	cfg.StarveAfter = orDefault(cfg.StarveAfter, def.StarveAfter)
	cfg.MaxBackoff = orDefault(cfg.MaxBackoff, def.MaxBackoff)
	cfg.OfferPoll = orDefault(cfg.OfferPoll, def.OfferPoll)
	cfg.RefuseBackoff = orDefault(cfg.RefuseBackoff, def.RefuseBackoff)
	ledger := NewLedger()
	ledger.SetTopology(cfg.Devices)
	ledger.edge = cfg.GrantEdge
	m := &Manager{cfg: cfg, ex: ex, gpus: gpus, folders: folders, store: store, log: log,
		ledger: ledger, kick: make(chan struct{}, 1), offers: make(chan struct{}, 1),
		refused: map[string]uint64{}, refusedAt: map[string]map[string]time.Time{}, waitWhy: map[string]string{},
		jobs: map[string]*Job{}, launching: map[string]bool{}, queue: map[string]bool{}, active: map[string]bool{}, served: map[string]time.Time{},
		policy: DefaultPolicy()}
	ledger.onHeld = m.wake // what others hold changed: a queued job may fit now
	ledger.person = m.person
	return m
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Ledger returns the GPU ledger.
func (m *Manager) Ledger() *Ledger { return m.ledger }

// Get returns one job.
func (m *Manager) Get(id string) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return Job{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return current(*j, time.Now()), nil
}

// List returns this node's jobs, newest first.
func (m *Manager) List() []Job {
	now := time.Now()
	m.mu.Lock()
	out := make([]Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		out = append(out, current(*j, now))
	}
	m.mu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Created.Equal(out[b].Created) {
			return out[a].Created.After(out[b].Created)
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// current brings a running job's GPU-time up to now.
func current(j Job, now time.Time) Job {
	if j.State == Running {
		j.GPUSeconds = gpuSeconds(j, now)
	}
	return j
}

// setLocked stores j in the table; m.mu is held.
func (m *Manager) setLocked(j Job) {
	m.jobs[j.ID] = &j
	if j.State == Queued && j.Container == "" { // queued here, not by a backend that schedules
		m.queue[j.ID] = true
	} else {
		delete(m.queue, j.ID)
	}
	if j.State == Starting || j.State == Running {
		m.active[j.ID] = true
	} else {
		delete(m.active, j.ID)
	}
}

// insert adds a new record and saves it.
func (m *Manager) insert(j Job) {
	m.mu.Lock()
	m.setLocked(j)
	m.saveLocked(j)
}

// update applies fn to a copy of job id's record and, unless fn fails,
// stores and saves it. fn runs under m.mu: it must not block.
func (m *Manager) update(id string, fn func(*Job) error) (Job, error) {
	m.mu.Lock()
	cur, ok := m.jobs[id]
	if !ok {
		m.mu.Unlock()
		return Job{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	j := *cur
	if err := fn(&j); err != nil {
		m.mu.Unlock()
		return Job{}, err
	}
	j.GPUSeconds = gpuSeconds(j, time.Now())
	m.setLocked(j)
	m.saveLocked(j)
	return j, nil
}

// saveLocked saves j; it is called with m.mu held and releases it, keeping
// the order of saves that of the changes.
func (m *Manager) saveLocked(j Job) {
	m.saveMu.Lock()
	m.mu.Unlock()
	defer m.saveMu.Unlock()
	if err := m.store.SaveJob(j.Public()); err != nil {
		m.log.Error("save job record", "job", j.ID, "err", err)
	}
}

// isGone says whether err means the task no longer exists on the backend.
func isGone(err error) bool { return IsTaskGone(err) }

// caps is the executor's capabilities (the zero value without one).
func (m *Manager) caps() Capabilities {
	if m.ex == nil {
		return Capabilities{}
	}
	return m.ex.Capabilities()
}

// schedules says whether the executor queues and places jobs itself.
func (m *Manager) schedules() bool { return m.caps().Schedules }

func shortContainer(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
