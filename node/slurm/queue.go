package slurm

import (
	"context"
	"strings"
	"sync"
	"time"
)

// snapshot is one read of the queue: every reader within a tick
// (Inspect, List, Events, Logs, Stop) shares it, so the agent runs one
// squeue per tick, never one per job. It holds the jobs of the agent's
// Unix user (squeue --user: slurmctld filters, so other users' jobs cost
// nearly nothing), or, when Full, every job (for the cluster's card).
type snapshot struct {
	Meta Meta
	Jobs map[string]Job // by Slurm job ID
	At   time.Time
	Full bool
}

// queue caches the latest snapshot for a tick.
type queue struct {
	run  Runner
	tick time.Duration
	now  func() time.Time
	user string // the agent's Unix user: a snapshot that is not Full holds only its jobs

	mu   sync.Mutex // guards last and busy; held only to read or swap them
	last *snapshot
	busy chan struct{} // closed when the read in flight ends; nil when none
	err  error         // the last read's error, returned to its waiters
	json bool          // squeue refused the text format: read --json (only the reader touches it)
}

// get returns a snapshot no older than a tick, reading one if needed;
// callers that arrive while a read runs wait for it. full asks for every
// user's jobs; a full snapshot also serves the others.
func (q *queue) get(ctx context.Context, full bool) (*snapshot, error) {
	for {
		q.mu.Lock()
		if q.fresh(q.last, full) {
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
			fresh := q.fresh(s, full)
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
		s, err := q.read(ctx, full)
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

// fresh says whether s serves a reader now (q.mu held).
func (q *queue) fresh(s *snapshot, full bool) bool {
	return s != nil && q.now().Sub(s.At) < q.tick && (s.Full || !full)
}

// invalidate makes the next get read the queue again (after sbatch or
// scancel changed it).
func (q *queue) invalidate() {
	q.mu.Lock()
	if q.last != nil {
		q.last = &snapshot{Meta: q.last.Meta, Jobs: q.last.Jobs, Full: q.last.Full}
	}
	q.mu.Unlock()
}

// read runs one squeue. It polls text (see squeueTextArgs); a Slurm
// whose squeue refuses that format is read with --json from then on.
func (q *queue) read(ctx context.Context, full bool) (*snapshot, error) {
	at := q.now()
	var list []Job
	var meta Meta
	if !q.json {
		m := newMarkers()
		args := squeueTextArgs(m)
		if !full {
			args = append(args, "--user="+q.user)
		}
		out, err := q.run.Run(ctx, "squeue", args...)
		if err != nil && !strings.Contains(err.Error(), "Invalid job format") && !strings.Contains(err.Error(), "Invalid field") {
			return nil, err
		}
		if err == nil {
			list = ParseSqueueText(out, m)
		} else {
			q.json = true
		}
	}
	if q.json {
		out, err := q.run.Run(ctx, "squeue", "--json")
		if err != nil {
			return nil, err
		}
		if meta, list, err = ParseSqueue(out); err != nil {
			return nil, err
		}
	}
	jobs := make(map[string]Job, len(list))
	for _, j := range list {
		jobs[j.ID] = j
	}
	return &snapshot{Meta: meta, Jobs: jobs, At: at, Full: full || q.json}, nil
}
