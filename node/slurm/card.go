package slurm

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/node/jobs"
)

// ClusterReader reads the cluster an agent stands for, for its card
// (*Executor).
type ClusterReader interface {
	ReadCluster(ctx context.Context) (Cluster, error)
}

var _ ClusterReader = (*Executor)(nil)

// CardEvery is how often the card is read when none of labpool's jobs
// changes: each read runs sinfo, scontrol and a squeue of every user,
// about 2% of a core at once a second (BenchmarkSlurmAgentCost). A change
// of a labpool job's state reads it at once, so the card shows labpool's
// jobs as soon as ps does, and the others' within CardEvery.
const CardEvery = 5 * time.Second

// Card is the latest reading of the cluster an agent stands for, which
// its node record publishes when it changes (Changed).
type Card struct {
	src   ClusterReader
	every time.Duration // between reads while labpool's jobs do not change
	jobs  chan struct{} // 1-buffered: a labpool job's state changed since the last read
	mu    sync.Mutex    // guards card and states
	card  *Cluster      // nil before the first read
	// states is the last state saved of each job (WatchJobs).
	states  map[string]jobs.State
	changed chan struct{} // 1-buffered: the card changed since the writer last read it
}

// NewCard returns the card of the cluster src reads, read every every
// once Run runs.
func NewCard(src ClusterReader, every time.Duration) *Card {
	return &Card{src: src, every: every, jobs: make(chan struct{}, 1),
		states: map[string]jobs.State{}, changed: make(chan struct{}, 1)}
}

// WatchJobs returns s, telling the card when a job saved through it
// changed state: the job manager saves each change its executor reports.
func (c *Card) WatchJobs(s jobs.Store) jobs.Store { return jobWatch{s, c} }

// jobWatch is a job store that tells the cluster's card of the changes of
// its jobs' states.
type jobWatch struct {
	jobs.Store
	card *Card
}

// SaveJob implements jobs.Store.
func (w jobWatch) SaveJob(j jobs.Job) error {
	err := w.Store.SaveJob(j)
	c := w.card
	c.mu.Lock()
	moved := c.states[j.ID] != j.State
	c.states[j.ID] = j.State
	if j.State == jobs.Exited || j.State == jobs.Failed {
		delete(c.states, j.ID) // its end is the last change worth a read
	}
	c.mu.Unlock()
	if moved {
		select {
		case c.jobs <- struct{}{}:
		default:
		}
	}
	return err
}

// Get returns the latest card (nil before the first read, and from a nil
// Card: a machine that stands for no cluster).
func (c *Card) Get() *Cluster {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.card
}

// Nodes returns the nodes of the latest card (nil before the first read,
// and from a nil Card).
func (c *Card) Nodes() []Node {
	if card := c.Get(); card != nil {
		return card.Nodes
	}
	return nil
}

// Changed says, once for any number of changes, that the card changed
// since it was last said: its one reader is the node record's writer.
func (c *Card) Changed() <-chan struct{} { return c.changed }

// set keeps card and tells the writer, unless only the time of the
// reading differs from the last card.
func (c *Card) set(card Cluster) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.card != nil && sameCard(*c.card, card) {
		return
	}
	c.card = &card
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func sameCard(a, b Cluster) bool {
	a.Read, b.Read = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

// Run reads the cluster every c.every, and at once when one of labpool's
// jobs changes state, until ctx ends. The executor serves the queue from
// the snapshot its jobs' reads share; a failed read keeps the last good
// figures and says why in the card's Error.
func (c *Card) Run(ctx context.Context) error {
	t := beat.NewTicker(c.every)
	defer t.Stop()
	for {
		card, _ := c.src.ReadCluster(ctx) // the error is in card.Error
		if ctx.Err() != nil {
			return nil
		}
		c.set(card)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-c.jobs:
		}
	}
}
