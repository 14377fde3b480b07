package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/store"
)

// SlurmWatch is the daemon's part that knows the Slurm jobs on this
// machine's GPUs, where it is a Slurm compute node (elsewhere no process
// is in one, and it costs one read of /proc/PID/stat per GPU process and
// sample). Annotate
// runs in the telemetry's tick and writes nothing: the holds it observes
// are written by Run, so a slow replica never holds up a sample.
type SlurmWatch struct {
	self   string
	procs  *slurm.Procs
	jobs   *SlurmJobs
	policy func() jobs.Policy // the idle reclaim policy
	log    *slog.Logger
	out    holdQueue // what Annotate observed, for Run to write
	// Owned by the sampling loop (Annotate).
	idle   slurm.IdleWatch
	holds  SlurmHolds // what they held, for the usage report
	pruned time.Time  // when old holds were last pruned
}

// SlurmHoldStore is where the holds are kept (*store.DB).
type SlurmHoldStore interface {
	Append(ctx context.Context, origin, kind, key string, t time.Time, data []byte) (store.Record, error)
	Prune(ctx context.Context, kind string, before time.Time) (int64, error)
	Range(ctx context.Context, origin, kind string, from, to time.Time) ([]store.Record, error)
}

var _ SlurmHoldStore = (*store.DB)(nil)

// slurmHoldKeep is how long the holds are kept: as far back as a report
// reads.
const slurmHoldKeep = history.MaxSeriesWindow + 24*time.Hour

// ProcRoot is where the host's processes are read.
const ProcRoot = "/proc"

// NewSlurmWatch prepares the Slurm view over the processes under root
// (ProcRoot) and takes back the holds an earlier run left open in db; sj
// names the jobs, policy is the idle reclaim policy.
func NewSlurmWatch(ctx context.Context, root string, db SlurmHoldStore, sj *SlurmJobs, self string,
	policy func() jobs.Policy, log *slog.Logger) *SlurmWatch {
	s := &SlurmWatch{self: self, procs: slurm.NewProcs(root, slurm.ConfCluster(slurm.ConfPathsWith(os.Getenv("SLURM_CONF")))),
		jobs: sj, policy: policy, log: log, out: holdQueue{db: db}}
	recs, err := db.Range(ctx, self, KindSlurmHold, time.Time{}, time.Now().Add(24*time.Hour))
	if err != nil {
		log.Warn("read the Slurm jobs this machine saw: those left open end at its next sample", "err", err)
		return s
	}
	var open []SlurmHold
	for _, rec := range recs {
		var h SlurmHold
		if json.Unmarshal(rec.Data, &h) == nil && h.End == nil {
			open = append(open, h)
		}
	}
	s.holds.Adopt(open)
	return s
}

// Annotate names in held the Slurm jobs of one GPU sample's processes and
// GPUs (after the job manager named its own), queues the holds that changed for
// Run to write, and warns of a Slurm job idle past the idle reclaim
// policy: a compute node never stops one. It never waits for the store.
func (s *SlurmWatch) Annotate(taken time.Time, gs []gpu.Stats, held *alloc.Holding) {
	s.procs.Annotate(gs, held, s.jobs.Find)
	hs := s.holds.Observe(taken, gs, *held)
	prune := taken.Sub(s.pruned) >= time.Hour
	if prune {
		s.pruned = taken
	}
	s.out.add(taken, hs, prune)
	p := s.policy()
	for _, w := range s.idle.Observe(taken, gs, *held, time.Duration(p.IdleReclaimSeconds)*time.Second, p.IdleBelowPercent) {
		s.log.Warn("idle reclaim policy: a Slurm job's GPUs are idle; not stopped: a compute node does not stop Slurm jobs, its cluster does",
			"holder", w.Holder, "job", w.Job, "owner", w.Owner, "gpus", w.GPUs, "idle_since", w.Since)
	}
}

// Job returns the record of the labpool job id when it is a Slurm job that
// holds this machine's GPUs through a cluster's agent.
func (s *SlurmWatch) Job(id string) (jobs.Job, bool) { return s.jobs.Job(id) }

// Run writes the holds Annotate observed, in the order observed, until ctx
// is cancelled.
func (s *SlurmWatch) Run(ctx context.Context) error {
	for {
		// Written whole even as ctx ends: a hold observed is never lost.
		wake := s.out.flush(context.WithoutCancel(ctx), s.self, s.log)
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
	}
}

// Close writes what the last samples observed after Run returned.
func (s *SlurmWatch) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.out.flush(ctx, s.self, s.log)
	return nil
}

// holdQueue carries the holds from the sampling loop to their writer, each
// kept until written: a hold is a few hundred bytes, written when a Slurm
// job starts, changes or ends on this machine's GPUs.
type holdQueue struct {
	db      SlurmHoldStore
	mu      sync.Mutex // guards pending, prune and wake
	pending []pendingHold
	prune   time.Time     // prune holds older than this; zero: none asked
	wake    chan struct{} // signalled (capacity 1) when there is work
}

type pendingHold struct {
	at time.Time
	h  SlurmHold
}

// add queues hs, observed at taken, and a prune when asked. It never blocks.
func (q *holdQueue) add(taken time.Time, hs []SlurmHold, prune bool) {
	if len(hs) == 0 && !prune {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, h := range hs {
		q.pending = append(q.pending, pendingHold{taken, h})
	}
	if prune {
		q.prune = taken.Add(-slurmHoldKeep)
	}
	select {
	case q.signal() <- struct{}{}:
	default:
	}
}

// signal is the wake channel; q.mu is held.
func (q *holdQueue) signal() chan struct{} {
	if q.wake == nil {
		q.wake = make(chan struct{}, 1)
	}
	return q.wake
}

// flush writes what is queued and returns the channel that says when more is.
func (q *holdQueue) flush(ctx context.Context, self string, log *slog.Logger) <-chan struct{} {
	q.mu.Lock()
	batch, prune, wake := slices.Clone(q.pending), q.prune, q.signal()
	q.pending, q.prune = q.pending[:0], time.Time{}
	q.mu.Unlock()
	for _, p := range batch {
		data, err := json.Marshal(p.h)
		if err == nil {
			_, err = q.db.Append(ctx, self, KindSlurmHold, p.h.Key(), p.at, data)
		}
		if err != nil {
			log.Warn("record a Slurm job's GPUs: the usage report misses it", "holder", p.h.Holder, "err", err)
		}
	}
	if !prune.IsZero() {
		if _, err := q.db.Prune(ctx, KindSlurmHold, prune); err != nil {
			log.Warn("prune the Slurm jobs' holds", "err", err)
		}
	}
	return wake
}
