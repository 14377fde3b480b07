package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// GrantsPublisher writes this machine's grants record (KindGrants) from
// its ledger: at start, at each change it is told of (Changed), and
// within Every of any other (the units' memory, a GPU gone).
type GrantsPublisher struct {
	rec    latestRecord
	source func() ([]alloc.Unit, []alloc.Grant) // the ledger's view (jobs.Manager.Allocation)
	log    *slog.Logger
	Every  time.Duration
	// Changed, when set, receives a value when the ledger changed: the
	// record is written at once, not at the next Every (a planner that
	// reads a freed GPU as held refuses a launch that fits).
	Changed <-chan struct{}
}

// NewGrantsPublisher returns a publisher of origin's grants, read from
// source.
func NewGrantsPublisher(db *store.DB, origin string, source func() ([]alloc.Unit, []alloc.Grant), log *slog.Logger) *GrantsPublisher {
	return &GrantsPublisher{rec: latestRecord{db: db, origin: origin, kind: KindGrants}, source: source, log: log, Every: 2 * time.Second}
}

// NewMachineGrants returns the publisher of the machine self's grants
// record: its job manager's ledger's units and grants, written at once
// when the ledger changes, and where it stands for a Slurm cluster (card
// not nil), the cluster's GPUs and the Slurm jobs holding them
// (slurm.Allocation, from the latest card).
func NewMachineGrants(db *store.DB, self string, jm *jobs.Manager, card *slurm.Card, log *slog.Logger) *GrantsPublisher {
	p := NewGrantsPublisher(db, self, machineAllocation(self, jm, card), log)
	p.Changed = jm.Ledger().Changes()
	return p
}

// machineAllocation is the machine self's units and grants: its ledger's,
// and its cluster's where card is not nil.
func machineAllocation(self string, jm *jobs.Manager, card *slurm.Card) func() ([]alloc.Unit, []alloc.Grant) {
	return func() ([]alloc.Unit, []alloc.Grant) {
		units, grants := jm.Allocation()
		if card == nil {
			return units, grants
		}
		if c := card.Get(); c != nil {
			cu, cg := slurm.Allocation(*c, self)
			units, grants = append(units, cu...), append(grants, cg...)
		}
		return units, grants
	}
}

// Run publishes until ctx is cancelled.
func (p *GrantsPublisher) Run(ctx context.Context) error {
	t := time.NewTicker(p.Every)
	defer t.Stop()
	for {
		if err := p.publish(ctx, time.Now()); err != nil {
			p.log.Warn("publish this machine's grants: planners read its telemetry meanwhile", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-p.Changed: // nil: never
		}
	}
}

// publish writes the record at now when it changed.
func (p *GrantsPublisher) publish(ctx context.Context, now time.Time) error {
	units, grants := p.source()
	if units == nil {
		units = []alloc.Unit{}
	}
	if grants == nil {
		grants = []alloc.Grant{}
	}
	data, err := json.Marshal(Allocation{Units: units, Grants: grants})
	if err != nil {
		return err
	}
	if p.rec.unchanged(data) {
		return nil
	}
	if err := schema.Check(KindGrants, "", len(data)); err != nil {
		return err // no record cut short: one that lies is worse than none
	}
	_, err = p.rec.write(ctx, now, data)
	return err
}
