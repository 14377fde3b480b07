package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// settingGPUHealth is the local setting holding this machine's GPU
// quarantines and the faults owners accepted (never replicated: the
// machine decides what runs on its GPUs).
const settingGPUHealth = "gpu-health"

// healthStore implements jobs.HealthStore over the local settings.
type healthStore struct{ db *store.DB }

// SaveHealth implements jobs.HealthStore.
func (s healthStore) SaveHealth(st jobs.HealthState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return s.db.SetSetting(context.Background(), settingGPUHealth, string(b))
}

// LoadHealth implements jobs.HealthStore.
func (s healthStore) LoadHealth() (jobs.HealthState, error) {
	var st jobs.HealthState
	v, ok, err := s.db.Setting(context.Background(), settingGPUHealth)
	if err != nil || !ok || v == "" {
		return st, err
	}
	if err := json.Unmarshal([]byte(v), &st); err != nil {
		return jobs.HealthState{}, fmt.Errorf("decode %s: %w", settingGPUHealth, err)
	}
	return st, nil
}

// openHealth reads the quarantines back into the job manager's ledger and
// hands NVML the faults owners accepted.
func (d *Daemon) openHealth(ctx context.Context) {
	var clearer jobs.FaultClearer // a nil interface without NVML
	if d.gpus != nil {
		clearer = d.gpus
	}
	if err := d.jobs.OpenHealth(ctx, healthStore{d.db}, clearer); err != nil {
		d.log.Error("GPU quarantines not read: none applies until the next restart", "err", err)
	}
}

// annotateGPUs completes each GPU sample (Telemetry's Annotate hook): the
// job manager quarantines faulty GPUs and names jobs and owners.
func (d *Daemon) annotateGPUs(taken time.Time, gs []gpu.Stats) {
	if d.jobs != nil {
		d.jobs.AnnotateGPUs(taken, gs)
	}
}
