package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// KindEnergy is a node's readings of its GPUs' energy counters (key: unix
// seconds; data: EnergyReading), written by the node itself, one per
// quarter hour: what the report's energy comes from. A history kind
// ("sample." prefix): a full disk skips it before any control record.
const KindEnergy = store.HistoryKindPrefix + "energy"

// Energy readings: one per energyStep, kept energyKeep.
const (
	energyStep = 15 * time.Minute
	energyKeep = history.MaxSeriesWindow
)

// EnergyReading is the energy counters of a node's GPUs at one time.
type EnergyReading struct {
	Time time.Time   `json:"time"`
	GPUs []GPUEnergy `json:"gpus"`
}

// GPUEnergy is one GPU's counter: millijoules since its driver loaded.
type GPUEnergy struct {
	Index int    `json:"index"`
	MJ    uint64 `json:"mj"`
}

// EnergyRecorder writes this machine's energy counters into the replica:
// the first sample that has them, the first of each quarter hour, and each
// sample in which a GPU changed hands (a job got or released it), so that a
// job's energy is the counters' difference over its own time.
type EnergyRecorder struct {
	db      *store.DB
	origin  string
	log     *slog.Logger
	last    time.Time // of the last reading written
	holders string    // the jobs holding each GPU in the last sample
}

// NewEnergyRecorder returns a recorder writing as origin.
func NewEnergyRecorder(db *store.DB, origin string, log *slog.Logger) *EnergyRecorder {
	return &EnergyRecorder{db: db, origin: origin, log: log}
}

// Run records the samples until ctx is cancelled or samples is closed,
// pruning readings older than their retention once an hour. It starts no
// goroutine.
func (r *EnergyRecorder) Run(ctx context.Context, samples <-chan agent.Sample) error {
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case s, ok := <-samples:
			if !ok {
				return nil
			}
			if err := r.Record(ctx, s); err != nil {
				r.log.Warn("record energy counters", "err", err)
			}
		case now := <-prune.C:
			if _, err := r.db.Prune(ctx, KindEnergy, now.Add(-energyKeep)); err != nil {
				r.log.Warn("prune energy readings", "err", err)
			}
		}
	}
}

// Record writes s's counters if s is the first sample of its quarter hour,
// or a GPU changed hands since the last sample.
func (r *EnergyRecorder) Record(ctx context.Context, s agent.Sample) error {
	holders := holdersOf(s)
	moved := holders != r.holders
	r.holders = holders
	if !moved && !r.last.IsZero() && s.Time.Truncate(energyStep).Equal(r.last.Truncate(energyStep)) {
		return nil
	}
	er := EnergyReading{Time: s.Time}
	for _, g := range s.GPUs {
		if g.EnergyMJ > 0 {
			er.GPUs = append(er.GPUs, GPUEnergy{Index: g.Index, MJ: g.EnergyMJ})
		}
	}
	if len(er.GPUs) == 0 {
		return nil // no counter here (or not yet): nothing to keep
	}
	r.last = s.Time // a reading that fails to be written waits for the next quarter
	data, err := json.Marshal(er)
	if err != nil {
		return fmt.Errorf("encode energy reading: %w", err)
	}
	_, err = r.db.Append(ctx, r.origin, KindEnergy, history.Key(s.Time), s.Time, data)
	return err
}

// holdersOf says which job holds each GPU of s.
func holdersOf(s agent.Sample) string {
	var b strings.Builder
	for _, g := range s.GPUs {
		fmt.Fprintf(&b, "%d=%s;", g.Index, g.Job)
	}
	return b.String()
}
