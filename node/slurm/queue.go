package slurm

import (
	"context"
	"sync"
	"time"
)

// snapshot is one read of the whole queue: every reader within a tick
// (Inspect, List, Events, ReadCluster) shares it, so the agent runs one
// squeue per tick, never one per job.
type snapshot struct {
	Meta Meta
	Jobs map[string]Job // by Slurm job ID
	At   time.Time
}

// queue caches the latest snapshot for a tick.
type queue struct {
	run  Runner
	tick time.Duration
	now  func() time.Time

	mu   sync.Mutex // guards last and busy; held only to read or swap them
	last *snapshot
	busy chan struct{} // closed when the read in flight ends; nil when none
	err  error         // the last read's error, returned to its waiters
}

// get returns a snapshot no older than a tick, reading one if needed;
// callers that arrive while a read runs wait for it.
func (q *queue) get(ctx context.Context) (*snapshot, error) {
	for {
		q.mu.Lock()
		if q.last != nil && q.now().Sub(q.last.At) < q.tick {
			s := q.last
			q.mu.Unlock()
			return s, nil
		}
		if q.busy != nil {
			wait := q.busy
			q.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			q.mu.Lock()
			s, err := q.last, q.err
			fresh := s != nil && q.now().Sub(s.At) < q.tick
			q.mu.Unlock()
			if err != nil {
				return nil, err
			}
			if fresh {
				return s, nil
			}
			continue
		}
		done := make(chan struct{})
		q.busy = done
		q.mu.Unlock()
		s, err := q.read(ctx)
		q.mu.Lock()
		if err == nil {
			q.last = s
		}
		q.err = err
		q.busy = nil
		close(done)
		q.mu.Unlock()
		return s, err
	}
}

// invalidate makes the next get read the queue again (after sbatch or
// scancel changed it).
func (q *queue) invalidate() {
	q.mu.Lock()
	if q.last != nil {
		q.last = &snapshot{Meta: q.last.Meta, Jobs: q.last.Jobs}
	}
	q.mu.Unlock()
}

func (q *queue) read(ctx context.Context) (*snapshot, error) {
	at := q.now()
	out, err := q.run.Run(ctx, "squeue", "--json")
	if err != nil {
		return nil, err
	}
	meta, list, err := ParseSqueue(out)
	if err != nil {
		return nil, err
	}
	jobs := make(map[string]Job, len(list))
	for _, j := range list {
		jobs[j.ID] = j
	}
	return &snapshot{Meta: meta, Jobs: jobs, At: at}, nil
}
