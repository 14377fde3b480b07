package slurm

import (
	"context"
	"strings"
	"sync"
	"time"
)

// snapshot is one read of the queue: every reader within a tick
// (Inspect, List, Events, Logs, Stop) shares it, so the agent reads the
// queue once per tick, never once per job (a second squeue reads the
// jobs whose state line changed: see readText). It holds the jobs of
// the job accounts (squeue --user: slurmctld filters, so other users'
// jobs cost nearly nothing), or, when Full, every job (for the
// cluster's card).
type snapshot struct {
	Meta Meta
	Jobs map[string]Job // by Slurm job ID; never written once published
	Gen  uint64         // a snapshot with the same Gen has the same Jobs
	At   time.Time
	Full bool
}

// queue caches the latest snapshot for a tick.
type queue struct {
	run   Runner
	tick  time.Duration
	now   func() time.Time
	users func() string // the job accounts, comma-separated: a snapshot that is not Full holds only their jobs

	mu   sync.Mutex // guards last and busy; held only to read or swap them
	last *snapshot
	busy chan struct{} // closed when the read in flight ends; nil when none
	err  error         // the last read's error, returned to its waiters

	// Only the reader (the get that set busy) touches what follows.
	json  bool         // squeue refused the text format: read --json
	gen   uint64       // the last Gen given to a snapshot
	known [2]lineCache // what the last read of each scope said: [0] the user's jobs, [1] everyone's
	lines []stateLine  // the last state lines, reused
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
		q.last = &snapshot{Meta: q.last.Meta, Jobs: q.last.Jobs, Gen: q.last.Gen, Full: q.last.Full}
	}
	q.mu.Unlock()
}

// read reads the queue as text (see readText); a Slurm whose squeue
// refuses the text format is read with --json from then on.
func (q *queue) read(ctx context.Context, full bool) (*snapshot, error) {
	at := q.now()
	if !q.json {
		jobs, gen, err := q.readText(ctx, full)
		if err == nil {
			return &snapshot{Jobs: jobs, Gen: gen, At: at, Full: full}, nil
		}
		if !strings.Contains(err.Error(), "Invalid job format") && !strings.Contains(err.Error(), "Invalid field") {
			return nil, err
		}
		q.json = true
	}
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
	q.gen++
	return &snapshot{Meta: meta, Jobs: jobs, Gen: q.gen, At: at, Full: true}, nil
}
