package nodestore

import (
	"context"
	"log/slog"
	"sync"

	"github.com/labpool/labpool/node/jobs"
)

// HealthWriter keeps the GPU quarantines (jobs.HealthStore) off the
// telemetry's tick: the job manager saves them as it annotates a sample
// that quarantines a GPU, and SaveHealth only hands the state over; Run
// writes the latest state given, and Close what is left. The manager logs
// nothing of a failed write then: Run does, once per state.
type HealthWriter struct {
	store jobs.HealthStore
	log   *slog.Logger
	mu    sync.Mutex // guards next
	next  *jobs.HealthState
	wake  chan struct{} // 1-buffered: a state waits
}

// NewHealthWriter returns the writer of the states saved through it into
// store (Health); it logs a failed write to log.
func NewHealthWriter(store jobs.HealthStore, log *slog.Logger) *HealthWriter {
	return &HealthWriter{store: store, log: log, wake: make(chan struct{}, 1)}
}

// LoadHealth implements jobs.HealthStore.
func (w *HealthWriter) LoadHealth() (jobs.HealthState, error) { return w.store.LoadHealth() }

// SaveHealth implements jobs.HealthStore: it keeps st for Run, replacing a
// state not yet written (each state is whole). It never blocks.
func (w *HealthWriter) SaveHealth(st jobs.HealthState) error {
	w.mu.Lock()
	w.next = &st
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// Run writes each state given until ctx is cancelled.
func (w *HealthWriter) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
			w.flush()
		}
	}
}

// Close writes the state given since Run's last write.
func (w *HealthWriter) Close() error {
	w.flush()
	return nil
}

func (w *HealthWriter) flush() {
	w.mu.Lock()
	st := w.next
	w.next = nil
	w.mu.Unlock()
	if st == nil {
		return
	}
	if err := w.store.SaveHealth(*st); err != nil {
		w.log.Error("keep the GPU quarantines", "err", err)
	}
}
