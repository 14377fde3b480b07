package nodestore

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// Jobs implements jobs.Store: this node's job records in its replicated
// log, and their environments in its local settings, which never leave
// this machine (the manager saves public records only).
type Jobs struct {
	db     *store.DB
	origin string
}

// NewJobs returns the job store of the machine origin (its device ID).
func NewJobs(db *store.DB, origin string) Jobs { return Jobs{db, origin} }

// settingJobEnv prefixes the local setting holding a job's private part:
// its environment and command line (jobs.Private as JSON; before the
// command line was kept there, the environment alone, as a JSON list).
const settingJobEnv = schema.SettingJobEnv

// SavePrivate implements jobs.Store: local settings only.
func (s Jobs) SavePrivate(id string, p jobs.Private) error {
	v := ""
	if p.Env != nil || p.Cmd != nil {
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		v = string(b)
	}
	return s.db.SetSetting(context.Background(), settingJobEnv+id, v)
}

// LoadPrivate implements jobs.Store.
func (s Jobs) LoadPrivate(id string) (jobs.Private, error) {
	var p jobs.Private
	v, ok, err := s.db.Setting(context.Background(), settingJobEnv+id)
	if err != nil || !ok || v == "" {
		return p, err
	}
	if strings.HasPrefix(v, "[") { // an environment kept by an older labpool
		err = json.Unmarshal([]byte(v), &p.Env)
	} else {
		err = json.Unmarshal([]byte(v), &p)
	}
	if err != nil {
		return jobs.Private{}, fmt.Errorf("read the environment and command line of job %s: %w", id, err)
	}
	return p, nil
}

// SaveJob implements jobs.Store.
func (s Jobs) SaveJob(j jobs.Job) error {
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	_, err = s.db.Append(context.Background(), s.origin, app.KindJob, j.ID, j.Created, data)
	return err
}

// LoadJobs implements jobs.Store.
func (s Jobs) LoadJobs() ([]jobs.Job, error) {
	recs, err := s.db.Range(context.Background(), s.origin, app.KindJob, time.Time{}, time.Now().Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	out := make([]jobs.Job, 0, len(recs))
	for _, r := range recs {
		var j jobs.Job
		if err := json.Unmarshal(r.Data, &j); err != nil || j.ID == "" {
			continue
		}
		out = append(out, j)
	}
	return out, nil
}
