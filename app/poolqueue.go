package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// Bounds of the queue's reads of the replica and of one offer.
const (
	queueReadTimeout = 2 * time.Second
	offerTimeout     = 10 * time.Second
	usageEvery       = 30 * time.Second       // how stale the fairness figures may be
	targetsEvery     = 150 * time.Millisecond // one plan serves every queued job of one shape for this long
	maxTargetShapes  = 256
)

// PoolQueue is the pool-wide queue's wiring (node/jobs/handover.go): what
// the job manager asks of the pool for its jobs queued pool-wide. Which
// machines fit a job, by the replica; the offer, over the pool's
// transport; the role of a job's owner, by the pool's log; and each
// member's decayed GPU-hours across the pool, by the replica's job records
// whose owner proof verifies. The service plans and reads the replica and
// calls the other machines; it is built after the jobs, so the queue asks
// for it (svc) and does nothing before it is there.
type PoolQueue struct {
	self string
	db   *store.DB
	pm   *pool.Manager
	svc  func() (*Service, bool)
	log  *slog.Logger
}

// NewPoolQueue returns the pool-wide queue of the machine self: svc
// returns the service once it is built, and false before.
func NewPoolQueue(self string, db *store.DB, pm *pool.Manager, svc func() (*Service, bool), log *slog.Logger) *PoolQueue {
	return &PoolQueue{self: self, db: db, pm: pm, svc: svc, log: log}
}

// Configure sets the pool-wide queue's hooks in cfg.
func (q *PoolQueue) Configure(cfg *jobs.Config) {
	u := &usageCache{q: q}
	tc := &targetCache{q: q, by: map[string]targetEntry{}}
	cfg.Targets = tc.get
	cfg.Offer = q.offerJob
	cfg.Role = q.memberRole
	cfg.PersonOf = q.personOf
	cfg.Usage = u.get
	cfg.PoolChanged, _ = q.db.Subscribe() // for the daemon's life: the replica closes with it
}

// targetCache keeps queueTargets' answer for each shape of request for
// targetsEvery: a pass over many queued jobs plans each shape once.
type targetCache struct {
	q  *PoolQueue
	mu sync.Mutex // guards by
	by map[string]targetEntry
}

type targetEntry struct {
	at time.Time
	ts []jobs.Target
}

func (c *targetCache) get(spec jobs.Spec) []jobs.Target {
	key := fmt.Sprint(spec.GPUs, spec.GPUIDs, spec.MIGIDs, spec.MIGProfile, spec.GPUShare, spec.GPUMemBytes, spec.MinGPUMemBytes,
		spec.Partition, spec.Nodes, spec.GPUsPerNode, spec.TimeLimitSeconds, spec.Image == "", spec.Mounts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.by[key]; ok && time.Since(e.at) < targetsEvery {
		return e.ts
	}
	if len(c.by) >= maxTargetShapes {
		clear(c.by)
	}
	ts := c.q.queueTargets(spec)
	c.by[key] = targetEntry{time.Now(), ts}
	return ts
}

// queueTargets is the pool's other machines for spec, as the replica shows
// them: the one the planner would pick first, then the others that fit,
// then those that do not, each with what it lacks.
func (q *PoolQueue) queueTargets(spec jobs.Spec) []jobs.Target {
	svc, ok := q.svc()
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueReadTimeout)
	defer cancel()
	spec.Queue = false // fits now, not "would wait"
	p, err := svc.Plan(ctx, LaunchRequest{Spec: spec})
	if err != nil {
		q.log.Debug("plan a queued job across the pool", "err", err)
		return nil
	}
	nodes, err := svc.Nodes(ctx)
	if err != nil {
		return nil
	}
	online := map[string]bool{}
	for _, n := range nodes {
		online[n.ID] = n.Online && !n.Self
	}
	var fit, rest []jobs.Target
	for _, np := range p.Nodes {
		if np.Node == q.self {
			continue
		}
		t := jobs.Target{Node: np.Node, Name: np.NodeName, Fits: np.Fits && online[np.Node], Why: np.Reason}
		if np.Cluster != nil {
			t.Fits = t.Fits && np.Cluster.StartsNow
		}
		t.Why, _, _ = strings.Cut(t.Why, " (busy: ") // the sentence names what each lacks, not the details
		t.Why, _, _ = strings.Cut(t.Why, ": ")
		switch {
		case !online[np.Node]:
			t.Why = "is offline"
		case len(t.Why) > 0 && t.Why[0] >= '0' && t.Why[0] <= '9':
			t.Why = "has " + t.Why // "has 1 of 4 GPUs free that match"
		}
		switch {
		case t.Fits && np.Node == p.NodePlan.Node:
			fit = append([]jobs.Target{t}, fit...)
		case t.Fits:
			fit = append(fit, t)
		default:
			t.Why = strings.TrimSuffix(t.Why, "; the job will wait in the queue")
			rest = append(rest, t)
		}
	}
	return append(fit, rest...)
}

// offerJob sends a hand-over offer to node.
func (q *PoolQueue) offerJob(ctx context.Context, node string, o jobs.Offer) (jobs.OfferAnswer, error) {
	svc, ok := q.svc()
	if !ok {
		return jobs.OfferAnswer{}, errQueueNoService
	}
	ctx, cancel := context.WithTimeout(ctx, offerTimeout)
	defer cancel()
	return jobs.Client{Conn: svc.Peer(node)}.Offer(ctx, o)
}

// memberRole is the role of the member id in the pool, "" for none.
func (q *PoolQueue) memberRole(id string) string {
	pid, err := peer.ParseID(id)
	if err != nil {
		return ""
	}
	role, _ := q.pm.Role(pid)
	return string(role)
}

// personOf is the person whose device id is, "" when the pool knows none:
// a person's devices act on each other's jobs and share one turn.
func (q *PoolQueue) personOf(id string) string { return q.pm.PersonOf(id) }

// usageCache keeps each member's decayed GPU-hours for usageEvery.
type usageCache struct {
	q  *PoolQueue
	mu sync.Mutex // guards the fields below
	at time.Time
	by map[string]float64
}

func (u *usageCache) get() map[string]float64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	svc, ok := u.q.svc()
	if u.by != nil && time.Since(u.at) < usageEvery || !ok {
		return u.by
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueReadTimeout)
	defer cancel()
	all, err := svc.Jobs(ctx, true)
	if err != nil {
		u.q.log.Debug("read the pool's jobs for the queue's fairness", "err", err)
		return u.by
	}
	js := make([]jobs.Job, 0, len(all))
	for _, j := range all {
		js = append(js, j.Job) // Owner is empty where the owner proof does not verify
	}
	u.by, u.at = jobs.DecayedUsage(js, time.Now(), jobs.UsageHalfLife, u.q.personOf), time.Now()
	return u.by
}

// errQueueNoService is the offer's answer before the service is built.
var errQueueNoService = errors.New("offer a queued job: the service is not built yet")
