package nodestore

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"encoding/json"
	"fmt"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// settingGPUHealth is the local setting holding this machine's GPU
// quarantines and the faults owners accepted (never replicated: the
// machine decides what runs on its GPUs).
const settingGPUHealth = schema.SettingGPUHealth

// Health implements jobs.HealthStore over the local settings.
type Health struct{ db *store.DB }

// NewHealth returns the GPU health store in db.
func NewHealth(db *store.DB) Health { return Health{db} }

// SaveHealth implements jobs.HealthStore.
func (s Health) SaveHealth(st jobs.HealthState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return s.db.SetSetting(context.Background(), settingGPUHealth, string(b))
}

// LoadHealth implements jobs.HealthStore.
func (s Health) LoadHealth() (jobs.HealthState, error) {
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
