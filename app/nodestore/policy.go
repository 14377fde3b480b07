package nodestore

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// settingPolicy is the local setting holding this machine's policy.
const settingPolicy = schema.SettingPolicy

// policyMu serializes policy changes (read, apply, store), of every
// machine in this process: they are rare.
var policyMu sync.Mutex

// Applier is the part that applies a policy (*jobs.Manager).
type Applier interface {
	Policy() jobs.Policy
	SetPolicy(jobs.Policy) error
}

// Policy implements app.PolicyManager: the job manager checks the policy,
// the local settings keep it.
type Policy struct {
	db   *store.DB
	jobs Applier
}

// NewPolicy returns the policy of the job manager j, kept in db.
func NewPolicy(db *store.DB, j Applier) Policy { return Policy{db, j} }

// Load reads the machine's policy over the defaults.
func (p Policy) Load(ctx context.Context) (jobs.Policy, error) {
	pol := jobs.DefaultPolicy()
	v, ok, err := p.db.Setting(ctx, settingPolicy)
	if err != nil || !ok {
		return pol, err
	}
	if err := json.Unmarshal([]byte(v), &pol); err != nil {
		return jobs.DefaultPolicy(), fmt.Errorf("decode policy: %w", err)
	}
	return pol, nil
}

// Policy implements app.PolicyManager.
func (p Policy) Policy(ctx context.Context) (app.Policy, error) { return p.jobs.Policy(), nil }

// SetPolicy implements app.PolicyManager.
func (p Policy) SetPolicy(ctx context.Context, u app.PolicyUpdate) (app.Policy, error) {
	policyMu.Lock()
	defer policyMu.Unlock()
	pol := u.Apply(p.jobs.Policy())
	if err := pol.Check(); err != nil {
		return app.Policy{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	b, err := json.Marshal(pol)
	if err != nil {
		return app.Policy{}, err
	}
	if err := p.db.SetSetting(ctx, settingPolicy, string(b)); err != nil {
		return app.Policy{}, err
	}
	return pol, p.jobs.SetPolicy(pol)
}
