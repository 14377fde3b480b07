package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/lend"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
	"golang.org/x/sync/errgroup"
)

// LendPart lends this machine to the pool as its policy says (node/lend):
// the owner-present signals are the owner's own GPU processes, logind's
// idle hint of the desktop, and the window's "I'm using it" switch; the
// guests are the job manager's, the owner's grant goes into its ledger.
// What the lender says is published as this machine's lend record
// (KindLend).
type LendPart struct {
	l    *lend.Lender
	self string
	db   *store.DB
	log  *slog.Logger
}

// OpenLend builds the lender of the machine self over its job manager and
// its GPUs (info: the latest telemetry's), with the switch as the local
// settings keep it, and hands it to the service (the local API's switch).
func OpenLend(ctx context.Context, self string, db *store.DB, jm *jobs.Manager, info func() agent.Info, svc *Service, log *slog.Logger) *LendPart {
	cfg := lend.DefaultConfig()
	cfg.Node, cfg.Log = self, log
	cfg.Policy = func() lend.Policy { return jm.Policy().Lend }
	cfg.GPUs = func() []string {
		var uuids []string
		for _, g := range info().GPUs {
			uuids = append(uuids, g.UUID)
		}
		return uuids
	}
	p := &LendPart{self: self, db: db, log: log,
		l: lend.New(cfg, jm.Policy().Lend, jobs.LendGuests{M: jm}, jm.Ledger(), jm.OwnerGPUProcesses, lend.NewLogind().Signal)}
	if v, ok, err := db.Setting(ctx, schema.SettingLendUsing); err != nil {
		log.Warn("read the \"I'm using it\" switch: off until set", "err", err)
	} else if ok && v == "true" {
		p.l.SetUsing(true)
	}
	svc.SetLending(keptSwitch{p})
	return p
}

// Run runs the lender and publishes its record until ctx is cancelled.
func (p *LendPart) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.l.Run(ctx) })
	g.Go(func() error { return p.publish(ctx) })
	return g.Wait()
}

// keptSwitch is the lender with its "I'm using it" switch kept in the
// local settings: an owner who said so is not lent out by a restart.
type keptSwitch struct{ *LendPart }

// SetUsing implements Lending.
func (k keptSwitch) SetUsing(on bool) {
	k.l.SetUsing(on)
	if err := k.db.SetSetting(context.Background(), schema.SettingLendUsing, strconv.FormatBool(on)); err != nil {
		k.log.Warn("keep the \"I'm using it\" switch: it holds until the agent restarts", "err", err)
	}
}

// State implements Lending.
func (k keptSwitch) State() lend.State { return k.l.State() }

// publish writes the lend record whenever what the lender says changes
// (looked at every second).
func (p *LendPart) publish(ctx context.Context) error {
	rec := latestRecord{db: p.db, origin: p.self, kind: KindLend}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if data, err := json.Marshal(p.l.State().Status.Public()); err == nil {
			if _, err := rec.write(ctx, time.Now(), data); err != nil {
				p.log.Warn("write the lend record", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
