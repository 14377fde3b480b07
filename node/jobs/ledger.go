package jobs

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/labpool/labpool/node/gpu"
)

// Request is the GPUs a job asks for: a count, or indexes, each with at
// least MinMemBytes of memory.
type Request struct {
	Count       int
	Indexes     []int
	MinMemBytes uint64
}

// BusyError says which GPUs kept a request from being granted.
type BusyError struct {
	Want int
	Busy []string // "GPU 0: job j1 of K7Q2-MX4P", "GPU 1: a process outside labpool"
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%d GPUs asked, not enough free: %s", e.Want, strings.Join(e.Busy, "; "))
}

// Ledger records which job holds each GPU (by UUID). A GPU is granted to
// one job at a time, and never while processes outside labpool use it.
type Ledger struct {
	mu     sync.Mutex        // guards grants, owners
	grants map[string]string // GPU UUID -> job ID
	owners map[string]string // job ID -> owner (for messages)
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{grants: map[string]string{}, owners: map[string]string{}}
}

// Grant gives job free GPUs that match req, from gpus (the latest
// telemetry), and returns their UUIDs in index order.
func (l *Ledger) Grant(job, owner string, req Request, gpus []gpu.Stats) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	free := func(g gpu.Stats) (bool, string) {
		if j, ok := l.grants[g.UUID]; ok && j != job {
			return false, fmt.Sprintf("GPU %d: job %s of %s", g.Index, j, l.owners[j])
		}
		if len(g.Processes) > 0 && l.grants[g.UUID] == "" {
			return false, fmt.Sprintf("GPU %d: a process outside labpool", g.Index)
		}
		if g.MemTotalBytes < req.MinMemBytes {
			return false, fmt.Sprintf("GPU %d: %d MiB, less than asked", g.Index, g.MemTotalBytes>>20)
		}
		return true, ""
	}
	var chosen []string
	var busy []string
	want := req.Count
	if len(req.Indexes) > 0 {
		want = len(req.Indexes)
	}
	for _, g := range gpus {
		if len(req.Indexes) > 0 && !slices.Contains(req.Indexes, g.Index) {
			continue
		}
		ok, why := free(g)
		if !ok {
			busy = append(busy, why)
			continue
		}
		if len(chosen) < want {
			chosen = append(chosen, g.UUID)
		}
	}
	if len(chosen) < want {
		if len(busy) == 0 {
			busy = []string{fmt.Sprintf("this machine has %d GPUs", len(gpus))}
		}
		return nil, &BusyError{Want: want, Busy: busy}
	}
	for _, u := range chosen {
		l.grants[u] = job
	}
	l.owners[job] = owner
	return chosen, nil
}

// Restore records GPUs a running job already holds (re-adoption).
func (l *Ledger) Restore(job, owner string, uuids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range uuids {
		l.grants[u] = job
	}
	l.owners[job] = owner
}

// Release frees the GPUs of job.
func (l *Ledger) Release(job string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for u, j := range l.grants {
		if j == job {
			delete(l.grants, u)
		}
	}
	delete(l.owners, job)
}

// Granted returns a copy of the grants, GPU UUID -> job ID.
func (l *Ledger) Granted() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.grants))
	for u, j := range l.grants {
		out[u] = j
	}
	return out
}
