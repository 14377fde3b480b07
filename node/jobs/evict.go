package jobs

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Evict ends the jobs of owner, a device removed from the pool: its queued
// jobs are cancelled and its running ones killed at once (no grace
// period), their records kept with the Error "owner removed from the
// pool". It returns how many of each; the containers are stopped side by
// side, so it takes about as long as one stop. It reads the records kept
// before this start first (load keeps those in memory), so an eviction
// re-checked at start, beside Run, misses none.
func (m *Manager) Evict(ctx context.Context, owner string) (cancelled, stopped int, err error) {
	if err := m.loadForEvict(); err != nil {
		return 0, 0, fmt.Errorf("load job records: %w", err)
	}
	now := time.Now().UTC()
	var running []Job
	for _, j := range m.List() {
		if j.Owner != owner || j.Finished != nil {
			continue
		}
		j, uerr := m.update(j.ID, func(j *Job) error {
			switch {
			case j.State == Queued && j.OfferedTo != "": // being handed over: the machine it goes to evicts it
				return ErrConflict
			case j.State == Queued && j.Container == "", j.State == Starting && j.Container == "":
				// A launch from the queue in flight sees this and removes
				// its new container (startClaimed).
				j.State, j.Finished, j.Error = Exited, &now, evicted
			case j.State == Running || j.State == Starting || j.State == Queued: // queued: in a cluster's queue, cancelled there
				j.Error = evicted
			default:
				return ErrConflict
			}
			return nil
		})
		switch {
		case uerr != nil:
		case j.Finished != nil:
			cancelled++
		default:
			running = append(running, j)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(running))
	for i, j := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.kill(ctx, j)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil && err == nil {
			err = e
		}
	}
	m.wake()
	return cancelled, len(running), err
}

// kill stops j's container without a grace period and records the end.
func (m *Manager) kill(ctx context.Context, j Job) error {
	if m.ex == nil {
		return ErrNoRuntime
	}
	if err := m.ex.Stop(ctx, j.Container, 0); err != nil && !isGone(err) {
		return fmt.Errorf("stop %s: %w", j.Name, err)
	}
	if err := m.refresh(ctx, j.ID, evicted); err != nil {
		return fmt.Errorf("stop %s: %w", j.Name, err)
	}
	return nil
}

// loadForEvict reads the records kept before this start once (load keeps
// those in memory): an agent that evicts many removed devices reads the
// job table once, not once each.
func (m *Manager) loadForEvict() error {
	if m.evictLoaded.Load() {
		return nil
	}
	if err := m.load(); err != nil {
		return err
	}
	m.evictLoaded.Store(true)
	return nil
}
