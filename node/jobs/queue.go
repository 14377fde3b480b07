package jobs

import (
	"context"
	"maps"
	"slices"
	"time"
)

// The queue's policy, in full:
//
//  1. Order. Owners with queued jobs take turns: the owner who used the
//     fewest GPU-hours across the whole pool lately goes first
//     (Config.Usage: decayed with a half-life of UsageHalfLife, from every
//     machine's job records in the replica), then the owner served here
//     longest ago (or never), ties broken by whose oldest queued job is
//     older. Each owner offers their oldest job first. The order is
//     round-robin: every owner's 1st job, then every owner's 2nd, and so on,
//     so one member's long queue cannot starve the others.
//  2. Backfill. Jobs are offered free GPUs in that order; a job that does not
//     fit yet is skipped, and a later, smaller job may start before it.
//  3. No starvation. A job that has waited longer than Config.StarveAfter
//     keeps the free units it could use (up to what it asks for: GPUs, MIG
//     instances of its profile, its share of a GPU) as an alloc.Queued
//     grant in the ledger (Ledger.Rekeep, in queue order); no other job
//     takes them, so they accumulate for it as others end, and it starts
//     when it has enough. The grants record shows them, and a job refused
//     them is told they are kept for it.
//
// One job starts per pass; after each start the owner's turn is over and the
// order is computed again.

// queueOrder returns the queued jobs in the order they are offered GPUs.
// usage is each person's decayed GPU-hours across the pool (nil: none
// known), served when each person last had a job started here; person
// maps the device that launched a job to its person (all of a person's
// devices take one turn).
func queueOrder(queued []Job, usage map[string]float64, served map[string]time.Time, person func(string) string) []Job {
	byOwner := map[string][]Job{}
	for _, j := range queued {
		o := person(j.Owner)
		byOwner[o] = append(byOwner[o], j)
	}
	owners := make([]string, 0, len(byOwner))
	for o, js := range byOwner {
		slices.SortStableFunc(js, func(a, b Job) int { return compareCreated(a, b) })
		owners = append(owners, o)
	}
	slices.SortFunc(owners, func(a, b string) int {
		if ua, ub := usage[a], usage[b]; ua != ub {
			if ua < ub {
				return -1
			}
			return 1
		}
		if c := served[a].Compare(served[b]); c != 0 {
			return c
		}
		if c := compareCreated(byOwner[a][0], byOwner[b][0]); c != 0 {
			return c
		}
		return cmpString(a, b)
	})
	out := make([]Job, 0, len(queued))
	for round := 0; len(out) < len(queued); round++ {
		for _, o := range owners {
			if round < len(byOwner[o]) {
				out = append(out, byOwner[o][round])
			}
		}
	}
	return out
}

func compareCreated(a, b Job) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return cmpString(a.ID, b.ID)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// request is the GPUs j asks for.
func (j Job) request() Request {
	count := j.Spec.GPUs
	if j.Spec.Nodes > 1 {
		count = j.Spec.Nodes * j.Spec.GPUsPerNode
	}
	r := Request{Count: count, Indexes: j.Spec.GPUIDs, MIG: j.Spec.MIGIDs, MinMemBytes: j.Spec.MinGPUMemBytes,
		Profile: j.Spec.MIGProfile, Owner: j.Owner, Name: j.Name, Limit: time.Duration(j.Spec.TimeLimitSeconds) * time.Second}
	if j.Spec.GPUShare > 0 && j.Spec.GPUShare < 1 {
		r.Share, r.MemBytes = j.Spec.GPUShare, j.Spec.GPUMemBytes
	}
	if (r.Profile != "" || j.Spec.GPUShare > 0) && r.Count == 0 {
		r.Count = 1
	}
	return r
}

// queued returns the queued jobs in queue order.
func (m *Manager) queued() []Job {
	m.mu.Lock()
	if len(m.queue) == 0 {
		m.mu.Unlock()
		return nil
	}
	q := make([]Job, 0, len(m.queue))
	for id := range m.queue {
		q = append(q, *m.jobs[id])
	}
	served := maps.Clone(m.served)
	m.mu.Unlock()
	var usage map[string]float64
	if m.cfg.Usage != nil {
		usage = m.cfg.Usage()
	}
	return queueOrder(q, usage, served, m.person)
}

// starving returns the queued jobs that waited past StarveAfter, in queue
// order.
func (m *Manager) starving() []Job {
	var out []Job
	for _, j := range m.queued() {
		if j.OfferedTo == "" && time.Since(j.Created) > m.cfg.StarveAfter {
			out = append(out, j)
		}
	}
	return out
}

// startQueued starts the queued jobs whose GPUs are free, one at a time,
// by the policy above.
func (m *Manager) startQueued(ctx context.Context) {
	m.ops.RLock()
	defer m.ops.RUnlock()
	for ctx.Err() == nil {
		j, ok := m.nextQueued()
		if !ok {
			return
		}
		m.startClaimed(ctx, j)
	}
}

// nextQueued grants GPUs to the first queued job that fits and claims it
// (queued -> starting).
func (m *Manager) nextQueued() (Job, bool) {
	gpus := m.gpus.GPUs()
	external := m.external(gpus)
	m.keepStarving(gpus, external)
	for _, j := range m.queued() {
		if j.OfferedTo != "" {
			continue // an offer is outstanding: it starts there or comes back
		}
		uuids, err := m.ledger.Grant(j.ID, j.request(), gpus, external)
		if err != nil {
			why := m.explainBusy(err).Error() // the holders by job and owner name
			m.mu.Lock()
			m.waitWhy[j.ID] = why
			m.mu.Unlock()
			continue
		}
		claimed, err := m.update(j.ID, func(cur *Job) error {
			if cur.State != Queued || cur.OfferedTo != "" {
				return ErrConflict // stopped, removed or offered meanwhile
			}
			cur.State, cur.GPUs, cur.GPUIndexes, cur.Error = Starting, uuids, m.ledger.Indexes(uuids, gpus), ""
			cur.GPUShare, cur.GPUMemBytes = m.ledger.share(j.ID)
			return nil
		})
		if err != nil {
			m.ledger.Release(j.ID)
			continue
		}
		return claimed, true
	}
	return Job{}, false
}

// startClaimed launches a job claimed from the queue. A stop that came
// while it launched wins: the new task is removed.
func (m *Manager) startClaimed(ctx context.Context, j Job) {
	fail := func(err error) {
		m.ledger.Release(j.ID)
		m.update(j.ID, func(cur *Job) error {
			if cur.State == Starting {
				now := time.Now().UTC()
				cur.State, cur.Finished, cur.Error = Failed, &now, err.Error()
			}
			return nil
		})
		m.log.Warn("start queued job", "job", j.ID, "err", err)
	}
	mounts, err := m.mounts(j.Spec, j.Owner)
	if err != nil {
		fail(err)
		return
	}
	c, err := m.launch(ctx, j, mounts)
	if err != nil {
		fail(err)
		return
	}
	_, err = m.update(j.ID, func(cur *Job) error {
		if cur.State != Starting {
			return ErrConflict
		}
		setRunning(cur, c)
		m.served[m.person(cur.Owner)] = *cur.Started
		return nil
	})
	if err != nil {
		m.discard(ctx, c.Handle)
		m.ledger.Release(j.ID)
		return
	}
	m.log.Info("queued job started", "job", j.ID, "name", j.Name, "owner", j.Owner, "gpus", j.GPUIndexes, "task", shortContainer(c.Handle))
	m.afterStart(ctx, j.ID)
}
